//! Likes and comments (seed 002): `/api/v1/posts/{id}/{like,unlike,likes,comments}`,
//! `/api/v1/comments/{id}[/{like,unlike,pin,unpin,replies}]`, `/api/v1/me/liked`, and the
//! like and comment counts every `Post` answer carries.

use std::collections::HashSet;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use relations_domain::{
    CommentId, LikeCommand, LikeTarget, Post, PostContent, PostId, ThreadCommand, UserId,
};
use relations_projections::engagement::query::{self as read, CommentKey, Sort};
use relations_projections::views::{CommentView, PostView};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, OpenApi, ToSchema};

use crate::auth::Actor;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiJson, ApiQuery};
use crate::outcome::{Commented, Deleted, Liking, Pinned, ThreadAnswer};
use crate::routes::command::{CommandAnswer, CommandRequest};
use crate::routes::query::{graph_source, limit, Cursor, CursorPage, KeyedParams};
use crate::routes::users::cursor_page;
use crate::state::AppState;

/// The engagement routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/posts/{id}/like", post(like_post))
        .route("/api/v1/posts/{id}/unlike", post(unlike_post))
        .route("/api/v1/posts/{id}/likes", get(likers))
        .route("/api/v1/posts/{id}/comments", post(comment).get(comments))
        .route("/api/v1/comments/{id}", delete(delete_comment))
        .route("/api/v1/comments/{id}/like", post(like_comment))
        .route("/api/v1/comments/{id}/unlike", post(unlike_comment))
        .route("/api/v1/comments/{id}/pin", post(pin))
        .route("/api/v1/comments/{id}/unpin", post(unpin))
        .route("/api/v1/comments/{id}/replies", get(replies))
        .route("/api/v1/me/liked", get(liked))
}

/// The engagement routes' contract.
#[derive(OpenApi)]
#[openapi(paths(
    like_post,
    unlike_post,
    likers,
    comment,
    comments,
    delete_comment,
    like_comment,
    unlike_comment,
    pin,
    unpin,
    replies,
    liked
))]
pub struct Doc;

/// Fills `posts`' like and comment counts, and for a bearer whether they like each one: one
/// read of the counts for the page, and one check of the like-state cache.
pub async fn with_engagement(
    state: &AppState,
    posts: &mut [PostView],
    viewer: Option<UserId>,
) -> Result<(), ApiError> {
    if posts.is_empty() {
        return Ok(());
    }
    let ids: Vec<PostId> = posts.iter().map(|p| p.id).collect();
    let stats = read::post_stats(&state.pool, &ids).await?;
    let liked = match viewer {
        Some(viewer) => Some(state.likes.liked(&state.pool, viewer, &ids).await?),
        None => None,
    };
    for (i, post) in posts.iter_mut().enumerate() {
        let (likes, comments) = stats.get(&post.id).copied().unwrap_or((0, 0));
        post.like_count = likes;
        post.comment_count = comments;
        post.liked = liked.as_ref().map(|l| l[i]);
    }
    Ok(())
}

/// The `{id}` of a post: its author while it is live, else 404.
async fn live_post(state: &AppState, raw: &str) -> Result<(PostId, UserId), ApiError> {
    let id: PostId = raw.parse().map_err(|_| ApiError::NotFound)?;
    match state.posts.peek(id).await? {
        Post::Live { author } => Ok((id, author)),
        Post::Unpublished | Post::Deleted { .. } => Err(ApiError::NotFound),
    }
}

/// The `{id}` of a comment: its post's author and its own author, while both are live.
async fn live_comment(
    state: &AppState,
    raw: &str,
) -> Result<(CommentId, UserId, UserId), ApiError> {
    let id: CommentId = raw.parse().map_err(|_| ApiError::NotFound)?;
    let (_, post_author) = live_post(state, &id.post.to_string()).await?;
    let thread = state.engagement.thread(id.post).await?;
    match thread.comment(id.n) {
        Some(c) if !c.deleted => Ok((id, post_author, c.author)),
        _ => Err(ApiError::NotFound),
    }
}

