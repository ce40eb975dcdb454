//! The read rule of comment lists (seed 002's use of both directions of a relation): with a
//! bearer token, a list never shows a comment whose author blocks the caller or whom the caller
//! blocks. A page is filled by reading the list in chunks until it holds the comments wanted
//! (or the list ends), each chunk's authors checked against the graph in one read; the caller's
//! cursor is the last comment returned, so the next page starts past the hidden ones too.

use std::collections::HashSet;

use relations_domain::{CommentId, LikeTarget, PostId, UserId};
use sqlx::PgPool;

use super::query::{self as read, CommentKey, Sort};
use crate::filters::screen::Screening;
use crate::relations::reads::Source;
use crate::views::CommentView;

/// Which comment list.
#[derive(Debug, Clone, Copy)]
pub enum CommentList {
    /// A post's root comments, in this order.
    Roots(PostId, Sort),
    /// A comment's replies, oldest first.
    Replies(CommentId),
}

/// Up to `wanted` comments of `list` after `after` that `viewer` may see (`None`: no bearer,
/// every comment), blocks read from `source`, and that the viewer's filters (`screening`, in
/// context `comments`: issue 47) do not hide; those a `warn` filter matches are marked.
pub async fn visible(
    pool: &PgPool,
    source: Source<'_>,
    viewer: Option<UserId>,
    screening: Screening<'_>,
    list: CommentList,
    mut after: Option<CommentKey>,
    wanted: i64,
) -> Result<Vec<CommentView>, sqlx::Error> {
    let chunk = wanted * 2;
    let mut items: Vec<CommentView> = Vec::new();
    loop {
        let batch = match list {
            CommentList::Roots(post, sort) => read::roots(pool, post, sort, after, chunk).await?,
            CommentList::Replies(parent) => read::replies(pool, parent, after, chunk).await?,
        };
        let ended = (batch.len() as i64) < chunk;
        let hidden = hidden(source, viewer, &batch).await?;
        for (mut comment, hidden) in batch.into_iter().zip(hidden) {
            after = Some(CommentKey::of(&comment));
            let text = comment.content.as_deref().unwrap_or("");
            if let Some(marks) = (!hidden).then(|| screening.shown(text)).flatten() {
                comment.filtered = marks;
                items.push(comment);
                if items.len() as i64 == wanted {
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
) -> Result<Vec<bool>, sqlx::Error> {
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
pub async fn mark_liked(
    pool: &PgPool,
    viewer: UserId,
    items: &mut [CommentView],
) -> Result<(), sqlx::Error> {
    let targets: Vec<LikeTarget> = items.iter().map(|c| LikeTarget::Comment(c.id)).collect();
    let liked: HashSet<LikeTarget> = read::liked(pool, viewer, &targets).await?;
    for item in items {
        item.liked = Some(liked.contains(&LikeTarget::Comment(item.id)));
    }
    Ok(())
}
