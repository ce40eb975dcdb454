//! `/api/v1/comments/{id}[/*]`: deleting, liking and pinning a comment, and its replies, one
//! file each; [`visible`] holds the read rule every comment list keeps.

mod delete;
mod like;
mod pin;
mod replies;
mod unlike;
mod unpin;
pub mod visible;

use axum::http::StatusCode;
use relations_domain::{CommentId, ThreadCommand, UserId};
use relations_store::ThreadAnswer;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::ApiError;
use crate::routes::command::{CommandAnswer, CommandRequest};
use crate::routes::posts::live_post;
use crate::state::AppState;

/// The comment routes, each with its contract.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(delete::delete_comment))
        .routes(routes!(like::like_comment))
        .routes(routes!(unlike::unlike_comment))
        .routes(routes!(pin::pin))
        .routes(routes!(unpin::unpin))
        .routes(routes!(replies::replies))
}

/// A comment's post's author and its own author, while both the post and the comment are
/// live; else 404.
pub async fn live_comment(state: &AppState, id: CommentId) -> Result<(UserId, UserId), ApiError> {
    let post_author = live_post(state, id.post).await?;
    let thread = state.engagement.thread(id.post).await?;
    match thread.comment(id.n) {
        Some(c) if !c.deleted => Ok((post_author, c.author)),
        _ => Err(ApiError::NotFound),
    }
}

/// Decides a thread command (deleting or pinning a comment) and answers it.
async fn run_thread(
    state: AppState,
    mut request: CommandRequest,
    command: ThreadCommand,
) -> Result<CommandAnswer<ThreadAnswer>, ApiError> {
    let name = command.name();
    let id = match &command {
        ThreadCommand::Delete { comment, .. } | ThreadCommand::Pin { comment, .. } => {
            comment.to_string()
        }
        ThreadCommand::Add { post_id, .. } => post_id.to_string(),
    };
    let idempotency = request.admit(&state, name, &id).await?;
    let executed = state
        .engagement
        .thread_command(command, &request.metadata, idempotency.as_ref())
        .await?;
    Ok(CommandAnswer::new(name, executed, StatusCode::OK))
}

/// Pins (`pinned`) or unpins comment `id`, as the caller.
async fn run_pin(
    state: AppState,
    request: CommandRequest,
    comment: CommentId,
    pinned: bool,
) -> Result<CommandAnswer<ThreadAnswer>, ApiError> {
    let (post_author, _) = live_comment(&state, comment).await?;
    let command = ThreadCommand::Pin {
        comment,
        actor: request.actor(),
        post_author,
        pinned,
    };
    run_thread(state, request, command).await
}