async fn run_like(
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

macro_rules! like_route {
    ($fn:ident, $path:literal, $like:expr, $lookup:ident, $target:expr, $summary:literal) => {
        #[doc = $summary]
        #[utoipa::path(post, path = $path, tag = "commands",
            params(("id" = String, Path),
                   ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer for a retry", pattern = r"^[!-~]{1,255}$")),
            security(("bearer" = [])),
            responses((status = 200, body = Liking), (status = 400, body = ErrorBody),
                      (status = 401, body = ErrorBody),
                      (status = 403, body = ErrorBody, description = "BLOCKED: a block either way"),
                      (status = 404, body = ErrorBody, description = "unknown, deleted or malformed id"),
                      (status = 422, body = ErrorBody), (status = 429, body = ErrorBody),
                      (status = 503, body = ErrorBody)))]
        async fn $fn(
            State(state): State<AppState>,
            request: CommandRequest,
            Path(id): Path<String>,
        ) -> Result<CommandAnswer<Liking>, ApiError> {
            let found = $lookup(&state, &id).await?;
            let (target, author) = ($target)(found);
            run_like(state, request, target, author, $like).await
        }
    };
}

like_route!(
    like_post,
    "/api/v1/posts/{id}/like",
    true,
    live_post,
    |(post, author)| (LikeTarget::Post(post), author),
    "Like a post: `{changed, liked, position}`."
);
like_route!(
    unlike_post,
    "/api/v1/posts/{id}/unlike",
    false,
    live_post,
    |(post, author)| (LikeTarget::Post(post), author),
    "Take back a like of a post."
);
like_route!(
    like_comment,
    "/api/v1/comments/{id}/like",
    true,
    live_comment,
    |(comment, _, author)| (LikeTarget::Comment(comment), author),
    "Like a comment: `{changed, liked, position}`."
);
like_route!(
    unlike_comment,
    "/api/v1/comments/{id}/unlike",
    false,
    live_comment,
    |(comment, _, author)| (LikeTarget::Comment(comment), author),
    "Take back a like of a comment."
);

/// Who likes the post, newest first: `{items: [{user, since}], next_cursor}`.
#[utoipa::path(get, path = "/api/v1/posts/{id}/likes", tag = "queries",
    params(("id" = String, Path), KeyedParams),
    responses((status = 200, body = CursorPage), (status = 400, body = ErrorBody),
              (status = 404, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn likers(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiQuery(p): ApiQuery<KeyedParams>,
) -> Result<Json<CursorPage>, ApiError> {
    let (post, _) = live_post(&state, &id).await?;
    let limit = limit(p.limit)?;
    let after = p.cursor.as_deref().map(Cursor::parse).transpose()?;
    crate::routes::query::wait_for_projectors(&state, &[ENGAGEMENT], p.min_position).await?;
    let mut page = read::likers(
        &state.pool,
        LikeTarget::Post(post),
        after.map(Cursor::key),
        limit + 1,
    )
    .await?;
    let source = graph_source(&state, None).await?;
    cursor_page(source, &mut page, None, limit).await.map(Json)
}

const ENGAGEMENT: &str = relations_projections::engagement::NAME;

/// `me/liked` parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LikedParams {
    /// Comma-separated post ids, at most 100.
    #[param(
        pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(,[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}){0,99}$"
    )]
    ids: String,
}

/// `me/liked`'s answer: `{liked}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct LikedAnswer {
    /// One per id asked, in the order asked.
    pub liked: Vec<bool>,
}

/// Most ids one `me/liked` may ask about.
const MAX_LIKED: usize = 100;

