//! Projector `following`: who follows whom (`rm_follows`), the follow counters
//! (`rm_follow_counts`: following, followers, friends) and who blocks whom (`rm_blocks`).
//!
//! Follows and blocks are one projector on purpose: a block's unfollows and the block itself
//! land in one read-model transaction, so no reader ever sees a follow beside a block (rule 5).
//! Two projectors at different positions could show exactly that.

use async_trait::async_trait;
use relations_domain::{RelationEvent, RelationPair};
use relations_store::log::RecordedEvent;
use sqlx::PgConnection;

use crate::error::ProjectionError;
use crate::projector::{decode, Projector};

/// See the module docs.
pub struct Following;

#[async_trait]
impl Projector for Following {
    fn name(&self) -> &'static str {
        "following"
    }

    fn tables(&self) -> &'static [&'static str] {
        &["rm_follows", "rm_follow_counts", "rm_blocks"]
    }

    async fn apply(
        &self,
        conn: &mut PgConnection,
        event: &RecordedEvent,
    ) -> Result<(), ProjectionError> {
        if event.stream_type != RelationPair::TYPE {
            return Ok(());
        }
        let (follower, followee, delta) = match decode::<RelationEvent>(event)? {
            RelationEvent::Followed { follower, followee } => {
                let inserted = sqlx::query(
                    "INSERT INTO rm_follows (follower, followee, since) VALUES ($1, $2, $3)
                     ON CONFLICT DO NOTHING",
                )
                .bind(follower.get())
                .bind(followee.get())
                .bind(event.occurred_at)
                .execute(&mut *conn)
                .await?
                .rows_affected();
                if inserted == 0 {
                    return Ok(());
                }
                (follower, followee, 1i64)
            }
            RelationEvent::Unfollowed {
                follower, followee, ..
            } => {
                let deleted =
                    sqlx::query("DELETE FROM rm_follows WHERE follower = $1 AND followee = $2")
                        .bind(follower.get())
                        .bind(followee.get())
                        .execute(&mut *conn)
                        .await?
                        .rows_affected();
                if deleted == 0 {
                    return Ok(());
                }
                (follower, followee, -1i64)
            }
            RelationEvent::Blocked { blocker, blocked } => {
                sqlx::query(
                    "INSERT INTO rm_blocks (blocker, blocked, since) VALUES ($1, $2, $3)
                     ON CONFLICT DO NOTHING",
                )
                .bind(blocker.get())
                .bind(blocked.get())
                .bind(event.occurred_at)
                .execute(&mut *conn)
                .await?;
                return Ok(());
            }
            RelationEvent::Unblocked { blocker, blocked } => {
                sqlx::query("DELETE FROM rm_blocks WHERE blocker = $1 AND blocked = $2")
                    .bind(blocker.get())
                    .bind(blocked.get())
                    .execute(&mut *conn)
                    .await?;
                return Ok(());
            }
        };
        let mutual: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM rm_follows WHERE follower = $2 AND followee = $1)",
        )
        .bind(follower.get())
        .bind(followee.get())
        .fetch_one(&mut *conn)
        .await?;
        let friends = if mutual { delta } else { 0 };
        // Ascending user order, like every other writer of these rows.
        let mut rows = [
            (follower.get(), delta, 0i64, friends),
            (followee.get(), 0i64, delta, friends),
        ];
        rows.sort_unstable_by_key(|r| r.0);
        for (user, following, followers, friends) in rows {
            sqlx::query(
                "INSERT INTO rm_follow_counts AS c (user_id, following, followers, friends)
                 VALUES ($1, $2, $3, $4)
                 ON CONFLICT (user_id) DO UPDATE SET following = c.following + $2,
                     followers = c.followers + $3, friends = c.friends + $4",
            )
            .bind(user)
            .bind(following)
            .bind(followers)
            .bind(friends)
            .execute(&mut *conn)
            .await?;
        }
        Ok(())
    }
}
