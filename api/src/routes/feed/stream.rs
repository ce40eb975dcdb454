//! `GET /api/v1/feed/stream`: the caller's feed, live (Server-Sent Events).

use std::convert::Infallible;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use relations_domain::UserId;
use relations_projections::feed::stream::{StreamItem, Subscription};
use relations_store::LogPosition;

use crate::auth::Actor;
use crate::error::{ApiError, ErrorBody};
use crate::state::AppState;

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
pub async fn stream(
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
