//! The follow feed and author timelines, read from projector `feed`'s read models:
//! `GET /api/v1/feed`, `GET /api/v1/feed/new_count`, `GET /api/v1/users/{id}/posts`.

use std::convert::Infallible;

use axum::extract::{Path, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::routing::get;
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use relations_domain::UserId;
use relations_projections::feed::query::{self as feed_read, Inbox, Page, PageStart, PgInbox};
use relations_projections::feed::stream::{StreamItem, Subscription};
use relations_projections::views::PostView;
use relations_store::LogPosition;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, OpenApi, ToSchema};

use crate::auth::Actor;
use crate::error::{ApiError, ErrorBody};
use crate::extract::ApiQuery;
use crate::routes::engagement::with_engagement;
use crate::routes::query::wait_for_essential;
use crate::state::AppState;

/// The feed routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/feed", get(feed))
        .route("/api/v1/feed/new_count", get(new_count))
        .route("/api/v1/feed/stream", get(stream))
        .route("/api/v1/users/{id}/posts", get(timeline))
}

/// The feed routes' contract.
#[derive(OpenApi)]
#[openapi(paths(feed, new_count, timeline, stream))]
pub struct Doc;

/// Paging of posts (seed 003): `max_time`, `size`, `cursor`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PostPageParams {
    /// Only posts created at or before this (RFC 3339, or milliseconds since the epoch).
    #[param(
        pattern = r"^([0-9]{1,15}|[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,9})?(Z|[+-](0[0-9]|1[0-3]):[0-5][0-9]))$"
    )]
    max_time: Option<String>,
    /// Posts per page: default 10, 1 to 20.
    #[param(minimum = 1, maximum = 20)]
    size: Option<i64>,
    /// The previous page's `next_cursor`.
    #[param(pattern = r"^[1-9][0-9]{0,17}$")]
    cursor: Option<String>,
    /// Read-your-writes: a command answer's `position`.
    #[param(value_type = Option<String>, pattern = r"^[0-9]{1,18}\.[0-9]{1,18}$")]
    min_position: Option<LogPosition>,
}

/// A page of posts: `{items, next_cursor}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct PostPage {
    /// Newest first.
    pub items: Vec<PostView>,
    /// The next page's cursor; none after the last page.
    pub next_cursor: Option<String>,
}

impl From<Page> for PostPage {
    fn from(page: Page) -> Self {
        Self {
            items: page.items,
            next_cursor: page.next.map(|seq| seq.to_string()),
        }
    }
}

/// `new_count`'s answer: `{count}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct NewCount {
    /// Feed posts newer than the caller's read mark.
    pub count: i64,
}

impl PostPageParams {
    fn size(&self) -> Result<i64, ApiError> {
        match self.size {
            None => Ok(10),
            Some(n) if (1..=20).contains(&n) => Ok(n),
            Some(n) => Err(ApiError::InvalidInput(format!(
                "size must be 1 to 20, got {n}"
            ))),
        }
    }

    fn start(&self) -> Result<PageStart, ApiError> {
        let before = match self.cursor.as_deref() {
            None => None,
            Some(raw) => Some(
                raw.parse::<i64>()
                    .ok()
                    .filter(|&seq| seq > 0 && raw.bytes().all(|b| b.is_ascii_digit()))
                    .ok_or_else(|| ApiError::InvalidInput("malformed cursor".into()))?,
            ),
        };
        let max_time = self.max_time.as_deref().map(parse_time).transpose()?;
        Ok(PageStart { before, max_time })
    }

    /// A plain first page: it moves the reader's read mark.
    fn is_first(&self) -> bool {
        self.cursor.is_none() && self.max_time.is_none()
    }
}

