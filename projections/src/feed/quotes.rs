//! What a post shows of the post it quotes (issue 44), as its reader may see it at the moment
//! of reading: the quoted post, one level deep (its own `quote` left out), or `unavailable`
//! when it is deleted, its author erased or banned, the reader may not read it (issue 26) or a
//! block either way separates them; a detached quote shows `detached`. Every read of posts
//! asks here ([`super::reader::FeedReader`]); a post's row says only which post it quotes
//! ([`QuoteView::pending`]: `unavailable` until looked up), so nothing shows a quoted post's
//! content without this rule. A user's bookmarks (issue 46) are read by the same rule
//! ([`readable_now`]).

use std::collections::HashMap;

use relations_domain::privacy::Access;
use relations_domain::{PostId, UserId, Visibility};
use sqlx::PgPool;

use super::query::live_posts;
use crate::error::ProjectionError;
use crate::privacy;
use crate::relations::reads::Source;
use crate::views::{PostView, QuoteView};

/// Whether a reader sees a quoted post that is live and whose author is neither erased nor
/// banned: they may read it, and no block separates them from its author (the rule the live
/// stream asks of the replica too).
pub fn shown(access: &Access, visibility: Visibility, blocked: bool) -> bool {
    !blocked && access.may_read(visibility)
}

/// The posts of `quoted` that `viewer` may see now as quoted posts, without their engagement
/// (the caller fills it) and with their own quote left out.
pub async fn quoted(
    pool: &PgPool,
    source: Source<'_>,
    viewer: Option<UserId>,
    quoted: &[PostId],
) -> Result<Vec<PostView>, ProjectionError> {
    let found = readable_now(pool, source, viewer, quoted).await?;
    Ok(found.into_iter().map(one_level).collect())
}

/// The posts of `posts` that `viewer` may see now wherever a post is shown by its id alone
/// (a quoted post; a bookmark, issue 46), in no order and without their engagement: live,
/// their author neither erased nor banned, readable by the viewer (issue 26) and no block
/// either way between the viewer and the author ([`shown`]).
pub async fn readable_now(
    pool: &PgPool,
    source: Source<'_>,
    viewer: Option<UserId>,
    posts: &[PostId],
) -> Result<Vec<PostView>, ProjectionError> {
    let mut ids: Vec<uuid::Uuid> = posts.iter().map(|p| p.uuid()).collect();
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    ids.sort_unstable();
    ids.dedup();
    let found: Vec<PostView> = live_posts(pool, &ids).await?.into_values().collect();
    let mut authors: Vec<UserId> = found.iter().map(|p| p.author).collect();
    authors.sort_unstable();
    authors.dedup();
    let access = privacy::access(source, viewer, &authors).await?;
    let blocked: HashMap<UserId, bool> = match viewer {
        Some(viewer) => source
            .relations(viewer, &authors, None)
            .await?
            .into_iter()
            .map(|r| (r.to, r.blocking || r.blocked_by))
            .collect(),
        None => HashMap::new(),
    };
    Ok(found
        .into_iter()
        .filter(|post| {
            let blocked = blocked.get(&post.author).copied().unwrap_or(false);
            let access = access.get(&post.author);
            access.is_some_and(|a| shown(a, post.visibility, blocked))
        })
        .collect())
}

/// A quoted post as a quoting post shows it: its own quote left out (one level).
pub fn one_level(quoted: PostView) -> PostView {
    PostView {
        quote: None,
        ..quoted
    }
}

/// Puts each quoted post of `found` (engaged) into the posts that quote it; the rest stay as
/// their rows say (`unavailable` or `detached`).
pub fn embed(posts: &mut [PostView], found: &HashMap<PostId, PostView>) {
    for post in posts {
        if let Some(quoted) = post.quoting().and_then(|id| found.get(&id)) {
            post.quote = QuoteView::shown(quoted.clone());
        }
    }
}
