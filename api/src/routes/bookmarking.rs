//! A bookmark or an unbookmark (issue 46): rule 7, the post found readable by the caller (else
//! the key's first answer, if any), then the decision, answered. As a repost is
//! ([`super::reposting`]); nobody but the caller ever learns of it.

use axum::http::StatusCode;
use relations_domain::{BookmarkCommand, PostId};

use crate::error::ApiError;
use crate::outcome::Bookmarking;
use crate::routes::command::{answered_or, CommandAnswer, CommandRequest};
use crate::routes::readable::likable_post;
use crate::state::AppState;

/// Bookmarks (`bookmark`) or unbookmarks `post`: refused as not found when the caller may not
/// read it, as blocked across a block either way, each judged again in the command's
/// transaction. An unbookmark is judged as a bookmark (`relations_domain::Bookmark::decide`):
/// one of a post no longer readable is refused and the bookmark stays, out of the caller's
/// bookmarks until the post is readable again.
pub async fn bookmark(
    state: AppState,
    mut request: CommandRequest,
    post: PostId,
    bookmark: bool,
) -> Result<CommandAnswer<Bookmarking>, ApiError> {
    let name = BookmarkCommand::name_of(bookmark);
    let idempotency = request.admit(&state, name, &post.to_string()).await?;
    let actor = request.actor();
    let access = match likable_post(&state, actor, post).await {
        Ok(access) => access,
        Err(refusal) => return answered_or(&state, actor, idempotency.as_ref(), refusal).await,
    };
    let command = BookmarkCommand {
        user: actor,
        post,
        author: access.author,
        bookmark,
    };
    let executed = state
        .engagement
        .bookmark(command, access, &request.metadata, idempotency.as_ref())
        .await?;
    Ok(CommandAnswer::new(command.name(), executed, StatusCode::OK))
}
