//! A user's bookmarks as they read them (issue 46): newest bookmark first, each post as the
//! user may see it at the moment of reading, by the rule every post shown by its id alone is
//! read by ([`super::quotes::readable_now`]: live, its author neither erased nor banned,
//! readable by the user (issue 26), no block either way). A bookmark of a post the user may
//! not read now stands, left out of the page; it shows again once the post is readable again
//! (an unblock, a new follow). When bookmarks are left out, the page is refilled from further
//! down, so a page is only short at the true end.

use std::collections::HashMap;

use relations_domain::{PostId, UserId};
use sqlx::PgPool;

use super::quotes::readable_now;
use crate::engagement::query::{self as engagement_query, BookmarkKey};
use crate::error::ProjectionError;
use crate::relations::reads::Source;
use crate::views::PostView;

/// Up to `size` of `reader`'s bookmarks strictly after `after` whose posts they may see now,
/// newest first, each with its key, without their engagement (the caller fills it).
pub async fn page(
    pool: &PgPool,
    source: Source<'_>,
    reader: UserId,
    mut after: Option<BookmarkKey>,
    size: i64,
) -> Result<Vec<(BookmarkKey, PostView)>, ProjectionError> {
    let mut found = Vec::new();
    while (found.len() as i64) < size {
        let keys = engagement_query::bookmarks(pool, reader, after, size).await?;
        let Some(&last) = keys.last() else {
            break;
        };
        let full = keys.len() as i64 == size;
        found.extend(readable(pool, source, reader, keys).await?);
        if !full {
            break;
        }
        after = Some(last);
    }
    found.truncate(size as usize);
    Ok(found)
}

/// Of `keys`, the bookmarks whose posts `reader` may see now, in the order given, each with
/// its post.
async fn readable(
    pool: &PgPool,
    source: Source<'_>,
    reader: UserId,
    keys: Vec<BookmarkKey>,
) -> Result<Vec<(BookmarkKey, PostView)>, ProjectionError> {
    let ids: Vec<PostId> = keys.iter().map(|&(_, post)| post).collect();
    let seen = readable_now(pool, source, Some(reader), &ids).await?;
    let mut seen: HashMap<PostId, PostView> = seen.into_iter().map(|p| (p.id, p)).collect();
    Ok(keys
        .into_iter()
        .filter_map(|key| seen.remove(&key.1).map(|post| (key, post)))
        .collect())
}
