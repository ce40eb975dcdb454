//! What the feed and an author's timeline (`/api/v1/users/{id}/posts`) share: seed 003's
//! paging (`max_time`, `size`, `cursor`) and the page they answer (the reads themselves,
//! with each post's engagement, are `relations_projections::feed::reader`'s).

use chrono::{DateTime, Utc};
use relations_projections::feed::query::{PageStart, SeqPage};
use relations_projections::views::PostView;
use relations_store::LogPosition;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::error::ApiError;
use crate::routes::page::Cursor;

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
    #[param(value_type = Option<String>, pattern = r"^[1-9][0-9]{0,17}$")]
    cursor: Option<Cursor<i64>>,
    /// Read-your-writes: a command answer's `position`.
    #[param(value_type = Option<String>, pattern = r"^[0-9]{1,18}\.[0-9]{1,18}$")]
    pub(crate) min_position: Option<LogPosition>,
    /// An author's timeline only: interleave their reposts, placed at the repost's time, each
    /// with `reposted_by: [author]` (issue 44). The feed has reposts whatever this says.
    pub(crate) include_reposts: Option<bool>,
}

/// A page of posts: `{items, next_cursor}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct PostPage {
    /// Newest first.
    pub items: Vec<PostView>,
    /// The next page's cursor; none after the last page.
    pub next_cursor: Option<String>,
}

impl From<SeqPage> for PostPage {
    fn from(page: SeqPage) -> Self {
        Self {
            items: page.items,
            next_cursor: page.next.map(|seq| seq.to_string()),
        }
    }
}

impl PostPageParams {
    pub(crate) fn size(&self) -> Result<i64, ApiError> {
        match self.size {
            None => Ok(10),
            Some(n) if (1..=20).contains(&n) => Ok(n),
            Some(n) => Err(ApiError::InvalidInput(format!(
                "size must be 1 to 20, got {n}"
            ))),
        }
    }

    pub(crate) fn start(&self) -> Result<PageStart, ApiError> {
        let before = self.cursor.map(|c| c.0);
        let max_time = self.max_time.as_deref().map(parse_time).transpose()?;
        Ok(PageStart { before, max_time })
    }

    /// A plain first page: it moves the reader's read mark.
    pub(crate) fn is_first(&self) -> bool {
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
