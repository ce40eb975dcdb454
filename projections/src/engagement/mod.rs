//! Projector `engagement`: likes and comments (seed 002). Who likes what (`rm_likes`), each
//! post's like and comment counts (`rm_post_stats`), and every comment with its like count,
//! reply count and visibility (`rm_comments`).
//!
//! Counts are folded from the log event by event and never written any other way, so they
//! cannot drift: a rebuild gives the same numbers, and `verify` recounts them. A comment is
//! visible while it is live or has a visible reply: a deleted comment with replies stays as a
//! tombstone, and disappears (with any deleted ancestors left without replies) when its last
//! reply goes.
//!
//! An erasure (`UserErased`) voids the user's likes and deletes their comments under the same
//! rule, set-based ([`erase`]): each liked post or comment loses one like, each thread loses
//! the user's live comments, and a deleted comment left without visible replies disappears.

pub mod held;
pub mod like_cache;
mod likes;
pub mod query;
pub mod verify;
pub mod visible;

use async_trait::async_trait;
use relations_domain::{LikeTarget, LogEvent, ThreadEvent};
use relations_store::log::{self, RecordedEvent};
use relations_store::Keyring;
use sqlx::PgConnection;
use uuid::Uuid;

use crate::error::ProjectionError;
use crate::runtime::projector::{erased_user, Projector};
use likes::LikeRun;

/// The projector's name.
pub const NAME: &str = "engagement";

/// See the module docs.
pub struct Engagement {
    /// What opens the comments' content (`rm_comments.content` is null for an erased author).
    pub keys: Keyring,
}

#[async_trait]
impl Projector for Engagement {
    fn name(&self) -> &'static str {
        NAME
    }

    fn tables(&self) -> &'static [&'static str] {
        &["rm_likes", "rm_post_stats", "rm_comments"]
    }

    /// The batch's content opened at once (one key look-up for its authors), then event by
    /// event, but for runs of likes, each written set-based ([`likes`]) before the next event
    /// of another kind.
    async fn apply_batch(
        &self,
        conn: &mut PgConnection,
        events: &[RecordedEvent],
    ) -> Result<(), ProjectionError> {
        let mut run = LikeRun::default();
        for event in log::revealed(&self.keys, events).await?.iter() {
            if let LogEvent::Like(like) = event.event {
                run.fold(like, event.occurred_at);
                continue;
            }
            run.flush(conn).await?;
            self.apply_one(conn, event).await?;
        }
        run.flush(conn).await
    }
}

impl Engagement {
    /// Folds one revealed event other than a like.
    async fn apply_one(
        &self,
        conn: &mut PgConnection,
        event: &RecordedEvent,
    ) -> Result<(), ProjectionError> {
        if let Some(user) = erased_user(event) {
            log::forget_erased(&self.keys, std::slice::from_ref(event));
            return erase(conn, user).await;
        }
        match &event.event {
            LogEvent::Thread(threaded) => thread(conn, threaded.clone()).await,
            // Likes come in runs (`apply_batch`); erasures are handled above.
            LogEvent::Like(_)
            | LogEvent::Relation(_)
            | LogEvent::Post(_)
            | LogEvent::Account(_) => Ok(()),
        }
    }
}

