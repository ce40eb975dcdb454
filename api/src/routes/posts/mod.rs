//! `/api/v1/posts[/{id}/*]`: publishing and deleting posts (rule 8), their likes and their
//! comments (seed 002), one file each.

mod comment;
mod comments;
mod delete;
mod like;
mod likes;
mod publish;
mod unlike;

use axum::http::StatusCode;
use relations_domain::{LikeCommand, LikeTarget, Post, PostId, UserId};
use relations_store::Liking;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::ApiError;
use crate::routes::command::{CommandAnswer, CommandRequest};
use crate::state::AppState;

/// The post routes, each with its contract.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(publish::publish))
        .routes(routes!(delete::remove))
        .routes(routes!(like::like_post))
        .routes(routes!(unlike::unlike_post))
        .routes(routes!(likes::likers))
        .routes(routes!(comment::comment, comments::comments))
}

/// A post's author while it is live; an unknown or deleted post is 404.
pub async fn live_post(state: &AppState, id: PostId) -> Result<UserId, ApiError> {
    match state.posts.peek(id).await? {
        Post::Live { author } => Ok(author),
        Post::Unpublished | Post::Deleted { .. } => Err(ApiError::NotFound),
    }
}

/// Likes (`like`) or unlikes `target`, whose author is `author`: rule 7, then the decision.
pub async fn run_like(
    state: AppState,
    mut request: CommandRequest,
    target: LikeTarget,
    author: UserId,
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
        .like(command, &request.metadata, idempotency.as_ref())
        .await?;
    Ok(CommandAnswer::new(command.name(), executed, StatusCode::OK))
}
