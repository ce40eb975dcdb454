//! A like or an unlike, of a post or of a comment: rule 7 and the key's first answer, the
//! target found readable, then the decision, answered.

use crate::outcome::Liking;
use axum::http::StatusCode;
use relations_domain::{LikeCommand, LikeTarget};

use crate::error::ApiError;
use crate::routes::command::{prior, CommandAnswer, CommandRequest};
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
    let name = if like { "like" } else { "unlike" };
    let idempotency = request.admit(&state, name, &target.to_string()).await?;
    // A retry whose first attempt took effect is answered as it was, even if the post is no
    // longer readable to the caller (the fault trial found such retries refused 404).
    if let Some(first) = prior(&state, request.actor(), idempotency.as_ref()).await? {
        return Ok(CommandAnswer::replay(first));
    }
    let (author, post, thread_seen) = match target {
        LikeTarget::Post(post) => {
            let access = likable_post(&state, request.actor(), post).await?;
            (access.author, access, None)
        }
        LikeTarget::Comment(comment) => {
            let found = live_comment(&state, request.actor(), comment).await?;
            (found.author, found.post, Some(found.seen))
        }
    };
    let command = LikeCommand {
        user: request.actor(),
        target,
        author,
        like,
    };
    debug_assert_eq!(command.name(), name);
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