/// Adds to a post's counts.
async fn post_stats(
    conn: &mut PgConnection,
    post: uuid::Uuid,
    likes: i64,
    comments: i64,
) -> Result<(), ProjectionError> {
    sqlx::query(
        "INSERT INTO rm_post_stats AS s (post, like_count, comment_count) VALUES ($1, $2, $3)
         ON CONFLICT (post) DO UPDATE SET like_count = s.like_count + excluded.like_count,
             comment_count = s.comment_count + excluded.comment_count",
    )
    .bind(post)
    .bind(likes)
    .bind(comments)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

async fn thread(conn: &mut PgConnection, event: ThreadEvent) -> Result<(), ProjectionError> {
    match event {
        ThreadEvent::CommentAdded {
            post_id,
            comment,
            author,
            parent,
            content,
            created_at,
            ..
        } => {
            sqlx::query(
                "INSERT INTO rm_comments (post, n, author, parent, content, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
            )
            .bind(post_id.uuid())
            .bind(comment as i32)
            .bind(author.get())
            .bind(parent.map(|p| p as i32))
            .bind(content.as_ref().map(|c| c.as_str()))
            .bind(created_at)
            .execute(&mut *conn)
            .await?;
            if let Some(parent) = parent {
                sqlx::query(
                    "UPDATE rm_comments SET reply_count = reply_count + 1 WHERE post = $1 AND n = $2",
                )
                .bind(post_id.uuid())
                .bind(parent as i32)
                .execute(&mut *conn)
                .await?;
            }
            post_stats(conn, post_id.uuid(), 0, 1).await
        }
        ThreadEvent::CommentDeleted {
            post_id, comment, ..
        } => comment_deleted(conn, post_id.uuid(), comment as i32).await,
        ThreadEvent::CommentPinned { post_id, comment }
        | ThreadEvent::CommentUnpinned { post_id, comment } => {
            let pinned = matches!(event, ThreadEvent::CommentPinned { .. });
            sqlx::query("UPDATE rm_comments SET pinned = $3 WHERE post = $1 AND n = $2")
                .bind(post_id.uuid())
                .bind(comment as i32)
                .bind(pinned)
                .execute(&mut *conn)
                .await?;
            Ok(())
        }
    }
}

/// A comment deleted: its content goes (a tombstone stays while it has replies); a comment
/// gone for good takes with it any deleted ancestor it was the last visible reply of.
async fn comment_deleted(
    conn: &mut PgConnection,
    post: Uuid,
    comment: i32,
) -> Result<(), ProjectionError> {
    let row: Option<(i64, Option<i32>)> = sqlx::query_as(
        "UPDATE rm_comments SET deleted = true, content = NULL, pinned = false
          WHERE post = $1 AND n = $2 AND NOT deleted RETURNING reply_count, parent",
    )
    .bind(post)
    .bind(comment)
    .fetch_optional(&mut *conn)
    .await?;
    if row.is_none() {
        return Ok(());
    }
    post_stats(conn, post, 0, -1).await?;
    hide_bare(conn, vec![(post, comment)]).await
}

/// Hides each deleted comment of `candidates` left without visible replies; each one hidden
/// takes a reply from its parent, which is a candidate in turn (one statement per thread
/// level, however many comments).
async fn hide_bare(
    conn: &mut PgConnection,
    mut candidates: Vec<(Uuid, i32)>,
) -> Result<(), ProjectionError> {
    while !candidates.is_empty() {
        let (posts, ns): (Vec<Uuid>, Vec<i32>) = candidates.into_iter().unzip();
        candidates = sqlx::query_as(
            "WITH h AS (
                 UPDATE rm_comments c SET visible = false
                   FROM unnest($1::uuid[], $2::int[]) AS k(post, n)
                  WHERE c.post = k.post AND c.n = k.n
                    AND c.deleted AND c.visible AND c.reply_count = 0
                 RETURNING c.post, c.parent),
             p AS (SELECT post, parent, count(*) AS k FROM h
                    WHERE parent IS NOT NULL GROUP BY post, parent)
             UPDATE rm_comments c SET reply_count = c.reply_count - p.k
               FROM p WHERE c.post = p.post AND c.n = p.parent
             RETURNING c.post, c.n",
        )
        .bind(&posts)
        .bind(&ns)
        .fetch_all(&mut *conn)
        .await?;
    }
    Ok(())
}

/// Folds `user`'s erasure set-based: every like of theirs goes and its post or comment loses
/// one; every live comment of theirs is deleted as a deletion deletes one (content dropped,
/// unpinned, the post's count down), and those left without visible replies disappear.
async fn erase(conn: &mut PgConnection, user: i64) -> Result<(), ProjectionError> {
    let targets: Vec<String> =
        sqlx::query_scalar("DELETE FROM rm_likes WHERE user_id = $1 RETURNING target")
            .bind(user)
            .fetch_all(&mut *conn)
            .await?;
    let (mut posts, mut comments): (Vec<Uuid>, Vec<(Uuid, i32)>) = Default::default();
    for target in targets {
        match likes::like_target(&target)? {
            LikeTarget::Post(post) => posts.push(post.uuid()),
            LikeTarget::Comment(c) => comments.push((c.post.uuid(), c.n as i32)),
        }
    }
    let (comment_posts, comment_ns): (Vec<Uuid>, Vec<i32>) = comments.into_iter().unzip();
    sqlx::query(
        "UPDATE rm_post_stats s SET like_count = s.like_count - 1
           FROM unnest($1::uuid[]) AS k(post) WHERE s.post = k.post",
    )
    .bind(&posts)
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "UPDATE rm_comments c SET like_count = c.like_count - 1
           FROM unnest($1::uuid[], $2::int[]) AS k(post, n) WHERE c.post = k.post AND c.n = k.n",
    )
    .bind(&comment_posts)
    .bind(&comment_ns)
    .execute(&mut *conn)
    .await?;
    let deleted: Vec<(Uuid, i32)> = sqlx::query_as(
        "UPDATE rm_comments SET deleted = true, content = NULL, pinned = false
          WHERE author = $1 AND NOT deleted RETURNING post, n",
    )
    .bind(user)
    .fetch_all(&mut *conn)
    .await?;
    let deleted_posts: Vec<Uuid> = deleted.iter().map(|d| d.0).collect();
    sqlx::query(
        "UPDATE rm_post_stats s SET comment_count = s.comment_count - d.k
           FROM (SELECT post, count(*) AS k FROM unnest($1::uuid[]) AS p(post) GROUP BY post) AS d
          WHERE s.post = d.post",
    )
    .bind(&deleted_posts)
    .execute(&mut *conn)
    .await?;
    hide_bare(conn, deleted).await
}
