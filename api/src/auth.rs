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

use axum::extract::{FromRequestParts, Request, State};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use relations_domain::UserId;

use crate::error::ApiError;
pub use crate::jwt::{Actor, Claims, JwtKeys};
use crate::state::AppState;

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
    let (erased, revoked, banned) = match state.graph.with(|g| {
        (
            g.accounts().erased(actor.user),
            g.accounts().refuses(actor.user, &actor.stamp),
            g.accounts().banned(actor.user),
        )
    }) {
        Some(answer) => answer,
        // The graph is still loading: read the account itself (startup only).
        None => {
            let account = relations_store::accounts::load(&state.pool, actor.user).await?;
            (
                account.erased,
                account.refuses(&actor.stamp),
                account.banned,
            )
        }
    };
    // An erasure is final: it comes before any revocation or ban.
    if erased {
        return Err(ApiError::AccountErased);
    }
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

/// Whether `user` is erased, as the replica knows (or, while it loads, the account's stream).
pub async fn erased(state: &AppState, user: UserId) -> Result<bool, ApiError> {
    match state.graph.with(|g| g.accounts().erased(user)) {
        Some(erased) => Ok(erased),
        None => Ok(relations_store::accounts::load(&state.pool, user)
            .await?
            .erased),
    }
}

/// 401 `ACCOUNT_ERASED` if `user` is erased, as the log says now (the token check's replica may
/// be up to a second behind): for a read that must never answer after an erasure.
pub async fn refuse_erased_now(state: &AppState, user: UserId) -> Result<(), ApiError> {
    match relations_store::accounts::load(&state.pool, user)
        .await?
        .erased
    {
        true => Err(ApiError::AccountErased),
        false => Ok(()),
    }
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