/// RFC 3339, or whole milliseconds since the epoch (seed 003's `max_time`).
fn parse_time(raw: &str) -> Result<DateTime<Utc>, ApiError> {
    let bad = || ApiError::InvalidInput(format!("max_time: not a time: {raw:?}"));
    if !raw.is_empty() && raw.bytes().all(|b| b.is_ascii_digit()) {
        let millis: i64 = raw.parse().map_err(|_| bad())?;
        return DateTime::from_timestamp_millis(millis).ok_or_else(bad);
    }
    DateTime::parse_from_rfc3339(raw)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| bad())
}

/// The caller's feed, newest first: `{items, next_cursor}`. Followed authors' posts (pushed
/// into the caller's inbox, or pulled from big authors' timelines), or the recommended feed
/// when the caller follows nobody. A first page (no cursor, no max_time) moves the read mark.
#[utoipa::path(get, path = "/api/v1/feed", tag = "queries", security(("bearer" = [])),
    params(PostPageParams),
    responses((status = 200, body = PostPage), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
              (status = 503, body = ErrorBody, description = "NOT_CAUGHT_UP")))]
async fn feed(
    State(state): State<AppState>,
    actor: Actor,
    ApiQuery(p): ApiQuery<PostPageParams>,
) -> Result<Json<PostPage>, ApiError> {
    let (size, start) = (p.size()?, p.start()?);
    wait_for_essential(&state, p.min_position).await?;
    // Read-your-writes must not wait on the cache projector: read the inbox from PostgreSQL.
    let inbox: &dyn Inbox = if p.min_position.is_some() {
        &PgInbox
    } else {
        &state.inboxes
    };
    let recommended = state.config.recommended();
    let (page, head) =
        feed_read::feed(&state.pool, inbox, actor.user, &recommended, start, size).await?;
    if p.is_first() {
        state.read_marks.mark(actor.user, head);
    }
    let mut page: PostPage = page.into();
    with_engagement(&state, &mut page.items, Some(actor.user)).await?;
    Ok(Json(page))
}

/// `new_count` parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct NewCountParams {
    /// Read-your-writes: a command answer's `position`.
    #[param(value_type = Option<String>, pattern = r"^[0-9]{1,18}\.[0-9]{1,18}$")]
    min_position: Option<LogPosition>,
}

/// How many feed posts are newer than the caller's read mark: `{count}`.
#[utoipa::path(get, path = "/api/v1/feed/new_count", tag = "queries", security(("bearer" = [])),
    params(NewCountParams),
    responses((status = 200, body = NewCount), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
              (status = 503, body = ErrorBody, description = "NOT_CAUGHT_UP")))]
async fn new_count(
    State(state): State<AppState>,
    actor: Actor,
    ApiQuery(p): ApiQuery<NewCountParams>,
) -> Result<Json<NewCount>, ApiError> {
    wait_for_essential(&state, p.min_position).await?;
    let recommended = state.config.recommended();
    let pending = state.read_marks.pending(actor.user);
    let count = feed_read::new_count(&state.pool, actor.user, &recommended, pending).await?;
    Ok(Json(NewCount { count }))
}

/// An author's live posts, newest first: `{items, next_cursor}`.
#[utoipa::path(get, path = "/api/v1/users/{id}/posts", tag = "queries",
    params(("id" = i64, Path, description = "The author"), PostPageParams),
    responses((status = 200, body = PostPage), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody),
              (status = 503, body = ErrorBody, description = "NOT_CAUGHT_UP")))]
async fn timeline(
    State(state): State<AppState>,
    viewer: Option<Actor>,
    Path(id): Path<String>,
    ApiQuery(p): ApiQuery<PostPageParams>,
) -> Result<Json<PostPage>, ApiError> {
    let author: UserId = id.parse().map_err(|_| ApiError::NotFound)?;
    let (size, start) = (p.size()?, p.start()?);
    wait_for_essential(&state, p.min_position).await?;
    let page = feed_read::timeline(&state.pool, author, start, size).await?;
    let mut page: PostPage = page.into();
    with_engagement(&state, &mut page.items, viewer.map(|a| a.user)).await?;
    Ok(Json(page))
}

