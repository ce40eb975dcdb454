//! The comment commands (deleting and pinning a comment): rule 7, the comment found live
//! (else the key's first answer, if any), then the decision, answered.

use crate::outcome::ThreadAnswer;
use axum::http::StatusCode;
use relations_domain::{CommentAct, CommentId};

use crate::error::ApiError;
use crate::routes::command::{answered_or, CommandAnswer, CommandRequest};
use crate::routes::readable::live_comment;
use crate::state::AppState;

/// Does `act` to comment `comment` as the caller and answers it.
pub async fn run_thread(
    state: AppState,
    mut request: CommandRequest,
    comment: CommentId,
    act: CommentAct,
) -> Result<CommandAnswer<ThreadAnswer>, ApiError> {
    let name = act.name();
    let idempotency = request.admit(&state, name, &comment.to_string()).await?;
    let actor = request.actor();
    let found = match live_comment(&state, actor, comment).await {
        Ok(found) => found,
        Err(refusal) => return answered_or(&state, actor, idempotency.as_ref(), refusal).await,
    };
    let command = act.command(comment, actor, found.post.author, found.author);
    let executed = state
        .engagement
        .thread_command(command, found.post, &request.metadata, idempotency.as_ref())
        .await?;
    Ok(CommandAnswer::new(name, executed, StatusCode::OK))
}
