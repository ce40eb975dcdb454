//! `GET /api/v1/me/following.csv`: whom the caller follows, as CSV.

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use relations_projections::relations::query::FOLLOWING_KEYED;

use super::csv::{csv_line, HEADER};
use crate::auth::Actor;
use crate::error::ErrorBody;
use crate::routes::query::read_pool;
use crate::state::AppState;

/// Rows read from the read model per round trip while exporting.
const EXPORT_PAGE: i64 = 500;

/// Whom the caller follows, as CSV (`user_id,since`, newest first, the following list's
/// order), streamed page by page from the read model.
#[utoipa::path(get, path = "/api/v1/me/following.csv", tag = "queries", security(("bearer" = [])),
    responses((status = 200, content_type = "text/csv", body = String,
               description = "`user_id,since` then one line per followed user"),
              (status = 401, body = ErrorBody),
              (status = 403, body = ErrorBody, description = "USER_BANNED")))]
pub async fn export(State(state): State<AppState>, actor: Actor) -> Response {
    let header = csv_line(HEADER);
    let pool = read_pool(&state).clone();
    // (key after which the next page starts; whether the list is exhausted)
    let start: (Option<(DateTime<Utc>, i64)>, bool) = (None, false);
    let pages = futures::stream::unfold(start, move |(after, done)| {
        let pool = pool.clone();
        async move {
            if done {
                return None;
            }
            let page = FOLLOWING_KEYED
                .page(&pool, actor.user, after, EXPORT_PAGE)
                .await;
            match page {
                Err(error) => {
                    tracing::warn!(%error, "following.csv: a page failed; the stream ends");
                    Some((Err(std::io::Error::other(error)), (after, true)))
                }
                Ok(edges) => {
                    let last = edges.last().map(|e| (e.since, e.user.get()));
                    let mut chunk = Vec::with_capacity(edges.len() * 40);
                    for edge in &edges {
                        chunk.extend(csv_line([
                            edge.user.to_string(),
                            edge.since
                                .to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
                        ]));
                    }
                    let exhausted = (edges.len() as i64) < EXPORT_PAGE;
                    Some((Ok(Bytes::from(chunk)), (last, exhausted)))
                }
            }
        }
    });
    let body = futures::StreamExt::chain(
        futures::stream::once(async move { Ok(Bytes::from(header)) }),
        pages,
    );
    (
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8"),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"following.csv\"",
            ),
        ],
        Body::from_stream(body),
    )
        .into_response()
}
