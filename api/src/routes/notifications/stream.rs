//! `GET /api/v1/notifications/stream`: the caller's notifications, live (Server-Sent Events).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use relations_domain::{CommentId, PostId, TokenStamp, UserId};
use relations_projections::feed::stream::EndReason;
use relations_projections::notifications::live::{self, Listener, LiveItem, LiveNotification};
use relations_store::LogPosition;

use crate::auth::Actor;
use crate::error::{ApiError, ErrorBody};
use crate::extract::LastEventId;
use crate::state::AppState;
use crate::stream_slots::StreamSlot;

use super::visible;

/// How often an open stream re-checks its token against the replica (revocations, bans,
/// erasure end it within a second).
const RECHECK: Duration = Duration::from_millis(250);

/// What a notification stream carries between events.
struct Streaming {
    state: AppState,
    user: UserId,
    stamp: TokenStamp,
    listener: Listener,
    /// Items to send before the live ones (what a reconnection missed, or a resync).
    pending: VecDeque<LiveNotification>,
    /// The last position sent (or the projector's when the stream began).
    last: LogPosition,
    ended: bool,
    /// The user's stream slot, given back when the connection drops.
    _slot: StreamSlot,
}

/// `event: notification`: `{"type", "group", "post", "comment", "actor", "at"}`, its log
/// position as `id`.
fn notification_event(n: &LiveNotification) -> Event {
    let post = n.post.map(PostId::from_uuid);
    let comment = match (post, n.comment) {
        (Some(post), Some(n)) => Some(CommentId { post, n: n as u32 }),
        _ => None,
    };
    let data = serde_json::json!({
        "type": n.kind, "group": n.grp, "post": post, "comment": comment,
        "actor": n.actor, "at": n.at, "position": n.position().to_string(),
    });
    Event::default()
        .id(n.position().to_string())
        .event("notification")
        .json_data(data)
        .unwrap_or_else(|_| Event::default())
}

fn end_event(reason: EndReason) -> Event {
    let data = serde_json::json!({ "code": reason.code(), "message": "this token is refused" });
    Event::default()
        .event("end")
        .json_data(data)
        .unwrap_or_else(|_| Event::default().event("end"))
}

impl Streaming {
    /// What followed the last position sent, read back from the read model.
    async fn catch_up(&mut self) -> Result<(), ApiError> {
        let until = live::head(&self.state.pool).await?;
        let missed = live::since(
            &self.state.pool,
            &[self.user.get()],
            self.last,
            until,
            live::MAX_REPLAY,
        )
        .await?;
        self.pending.extend(missed);
        Ok(())
    }

    /// Whether `n` is sent: not when it is about a comment on a post the caller may not read
    /// now (issue 26, as the list judges it). A failure to judge sends it, logged.
    async fn shown(&self, n: &LiveNotification) -> bool {
        visible::shown_live(&self.state, self.user, n)
            .await
            .unwrap_or_else(|error| {
                tracing::warn!(?error, "notification stream cannot judge a notification");
                true
            })
    }

    /// Why the stream may not go on, as the replica stands.
    fn refused(&self) -> Option<EndReason> {
        self.state
            .graph
            .with(|g| EndReason::of(g, self.user, &self.stamp))
            .flatten()
    }

    async fn next(&mut self) -> Option<Event> {
        if self.ended {
            return None;
        }
        loop {
            if let Some(reason) = self.refused() {
                self.ended = true;
                return Some(end_event(reason));
            }
            if let Some(n) = self.pending.pop_front() {
                if n.position() > self.last {
                    self.last = n.position();
                    if self.shown(&n).await {
                        return Some(notification_event(&n));
                    }
                }
                continue;
            }
            let item = tokio::select! {
                _ = self.state.closing.cancelled() => return None,
                _ = tokio::time::sleep(RECHECK) => continue,
                item = self.listener.items.recv() => item?,
            };
            match item {
                LiveItem::Notification(n) => self.pending.push_back(n),
                LiveItem::Resync => {
                    if let Err(error) = self.catch_up().await {
                        tracing::warn!(?error, "notification stream catch-up failed");
                    }
                }
            }
        }
    }
}

/// The caller's notifications, live (Server-Sent Events): `event: notification` with
/// `{"type", "group", "post", "comment", "actor", "at", "position"}` for each notification
/// made for the caller, its log position as `id`, within a second of the command's answer on
/// every instance, with the list's filters (never one's own action, nobody in a block either
/// way, nobody muted while the mute lasts, nothing about a comment on a post the caller may
/// not read now). A reconnection with `Last-Event-ID` is sent what
/// it missed first (up to 1,000). Undone notifications are not announced: read the list (or
/// `unread_count`) again after reconnecting. Within a second of the token's revocation, the
/// user's ban or erasure, the stream sends a last `event: end` with `{"code", "message"}`.
#[utoipa::path(get, path = "/api/v1/notifications/stream", tag = "queries", operation_id = "notifications_stream", security(("bearer" = [])),
    params(("Last-Event-ID" = Option<String>, Header, description = "The id of the last event received", pattern = r"^[0-9]{1,18}\.[0-9]{1,18}$")),
    responses((status = 200, content_type = "text/event-stream", body = String),
              (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
              (status = 403, body = ErrorBody, description = "USER_BANNED"),
              (status = 429, body = ErrorBody, description = "TOO_MANY_STREAMS: the user's open streams, feed and notifications together, are at RELATIONS_STREAMS_PER_USER"),
              (status = 503, body = ErrorBody)))]
pub async fn stream(
    State(state): State<AppState>,
    actor: Actor,
    LastEventId(last): LastEventId,
) -> Result<Sse<impl futures::Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let slot = state.stream_slots.take(actor.user)?;
    // Listen first, then find where the projector stands: nothing falls between the two.
    let listener = state.notify_hub.listen(actor.user.get());
    let now = live::head(&state.pool).await?;
    let mut streaming = Streaming {
        user: actor.user,
        stamp: actor.stamp.clone(),
        listener,
        pending: VecDeque::new(),
        last: last.unwrap_or(now),
        ended: false,
        _slot: slot,
        state,
    };
    if last.is_some() {
        streaming.catch_up().await?;
    }
    let events = futures::stream::unfold(streaming, |mut streaming| async move {
        let event = streaming.next().await?;
        Some((Ok::<_, Infallible>(event), streaming))
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}
