//! Authentication: HS256 JWTs whose `sub` is the actor. The actor is only ever taken from the
//! token, never from the request (seed 000).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use relations_domain::UserId;
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
}

/// The keys derived once from `RELATIONS_JWT_SECRET`.
#[derive(Clone)]
pub struct JwtKeys {
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
        Self {
            encoding: EncodingKey::from_secret(secret.as_bytes()),
            decoding: DecodingKey::from_secret(secret.as_bytes()),
            validation,
        }
    }

    /// A token for `user`, valid for `ttl`.
    pub fn issue(&self, user: UserId, admin: bool, ttl: Duration) -> anyhow::Result<String> {
        let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
        let claims = Claims {
            sub: user.to_string(),
            exp: now + ttl.as_secs(),
            iat: Some(now),
            roles: if admin { vec!["admin".into()] } else { vec![] },
        };
        Ok(jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &self.encoding,
        )?)
    }

    /// The actor a bearer token names, or why it names none.
    pub fn verify(&self, token: &str) -> Result<Actor, ApiError> {
        let data = jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation)
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
        Ok(Actor {
            user,
            admin: data.claims.roles.iter().any(|r| r == "admin"),
        })
    }
}

/// The authenticated caller.
#[derive(Debug, Clone, Copy)]
pub struct Actor {
    /// The token's `sub`.
    pub user: UserId,
    /// Whether the token carries the `admin` role.
    pub admin: bool,
}

impl FromRequestParts<AppState> for Actor {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let header = parts
            .headers
            .get(AUTHORIZATION)
            .ok_or(ApiError::Unauthenticated(
                "missing Authorization: Bearer <token>",
            ))?;
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
        tracing::Span::current().record("user.id", actor.user.get());
        Ok(actor)
    }
}

/// The caller, who must hold the `admin` role (403 otherwise).
#[derive(Debug, Clone, Copy)]
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
