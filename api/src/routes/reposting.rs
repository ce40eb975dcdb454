//! A repost or an unrepost (issue 44): rule 7, the post found readable by the caller (else
//! the key's first answer, if any), then the decision, answered.

use axum::http::StatusCode;
use relations_domain::{PostId, RepostCommand};

use crate::error::ApiError;
use crate::outcome::Reposting;
use crate::routes::command::{answered_or, CommandAnswer, CommandRequest};
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
    let name = RepostCommand::name_of(repost);
    let idempotency = request.admit(&state, name, &post.to_string()).await?;
    let actor = request.actor();
    let access = match likable_post(&state, actor, post).await {
        Ok(access) => access,
        Err(refusal) => return answered_or(&state, actor, idempotency.as_ref(), refusal).await,
    };
    let command = RepostCommand {
        user: actor,
        post,
        author: access.author,
        repost,
    };
    let executed = state
        .engagement
        .repost(command, access, &request.metadata, idempotency.as_ref())
        .await?;
    Ok(CommandAnswer::new(command.name(), executed, StatusCode::OK))
}
