//! `GET /api/v1/feed/stream`: the caller's feed, live (Server-Sent Events).

use std::convert::Infallible;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use relations_domain::UserId;
use relations_projections::feed::stream::{EndReason, StreamItem, Subscription};
use relations_store::LogPosition;

use crate::auth::Actor;
use crate::error::{ApiError, ErrorBody};
use crate::extract::LastEventId;
use crate::state::AppState;
use crate::stream_slots::StreamSlot;

/// What a feed stream connection carries between items.
struct Streaming {
    state: AppState,
    user: UserId,
    subscription: Subscription,
    /// Items to send before the live ones (what a reconnection missed).
    pending: std::collections::VecDeque<StreamItem>,
    /// The last position sent (or the replica's when the stream began).
    last: LogPosition,
    /// Whether the stream has ended (its final event sent).
    ended: bool,
    /// The user's stream slot, given back when the connection drops.
    _slot: StreamSlot,
}

/// The stream's last event when its token is revoked or its user banned: `event: end` with
/// `{"code", "message"}`, the error any other request with the token now gets.
fn end_event(reason: EndReason) -> Event {
    let message = match reason {
        EndReason::TokenRevoked => "this token has been revoked",
        EndReason::UserBanned => "this user is banned",
        EndReason::AccountErased => "this account is erased",
    };
    let data = serde_json::json!({ "code": reason.code(), "message": message });
    Event::default()
        .event("end")
        .json_data(data)
        .unwrap_or_else(|_| Event::default().event("end"))
}

impl Streaming {
    /// The next item: what a reconnection missed first, then the live ones.
    async fn item(
        pending: &mut std::collections::VecDeque<StreamItem>,
        items: &mut tokio::sync::mpsc::Receiver<StreamItem>,
    ) -> Option<StreamItem> {
        match pending.pop_front() {
            Some(item) => Some(item),
            None => items.recv().await,
        }
    }

    /// The next SSE event, or `None` when the stream ends (shutdown, or after its `end` event).
    async fn next(&mut self) -> Option<Event> {
        if self.ended {
            return None;
        }
        loop {
            // An ending comes before anything still pending: no post reaches a refused token.
            let item = tokio::select! {
                biased;
                reason = &mut self.subscription.ended => {
                    self.ended = true;
                    // Without a reason the hub is gone: the instance is stopping.
                    return reason.ok().map(end_event);
                }
                _ = self.state.closing.cancelled() => return None,
                item = Self::item(&mut self.pending, &mut self.subscription.items) => item?,
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
/// shuts down; clients reconnect. Within a second of the token's revocation (a logout, an
/// admin revoke) or the user's ban, answered by any instance, the stream sends a last
/// `event: end` with `{"code": "TOKEN_REVOKED" | "USER_BANNED", "message"}` and closes: a
/// client must not reconnect with the same token (it would get 401 or 403).
#[utoipa::path(get, path = "/api/v1/feed/stream", tag = "queries", operation_id = "feed_stream", security(("bearer" = [])),
    params(("Last-Event-ID" = Option<String>, Header, description = "The id of the last event received", pattern = r"^[0-9]{1,18}\.[0-9]{1,18}$")),
    responses((status = 200, content_type = "text/event-stream", body = String),
              (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
              (status = 403, body = ErrorBody, description = "USER_BANNED"),
              (status = 429, body = ErrorBody, description = "TOO_MANY_STREAMS: the user's open streams, feed and notifications together, are at RELATIONS_STREAMS_PER_USER"),
              (status = 503, body = ErrorBody, description = "UNAVAILABLE: the graph replica is loading")))]
pub async fn stream(
    State(state): State<AppState>,
    actor: Actor,
    LastEventId(last): LastEventId,
) -> Result<Sse<impl futures::Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let Some(now) = state.graph.position() else {
        return Err(ApiError::Unavailable(
            "the graph replica is loading; retry shortly",
        ));
    };
    let slot = state.stream_slots.take(actor.user)?;
    let subscription = state
        .hub
        .subscribe(&state.graph, actor.user, actor.stamp.clone());
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
        ended: false,
        _slot: slot,
        state,
    };
    let events = futures::stream::unfold(streaming, |mut streaming| async move {
        let event = streaming.next().await?;
        Some((Ok::<_, Infallible>(event), streaming))
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(std::time::Duration::from_secs(15))))
}
