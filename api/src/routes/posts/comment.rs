//! `POST /api/v1/posts/{id}/comments`: comments on a post, or replies to one of its comments.

use crate::outcome::{Commented, ThreadAnswer};
use axum::extract::State;
use axum::http::StatusCode;
use relations_domain::{CommentId, PostContent, PostId, UserId};
use relations_store::PostAccess;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiJson, PathId};
use crate::routes::command::{answered_or, CommandAnswer, CommandRequest};
use crate::routes::readable::live_comment;
use crate::routes::readable::live_post;
use crate::state::AppState;

/// A new comment's body.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CommentBody {
    /// 1 to 2000 characters.
    #[schema(value_type = String, min_length = 1, max_length = 2000, pattern = r"^[^\x00]*$")]
    pub content: PostContent,
    /// The comment replied to (a live comment of the same post), or null for a root comment.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub parent: Option<String>,
}

/// Comments on a post (a reply with `parent`): `201 {comment, position}`.
#[utoipa::path(post, path = "/api/v1/posts/{id}/comments", tag = "commands",
    request_body = CommentBody,
    params(("id" = String, Path), CommandRequest),
    security(("bearer" = [])),
    responses((status = 201, body = Commented, links(
                  ("like_comment" = (operation_id = "like_comment", parameters(("id" = "$response.body#/comment/id")))),
                  ("unlike_comment" = (operation_id = "unlike_comment", parameters(("id" = "$response.body#/comment/id")))),
                  ("pin" = (operation_id = "pin", parameters(("id" = "$response.body#/comment/id")))),
                  ("unpin" = (operation_id = "unpin", parameters(("id" = "$response.body#/comment/id")))),
                  ("replies" = (operation_id = "replies", parameters(("id" = "$response.body#/comment/id")))),
                  ("delete_comment" = (operation_id = "delete_comment", parameters(("id" = "$response.body#/comment/id")))))),
              (status = 400, body = ErrorBody),
              (status = 401, body = ErrorBody),
              (status = 403, body = ErrorBody, description = "BLOCKED: a block with the post's author, or with the author of the comment replied to; COMMENTS_RESTRICTED: the post's comment_policy keeps the caller out (issue 47)"),
              (status = 404, body = ErrorBody, description = "unknown post, or a parent that is not a live comment of it"),
              (status = 413, body = ErrorBody), (status = 415, body = ErrorBody),
              (status = 422, body = ErrorBody), (status = 429, body = ErrorBody),
              (status = 503, body = ErrorBody)))]
pub async fn comment(
    State(state): State<AppState>,
    mut request: CommandRequest,
    PathId(post): PathId<PostId>,
    ApiJson(body): ApiJson<CommentBody>,
) -> Result<CommandAnswer<ThreadAnswer>, ApiError> {
    let idempotency = request
        .admit(&state, "comment", &(post.to_string(), &body))
        .await?;
    let actor = request.actor();
    let (access, parent) = match found(&state, actor, post, body.parent.as_deref()).await {
        Ok(found) => found,
        Err(refusal) => return answered_or(&state, actor, idempotency.as_ref(), refusal).await,
    };
    let executed = state
        .engagement
        .comment(
            post,
            request.actor(),
            access,
            parent,
            body.content,
            &request.metadata,
            idempotency.as_ref(),
        )
        .await?;
    Ok(CommandAnswer::new("comment", executed, StatusCode::CREATED))
}

/// The post, live and readable by `actor`, and the parent comment (its number and author),
/// live and of the same post.
async fn found(
    state: &AppState,
    actor: UserId,
    post: PostId,
    parent: Option<&str>,
) -> Result<(PostAccess, Option<(u32, UserId)>), ApiError> {
    let access = live_post(state, actor, post).await?;
    let Some(raw) = parent else {
        return Ok((access, None));
    };
    let parent: CommentId = raw.parse().map_err(|_| ApiError::NotFound)?;
    let found = live_comment(state, actor, parent).await?;
    if parent.post != post {
        return Err(ApiError::NotFound);
    }
    Ok((access, Some((parent.n, found.author))))
}
