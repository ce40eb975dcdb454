//! A like or an unlike, of a post or of a comment: rule 7, then the decision, answered.

use crate::outcome::Liking;
use axum::http::StatusCode;
use relations_domain::{LikeCommand, LikeTarget, UserId};
use relations_store::PostAccess;

use crate::error::ApiError;
use crate::routes::command::{CommandAnswer, CommandRequest};
use crate::state::AppState;

/// Likes (`like`) or unlikes `target`, whose author is `author`, on `post`: rule 7, then the
/// decision (refused as not found when the caller may not read the post, or when the comment
/// liked, found live at version `thread_seen` of its thread, was deleted since).
pub async fn run_like(
    state: AppState,
    mut request: CommandRequest,
    target: LikeTarget,
    author: UserId,
    post: PostAccess,
    thread_seen: Option<usize>,
    like: bool,
) -> Result<CommandAnswer<Liking>, ApiError> {
    let command = LikeCommand {
        user: request.actor(),
        target,
        author,
        like,
    };
    let idempotency = request
        .admit(&state, command.name(), &target.to_string())
        .await?;
    let executed = state
        .engagement
        .like(
            command,
            post,
            thread_seen,
            &request.metadata,
            idempotency.as_ref(),
        )
        .await?;
    Ok(CommandAnswer::new(command.name(), executed, StatusCode::OK))
}
