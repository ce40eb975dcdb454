//! `verify`'s check of projector `engagement`: likes, counts and comments against a fold of
//! the `like` and `thread` events and the erasures, written from the rules (not from the
//! projector's SQL).

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use relations_domain::{LikeEvent, LikeTarget, LogEvent, ThreadEvent};
use relations_store::log::RecordedEvent;
use sqlx::PgConnection;

use crate::error::ProjectionError;
use crate::runtime::projector::erased_user;
use crate::runtime::verify::{diff, Check};

/// A comment as folded: (author, parent, content, deleted, pinned).
#[derive(Debug, Clone)]
struct Folded {
    author: i64,
    parent: Option<i32>,
    content: Option<String>,
    deleted: bool,
    pinned: bool,
}

/// A comment's key: (post, n).
type Key = (uuid::Uuid, i32);

/// A compared comment row: (post, n, author, parent, content, deleted, pinned, likes,
/// replies, visible).
type CommentRow = (
    uuid::Uuid,
    i32,
    i64,
    Option<i32>,
    Option<String>,
    bool,
    bool,
    i64,
    i64,
    bool,
);

/// The engagement read models against the events.
#[derive(Debug, Default)]
pub struct EngagementCheck {
    likes: BTreeSet<(String, i64)>,
    comments: BTreeMap<Key, Folded>,
}

impl EngagementCheck {
    fn likes_of(&self, target: &str) -> i64 {
        let from = (target.to_owned(), i64::MIN);
        self.likes
            .range(from..)
            .take_while(|(t, _)| t == target)
            .count() as i64
    }

    /// The rows `rm_post_stats` (those not zero) and `rm_comments` should hold, from the
    /// events folded.
    fn expected_rows(&self) -> (BTreeSet<(uuid::Uuid, i64, i64)>, BTreeSet<CommentRow>) {
        let (visible, replies) = self.visibility();
        let mut stats: BTreeMap<uuid::Uuid, (i64, i64)> = BTreeMap::new();
        for (target, _) in &self.likes {
            if let Ok(LikeTarget::Post(post)) = target.parse() {
                stats.entry(post.uuid()).or_default().0 += 1;
            }
        }
        let mut comments = BTreeSet::new();
        for (&(post, n), c) in &self.comments {
            if !c.deleted {
                stats.entry(post).or_default().1 += 1;
            }
            let id = format!("comment:{}.{n}", relations_domain::PostId::from_uuid(post));
            comments.insert((
                post,
                n,
                c.author,
                c.parent,
                c.content.clone(),
                c.deleted,
                c.pinned,
                self.likes_of(&id),
                replies.get(&(post, n)).copied().unwrap_or(0),
                visible.contains(&(post, n)),
            ));
        }
        let stats = stats
            .into_iter()
            .filter(|(_, (l, c))| (*l, *c) != (0, 0))
            .map(|(p, (l, c))| (p, l, c))
            .collect();
        (stats, comments)
    }

    /// Visible comments and each one's visible direct replies: a comment is visible while live
    /// or while it has a visible reply.
    fn visibility(&self) -> (BTreeSet<Key>, BTreeMap<Key, i64>) {
        let mut visible = BTreeSet::new();
        let mut replies: BTreeMap<Key, i64> = BTreeMap::new();
        // Children have higher numbers than their parents: walk from the newest down.
        for (&(post, n), c) in self.comments.iter().rev() {
            let shown = !c.deleted || replies.get(&(post, n)).copied().unwrap_or(0) > 0;
            if shown {
                visible.insert((post, n));
                if let Some(p) = c.parent {
                    *replies.entry((post, p)).or_default() += 1;
                }
            }
        }
        (visible, replies)
    }
}

#[async_trait]
impl Check for EngagementCheck {
    fn projector(&self) -> Option<&'static str> {
        Some(super::NAME)
    }

    fn fold(&mut self, event: &RecordedEvent) -> Result<(), ProjectionError> {
        if let Some(user) = erased_user(event) {
            // The user's likes are void, their comments deleted (the visibility rule decides
            // which stay as tombstones).
            self.likes.retain(|(_, u)| *u != user);
            for c in self.comments.values_mut().filter(|c| c.author == user) {
                (c.deleted, c.pinned, c.content) = (true, false, None);
            }
            return Ok(());
        }
        match &event.event {
            LogEvent::Like(like) => match *like {
                LikeEvent::Liked { user, target, .. } => {
                    self.likes.insert((target.to_string(), user.get()));
                }
                LikeEvent::Unliked { user, target, .. } => {
                    self.likes.remove(&(target.to_string(), user.get()));
                }
            },
            LogEvent::Thread(threaded) => {
                let event = threaded.clone();
                let id = event.comment();
                let key = (id.post.uuid(), id.n as i32);
                match event {
                    ThreadEvent::CommentAdded {
                        author,
                        parent,
                        content,
                        ..
                    } => {
                        self.comments.insert(
                            key,
                            Folded {
                                author: author.get(),
                                parent: parent.map(|p| p as i32),
                                content: content.map(|c| c.as_str().to_owned()),
                                deleted: false,
                                pinned: false,
                            },
                        );
                    }
                    ThreadEvent::CommentDeleted { .. } => {
                        if let Some(c) = self.comments.get_mut(&key) {
                            (c.deleted, c.pinned, c.content) = (true, false, None);
                        }
                    }
                    ThreadEvent::CommentPinned { .. } | ThreadEvent::CommentUnpinned { .. } => {
                        let pinned = matches!(event, ThreadEvent::CommentPinned { .. });
                        if let Some(c) = self.comments.get_mut(&key) {
                            c.pinned = pinned;
                        }
                    }
                }
            }
            LogEvent::Relation(_) | LogEvent::Post(_) | LogEvent::Account(_) => {}
        }
        Ok(())
    }

    async fn compare(
        &self,
        conn: &mut PgConnection,
        out: &mut Vec<String>,
    ) -> Result<(), ProjectionError> {
        let likes: BTreeSet<(String, i64)> = sqlx::query_as("SELECT target, user_id FROM rm_likes")
            .fetch_all(&mut *conn)
            .await?
            .into_iter()
            .collect();
        diff("rm_likes (target, user)", &self.likes, &likes, out);
        let (expected_stats, expected_comments) = self.expected_rows();
        let actual_stats: BTreeSet<(uuid::Uuid, i64, i64)> = sqlx::query_as(
            "SELECT post, like_count, comment_count FROM rm_post_stats
              WHERE like_count <> 0 OR comment_count <> 0",
        )
        .fetch_all(&mut *conn)
        .await?
        .into_iter()
        .collect();
        diff(
            "rm_post_stats (post, likes, comments)",
            &expected_stats,
            &actual_stats,
            out,
        );
        diff(
            "rm_comments (post, n, author, parent, content, deleted, pinned, likes, replies, visible)",
            &expected_comments,
            &comment_rows(conn).await?,
            out,
        );
        Ok(())
    }
}

/// Every row of `rm_comments`, as [`CommentRow`]s.
async fn comment_rows(conn: &mut PgConnection) -> Result<BTreeSet<CommentRow>, sqlx::Error> {
    let rows: Vec<CommentRow> = sqlx::query_as(
        "SELECT post, n, author, parent, content, deleted, pinned, like_count, reply_count,
                visible FROM rm_comments",
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows.into_iter().collect())
}
