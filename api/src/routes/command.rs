//! What every command route shares: authenticate, take the request id and the Idempotency-Key
//! ([`CommandRequest`]), admit the command under rule 7, and answer with the decision or the
//! stored first answer ([`CommandAnswer`]).

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use relations_domain::UserId;
use relations_store::idempotency::{self, Prior};
use relations_store::{EventMetadata, Executed, Idempotency, StoredAnswer};
use serde::Serialize;

use crate::auth::Actor;
use crate::error::ApiError;
use crate::extract::{IdempotencyHeader, ReqId};
use crate::state::AppState;

/// A command request's envelope, extracted in the order its errors are reported: the bearer
/// token (401), then the Idempotency-Key header (400); the body comes after.
pub struct CommandRequest {
    /// Who issues the command, and the request it came through (the events' metadata).
    pub metadata: EventMetadata,
    key: IdempotencyHeader,
}

impl FromRequestParts<AppState> for CommandRequest {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let actor = Actor::from_request_parts(parts, state).await?;
        let ReqId(request_id) = ReqId::from_request_parts(parts, state).await?;
        let key = IdempotencyHeader::from_request_parts(parts, state).await?;
        Ok(Self {
            metadata: EventMetadata {
                request_id,
                actor: actor.user,
            },
            key,
        })
    }
}

/// A command's documented parameter: its optional `Idempotency-Key` header.
impl utoipa::IntoParams for CommandRequest {
    fn into_params(
        parameter_in: impl Fn() -> Option<utoipa::openapi::path::ParameterIn>,
    ) -> Vec<utoipa::openapi::path::Parameter> {
        IdempotencyHeader::into_params(parameter_in)
    }
}

impl CommandRequest {
    /// The authenticated user.
    pub fn actor(&self) -> UserId {
        self.metadata.actor
    }

    /// Rule 7 (every command draws on the actor's bucket), then the Idempotency-Key bound to
    /// `operation` and `request`.
    pub async fn admit(
        &mut self,
        state: &AppState,
        operation: &str,
        request: &impl Serialize,
    ) -> Result<Option<Idempotency>, ApiError> {
        state.limiter.enforce(self.actor()).await?;
        Ok(std::mem::take(&mut self.key).bind(operation, request))
    }
}

/// The first answer `actor`'s key holds for this very request, if it was answered. A key used
/// for another request is `IDEMPOTENCY_KEY_REUSED`.
pub async fn prior(
    state: &AppState,
    actor: UserId,
    idempotency: Option<&Idempotency>,
) -> Result<Option<StoredAnswer>, ApiError> {
    let Some(idem) = idempotency else {
        return Ok(None);
    };
    match idempotency::prior(&state.pool, actor, idem).await? {
        Prior::Unused => Ok(None),
        Prior::Answered(first) => Ok(Some(first)),
        Prior::Reused => Err(ApiError::IdempotencyKeyReused),
    }
}

/// `refusal`, found before the decision (a post no longer readable to the caller, say),
/// unless the key already holds an answer to this very request: a retry whose first attempt
/// took effect gets that answer again, not a new judgement of a world that has moved on (the
/// fault trial found such retries refused 404). Only refusals pay for the lookup; the executor
/// replays the others.
pub async fn answered_or<T>(
    state: &AppState,
    actor: UserId,
    idempotency: Option<&Idempotency>,
    refusal: ApiError,
) -> Result<CommandAnswer<T>, ApiError> {
    match prior(state, actor, idempotency).await? {
        Some(first) => Ok(CommandAnswer::replay(first)),
        None => Err(refusal),
    }
}

/// A command's answer: the decision with its status, or a replay of the first answer (its own
/// status, and `idempotent-replayed: true`).
pub struct CommandAnswer<T> {
    executed: Executed<T>,
    status: StatusCode,
}

impl<T> CommandAnswer<T> {
    /// `executed` by `operation`, shown as the view `T` and answered with `status` when fresh;
    /// counted.
    pub fn new<O: Into<T>>(
        operation: &'static str,
        executed: Executed<O>,
        status: StatusCode,
    ) -> Self {
        metrics::counter!("relations_commands_total", "command" => operation).increment(1);
        Self {
            executed: executed.map(Into::into),
            status,
        }
    }

    /// A first answer given again before anything was decided (not counted: nothing ran).
    pub fn replay(first: StoredAnswer) -> Self {
        Self {
            executed: Executed::Replayed(first),
            status: StatusCode::OK,
        }
    }
}

impl<T: Serialize> IntoResponse for CommandAnswer<T> {
    fn into_response(self) -> Response {
        match self.executed {
            Executed::Fresh(outcome) => (self.status, Json(outcome)).into_response(),
            Executed::Replayed(stored) => {
                let status = StatusCode::from_u16(stored.code).unwrap_or(self.status);
                (status, [("idempotent-replayed", "true")], Json(stored.body)).into_response()
            }
        }
    }
}
