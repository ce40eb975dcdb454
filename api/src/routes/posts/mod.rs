//! `/api/v1/posts[/{id}/*]`: publishing and deleting posts (rule 8), their likes and their
//! comments (seed 002), their reposts and quotes (issue 44), bookmarks (issue 46), reply controls (issue
//! 47), one file each.

mod bookmark;
mod comment;
mod comments;
mod delete;
mod detach;
mod like;
mod likes;
mod policy;
mod publish;
mod repost;
mod reposts;
mod unbookmark;
mod unlike;
mod unrepost;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

/// The post routes, each with its contract.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(publish::publish))
        .routes(routes!(delete::remove))
        .routes(routes!(like::like_post))
        .routes(routes!(unlike::unlike_post))
        .routes(routes!(likes::likers))
        .routes(routes!(repost::repost_post))
        .routes(routes!(unrepost::unrepost_post))
        .routes(routes!(reposts::reposters))
        .routes(routes!(bookmark::bookmark_post))
        .routes(routes!(unbookmark::unbookmark_post))
        .routes(routes!(policy::set_quote_policy))
        .routes(routes!(policy::set_comment_policy))
        .routes(routes!(detach::detach))
        .routes(routes!(comment::comment, comments::comments))
}
