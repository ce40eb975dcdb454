//! The read rule of comment lists (seed 002's use of both directions of a relation): with a
//! bearer token, a list never shows a comment whose author blocks the caller or whom the caller
//! blocks. A page is filled by reading the list in chunks until it holds `limit` visible
//! comments (or the list ends), each chunk's authors checked against the graph in one read; the
//! cursor is the last comment read, so the next page starts past the hidden ones too.

use std::collections::HashSet;

use relations_domain::{CommentId, LikeTarget, PostId, UserId};
use relations_projections::engagement::query::{self as read, CommentKey, Sort};
use relations_projections::relations::reads::Source;
use relations_projections::views::CommentView;
use serde::Serialize;
use sqlx::PgPool;
use utoipa::ToSchema;

use crate::auth::Actor;
use crate::error::ApiError;
use crate::routes::page::Page;
use crate::routes::query::graph_source;
use crate::state::AppState;

/// A page of comments: `{items, next_cursor}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct CommentPage {
    /// In the list's order.
    pub items: Vec<CommentView>,
    /// The next page's cursor; none after the last page.
    pub next_cursor: Option<String>,
}

/// Which comment list.
#[derive(Debug, Clone, Copy)]
pub enum CommentList {
    /// A post's root comments, in this order.
    Roots(PostId, Sort),
    /// A comment's replies, oldest first.
    Replies(CommentId),
}

/// The page of `list` that `viewer` may see, each comment marked liked or not for a bearer.
/// The caller has waited for `min_position`.
pub async fn visible_page(
    state: &AppState,
    pool: &PgPool,
    viewer: Option<Actor>,
    list: CommentList,
    page: &Page<CommentKey>,
) -> Result<CommentPage, ApiError> {
    let viewer = viewer.map(|a| a.user);
    let mut items = visible(state, pool, viewer, list, page).await?;
    let next_cursor = page.cut(&mut items, CommentKey::of);
    if let Some(viewer) = viewer {
        mark_liked(pool, viewer, &mut items).await?;
    }
    Ok(CommentPage { items, next_cursor })
}

/// Up to `page.probe()` comments of `list` after the page's cursor that `viewer` may see.
async fn visible(
    state: &AppState,
    pool: &PgPool,
    viewer: Option<UserId>,
    list: CommentList,
    page: &Page<CommentKey>,
) -> Result<Vec<CommentView>, ApiError> {
    let source = graph_source(state, None).await?;
    let (chunk, wanted) = (page.probe() * 2, page.probe() as usize);
    let mut after = page.after;
    let mut items: Vec<CommentView> = Vec::new();
    loop {
        let batch = match list {
            CommentList::Roots(post, sort) => read::roots(pool, post, sort, after, chunk).await?,
            CommentList::Replies(parent) => read::replies(pool, parent, after, chunk).await?,
        };
        let ended = (batch.len() as i64) < chunk;
        let hidden = hidden(source, viewer, &batch).await?;
        for (comment, hidden) in batch.into_iter().zip(hidden) {
            after = Some(CommentKey::of(&comment));
            if !hidden {
                items.push(comment);
                if items.len() == wanted {
                    return Ok(items);
                }
            }
        }
        if ended {
            return Ok(items);
        }
    }
}

/// For each comment, whether a block either way stands between `viewer` and its author.
async fn hidden(
    source: Source<'_>,
    viewer: Option<UserId>,
    batch: &[CommentView],
) -> Result<Vec<bool>, ApiError> {
    let Some(viewer) = viewer else {
        return Ok(vec![false; batch.len()]);
    };
    let authors: Vec<UserId> = batch.iter().map(|c| c.author).collect();
    let relations = source.relations(viewer, &authors, None).await?;
    Ok(relations
        .into_iter()
        .map(|r| r.blocking || r.blocked_by)
        .collect())
}

/// Marks which of `items` `viewer` likes.
async fn mark_liked(
    pool: &PgPool,
    viewer: UserId,
    items: &mut [CommentView],
) -> Result<(), ApiError> {
    let targets: Vec<LikeTarget> = items.iter().map(|c| LikeTarget::Comment(c.id)).collect();
    let liked: HashSet<LikeTarget> = read::liked(pool, viewer, &targets).await?;
    for item in items {
        item.liked = Some(liked.contains(&LikeTarget::Comment(item.id)));
    }
    Ok(())
}
