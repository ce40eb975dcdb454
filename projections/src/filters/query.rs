//! Reads of projector `filters`' table: a user's filters, and every filter (the replica's
//! load), in the order they were made.

use chrono::{DateTime, Utc};
use relations_domain::{BadFilterName, FilterId, UserId};
use sqlx::PgPool;

use super::held::HeldFilter;
use crate::error::ProjectionError;

/// The columns of a filter, in a row.
const COLUMNS: &str = "filter_id, user_id, phrase, whole_word, contexts, action, expires_at, \
                       created_at";

/// Every filter, each user's in the order they were made (the replica's load, verify).
pub(crate) fn select_all() -> String {
    format!("SELECT {COLUMNS} FROM rm_filters ORDER BY user_id, created_at, filter_id")
}

/// A row of `rm_filters`.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct FilterRow {
    filter_id: uuid::Uuid,
    user_id: i64,
    phrase: Option<String>,
    whole_word: bool,
    contexts: Vec<String>,
    action: String,
    expires_at: Option<DateTime<Utc>>,
    created_at: DateTime<Utc>,
}

impl TryFrom<FilterRow> for HeldFilter {
    type Error = BadFilterName;

    fn try_from(row: FilterRow) -> Result<Self, BadFilterName> {
        let contexts = row
            .contexts
            .iter()
            .map(|c| c.parse())
            .collect::<Result<_, _>>()?;
        let action = row.action.parse()?;
        Ok(Self {
            id: FilterId::from_uuid(row.filter_id),
            user: row.user_id,
            phrase: row.phrase,
            whole_word: row.whole_word,
            contexts,
            action,
            expires_at: row.expires_at,
            created_at: row.created_at,
        })
    }
}

/// `user`'s filters not deleted, live or expired, in the order they were made.
pub async fn filters(pool: &PgPool, user: UserId) -> Result<Vec<HeldFilter>, ProjectionError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM rm_filters WHERE user_id = $1 ORDER BY created_at, filter_id"
    );
    let rows: Vec<FilterRow> = sqlx::query_as(&sql)
        .bind(user.get())
        .fetch_all(pool)
        .await?;
    rows.into_iter()
        .map(|row| HeldFilter::try_from(row).map_err(|e| sqlx::Error::Decode(e.into()).into()))
        .collect()
}
