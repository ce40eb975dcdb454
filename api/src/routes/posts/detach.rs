//! `POST /api/v1/posts/{id}/detach` (issue 44): the quoted post's author detaches a quote.

use axum::extract::State;
use axum::http::StatusCode;
use relations_domain::{PostCommand, PostId};

use crate::error::{ApiError, ErrorBody};
use crate::extract::PathId;
use crate::outcome::Changed;
use crate::routes::command::{CommandAnswer, CommandRequest};
use crate::state::AppState;

/// Detaches the quote of post `id` (the quoting post): only the quoted post's author may;
/// `{changed, position}` (a second detach changes nothing). The quoting post then shows its
/// quote as `detached`, and no longer counts in the quoted post's `quote_count`.
#[utoipa::path(post, path = "/api/v1/posts/{id}/detach", tag = "commands",
    params(("id" = String, Path, description = "The quoting post"), CommandRequest),
    security(("bearer" = [])),
    responses((status = 200, body = Changed), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
              (status = 403, body = ErrorBody, description = "NOT_AUTHOR: not the quoted post's author, or the post quotes none"),
              (status = 404, body = ErrorBody, description = "unknown, deleted or malformed id"),
              (status = 422, body = ErrorBody), (status = 429, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn detach(
    State(state): State<AppState>,
    mut request: CommandRequest,
    PathId(post_id): PathId<PostId>,
) -> Result<CommandAnswer<Changed>, ApiError> {
    let command = PostCommand::Detach {
        post_id,
        actor: request.actor(),
    };
    let idempotency = request.admit(&state, command.name(), &post_id).await?;
    let executed = state
        .posts
        .change(command, &request.metadata, idempotency.as_ref())
        .await?;
    Ok(CommandAnswer::new("detach_quote", executed, StatusCode::OK))
}
