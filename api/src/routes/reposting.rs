//! A repost or an unrepost (issue 44): rule 7 and the key's first answer, the post found
//! readable by the caller, then the decision, answered.

use axum::http::StatusCode;
use relations_domain::{PostId, RepostCommand};

use crate::error::ApiError;
use crate::outcome::Reposting;
use crate::routes::command::{prior, CommandAnswer, CommandRequest};
use crate::routes::readable::likable_post;
use crate::state::AppState;

/// Reposts (`repost`) or unreposts `post`: refused as not found when the caller may not read
/// it, as blocked across a block either way, as not repostable when it is `followers` only or
/// its author locked; each judged again in the command's transaction.
pub async fn repost(
    state: AppState,
    mut request: CommandRequest,
    post: PostId,
    repost: bool,
) -> Result<CommandAnswer<Reposting>, ApiError> {
    let name = if repost { "repost" } else { "unrepost" };
    let idempotency = request.admit(&state, name, &post.to_string()).await?;
    // A retry whose first attempt took effect is answered as it was, even if the post is no
    // longer readable to the caller (the fault trial found such retries refused 404).
    if let Some(first) = prior(&state, request.actor(), idempotency.as_ref()).await? {
        return Ok(CommandAnswer::replay(first));
    }
    let access = likable_post(&state, request.actor(), post).await?;
    let command = RepostCommand {
        user: request.actor(),
        post,
        author: access.author,
        repost,
    };
    debug_assert_eq!(command.name(), name);
    let executed = state
        .engagement
        .repost(command, access, &request.metadata, idempotency.as_ref())
        .await?;
    Ok(CommandAnswer::new(command.name(), executed, StatusCode::OK))
}
