//! `POST /api/v1/posts`: publishes a post, which may quote another (issue 44).

use crate::outcome::Published;
use axum::extract::State;
use axum::http::StatusCode;
use relations_domain::{CommentPolicy, PostContent, PostId, QuotePolicy, UserId, Visibility};
use relations_projections::views::QuoteView;
use relations_store::{Executed, PostOptions};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::{ApiError, ErrorBody};
use crate::extract::ApiJson;
use crate::routes::command::{prior, CommandAnswer, CommandRequest};
use crate::routes::query::feed_reader;
use crate::routes::readable::likable_post;
use crate::state::AppState;

/// `POST /api/v1/posts` body.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
pub struct PublishBody {
    /// 1 to 2000 characters.
    #[schema(value_type = String, min_length = 1, max_length = 2000, pattern = r"^[^\x00]*$")]
    pub content: PostContent,
    /// Who may read it (issue 26): `public` (the default), `unlisted` (never in the
    /// recommended feed) or `followers` (the author and their followers).
    #[serde(default)]
    pub visibility: Visibility,
    /// The post it quotes (issue 44).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = "uuid",
        pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")]
    pub quote_of: Option<PostId>,
    /// Who may quote it: `anyone` (the default), `followers` or `nobody`.
    #[serde(default)]
    pub quote_policy: QuotePolicy,
    /// Who besides the author may comment or reply (issue 47): `everyone` (the default),
    /// `followers`, `following` or `nobody`.
    #[serde(default)]
    pub comment_policy: CommentPolicy,
}

/// Publishes a post: `201 {post, position}`. A quote is judged in this order: a quoted post
/// the author may not read is 404, a block either way with its author 403 `BLOCKED`, a
/// policy that does not let the author quote it 403 `NOT_QUOTABLE`.
#[utoipa::path(post, path = "/api/v1/posts", tag = "commands", request_body = PublishBody,
    params(CommandRequest), security(("bearer" = [])),
    responses((status = 201, body = Published, links(
                  ("like_post" = (operation_id = "like_post", parameters(("id" = "$response.body#/post/id")))),
                  ("unlike_post" = (operation_id = "unlike_post", parameters(("id" = "$response.body#/post/id")))),
                  ("repost_post" = (operation_id = "repost_post", parameters(("id" = "$response.body#/post/id")))),
                  ("unrepost_post" = (operation_id = "unrepost_post", parameters(("id" = "$response.body#/post/id")))),
                  ("bookmark_post" = (operation_id = "bookmark_post", parameters(("id" = "$response.body#/post/id")))),
                  ("unbookmark_post" = (operation_id = "unbookmark_post", parameters(("id" = "$response.body#/post/id")))),
                  ("comments" = (operation_id = "comments", parameters(("id" = "$response.body#/post/id")))),
                  ("comment" = (operation_id = "comment", parameters(("id" = "$response.body#/post/id")))),
                  ("likers" = (operation_id = "likers", parameters(("id" = "$response.body#/post/id")))),
                  ("reposters" = (operation_id = "reposters", parameters(("id" = "$response.body#/post/id")))),
                  ("set_quote_policy" = (operation_id = "set_quote_policy", parameters(("id" = "$response.body#/post/id")))),
                  ("set_comment_policy" = (operation_id = "set_comment_policy", parameters(("id" = "$response.body#/post/id")))),
                  ("remove" = (operation_id = "remove", parameters(("id" = "$response.body#/post/id")))),
                  ("timeline" = (operation_id = "timeline", parameters(("id" = "$response.body#/post/author")))))),
              (status = 400, body = ErrorBody, description = "INVALID_INPUT: content not 1 to 2000 characters, an unknown visibility, quote or comment policy, or a malformed quote_of"),
              (status = 401, body = ErrorBody),
              (status = 403, body = ErrorBody, description = "USER_BANNED; of a quote, BLOCKED or NOT_QUOTABLE"),
              (status = 404, body = ErrorBody, description = "the quoted post is unknown, deleted, or not readable by the author"),
              (status = 413, body = ErrorBody), (status = 415, body = ErrorBody),
              (status = 422, body = ErrorBody), (status = 429, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn publish(
    State(state): State<AppState>,
    mut request: CommandRequest,
    ApiJson(body): ApiJson<PublishBody>,
) -> Result<CommandAnswer<Published>, ApiError> {
    let idempotency = request.admit(&state, "publish_post", &body).await?;
    let actor = request.actor();
    let quote_of = match body.quote_of {
        Some(quoted) => likable_post(&state, actor, quoted).await.map(Some),
        None => Ok(None),
    };
    let executed = match quote_of {
        Ok(quote_of) => {
            let options = PostOptions {
                visibility: body.visibility,
                quote_of,
                quote_policy: body.quote_policy,
                comment_policy: body.comment_policy,
            };
            state
                .posts
                .publish(
                    actor,
                    body.content,
                    options,
                    &request.metadata,
                    idempotency.as_ref(),
                )
                .await?
                .map(Published::from)
        }
        // A quoted post no longer the author's to read: a retry whose first attempt took
        // effect is answered as it was (routes::command::answered_or).
        Err(refusal) => Executed::Replayed(
            prior(&state, actor, idempotency.as_ref())
                .await?
                .ok_or(refusal)?,
        ),
    };
    let executed = show_quote(&state, actor, executed).await?;
    Ok(CommandAnswer::new(
        "publish_post",
        executed,
        StatusCode::CREATED,
    ))
}

/// The answer with the quoted post as the author may see it now (a first answer and its
/// replays alike: what is stored names only the quoted post), read once the read models
/// reflect the new post (so the quoted post, older, too).
async fn show_quote(
    state: &AppState,
    actor: UserId,
    mut executed: Executed<Published>,
) -> Result<Executed<Published>, ApiError> {
    let (quoted, at) = match &executed {
        Executed::Fresh(published) => (published.post.quoting(), Some(published.position)),
        Executed::Replayed(stored) => {
            let quote = &stored.body["post"]["quote"];
            let id = quote["id"]
                .as_str()
                .filter(|_| quote["state"] == "unavailable");
            let at = stored.body["position"]
                .as_str()
                .and_then(|p| p.parse().ok());
            (id.and_then(|id| id.parse().ok()), at)
        }
    };
    let Some(quoted) = quoted else {
        return Ok(executed);
    };
    let reader = feed_reader(state, at).await?;
    let found = reader.quoted(&[quoted], Some(actor)).await?;
    let Some(view) = found.get(&quoted) else {
        return Ok(executed);
    };
    let quote = QuoteView::shown(view.clone());
    match &mut executed {
        Executed::Fresh(published) => published.post.quote = quote,
        Executed::Replayed(stored) => {
            stored.body["post"]["quote"] = serde_json::to_value(&quote).expect("a view serialises")
        }
    }
    Ok(executed)
}
