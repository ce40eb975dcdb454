//! Extractors whose rejections speak SPEC.md's error format.

use std::str::FromStr;

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Path, Request};
use axum::http::request::Parts;
use axum::http::StatusCode;
use relations_store::{Idempotency, IdempotencyKey};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tower_http::request_id::RequestId;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
use utoipa::openapi::Required;

use crate::error::ApiError;

/// The largest request body accepted (SPEC.md: over 64 KiB gets 413).
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// `axum::Json`, rejecting with 400/413/415 in our format. Every request body of this API is a
/// JSON object: serde would also read a struct from an array (`[2]`), so that is refused first.
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<serde_json::Map<String, serde_json::Value>>::from_request(req, state)
            .await
        {
            Ok(axum::Json(object)) => serde_json::from_value(serde_json::Value::Object(object))
                .map(Self)
                .map_err(|e| ApiError::InvalidInput(format!("invalid request body: {e}"))),
            Err(JsonRejection::MissingJsonContentType(_)) => {
                Err(ApiError::UnsupportedMediaType("application/json"))
            }
            Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                Err(ApiError::PayloadTooLarge(MAX_BODY_BYTES))
            }
            Err(JsonRejection::JsonDataError(e)) => Err(ApiError::InvalidInput(e.body_text())),
            Err(JsonRejection::JsonSyntaxError(e)) => Err(ApiError::InvalidInput(e.body_text())),
            Err(rejection) => Err(ApiError::InvalidInput(rejection.body_text())),
        }
    }
}

/// A `text/csv` request body, rejecting with 413/415 in our format.
pub struct ApiCsv(pub axum::body::Bytes);

impl<S: Send + Sync> FromRequest<S> for ApiCsv {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let csv = req
            .headers()
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim().to_ascii_lowercase().starts_with("text/csv"));
        if !csv {
            return Err(ApiError::UnsupportedMediaType("text/csv"));
        }
        match axum::body::Bytes::from_request(req, state).await {
            Ok(bytes) => Ok(Self(bytes)),
            Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                Err(ApiError::PayloadTooLarge(MAX_BODY_BYTES))
            }
            Err(rejection) => Err(ApiError::InvalidInput(rejection.body_text())),
        }
    }
}

/// `axum::extract::Query`, rejecting with 400 in our format.
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| Self(q.0))
            .map_err(|e: QueryRejection| ApiError::InvalidInput(e.body_text()))
    }
}

/// A path's `{id}`, parsed: an id that does not parse names nothing, so it is 404 `NOT_FOUND`
/// (SPEC.md: "an unknown or malformed id is 404"), whatever the id's type.
pub struct PathId<T>(pub T);

impl<S: Send + Sync, T: FromStr> FromRequestParts<S> for PathId<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let Path(raw) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|_| ApiError::NotFound)?;
        raw.parse().map(Self).map_err(|_| ApiError::NotFound)
    }
}

/// A live stream's optional `Last-Event-ID` header: the log position of the last event a
/// reconnecting client received; anything else is 400 `INVALID_INPUT`.
pub struct LastEventId(pub Option<relations_store::LogPosition>);

impl<S: Send + Sync> FromRequestParts<S> for LastEventId {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let Some(value) = parts.headers.get("last-event-id") else {
            return Ok(Self(None));
        };
        value
            .to_str()
            .ok()
            .and_then(|v| v.parse().ok())
            .map(|position| Self(Some(position)))
            .ok_or_else(|| {
                ApiError::InvalidInput("Last-Event-ID: an event id this stream sent".into())
            })
    }
}

/// The request's id, as set by the request-id layer (a client's `x-request-id`, or a new UUID).
pub struct ReqId(pub String);

impl<S: Send + Sync> FromRequestParts<S> for ReqId {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let id = parts
            .extensions
            .get::<RequestId>()
            .and_then(|id| id.header_value().to_str().ok())
            .unwrap_or("unknown");
        Ok(Self(id.to_owned()))
    }
}

/// The optional `Idempotency-Key` header, checked.
#[derive(Default)]
pub struct IdempotencyHeader(pub Option<IdempotencyKey>);

impl IdempotencyHeader {
    /// Binds the key to the request it came with.
    pub fn bind(self, operation: &str, request: &impl Serialize) -> Option<Idempotency> {
        self.0.map(|key| Idempotency::new(key, operation, request))
    }
}

impl utoipa::IntoParams for IdempotencyHeader {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        let schema = ObjectBuilder::new()
            .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
            .pattern(Some(r"^[!-~]{1,255}$"));
        vec![ParameterBuilder::new()
            .name("Idempotency-Key")
            .parameter_in(ParameterIn::Header)
            .description(Some("Replays the first answer for a retry"))
            .required(Required::False)
            .schema(Some(schema))
            .build()]
    }
}

impl<S: Send + Sync> FromRequestParts<S> for IdempotencyHeader {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let Some(value) = parts.headers.get("idempotency-key") else {
            return Ok(Self(None));
        };
        let bad =
            || ApiError::InvalidInput("Idempotency-Key: 1 to 255 visible ASCII characters".into());
        let value = value.to_str().map_err(|_| bad())?;
        IdempotencyKey::parse(value)
            .map(|k| Self(Some(k)))
            .map_err(|_| bad())
    }
}
