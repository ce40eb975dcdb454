//! What the caller may see of their notifications now: issue 26's rule over the groups about
//! a comment on someone else's post (its likes, its replies), one judgement for the list and
//! the unread count.

use relations_domain::{UserId, Visibility};
use relations_projections::feed::query::PostFilter;
use relations_projections::notifications::live::LiveNotification;
use relations_projections::notifications::query::{self as notify_read, PostAsk};
use relations_projections::privacy::ReadFilter;
use relations_store::LogPosition;

use crate::error::ApiError;
use crate::routes::query::{graph_source, wait_for_projectors};
use crate::state::AppState;

/// For each of `asks` (what reading a group asks: `None`, nothing), whether `viewer` may read
/// it now: whether they may read the group's post (issue 26's rule, judged on the graph at the
/// moment of reading, as the feed judges its pages). A post the feed has not folded yet (author
/// 0), or whose stored visibility does not parse, is read by nobody until it has: a read with
/// `min_position` waits for the feed too (`relations_projections::notifications::READS`).
pub async fn readable(
    state: &AppState,
    viewer: UserId,
    min_position: Option<LogPosition>,
    asks: &[Option<PostAsk>],
) -> Result<Vec<bool>, ApiError> {
    let known = |ask: &PostAsk| -> Option<(UserId, Visibility)> {
        let author = UserId::try_from(ask.author).ok()?;
        Some((author, ask.visibility.as_deref()?.parse().ok()?))
    };
    let judged: Vec<(UserId, Visibility)> = asks.iter().flatten().filter_map(known).collect();
    let mut verdicts = if judged.is_empty() {
        Vec::new()
    } else {
        let filter = ReadFilter {
            source: graph_source(state, min_position).await?,
            viewer: Some(viewer),
        };
        filter.readable(&judged, false).await?
    }
    .into_iter();
    Ok(asks
        .iter()
        .map(|ask| match ask {
            None => true,
            Some(ask) => known(ask).is_some() && verdicts.next().unwrap_or(false),
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
    Ok(readable(state, viewer, None, &[ask]).await?[0])
}
