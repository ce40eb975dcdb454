//! `PUT /api/v1/posts/{id}/quote_policy` (issue 44) and `.../comment_policy` (issue 47): the
//! author changes who may quote a post, or comment on it.

use axum::extract::State;
use axum::http::StatusCode;
use relations_domain::{CommentPolicy, PostCommand, PostId, QuotePolicy};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiJson, PathId};
use crate::outcome::Changed;
use crate::routes::command::{CommandAnswer, CommandRequest};
use crate::state::AppState;

/// `PUT /api/v1/posts/{id}/quote_policy` body.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
pub struct QuotePolicyBody {
    /// `anyone`, `followers` or `nobody`.
    pub quote_policy: QuotePolicy,
}

/// Sets who may quote the caller's post from now on (quotes made before stay):
/// `{changed, position}`; someone else's post 403, unknown 404.
#[utoipa::path(put, path = "/api/v1/posts/{id}/quote_policy", tag = "commands",
    request_body = QuotePolicyBody,
    params(("id" = String, Path, description = "The post"), CommandRequest),
    security(("bearer" = [])),
    responses((status = 200, body = Changed),
              (status = 400, body = ErrorBody, description = "INVALID_INPUT: an unknown quote policy"),
              (status = 401, body = ErrorBody),
              (status = 403, body = ErrorBody, description = "NOT_AUTHOR: someone else's post"),
              (status = 404, body = ErrorBody, description = "unknown, deleted or malformed id"),
              (status = 413, body = ErrorBody), (status = 415, body = ErrorBody),
              (status = 422, body = ErrorBody), (status = 429, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn set_quote_policy(
    State(state): State<AppState>,
    mut request: CommandRequest,
    PathId(post_id): PathId<PostId>,
    ApiJson(body): ApiJson<QuotePolicyBody>,
) -> Result<CommandAnswer<Changed>, ApiError> {
    let command = PostCommand::SetQuotePolicy {
        post_id,
        actor: request.actor(),
        quote_policy: body.quote_policy,
    };
    let fingerprint = (post_id, &body);
    set_policy(&state, &mut request, command, &fingerprint).await
}

/// `PUT /api/v1/posts/{id}/comment_policy` body.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
pub struct CommentPolicyBody {
    /// `everyone`, `followers`, `following` or `nobody`.
    pub comment_policy: CommentPolicy,
}

/// Sets who besides the author may comment on the caller's post or reply under it from now
/// on (comments made before stay): `{changed, position}`; someone else's post 403, unknown
/// 404.
#[utoipa::path(put, path = "/api/v1/posts/{id}/comment_policy", tag = "commands",
    request_body = CommentPolicyBody,
    params(("id" = String, Path, description = "The post"), CommandRequest),
    security(("bearer" = [])),
    responses((status = 200, body = Changed),
              (status = 400, body = ErrorBody, description = "INVALID_INPUT: an unknown comment policy"),
              (status = 401, body = ErrorBody),
              (status = 403, body = ErrorBody, description = "NOT_AUTHOR: someone else's post"),
              (status = 404, body = ErrorBody, description = "unknown, deleted or malformed id"),
              (status = 413, body = ErrorBody), (status = 415, body = ErrorBody),
              (status = 422, body = ErrorBody), (status = 429, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn set_comment_policy(
    State(state): State<AppState>,
    mut request: CommandRequest,
    PathId(post_id): PathId<PostId>,
    ApiJson(body): ApiJson<CommentPolicyBody>,
) -> Result<CommandAnswer<Changed>, ApiError> {
    let command = PostCommand::SetCommentPolicy {
        post_id,
        actor: request.actor(),
        comment_policy: body.comment_policy,
    };
    let fingerprint = (post_id, &body);
    set_policy(&state, &mut request, command, &fingerprint).await
}

/// A policy change under the request's key, answered `{changed, position}`.
async fn set_policy(
    state: &AppState,
    request: &mut CommandRequest,
    command: PostCommand,
    fingerprint: &impl Serialize,
) -> Result<CommandAnswer<Changed>, ApiError> {
    let name = command.name();
    let idempotency = request.admit(state, name, fingerprint).await?;
    let executed = state
        .posts
        .change(command, &request.metadata, idempotency.as_ref())
        .await?;
    Ok(CommandAnswer::new(name, executed, StatusCode::OK))
}
