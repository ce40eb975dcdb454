//! Projector `engagement`'s tables in memory, folded by the engagement fold: what `verify`
//! compares PostgreSQL's tables with, row for row.

use std::collections::{BTreeMap, BTreeSet};

use relations_domain::LikeTarget;
use uuid::Uuid;

use super::fold::{
    Bookmark, EngagementTables, Folded, Key, Like, NewComment, PostMark, Quote, Repost,
};
use super::PostCounts;

/// A row of `rm_comments`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct CommentRow {
    /// Who wrote it.
    pub author: i64,
    /// The comment it answers.
    pub parent: Option<i32>,
    /// Its text, until deleted.
    pub content: Option<String>,
    /// Whether it was deleted.
    pub deleted: bool,
    /// Whether it is pinned.
    pub pinned: bool,
    /// Its likes.
    pub likes: i64,
    /// Its visible replies.
    pub replies: i64,
    /// Whether it is shown.
    pub visible: bool,
}

/// `rm_likes`, `rm_reposts`, `rm_bookmarks`, `rm_quotes`, `rm_post_stats` and `rm_comments`,
/// in memory.
#[derive(Debug, Default)]
pub struct EngagementMemory {
    /// `rm_likes`: (target, user).
    pub likes: BTreeSet<(LikeTarget, i64)>,
    /// `rm_reposts`: (post, user) -> since, in microseconds.
    pub reposts: BTreeMap<(Uuid, i64), i64>,
    /// `rm_bookmarks`: (post, user) -> since, in microseconds.
    pub bookmarks: BTreeMap<(Uuid, i64), i64>,
    /// `rm_quotes`: quoting post -> (quoted post, author).
    pub quotes: BTreeMap<Uuid, (Uuid, i64)>,
    /// `rm_post_stats`.
    pub stats: BTreeMap<Uuid, PostCounts>,
    /// `rm_comments`.
    pub comments: BTreeMap<Key, CommentRow>,
}

impl EngagementTables for EngagementMemory {
    async fn like(&mut self, like: &Like) -> Folded<bool> {
        let pair = (like.target, like.user);
        Ok(match like.on {
            true => self.likes.insert(pair),
            false => self.likes.remove(&pair),
        })
    }

    async fn count_likes(&mut self, moved: &[(LikeTarget, i64)]) -> Folded<()> {
        for &(target, delta) in moved {
            match target {
                LikeTarget::Post(post) => self.stats.entry(post.uuid()).or_default().likes += delta,
                LikeTarget::Comment(c) => {
                    if let Some(row) = self.comments.get_mut(&(c.post.uuid(), c.n as i32)) {
                        row.likes += delta;
                    }
                }
            }
        }
        Ok(())
    }

    async fn repost(&mut self, repost: &Repost) -> Folded<bool> {
        Ok(mark(&mut self.reposts, repost))
    }

    async fn unrepost_all(&mut self, user: i64) -> Folded<Vec<Uuid>> {
        Ok(unmark_all(&mut self.reposts, user))
    }

    async fn bookmark(&mut self, bookmark: &Bookmark) -> Folded<()> {
        mark(&mut self.bookmarks, bookmark);
        Ok(())
    }

    async fn unbookmark_all(&mut self, user: i64) -> Folded<()> {
        unmark_all(&mut self.bookmarks, user);
        Ok(())
    }

    async fn count_reposts(&mut self, moved: &[(Uuid, i64)]) -> Folded<()> {
        for &(post, delta) in moved {
            self.stats.entry(post).or_default().reposts += delta;
        }
        Ok(())
    }

    async fn quote(&mut self, quote: &Quote) -> Folded<bool> {
        let row = (quote.quote_of, quote.author);
        Ok(self.quotes.insert(quote.post, row).is_none())
    }

    async fn unquote(&mut self, post: Uuid) -> Folded<Option<Uuid>> {
        Ok(self.quotes.remove(&post).map(|(quoted, _)| quoted))
    }

