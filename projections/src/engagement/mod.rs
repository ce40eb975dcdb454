//! Projector `engagement`: likes and comments (seed 002). Who likes what (`rm_likes`), each
//! post's like and comment counts (`rm_post_stats`), and every comment with its like count,
//! reply count and visibility (`rm_comments`).
//!
//! Counts are folded from the log event by event and never written any other way, so they
//! cannot drift: a rebuild gives the same numbers, and `verify` recounts them. A comment is
//! visible while it is live or has a visible reply: a deleted comment with replies stays as a
//! tombstone, and disappears (with any deleted ancestors left without replies) when its last
//! reply goes.

pub mod like_cache;
pub mod query;
pub mod verify;
pub mod visible;

use async_trait::async_trait;
use relations_domain::{Like, LikeEvent, LikeTarget, Thread, ThreadEvent};
use relations_store::log::RecordedEvent;
use sqlx::PgConnection;
use uuid::Uuid;

use crate::error::ProjectionError;
use crate::runtime::projector::{decode, Projector};

/// The projector's name.
pub const NAME: &str = "engagement";

/// See the module docs.
pub struct Engagement;

#[async_trait]
impl Projector for Engagement {
    fn name(&self) -> &'static str {
        NAME
    }

    fn tables(&self) -> &'static [&'static str] {
        &["rm_likes", "rm_post_stats", "rm_comments"]
    }

    async fn apply(
        &self,
        conn: &mut PgConnection,
        event: &RecordedEvent,
    ) -> Result<(), ProjectionError> {
        match event.stream_type.as_str() {
            Like::TYPE => like(conn, decode(event)?, event).await,
            Thread::TYPE => thread(conn, decode(event)?).await,
            _ => Ok(()),
        }
    }
}

async fn like(
    conn: &mut PgConnection,
    event: LikeEvent,
    recorded: &RecordedEvent,
) -> Result<(), ProjectionError> {
    let (user, target, delta) = match event {
        LikeEvent::Liked { user, target, .. } => (user, target, 1i64),
        LikeEvent::Unliked { user, target, .. } => (user, target, -1),
    };
    let changed = match delta {
        1 => sqlx::query(
            "INSERT INTO rm_likes (target, user_id, since) VALUES ($1, $2, $3)
             ON CONFLICT DO NOTHING",
        )
        .bind(target.to_string())
        .bind(user.get())
        .bind(recorded.occurred_at),
        _ => sqlx::query("DELETE FROM rm_likes WHERE target = $1 AND user_id = $2")
            .bind(target.to_string())
            .bind(user.get()),
    }
    .execute(&mut *conn)
    .await?
    .rows_affected();
    if changed == 0 {
        return Ok(());
    }
    match target {
        LikeTarget::Post(post) => post_stats(conn, post.uuid(), delta, 0).await,
        LikeTarget::Comment(comment) => {
            sqlx::query(
                "UPDATE rm_comments SET like_count = like_count + $3 WHERE post = $1 AND n = $2",
            )
            .bind(comment.post.uuid())
            .bind(comment.n as i32)
            .bind(delta)
            .execute(&mut *conn)
            .await?;
            Ok(())
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
            .bind(content.as_str())
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
    let Some((replies, mut parent)) = row else {
        return Ok(());
    };
    post_stats(conn, post, 0, -1).await?;
    if replies > 0 {
        return Ok(());
    }
    hide(conn, post, comment).await?;
    while let Some(p) = parent {
        let row: (i64, bool, Option<i32>) = sqlx::query_as(
            "UPDATE rm_comments SET reply_count = reply_count - 1
              WHERE post = $1 AND n = $2 RETURNING reply_count, deleted, parent",
        )
        .bind(post)
        .bind(p)
        .fetch_one(&mut *conn)
        .await?;
        let (replies, deleted, grandparent) = row;
        if !(deleted && replies == 0) {
            break;
        }
        hide(conn, post, p).await?;
        parent = grandparent;
    }
    Ok(())
}

/// Comment `n` of `post` is no longer shown.
async fn hide(conn: &mut PgConnection, post: Uuid, n: i32) -> Result<(), ProjectionError> {
    sqlx::query("UPDATE rm_comments SET visible = false WHERE post = $1 AND n = $2")
        .bind(post)
        .bind(n)
        .execute(&mut *conn)
        .await?;
    Ok(())
}
