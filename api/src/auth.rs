//! Authentication: HS256 JWTs whose `sub` is the actor. The actor is only ever taken from the
//! token, never from the request (seed 000).
//!
//! Every routed request (a path and a method the API serves) that carries a bearer token has
//! it checked by [`check_bearer`], whether the route needs one or not: signature and expiry,
//! then revocation (401 `TOKEN_REVOKED`), then a ban (403 `USER_BANNED`). An unknown path (404)
//! or an undeclared method (405) is answered first, whatever the token. An open live-feed
//! stream is re-checked as its user's account changes (`FeedHub` in the projections crate). Revocations and bans are events in the log; the in-memory graph folds
//! them, so the check costs no database round trip (only while the graph is still loading does
//! it read the user's account stream).

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::{FromRequestParts, Request, State};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use relations_domain::{TokenStamp, UserId};
use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::state::AppState;

/// The claims this service reads and writes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Claims {
    /// The user id, as a decimal string.
    pub sub: String,
    /// Expiry, seconds since the epoch.
    pub exp: u64,
    /// Issued at, seconds since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iat: Option<u64>,
    /// Roles; `"admin"` grants the admin endpoints.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<String>,
    /// The client or device (missing: `""`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cli: Option<String>,
    /// The token's version for its client (missing: 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ver: Option<i64>,
    /// The user's batch the token belongs to (missing: 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bat: Option<i64>,
}

/// The keys derived once from `RELATIONS_JWT_SECRET`.
#[derive(Clone)]
pub struct JwtKeys(Arc<Keys>);

/// Shared, so that cloning the state for each request copies a pointer, not the keys.
struct Keys {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
}

impl JwtKeys {
    /// Keys for an HS256 secret.
    pub fn new(secret: &str) -> Self {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.leeway = 5;
        validation.set_required_spec_claims(&["exp", "sub"]);
        Self(Arc::new(Keys {
            encoding: EncodingKey::from_secret(secret.as_bytes()),
            decoding: DecodingKey::from_secret(secret.as_bytes()),
            validation,
        }))
    }

    /// A token for `user`, valid for `ttl`.
    pub fn issue(&self, user: UserId, admin: bool, ttl: Duration) -> anyhow::Result<String> {
        self.issue_stamped(user, admin, ttl, None)
    }

    /// A token for `user`, valid for `ttl`, with a client, version and batch when given.
    pub fn issue_stamped(
        &self,
        user: UserId,
        admin: bool,
        ttl: Duration,
        stamp: Option<&TokenStamp>,
    ) -> anyhow::Result<String> {
        let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
        let claims = Claims {
            sub: user.to_string(),
            exp: now + ttl.as_secs(),
            iat: Some(now),
            roles: if admin { vec!["admin".into()] } else { vec![] },
            cli: stamp.map(|s| s.client.clone()),
            ver: stamp.map(|s| s.ver),
            bat: stamp.map(|s| s.bat),
        };
        Ok(jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &self.0.encoding,
        )?)
    }

    /// The actor a bearer token names, or why it names none.
    pub fn verify(&self, token: &str) -> Result<Actor, ApiError> {
        let data = jsonwebtoken::decode::<Claims>(token, &self.0.decoding, &self.0.validation)
            .map_err(|e| match e.kind() {
                jsonwebtoken::errors::ErrorKind::ExpiredSignature => {
                    ApiError::Unauthenticated("the token has expired")
                }
                jsonwebtoken::errors::ErrorKind::InvalidSignature => {
                    ApiError::Unauthenticated("the token's signature is invalid")
                }
                _ => ApiError::Unauthenticated("the token is malformed"),
            })?;
        let user = data
            .claims
            .sub
            .parse()
            .map_err(|_| ApiError::Unauthenticated("the token's sub is not a user id"))?;
        let claims = data.claims;
        Ok(Actor {
            user,
            admin: claims.roles.iter().any(|r| r == "admin"),
            stamp: TokenStamp {
                client: claims.cli.unwrap_or_default(),
                ver: claims.ver.unwrap_or(0),
                bat: claims.bat.unwrap_or(0),
            },
        })
    }
}

/// The authenticated caller.
#[derive(Debug, Clone)]
pub struct Actor {
    /// The token's `sub`.
    pub user: UserId,
    /// Whether the token carries the `admin` role.
    pub admin: bool,
    /// The token's client, version and batch (what revocations compare).
    pub stamp: TokenStamp,
}

/// Checks the bearer token of every routed request that carries one (see the module docs; it
/// is the router's route layer) and leaves
/// the [`Actor`] for the handlers; a request without a token goes on (routes that need one
/// answer 401 through the [`Actor`] extractor).
pub async fn check_bearer(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    if let Some(header) = request.headers().get(AUTHORIZATION) {
        let actor = match authenticate(&state, header).await {
            Ok(actor) => actor,
            Err(error) => return error.into_response(),
        };
        tracing::Span::current().record("user.id", actor.user.get());
        request.extensions_mut().insert(actor);
    }
    next.run(request).await
}

async fn authenticate(state: &AppState, header: &HeaderValue) -> Result<Actor, ApiError> {
    let token = header
        .to_str()
        .ok()
        .and_then(|h| h.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or(ApiError::Unauthenticated(
            "expected Authorization: Bearer <token>",
        ))?;
    let actor = state.jwt.verify(token)?;
    let (revoked, banned) = match state.graph.with(|g| {
        (
            g.accounts().refuses(actor.user, &actor.stamp),
            g.accounts().banned(actor.user),
        )
    }) {
        Some(answer) => answer,
        // The graph is still loading: read the account itself (startup only).
        None => {
            let account = relations_store::accounts::load(&state.pool, actor.user).await?;
            (account.refuses(&actor.stamp), account.banned)
        }
    };
    if revoked {
        return Err(ApiError::TokenRevoked);
    }
    if banned {
        return Err(ApiError::Forbidden {
            code: "USER_BANNED",
            message: "this user is banned".into(),
        });
    }
    Ok(actor)
}

impl FromRequestParts<AppState> for Actor {
    type Rejection = ApiError;

    /// The actor [`check_bearer`] authenticated.
    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<Actor>()
            .cloned()
            .ok_or(ApiError::Unauthenticated(
                "missing Authorization: Bearer <token>",
            ))
    }
}

/// The caller when the request carries a token ([`check_bearer`] checked it), else `None`.
impl axum::extract::OptionalFromRequestParts<AppState> for Actor {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        _: &AppState,
    ) -> Result<Option<Self>, Self::Rejection> {
        Ok(parts.extensions.get::<Actor>().cloned())
    }
}

/// The caller, who must hold the `admin` role (403 otherwise).
#[derive(Debug, Clone)]
pub struct Admin(pub Actor);

impl FromRequestParts<AppState> for Admin {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let actor = Actor::from_request_parts(parts, state).await?;
        if actor.admin {
            Ok(Admin(actor))
        } else {
            Err(ApiError::Forbidden {
                code: "FORBIDDEN",
                message: "this endpoint needs the admin role".into(),
            })
        }
    }
}
