//! Reads of projector `lists`' tables: an owner's lists, one list, its members.

use chrono::{DateTime, Utc};
use relations_domain::{ListId, UserId};
use sqlx::{PgPool, Row};

use crate::relations::query::ListEntry;

/// A live list, as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListRow {
    /// Its id.
    pub id: ListId,
    /// Its title.
    pub title: String,
    /// Whether its members leave the owner's home feed.
    pub exclusive: bool,
    /// How many members it has.
    pub members: i64,
    /// When it was made.
    pub created_at: DateTime<Utc>,
}

const LIST_COLUMNS: &str = "l.list_id, l.title, l.exclusive, l.created_at,
    (SELECT count(*) FROM rm_list_members m WHERE m.list_id = l.list_id) AS members";

fn row(row: &sqlx::postgres::PgRow) -> Result<ListRow, sqlx::Error> {
    Ok(ListRow {
        id: ListId::from_uuid(row.try_get("list_id")?),
        title: row.try_get("title")?,
        exclusive: row.try_get("exclusive")?,
        members: row.try_get("members")?,
        created_at: row.try_get("created_at")?,
    })
}

/// Every live list of `owner`'s, oldest first.
pub async fn lists(pool: &PgPool, owner: UserId) -> Result<Vec<ListRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {LIST_COLUMNS} FROM rm_lists l WHERE l.owner = $1
          ORDER BY l.created_at, l.list_id"
    );
    let rows = sqlx::query(&sql).bind(owner.get()).fetch_all(pool).await?;
    rows.iter().map(row).collect()
}

/// `owner`'s live `list`; none when it is not theirs or not live.
pub async fn list(
    pool: &PgPool,
    owner: UserId,
    list: ListId,
) -> Result<Option<ListRow>, sqlx::Error> {
    let sql =
        format!("SELECT {LIST_COLUMNS} FROM rm_lists l WHERE l.list_id = $1 AND l.owner = $2");
    let found = sqlx::query(&sql)
        .bind(list.uuid())
        .bind(owner.get())
        .fetch_optional(pool)
        .await?;
    found.as_ref().map(row).transpose()
}

/// A page of `list`'s members, newest first, after the key `(since, member)`.
pub async fn members(
    pool: &PgPool,
    list: ListId,
    after: Option<(DateTime<Utc>, i64)>,
    limit: i64,
) -> Result<Vec<ListEntry>, sqlx::Error> {
    let (since, member) = after.unzip();
    let rows: Vec<(i64, DateTime<Utc>)> = sqlx::query_as(
        "SELECT member, since FROM rm_list_members
          WHERE list_id = $1 AND ($2::timestamptz IS NULL OR (since, member) < ($2, $3))
          ORDER BY since DESC, member DESC LIMIT $4",
    )
    .bind(list.uuid())
    .bind(since)
    .bind(member)
    .bind(limit)
    .fetch_all(pool)
    .await?;
    rows.into_iter()
        .map(|(member, since)| ListEntry::of(member, since))
        .collect()
}
