//! The comment commands (deleting and pinning a comment), decided and answered.

use crate::outcome::ThreadAnswer;
use axum::http::StatusCode;
use relations_domain::{CommentId, ThreadCommand};
use relations_store::PostAccess;

use crate::error::ApiError;
use crate::routes::command::{CommandAnswer, CommandRequest};
use crate::routes::readable::live_comment;
use crate::state::AppState;

/// Decides a thread command (deleting or pinning a comment) on `post` and answers it.
pub async fn run_thread(
    state: AppState,
    mut request: CommandRequest,
    command: ThreadCommand,
    post: PostAccess,
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
        .thread_command(command, post, &request.metadata, idempotency.as_ref())
        .await?;
    Ok(CommandAnswer::new(name, executed, StatusCode::OK))
}

/// Pins (`pinned`) or unpins comment `id`, as the caller.
pub async fn run_pin(
    state: AppState,
    request: CommandRequest,
    comment: CommentId,
    pinned: bool,
) -> Result<CommandAnswer<ThreadAnswer>, ApiError> {
    let found = live_comment(&state, request.actor(), comment).await?;
    let command = ThreadCommand::Pin {
        comment,
        actor: request.actor(),
        post_author: found.post.author,
        comment_author: found.author,
        pinned,
    };
    run_thread(state, request, command, found.post).await
}