/// What a feed stream connection carries between items.
struct Streaming {
    state: AppState,
    user: UserId,
    subscription: Subscription,
    /// Items to send before the live ones (what a reconnection missed).
    pending: std::collections::VecDeque<StreamItem>,
    /// The last position sent (or the replica's when the stream began).
    last: LogPosition,
}

impl Streaming {
    /// The next SSE event, or `None` when the stream ends (shutdown).
    async fn next(&mut self) -> Option<Event> {
        loop {
            let item = match self.pending.pop_front() {
                Some(item) => item,
                None => tokio::select! {
                    _ = self.state.closing.cancelled() => return None,
                    item = self.subscription.items.recv() => item?,
                },
            };
            match item {
                StreamItem::Resync => {
                    // Items were dropped: read what followed the last one sent from the log.
                    let replay = self
                        .state
                        .hub
                        .replay(&self.state.pool, &self.state.graph, self.user, self.last)
                        .await;
                    self.pending = replay.unwrap_or_else(|error| {
                        tracing::warn!(%error, "feed stream catch-up failed; the client reloads");
                        [StreamItem::Reset].into()
                    });
                }
                StreamItem::Reset => return Some(Event::default().event("reset").data("{}")),
                StreamItem::Post(at, _) | StreamItem::Deleted(at, _) if at <= self.last => {}
                StreamItem::Post(at, post) => {
                    self.last = at;
                    let event = Event::default().id(at.to_string()).event("post");
                    return Some(event.json_data(&post).unwrap_or_else(|_| Event::default()));
                }
                StreamItem::Deleted(at, id) => {
                    self.last = at;
                    let event = Event::default().id(at.to_string()).event("deleted");
                    let data = serde_json::json!({ "id": id });
                    return Some(event.json_data(data).unwrap_or_else(|_| Event::default()));
                }
            }
        }
    }
}

/// The caller's feed, live (Server-Sent Events): `event: post` with a `Post` for each post
/// that enters the feed, `event: deleted` with `{id}` for each deletion, each with its log
/// position as `id`, within a second of the command's answer. A reconnection with
/// `Last-Event-ID` is first sent what it missed; `event: reset` asks the client to reload the
/// feed (it missed more than a reconnection reads back). The stream ends when the instance
/// shuts down; clients reconnect.
#[utoipa::path(get, path = "/api/v1/feed/stream", tag = "queries", security(("bearer" = [])),
    params(("Last-Event-ID" = Option<String>, Header, description = "The id of the last event received", pattern = r"^[0-9]{1,18}\.[0-9]{1,18}$")),
    responses((status = 200, content_type = "text/event-stream", body = String),
              (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
              (status = 503, body = ErrorBody, description = "UNAVAILABLE: the graph replica is loading")))]
async fn stream(
    State(state): State<AppState>,
    actor: Actor,
    headers: axum::http::HeaderMap,
) -> Result<Sse<impl futures::Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let Some(now) = state.graph.position() else {
        return Err(ApiError::Unavailable(
            "the graph replica is loading; retry shortly",
        ));
    };
    let last = match headers.get("last-event-id") {
        None => None,
        Some(value) => Some(
            value
                .to_str()
                .ok()
                .and_then(|v| v.parse::<LogPosition>().ok())
                .ok_or_else(|| {
                    ApiError::InvalidInput("Last-Event-ID: an event id this stream sent".into())
                })?,
        ),
    };
    let subscription = state.hub.subscribe(actor.user);
    let pending = match last {
        Some(after) => {
            state
                .hub
                .replay(&state.pool, &state.graph, actor.user, after)
                .await?
        }
        None => Default::default(),
    };
    let streaming = Streaming {
        user: actor.user,
        subscription,
        pending,
        last: last.unwrap_or(now),
        state,
    };
    let events = futures::stream::unfold(streaming, |mut streaming| async move {
        let event = streaming.next().await?;
        Some((Ok::<_, Infallible>(event), streaming))
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(std::time::Duration::from_secs(15))))
}
