//! The one error type every handler returns, and how it becomes SPEC.md's error body:
//! `{"error": {"code": "SNAKE_CASE_CODE", "message": "..."}}`. 5xx bodies are opaque; their
//! cause is logged once, here.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use relations_domain::{
    BookmarkError, FilterError, LikeError, ListError, PostError, RelationError, RepostError,
    ThreadError,
};
use relations_projections::ProjectionError;
use relations_store::StoreError;
use serde::Serialize;
use utoipa::ToSchema;

/// Every error answer's body: `{"error": {"code", "message"}}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// An error's code and message.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// SNAKE_CASE code, stable for clients.
    pub code: &'static str,
    /// For humans; opaque for 5xx.
    pub message: String,
    /// The line of an uploaded file the error is about (CSV imports), counting the header as 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
}

/// Why a request was not answered with success.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400: the request is malformed or a value is out of range.
    #[error("{0}")]
    InvalidInput(String),
    /// 400: rule 1.
    #[error("a user has no relation with themselves")]
    SelfRelation,
    /// 401: no valid token.
    #[error("{0}")]
    Unauthenticated(&'static str),
    /// 403 with a code.
    #[error("{message}")]
    Forbidden {
        /// The error code.
        code: &'static str,
        /// What to tell the client.
        message: String,
    },
    /// 403 `HIDDEN` (issue 26): the user hides their graph (or is locked) from the caller.
    #[error("this user's graph is hidden from you")]
    Hidden,
    /// 404.
    #[error("not found")]
    NotFound,
    /// 409 with a code.
    #[error("{message}")]
    Conflict {
        /// The error code.
        code: &'static str,
        /// What to tell the client.
        message: String,
    },
    /// 401: the token was revoked (a logout, or the sign-on service's revocation).
    #[error("this token has been revoked")]
    TokenRevoked,
    /// 401: the token's user is erased (issue 25); no token of theirs is accepted again.
    #[error("this account is erased")]
    AccountErased,
    /// 413.
    #[error("request body larger than {0} bytes")]
    PayloadTooLarge(usize),
    /// 415, with the content type expected.
    #[error("expected Content-Type: {0}")]
    UnsupportedMediaType(&'static str),
    /// 400: an uploaded CSV file is malformed (`INVALID_CSV`) or too long (`TOO_MANY_LINES`).
    #[error("line {line}: {message}")]
    BadCsv {
        /// The error code.
        code: &'static str,
        /// The line at fault (the header is line 1).
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// 422: an Idempotency-Key reused with another request.
    #[error("this Idempotency-Key was used with another request")]
    IdempotencyKeyReused,
    /// 429: rule 7.
    #[error("too many commands; retry after {retry_after_secs} s")]
    RateLimited {
        /// Seconds until a token is available.
        retry_after_secs: u64,
    },
    /// 429: the user holds as many live streams as allowed (SPEC, "Hardening").
    #[error("at most {0} live streams per user are open at once; close one first")]
    TooManyStreams(usize),
    /// 503: a dependency is down or overloaded, or the request ran out of time.
    #[error("{0}")]
    Unavailable(&'static str),
    /// 503: `min_position` was not reached in time.
    #[error("the read models have not caught up with that position yet")]
    NotCaughtUp,
    /// 500: a bug or an unexpected failure; the client learns nothing more.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl ApiError {
    /// The code the client sees.
    pub fn code(&self) -> &'static str {
        self.status_and_code().1
    }

    /// Whether the request, not the service, is at fault (4xx).
    pub fn is_client_error(&self) -> bool {
        self.status_and_code().0.is_client_error()
    }

    /// The status and code the client sees.
    fn status_and_code(&self) -> (StatusCode, &'static str) {
        match self {
            ApiError::InvalidInput(_) => (StatusCode::BAD_REQUEST, "INVALID_INPUT"),
            ApiError::SelfRelation => (StatusCode::BAD_REQUEST, "SELF_RELATION"),
            ApiError::Unauthenticated(_) => (StatusCode::UNAUTHORIZED, "UNAUTHENTICATED"),
            ApiError::TokenRevoked => (StatusCode::UNAUTHORIZED, "TOKEN_REVOKED"),
            ApiError::AccountErased => (StatusCode::UNAUTHORIZED, "ACCOUNT_ERASED"),
            ApiError::Forbidden { code, .. } => (StatusCode::FORBIDDEN, code),
            ApiError::Hidden => (StatusCode::FORBIDDEN, "HIDDEN"),
            ApiError::NotFound => (StatusCode::NOT_FOUND, "NOT_FOUND"),
            ApiError::Conflict { code, .. } => (StatusCode::CONFLICT, code),
            ApiError::PayloadTooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, "PAYLOAD_TOO_LARGE"),
            ApiError::BadCsv { code, .. } => (StatusCode::BAD_REQUEST, code),
            ApiError::UnsupportedMediaType(_) => {
                (StatusCode::UNSUPPORTED_MEDIA_TYPE, "UNSUPPORTED_MEDIA_TYPE")
            }
            ApiError::IdempotencyKeyReused => {
                (StatusCode::UNPROCESSABLE_ENTITY, "IDEMPOTENCY_KEY_REUSED")
            }
            ApiError::RateLimited { .. } => (StatusCode::TOO_MANY_REQUESTS, "RATE_LIMITED"),
            ApiError::TooManyStreams(_) => (StatusCode::TOO_MANY_REQUESTS, "TOO_MANY_STREAMS"),
            ApiError::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "UNAVAILABLE"),
            ApiError::NotCaughtUp => (StatusCode::SERVICE_UNAVAILABLE, "NOT_CAUGHT_UP"),
            ApiError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL"),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = self.status_and_code();
        metrics::counter!("relations_errors_total", "code" => code).increment(1);
        let message = match &self {
            ApiError::Internal(error) => {
                tracing::error!(error = format!("{error:#}"), "request failed");
                "internal error".to_owned()
            }
            other => other.to_string(),
        };
        let retry_after = match &self {
            ApiError::RateLimited { retry_after_secs } => Some(*retry_after_secs),
            ApiError::Unavailable(_) | ApiError::NotCaughtUp => Some(1),
            _ => None,
        };
        let mut response = (
            status,
            Json(ErrorBody {
                error: ErrorDetail {
                    code,
                    message,
                    line: match &self {
                        ApiError::BadCsv { line, .. } => Some(*line),
                        _ => None,
                    },
                },
            }),
        )
            .into_response();
        if let Some(secs) = retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs.max(1)));
        }
        response
    }
}