    async fn unquote_all(&mut self, user: i64) -> Folded<Vec<Uuid>> {
        let mut quoted = Vec::new();
        self.quotes.retain(|_, &mut (of, author)| {
            let mine = author == user;
            if mine {
                quoted.push(of);
            }
            !mine
        });
        Ok(quoted)
    }

    async fn count_quotes(&mut self, moved: &[(Uuid, i64)]) -> Folded<()> {
        for &(post, delta) in moved {
            self.stats.entry(post).or_default().quotes += delta;
        }
        Ok(())
    }

    async fn count_comments(&mut self, moved: &[(Uuid, i64)]) -> Folded<()> {
        for &(post, delta) in moved {
            self.stats.entry(post).or_default().comments += delta;
        }
        Ok(())
    }

    async fn count_replies(&mut self, moved: &[(Key, i64)]) -> Folded<()> {
        for (key, delta) in moved {
            if let Some(row) = self.comments.get_mut(key) {
                row.replies += delta;
            }
        }
        Ok(())
    }

    async fn comment(&mut self, c: &NewComment<'_>) -> Folded<bool> {
        if self.comments.contains_key(&c.key) {
            return Ok(false);
        }
        let row = CommentRow {
            author: c.author,
            parent: c.parent,
            content: c.content.map(str::to_owned),
            deleted: false,
            pinned: false,
            likes: 0,
            replies: 0,
            visible: true,
        };
        self.comments.insert(c.key, row);
        Ok(true)
    }

    async fn uncomment(&mut self, key: Key) -> Folded<bool> {
        Ok(self.comments.get_mut(&key).is_some_and(delete))
    }

    async fn uncomment_all(&mut self, user: i64) -> Folded<Vec<Key>> {
        Ok(self
            .comments
            .iter_mut()
            .filter(|(_, row)| row.author == user)
            .filter_map(|(key, row)| delete(row).then_some(*key))
            .collect())
    }

    async fn unlike_all(&mut self, user: i64) -> Folded<Vec<LikeTarget>> {
        let mine: Vec<_> = self.likes.iter().filter(|l| l.1 == user).copied().collect();
        for like in &mine {
            self.likes.remove(like);
        }
        Ok(mine.into_iter().map(|(target, _)| target).collect())
    }

    async fn pin(&mut self, key: Key, on: bool) -> Folded<()> {
        if let Some(row) = self.comments.get_mut(&key) {
            row.pinned = on;
        }
        Ok(())
    }

    async fn hide(&mut self, candidates: &[Key]) -> Folded<Vec<Key>> {
        let mut parents = Vec::new();
        for key in candidates {
            if let Some(row) = self.comments.get_mut(key) {
                if row.deleted && row.visible && row.replies == 0 {
                    row.visible = false;
                    parents.extend(row.parent.map(|p| (key.0, p)));
                }
            }
        }
        Ok(parents)
    }
}

/// Puts (`mark.on`) or takes (`mark.post`, `mark.user`) out of `marks`; whether it came or
/// went.
fn mark(marks: &mut BTreeMap<(Uuid, i64), i64>, mark: &PostMark) -> bool {
    let pair = (mark.post, mark.user);
    match mark.on {
        // A mark that stands keeps its time, as the table's row does.
        true if marks.contains_key(&pair) => false,
        true => marks.insert(pair, mark.at.timestamp_micros()).is_none(),
        false => marks.remove(&pair).is_some(),
    }
}

/// Takes every mark of `user` out of `marks`; the posts they marked.
fn unmark_all(marks: &mut BTreeMap<(Uuid, i64), i64>, user: i64) -> Vec<Uuid> {
    let mine: Vec<_> = marks.keys().filter(|m| m.1 == user).copied().collect();
    for pair in &mine {
        marks.remove(pair);
    }
    mine.into_iter().map(|(post, _)| post).collect()
}

/// Marks a comment deleted; whether it was live.
fn delete(row: &mut CommentRow) -> bool {
    let was_live = !row.deleted;
    (row.deleted, row.pinned, row.content) = (true, false, None);
    was_live
}
