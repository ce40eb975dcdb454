//! What every query shares: paging limits, cursors, `min_position`, viewer annotation.

use std::time::Duration;

use chrono::{DateTime, Utc};
use relations_domain::{Relation, UserId};
use relations_projections::relations::query::ListEntry;
use relations_projections::relations::reads::Source;
use relations_store::LogPosition;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::state::AppState;

/// `limit`: default 20, 1 to 100.
pub fn limit(limit: Option<i64>) -> Result<i64, ApiError> {
    match limit {
        None => Ok(20),
        Some(n) if (1..=100).contains(&n) => Ok(n),
        Some(n) => Err(ApiError::InvalidInput(format!(
            "limit must be 1 to 100, got {n}"
        ))),
    }
}

/// `offset`: default 0, not negative, at most 100 000 (deeper pages use cursors).
pub fn offset(offset: Option<i64>) -> Result<i64, ApiError> {
    match offset {
        None => Ok(0),
        Some(n) if (0..=100_000).contains(&n) => Ok(n),
        Some(n) => Err(ApiError::InvalidInput(format!(
            "offset must be 0 to 100000, got {n}"
        ))),
    }
}

/// Where a graph read (relations, lists, counts) comes from: the in-memory replica once it is
/// loaded, else the read model; in either case after it reflects `min_position`, when given.
pub async fn graph_source(
    state: &AppState,
    min_position: Option<LogPosition>,
) -> Result<Source<'_>, ApiError> {
    let wait = Duration::from_millis(state.config.catch_up_wait_ms);
    match min_position {
        None if state.graph.position().is_some() => return Ok(&state.graph),
        None => {}
        Some(position) => match state.graph.wait_for(position, wait).await {
            Some(true) => return Ok(&state.graph),
            Some(false) => return Err(ApiError::NotCaughtUp),
            None => {}
        },
    }
    wait_for_essential(state, min_position).await?;
    Ok(&state.pool)
}

/// Waits until the read models reflect `min_position`, when one is given.
pub async fn wait_for_essential(
    state: &AppState,
    min_position: Option<LogPosition>,
) -> Result<(), ApiError> {
    let names: Vec<&str> = state
        .projectors
        .iter()
        .filter(|p| p.essential)
        .map(|p| p.name)
        .collect();
    wait_for_projectors(state, &names, min_position).await
}

/// Waits until projectors `names` reflect `min_position`, when one is given.
pub async fn wait_for_projectors(
    state: &AppState,
    names: &[&str],
    min_position: Option<LogPosition>,
) -> Result<(), ApiError> {
    let Some(position) = min_position else {
        return Ok(());
    };
    let wait = Duration::from_millis(state.config.catch_up_wait_ms);
    if relations_projections::runtime::wait_for(&state.pool, names, position, wait).await? {
        Ok(())
    } else {
        Err(ApiError::NotCaughtUp)
    }
}

/// The parameters of a cursor-paged list with no viewer (the caller's own lists, known
/// followers).
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct KeyedParams {
    /// The previous page's `next_cursor`.
    #[param(pattern = r"^-?[0-9]{1,18}\.[0-9]{1,18}$")]
    pub cursor: Option<String>,
    /// Items per page: default 20, at most 100.
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    /// Read-your-writes: a command answer's `position`.
    #[param(value_type = Option<String>, pattern = r"^[0-9]{1,18}\.[0-9]{1,18}$")]
    pub min_position: Option<LogPosition>,
}

/// A search-after cursor over `(since, id)`, newest first: `"{since µs}.{id}"`, opaque to clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    /// The last item's time.
    pub since: DateTime<Utc>,
    /// The last item's id.
    pub id: i64,
}

impl Cursor {
    /// The cursor after `edge`.
    pub fn after(edge: &ListEntry) -> Self {
        Self {
            since: edge.since,
            id: edge.user.get(),
        }
    }

    /// Parses a client's cursor.
    pub fn parse(raw: &str) -> Result<Self, ApiError> {
        let bad = || ApiError::InvalidInput("malformed cursor".into());
        let (micros, id) = raw.split_once('.').ok_or_else(bad)?;
        let micros: i64 = micros.parse().map_err(|_| bad())?;
        let id: i64 = id.parse().map_err(|_| bad())?;
        let since = DateTime::<Utc>::from_timestamp_micros(micros).ok_or_else(bad)?;
        Ok(Self { since, id })
    }

    /// The key the read model pages on.
    pub fn key(self) -> (DateTime<Utc>, i64) {
        (self.since, self.id)
    }
}

impl std::fmt::Display for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.since.timestamp_micros(), self.id)
    }
}

/// One item of a user list.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ListItem {
    /// The listed user.
    pub user: UserId,
    /// Since when (RFC 3339).
    pub since: DateTime<Utc>,
    /// The viewer's relation to `user`, when a viewer was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relation: Option<Relation>,
}

/// An offset-paged list of users: `{items, total, next_offset}`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct OffsetPage {
    /// Newest first.
    pub items: Vec<ListItem>,
    /// Every item of the list.
    pub total: i64,
    /// The next page's offset; none after the last page.
    pub next_offset: Option<i64>,
}

/// A cursor-paged list of users: `{items, next_cursor}`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CursorPage {
    /// Newest first.
    pub items: Vec<ListItem>,
    /// The next page's cursor; none after the last page.
    pub next_cursor: Option<String>,
}

/// Turns a page of edges into items, annotated for `viewer` with one read for the whole page.
pub async fn items(
    source: Source<'_>,
    page: &[ListEntry],
    viewer: Option<UserId>,
) -> Result<Vec<ListItem>, ApiError> {
    let relations = match viewer {
        Some(viewer) => {
            let users: Vec<UserId> = page.iter().map(|e| e.user).collect();
            source
                // Mutes are private: never shown in lists.
                .relations(viewer, &users, None)
                .await?
                .into_iter()
                .map(Some)
                .collect()
        }
        None => vec![None; page.len()],
    };
    Ok(page
        .iter()
        .zip(relations)
        .map(|(edge, relation)| ListItem {
            user: edge.user,
            since: edge.since,
            relation,
        })
        .collect())
}