impl From<RelationError> for ApiError {
    fn from(error: RelationError) -> Self {
        let message = error.to_string();
        match error {
            RelationError::SelfRelation => ApiError::SelfRelation,
            RelationError::Blocked => ApiError::Forbidden {
                code: "BLOCKED",
                message,
            },
            RelationError::BlockingTarget => ApiError::Conflict {
                code: "BLOCKING_TARGET",
                message,
            },
            RelationError::FollowLimitReached { .. } => ApiError::Conflict {
                code: "FOLLOW_LIMIT_REACHED",
                message,
            },
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Rejected(rejection) => rejection.into(),
            StoreError::PostRejected(rejection) => rejection.into(),
            StoreError::ThreadRejected(rejection) => {
                let message = rejection.to_string();
                match rejection {
                    ThreadError::Blocked => ApiError::Forbidden {
                        code: "BLOCKED",
                        message,
                    },
                    ThreadError::NotFound => ApiError::NotFound,
                    ThreadError::NotAllowed => ApiError::Forbidden {
                        code: "NOT_ALLOWED",
                        message,
                    },
                    ThreadError::CommentsRestricted => ApiError::Forbidden {
                        code: "COMMENTS_RESTRICTED",
                        message,
                    },
                }
            }
            StoreError::LikeRejected(LikeError::Blocked) => ApiError::Forbidden {
                code: "BLOCKED",
                message: LikeError::Blocked.to_string(),
            },
            StoreError::LikeRejected(LikeError::NotFound) => ApiError::NotFound,
            StoreError::RepostRejected(rejection) => {
                let message = rejection.to_string();
                match rejection {
                    RepostError::NotFound => ApiError::NotFound,
                    RepostError::Blocked => ApiError::Forbidden {
                        code: "BLOCKED",
                        message,
                    },
                    RepostError::NotRepostable => ApiError::Forbidden {
                        code: "NOT_REPOSTABLE",
                        message,
                    },
                }
            }
            StoreError::BookmarkRejected(BookmarkError::NotFound) => ApiError::NotFound,
            StoreError::BookmarkRejected(BookmarkError::Blocked) => ApiError::Forbidden {
                code: "BLOCKED",
                message: BookmarkError::Blocked.to_string(),
            },
            StoreError::ListRejected(rejection) => list_refused(rejection),
            StoreError::FilterRejected(rejection) => filter_refused(rejection),
            // A command naming an erased user names nobody.
            StoreError::Erased => ApiError::NotFound,
            StoreError::IdempotencyKeyReused => ApiError::IdempotencyKeyReused,
            unavailable if unavailable.is_unavailable() => {
                tracing::warn!(error = %unavailable, "store unavailable");
                ApiError::Unavailable("the event store is unavailable; retry shortly")
            }
            other => ApiError::Internal(anyhow::Error::new(other).context("event store")),
        }
    }
}

impl From<PostError> for ApiError {
    fn from(error: PostError) -> Self {
        let message = error.to_string();
        match error {
            PostError::NotFound => ApiError::NotFound,
            PostError::NotAuthor => ApiError::Forbidden {
                code: "NOT_AUTHOR",
                message,
            },
            PostError::AlreadyExists => ApiError::Conflict {
                code: "POST_EXISTS",
                message,
            },
            PostError::QuotedNotFound => ApiError::NotFound,
            PostError::Blocked => ApiError::Forbidden {
                code: "BLOCKED",
                message,
            },
            PostError::NotQuotable => ApiError::Forbidden {
                code: "NOT_QUOTABLE",
                message,
            },
            // Only the quoted post's author may detach (SPEC: anyone else 403).
            PostError::NotQuotedAuthor => ApiError::Forbidden {
                code: "NOT_AUTHOR",
                message,
            },
        }
    }
}

impl From<ProjectionError> for ApiError {
    fn from(error: ProjectionError) -> Self {
        match error {
            ProjectionError::Database(error) => error.into(),
            other => ApiError::Internal(anyhow::Error::new(other).context("read model")),
        }
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(error: sqlx::Error) -> Self {
        StoreError::from(error).into()
    }
}

/// A list command's refusal (issue 46), as the API answers it.
fn list_refused(rejection: ListError) -> ApiError {
    let message = rejection.to_string();
    match rejection {
        ListError::NotFound => ApiError::NotFound,
        ListError::LimitReached => ApiError::Conflict {
            code: "LIST_LIMIT_REACHED",
            message,
        },
        ListError::NotFollowing => ApiError::Conflict {
            code: "NOT_FOLLOWING",
            message,
        },
    }
}

/// A filter command's refusal (issue 47), as the API answers it.
fn filter_refused(rejection: FilterError) -> ApiError {
    let message = rejection.to_string();
    match rejection {
        FilterError::NotFound => ApiError::NotFound,
        FilterError::LimitReached => ApiError::Conflict {
            code: "FILTER_LIMIT_REACHED",
            message,
        },
        FilterError::Invalid => ApiError::InvalidInput(message),
    }
}
