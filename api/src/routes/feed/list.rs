//! `GET /api/v1/feed`: the caller's follow feed, a page at a time.

use axum::extract::State;
use axum::Json;
use chrono::Utc;
use relations_projections::error::ProjectionError;
use relations_projections::feed::held::page::FeedAsk;
use relations_projections::feed::inbox_cache::InboxCache;
use relations_projections::feed::query::{
    self as feed_read, Inbox, InboxEntries, InboxRange, PageStart, PgInbox, SeqPage,
};
use relations_projections::privacy::ReadFilter;
use relations_store::LogPosition;
use sqlx::PgPool;

use super::post_page::{with_engagement, PostPage, PostPageParams};
use crate::auth::Actor;
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::routes::contract::BearerQueryErrors;
use crate::routes::query::{graph_source, wait_for_essential};
use crate::state::AppState;

/// The caller's feed, newest first: `{items, next_cursor}`. Followed authors' posts (pushed
/// into the caller's inbox, or pulled from big authors' timelines), or the recommended feed
/// when the caller follows nobody. A first page (no cursor, no max_time) moves the read mark.
#[utoipa::path(get, path = "/api/v1/feed", tag = "queries", security(("bearer" = [])),
    params(PostPageParams),
    responses((status = 200, body = PostPage), BearerQueryErrors))]
pub async fn feed(
    State(state): State<AppState>,
    actor: Actor,
    ApiQuery(p): ApiQuery<PostPageParams>,
) -> Result<Json<PostPage>, ApiError> {
    let (size, start) = (p.size()?, p.start()?);
    let pool = wait_for_essential(&state, p.min_position).await?;
    let recommended = state.config.recommended();
    // Who may read what is judged on the graph at the moment of reading (issue 26).
    let source = graph_source(&state, p.min_position).await?;
    let ask = FeedAsk {
        reader: actor.user,
        recommended: &recommended,
        now: Utc::now(),
    };
    // A page from memory carries its posts' engagement; one from PostgreSQL is given it below.
    let (page, head, engaged) = match from_memory(&state, ask, start, size, p.min_position) {
        Some((page, head)) => (page, head, true),
        None => {
            metrics::counter!("relations_feed_pages_total", "source" => "postgres").increment(1);
            // Read-your-writes must not wait on the cache projector: read the inbox from
            // PostgreSQL.
            let cached = LoadsFromPrimary(&state.inboxes, &state.pool);
            let inbox: &dyn Inbox = if p.min_position.is_some() {
                &PgInbox
            } else {
                &cached
            };
            let filter = ReadFilter {
                source,
                viewer: Some(actor.user),
            };
            let read = feed_read::feed(pool, inbox, &filter, actor.user, &recommended, start, size);
            let (page, head) = read.await?;
            (page, head, false)
        }
    };
    if p.is_first() {
        state.read_marks.mark(actor.user, head);
    }
    let mut page: PostPage = page.into();
    if !engaged {
        with_engagement(&state, pool, &mut page.items, Some(actor.user)).await?;
    }
    Ok(Json(page))
}

/// The page from the replica's held timelines (issue 28), when it reflects `min_position` and
/// can answer exactly: no `max_time` (a time bound needs every post's time), no post below
/// what it holds.
fn from_memory(
    state: &AppState,
    ask: FeedAsk<'_>,
    start: PageStart,
    size: i64,
    min_position: Option<LogPosition>,
) -> Option<(SeqPage, i64)> {
    if start.max_time.is_some() {
        return None;
    }
    let answer = state.graph.with(|graph| {
        if min_position.is_some_and(|at| graph.position() < at) {
            return None;
        }
        graph.feed_page(ask, start.before, size)
    })??;
    metrics::counter!("relations_feed_pages_total", "source" => "memory").increment(1);
    Some(answer)
}

/// The inbox cache, filled from the primary whatever pool the rest of the page reads. A fill
/// stores what it read only if the inbox's generation did not move meanwhile, and projector
/// `feed_cache` moves it only after projector `feed` wrote the change on the primary: a fill
/// from a standby that has not replayed that change yet would cache a stale inbox for good.
struct LoadsFromPrimary<'a>(&'a InboxCache, &'a PgPool);

#[async_trait::async_trait]
impl Inbox for LoadsFromPrimary<'_> {
    async fn entries(
        &self,
        _reads: &PgPool,
        range: InboxRange,
    ) -> Result<InboxEntries, ProjectionError> {
        self.0.entries(self.1, range).await
    }
}