/// Which of these posts the caller likes, in the order asked (the like-state cache answers
/// for recent posts without a database round trip).
#[utoipa::path(get, path = "/api/v1/me/liked", tag = "queries", security(("bearer" = [])),
    params(LikedParams),
    responses((status = 200, body = LikedAnswer), (status = 400, body = ErrorBody),
              (status = 401, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn liked(
    State(state): State<AppState>,
    actor: Actor,
    ApiQuery(p): ApiQuery<LikedParams>,
) -> Result<Json<LikedAnswer>, ApiError> {
    let ids = p
        .ids
        .split(',')
        .map(|id| id.trim().parse::<PostId>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| ApiError::InvalidInput("ids: comma-separated post ids".into()))?;
    if ids.len() > MAX_LIKED {
        return Err(ApiError::InvalidInput(format!(
            "ids: at most {MAX_LIKED} post ids"
        )));
    }
    let liked = state.likes.liked(&state.pool, actor.user, &ids).await?;
    Ok(Json(LikedAnswer { liked }))
}

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
    params(("id" = String, Path),
           ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer for a retry", pattern = r"^[!-~]{1,255}$")),
    security(("bearer" = [])),
    responses((status = 201, body = Commented), (status = 400, body = ErrorBody),
              (status = 401, body = ErrorBody),
              (status = 403, body = ErrorBody, description = "BLOCKED: a block with the post's author, or with the author of the comment replied to"),
              (status = 404, body = ErrorBody, description = "unknown post, or a parent that is not a live comment of it"),
              (status = 413, body = ErrorBody), (status = 415, body = ErrorBody),
              (status = 422, body = ErrorBody), (status = 429, body = ErrorBody),
              (status = 503, body = ErrorBody)))]
async fn comment(
    State(state): State<AppState>,
    mut request: CommandRequest,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<CommentBody>,
) -> Result<CommandAnswer<ThreadAnswer>, ApiError> {
    let (post, post_author) = live_post(&state, &id).await?;
    let parent = match &body.parent {
        None => None,
        Some(raw) => {
            let (parent, _, author) = live_comment(&state, raw).await?;
            if parent.post != post {
                return Err(ApiError::NotFound);
            }
            Some((parent.n, author))
        }
    };
    let idempotency = request
        .admit(&state, "comment", &(post.to_string(), &body))
        .await?;
    let executed = state
        .engagement
        .comment(
            post,
            request.actor(),
            post_author,
            parent,
            body.content,
            &request.metadata,
            idempotency.as_ref(),
        )
        .await?;
    Ok(CommandAnswer::new("comment", executed, StatusCode::CREATED))
}

/// Deletes a comment: its author or the post's author. `200 {position}`.
#[utoipa::path(delete, path = "/api/v1/comments/{id}", tag = "commands",
    params(("id" = String, Path),
           ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer for a retry", pattern = r"^[!-~]{1,255}$")),
    security(("bearer" = [])),
    responses((status = 200, body = Deleted), (status = 400, body = ErrorBody),
              (status = 401, body = ErrorBody),
              (status = 403, body = ErrorBody, description = "NOT_ALLOWED: neither the comment's author nor the post's"),
              (status = 404, body = ErrorBody), (status = 422, body = ErrorBody),
              (status = 429, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn delete_comment(
    State(state): State<AppState>,
    request: CommandRequest,
    Path(id): Path<String>,
) -> Result<CommandAnswer<ThreadAnswer>, ApiError> {
    let (comment, post_author, _) = live_comment(&state, &id).await?;
    let command = ThreadCommand::Delete {
        comment,
        actor: request.actor(),
        post_author,
    };
    run_thread(state, request, command, StatusCode::OK).await
}

async fn run_thread(
    state: AppState,
    mut request: CommandRequest,
    command: ThreadCommand,
    status: StatusCode,
) -> Result<CommandAnswer<ThreadAnswer>, ApiError> {
    let name = command.name();
    let id = match &command {
        ThreadCommand::Delete { comment, .. } | ThreadCommand::Pin { comment, .. } => {
            comment.to_string()
        }
        ThreadCommand::Add { post_id, .. } => post_id.to_string(),
    };
    let idempotency = request.admit(&state, name, &id).await?;
    let executed = state
        .engagement
        .thread_command(command, &request.metadata, idempotency.as_ref())
        .await?;
    Ok(CommandAnswer::new(name, executed, status))
}

macro_rules! pin_route {
    ($fn:ident, $path:literal, $pinned:expr, $summary:literal) => {
        #[doc = $summary]
        #[utoipa::path(post, path = $path, tag = "commands",
            params(("id" = String, Path),
                   ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer for a retry", pattern = r"^[!-~]{1,255}$")),
            security(("bearer" = [])),
            responses((status = 200, body = Pinned), (status = 400, body = ErrorBody),
                      (status = 401, body = ErrorBody),
                      (status = 403, body = ErrorBody, description = "NOT_ALLOWED: not the post's author"),
                      (status = 404, body = ErrorBody), (status = 422, body = ErrorBody),
                      (status = 429, body = ErrorBody), (status = 503, body = ErrorBody)))]
        async fn $fn(
            State(state): State<AppState>,
            request: CommandRequest,
            Path(id): Path<String>,
        ) -> Result<CommandAnswer<ThreadAnswer>, ApiError> {
            let (comment, post_author, _) = live_comment(&state, &id).await?;
            let command = ThreadCommand::Pin {
                comment,
                actor: request.actor(),
                post_author,
                pinned: $pinned,
            };
            run_thread(state, request, command, StatusCode::OK).await
        }
    };
}

pin_route!(
    pin,
    "/api/v1/comments/{id}/pin",
    true,
    "Pins a comment (the post's author only): `{changed, pinned, position}`."
);
pin_route!(
    unpin,
    "/api/v1/comments/{id}/unpin",
    false,
    "Unpins a comment (the post's author only)."
);

/// Comment list parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CommentParams {
    /// `new` (default) or `top` (most liked, then newest).
    #[param(pattern = "^(new|top)$")]
    sort: Option<String>,
    /// The previous page's `next_cursor`.
    #[param(pattern = r"^[01]\.-?[0-9]{1,18}\.-?[0-9]{1,18}\.[0-9]{1,9}$")]
    cursor: Option<String>,
    /// Items per page: default 20, at most 100.
    #[param(minimum = 1, maximum = 100)]
    limit: Option<i64>,
    /// Read-your-writes: a command answer's `position`.
    #[param(value_type = Option<String>, pattern = r"^[0-9]{1,18}\.[0-9]{1,18}$")]
    min_position: Option<relations_store::LogPosition>,
}

/// A page of comments: `{items, next_cursor}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct CommentPage {
    /// In the list's order.
    pub items: Vec<CommentView>,
    /// The next page's cursor; none after the last page.
    pub next_cursor: Option<String>,
}

/// A post's root comments, pinned first, then newest (`sort=new`) or most liked (`sort=top`).
/// With a bearer token, comments by users who block the caller or whom the caller blocks are
/// left out.
#[utoipa::path(get, path = "/api/v1/posts/{id}/comments", tag = "queries",
    params(("id" = String, Path), CommentParams),
    responses((status = 200, body = CommentPage), (status = 400, body = ErrorBody),
              (status = 404, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn comments(
    State(state): State<AppState>,
    viewer: Option<Actor>,
    Path(id): Path<String>,
    ApiQuery(p): ApiQuery<CommentParams>,
) -> Result<Json<CommentPage>, ApiError> {
    let (post, _) = live_post(&state, &id).await?;
    let sort = match p.sort.as_deref() {
        None | Some("new") => Sort::New,
        Some("top") => Sort::Top,
        Some(other) => {
            return Err(ApiError::InvalidInput(format!(
                "sort: new or top, got {other:?}"
            )))
        }
    };
    crate::routes::query::wait_for_projectors(&state, &[ENGAGEMENT], p.min_position).await?;
    page(&state, viewer, List::Roots(post, sort), &p)
        .await
        .map(Json)
}

/// Reply list parameters (no sort: replies are oldest first).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ReplyParams {
    /// The previous page's `next_cursor`.
    #[param(pattern = r"^[01]\.-?[0-9]{1,18}\.-?[0-9]{1,18}\.[0-9]{1,9}$")]
    cursor: Option<String>,
    /// Items per page: default 20, at most 100.
    #[param(minimum = 1, maximum = 100)]
    limit: Option<i64>,
    /// Read-your-writes: a command answer's `position`.
    #[param(value_type = Option<String>, pattern = r"^[0-9]{1,18}\.[0-9]{1,18}$")]
    min_position: Option<relations_store::LogPosition>,
}

/// A comment's replies, oldest first, filtered like the root comments.
#[utoipa::path(get, path = "/api/v1/comments/{id}/replies", tag = "queries",
    params(("id" = String, Path), ReplyParams),
    responses((status = 200, body = CommentPage), (status = 400, body = ErrorBody),
              (status = 404, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn replies(
    State(state): State<AppState>,
    viewer: Option<Actor>,
    Path(id): Path<String>,
    ApiQuery(p): ApiQuery<ReplyParams>,
) -> Result<Json<CommentPage>, ApiError> {
    let comment: CommentId = id.parse().map_err(|_| ApiError::NotFound)?;
    let p = CommentParams {
        sort: None,
        cursor: p.cursor,
        limit: p.limit,
        min_position: p.min_position,
    };
    live_post(&state, &comment.post.to_string()).await?;
    crate::routes::query::wait_for_projectors(&state, &[ENGAGEMENT], p.min_position).await?;
    let known = read::comment_by_id(&state.pool, comment).await?;
    if !known.is_some_and(|c| !c.deleted || c.reply_count > 0) {
        return Err(ApiError::NotFound);
    }
    page(&state, viewer, List::Replies(comment), &p)
        .await
        .map(Json)
}

/// Which comment list.
#[derive(Debug, Clone, Copy)]
enum List {
    Roots(PostId, Sort),
    Replies(CommentId),
}

/// A page of `list` for `viewer`: read in chunks until `limit` comments the viewer may see
/// are found (or the list ends), each chunk's authors checked against the graph in one read.
async fn page(
    state: &AppState,
    viewer: Option<Actor>,
    list: List,
    p: &CommentParams,
) -> Result<CommentPage, ApiError> {
    let limit = limit(p.limit)?;
    // The caller has waited for `min_position`.
    let mut after = match &p.cursor {
        None => None,
        Some(raw) => Some(
            raw.parse::<CommentKey>()
                .map_err(|_| ApiError::InvalidInput("malformed cursor".into()))?,
        ),
    };
    let source = graph_source(state, None).await?;
    let viewer = viewer.map(|a| a.user);
    let chunk = (limit + 1) * 2;
    let mut items: Vec<CommentView> = Vec::new();
    loop {
        let batch = match list {
            List::Roots(post, sort) => read::roots(&state.pool, post, sort, after, chunk).await?,
            List::Replies(parent) => read::replies(&state.pool, parent, after, chunk).await?,
        };
        let ended = (batch.len() as i64) < chunk;
        let hidden = match viewer {
            Some(viewer) => {
                let authors: Vec<UserId> = batch.iter().map(|c| c.author).collect();
                source
                    .relations(viewer, &authors, None)
                    .await?
                    .into_iter()
                    .map(|r| r.blocking || r.blocked_by)
                    .collect()
            }
            None => vec![false; batch.len()],
        };
        for (comment, hidden) in batch.into_iter().zip(hidden) {
            after = Some(CommentKey::of(&comment));
            if !hidden {
                items.push(comment);
                if items.len() as i64 > limit {
                    break;
                }
            }
        }
        if ended || items.len() as i64 > limit {
            break;
        }
    }
    let more = items.len() as i64 > limit;
    items.truncate(limit as usize);
    let next_cursor = more
        .then(|| items.last().map(|c| CommentKey::of(c).to_string()))
        .flatten();
    if let Some(viewer) = viewer {
        let targets: Vec<LikeTarget> = items.iter().map(|c| LikeTarget::Comment(c.id)).collect();
        let liked: HashSet<LikeTarget> = read::liked(&state.pool, viewer, &targets).await?;
        for item in &mut items {
            item.liked = Some(liked.contains(&LikeTarget::Comment(item.id)));
        }
    }
    Ok(CommentPage { items, next_cursor })
}
