//! `GET /api/v1/me/archive`: the caller's own data, as JSON lines (issue 25's export).

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use relations_projections::archive::{self, ArchiveKey};

use crate::auth::{refuse_erased_now, Actor};
use crate::error::{ApiError, ErrorBody};
use crate::routes::query::read_pool;
use crate::state::AppState;

/// Records read from the read models per round trip.
const ARCHIVE_PAGE: i64 = 1000;

/// The caller's follows, followers, requests (made and received), blocks, mutes, posts,
/// comments, likes, reposts and bookmarks, one JSON object a line:
/// `{"kind": "following"|"follower"|"request"|"block"|"mute"|"post"|"comment"|"like"|"repost"|"bookmark", ...,
/// "at": rfc3339}`, each section newest first, streamed page by page (constant memory
/// whatever the counts). Refused once the account is erased (401 `ACCOUNT_ERASED`), as the
/// log says at the request, not a second later.
#[utoipa::path(get, path = "/api/v1/me/archive", tag = "queries", security(("bearer" = [])),
    responses((status = 200, content_type = "application/x-ndjson", body = String,
               description = "one JSON record a line"),
              (status = 401, body = ErrorBody, description = "UNAUTHENTICATED, TOKEN_REVOKED, ACCOUNT_ERASED"),
              (status = 403, body = ErrorBody, description = "USER_BANNED")))]
pub async fn archive(State(state): State<AppState>, actor: Actor) -> Result<Response, ApiError> {
    refuse_erased_now(&state, actor.user).await?;
    let pool = read_pool(&state).clone();
    let start = Some(ArchiveKey::default());
    let pages = futures::stream::unfold(start, move |key| {
        let pool = pool.clone();
        async move {
            let key = key?;
            match archive::page(&pool, actor.user, key, ARCHIVE_PAGE).await {
                Err(error) => {
                    tracing::warn!(%error, "archive: a page failed; the stream ends");
                    Some((Err(std::io::Error::other(error)), None))
                }
                Ok(None) => None,
                Ok(Some((lines, next))) => {
                    let mut chunk = Vec::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
                    for line in lines {
                        chunk.extend(line.into_bytes());
                        chunk.push(b'\n');
                    }
                    Some((Ok(Bytes::from(chunk)), Some(next)))
                }
            }
        }
    });
    Ok((
        [(header::CONTENT_TYPE, "application/x-ndjson")],
        Body::from_stream(pages),
    )
        .into_response())
}
