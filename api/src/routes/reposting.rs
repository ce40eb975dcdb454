//! A repost or an unrepost (issue 44): the post found readable by the caller, rule 7, then
//! the decision, answered.

use axum::http::StatusCode;
use relations_domain::{PostId, RepostCommand};

use crate::error::ApiError;
use crate::outcome::Reposting;
use crate::routes::command::{CommandAnswer, CommandRequest};
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
    let access = likable_post(&state, request.actor(), post).await?;
    let command = RepostCommand {
        user: request.actor(),
        post,
        author: access.author,
        repost,
    };
    let idempotency = request
        .admit(&state, command.name(), &post.to_string())
        .await?;
    let executed = state
        .engagement
        .repost(command, access, &request.metadata, idempotency.as_ref())
        .await?;
    Ok(CommandAnswer::new(command.name(), executed, StatusCode::OK))
}
