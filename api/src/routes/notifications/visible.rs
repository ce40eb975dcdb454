//! What the caller may see of their notifications now: issue 26's rule over the groups about
//! a comment on someone else's post (its likes, its replies), one judgement for the list and
//! the unread count.

use std::sync::Arc;

use chrono::Utc;
use relations_domain::{FilterContext, UserId, Visibility};
use relations_projections::feed::query::PostFilter;
use relations_projections::filters::read::screen_for;
use relations_projections::filters::screen::{Marks, Screen, Screening};
use relations_projections::notifications::live::LiveNotification;
use relations_projections::notifications::query::{self as notify_read, PostAsk};
use relations_projections::privacy::ReadFilter;
use relations_store::LogPosition;
use sqlx::PgPool;

use crate::error::ApiError;
use crate::routes::query::{graph_source, wait_for_projectors};
use crate::state::AppState;

/// For each of `asks` (what reading a group asks: `None`, nothing), how `viewer` sees it now
/// (`None`: not at all; else the marks of the `warn` filters its text matches):
/// whether they may read the group's post (issue 26's rule, judged on the graph at the moment
/// of reading, as the feed judges its pages), and what their filters of context
/// `notifications` do to the text it shows of someone else's (issue 47). A post the feed has
/// not folded yet (author 0), or whose stored visibility does not parse, is read by nobody
/// until it has: a read with `min_position` waits for the feed (and the filters: [`screen`])
/// too (`relations_projections::notifications::READS`).
pub async fn readable(
    state: &AppState,
    viewer: UserId,
    min_position: Option<LogPosition>,
    screening: Screening<'_>,
    asks: &[Option<PostAsk>],
) -> Result<Vec<Option<Marks>>, ApiError> {
    let known = |ask: &PostAsk| -> Option<(UserId, Visibility)> {
        let author = UserId::try_from(ask.author).ok()?;
        Some((author, ask.visibility.as_deref()?.parse().ok()?))
    };
    let judged: Vec<(UserId, Visibility)> = asks.iter().flatten().filter_map(known).collect();
    if judged.is_empty() {
        // Nothing to read, nothing to screen: a group that asks is about a post not folded.
        return Ok(asks
            .iter()
            .map(|ask| ask.is_none().then_some(None))
            .collect());
    }
    let filter = ReadFilter {
        source: graph_source(state, min_position).await?,
        viewer: Some(viewer),
    };
    let mut verdicts = filter.readable(&judged, false).await?.into_iter();
    Ok(asks
        .iter()
        .map(|ask| match ask {
            None => Some(None),
            Some(ask) if !(known(ask).is_some() && verdicts.next().unwrap_or(false)) => None,
            Some(ask) => screening.shown(ask.subject.as_deref().unwrap_or("")),
        })
        .collect())
}

/// Whether the live stream sends `n` to `viewer` now: [`readable`]'s judgement of its group,
/// made once the feed has folded the notification's position (else on what it has).
pub async fn shown_live(
    state: &AppState,
    viewer: UserId,
    n: &LiveNotification,
) -> Result<bool, ApiError> {
    if !PostAsk::asked_of(&n.kind) {
        return Ok(true);
    }
    let feed = [relations_projections::feed::NAME];
    let pool = match wait_for_projectors(state, &feed, Some(n.position())).await {
        Ok(pool) => pool,
        Err(ApiError::NotCaughtUp) => &state.read_pool,
        Err(error) => return Err(error),
    };
    let ask = notify_read::post_ask(pool, viewer.get(), &n.kind, n.post).await?;
    let screen = screen(state, pool, None, viewer).await?;
    let screening = screening(screen.as_deref());
    Ok(readable(state, viewer, None, screening, &[ask]).await?[0].is_some())
}

/// `viewer`'s filters (issue 47), from the replica when it reflects `min_position`, else from
/// `reads` (waited for [`relations_projections::notifications::READS`]).
pub async fn screen(
    state: &AppState,
    reads: &PgPool,
    min_position: Option<LogPosition>,
    viewer: UserId,
) -> Result<Option<Arc<Screen>>, ApiError> {
    Ok(screen_for(&state.graph, reads, min_position, viewer).await?)
}

/// `screen` as a notification read applies it: in context `notifications`, now.
pub fn screening(screen: Option<&Screen>) -> Screening<'_> {
    Screening::new(screen, FilterContext::Notifications, Utc::now())
}
