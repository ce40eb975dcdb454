//! A like or an unlike, of a post or of a comment: rule 7, the target found readable (else
//! the key's first answer, if any), then the decision, answered.

use crate::outcome::Liking;
use axum::http::StatusCode;
use relations_domain::{LikeCommand, LikeTarget};

use crate::error::ApiError;
use crate::routes::command::{answered_or, CommandAnswer, CommandRequest};
use crate::routes::readable::{likable_post, live_comment};
use crate::state::AppState;

/// Likes (`like`) or unlikes `target`: found readable (a post) or live (a comment) by the
/// caller, rule 7, then the decision (refused as not found when the caller may not read the
/// post, or when the comment liked, found live at version `thread_seen` of its thread, was
/// deleted since).
pub async fn like(
    state: AppState,
    mut request: CommandRequest,
    target: LikeTarget,
    like: bool,
) -> Result<CommandAnswer<Liking>, ApiError> {
    let name = LikeCommand::name_of(like);
    let idempotency = request.admit(&state, name, &target.to_string()).await?;
    let actor = request.actor();
    let found = match target {
        LikeTarget::Post(post) => likable_post(&state, actor, post)
            .await
            .map(|access| (access.author, access, None)),
        LikeTarget::Comment(comment) => live_comment(&state, actor, comment)
            .await
            .map(|found| (found.author, found.post, Some(found.seen))),
    };
    let (author, post, thread_seen) = match found {
        Ok(found) => found,
        Err(refusal) => return answered_or(&state, actor, idempotency.as_ref(), refusal).await,
    };
    let command = LikeCommand {
        user: actor,
        target,
        author,
        like,
    };
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
