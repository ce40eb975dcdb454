//! A batch's likes and unlikes, set-based: a run of consecutive like events is folded in
//! memory to its net effect on each (target, user), then written in at most four statements,
//! whatever its length. One like was two statements (the `rm_likes` row, then the count).
//!
//! The result is the one event-by-event folding gives: a count moves only with a row of
//! `rm_likes` that actually went or came. Every pair unliked anywhere in the run is deleted
//! first (each row deleted takes one from its target's count), then every pair whose last
//! event is a like is inserted unless present (each row inserted adds one), with the time of
//! its last like. So a like taken back and given again within the run leaves the count as it
//! was and the row with its new time, as the two events one by one would.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use relations_domain::{LikeEvent, LikeTarget};
use sqlx::PgConnection;
use uuid::Uuid;

use crate::error::ProjectionError;

/// What a run did to one (target, user).
#[derive(Debug, Default)]
struct Net {
    /// Whether an unlike is among the run's events.
    unliked: bool,
    /// Whether the last event is a like, and when that like was made.
    liked: Option<DateTime<Utc>>,
}

/// A run of like events, folded; see the module docs.
#[derive(Debug, Default)]
pub(super) struct LikeRun {
    /// By (target, user): in key order, so every write locks its rows in one order.
    pairs: BTreeMap<(LikeTarget, i64), Net>,
}

impl LikeRun {
    /// Folds the next like event of the run, made at `at`.
    pub fn fold(&mut self, event: LikeEvent, at: DateTime<Utc>) {
        let (user, target, _, liked) = event.parts();
        let net = self.pairs.entry((target, user.get())).or_default();
        net.unliked |= !liked;
        net.liked = liked.then_some(at);
    }

    /// Writes the run's net effect and empties it.
    pub async fn flush(&mut self, conn: &mut PgConnection) -> Result<(), ProjectionError> {
        if self.pairs.is_empty() {
            return Ok(());
        }
        let pairs = std::mem::take(&mut self.pairs);
        let mut counts: BTreeMap<LikeTarget, i64> = BTreeMap::new();
        let (targets, users): (Vec<String>, Vec<i64>) = pairs
            .iter()
            .filter(|(_, net)| net.unliked)
            .map(|((target, user), _)| (target.to_string(), *user))
            .unzip();
        if !targets.is_empty() {
            let gone: Vec<String> = sqlx::query_scalar(
                "DELETE FROM rm_likes l USING unnest($1::text[], $2::bigint[]) AS k(target, user_id)
                  WHERE l.target = k.target AND l.user_id = k.user_id
                 RETURNING l.target",
            )
            .bind(&targets)
            .bind(&users)
            .fetch_all(&mut *conn)
            .await?;
            for target in gone {
                *counts.entry(like_target(&target)?).or_default() -= 1;
            }
        }
        let (mut targets, mut users, mut since) = (Vec::new(), Vec::new(), Vec::new());
        for ((target, user), net) in &pairs {
            if let Some(at) = net.liked {
                targets.push(target.to_string());
                users.push(*user);
                since.push(at);
            }
        }
        if !targets.is_empty() {
            let made: Vec<String> = sqlx::query_scalar(
                "INSERT INTO rm_likes (target, user_id, since)
                 SELECT * FROM unnest($1::text[], $2::bigint[], $3::timestamptz[])
                 ON CONFLICT DO NOTHING RETURNING target",
            )
            .bind(&targets)
            .bind(&users)
            .bind(&since)
            .fetch_all(&mut *conn)
            .await?;
            for target in made {
                *counts.entry(like_target(&target)?).or_default() += 1;
            }
        }
        let moved = counts.into_iter().filter(|(_, delta)| *delta != 0);
        write_counts(conn, moved).await
    }
}

/// A target as `rm_likes` keeps it.
pub(super) fn like_target(text: &str) -> Result<LikeTarget, ProjectionError> {
    text.parse()
        .map_err(|e| sqlx::Error::Decode(format!("{text}: {e}").into()).into())
}

/// Adds each target's change to its like count: a post's in `rm_post_stats` (its row made
/// when missing), a comment's in `rm_comments`.
async fn write_counts(
    conn: &mut PgConnection,
    moved: impl Iterator<Item = (LikeTarget, i64)>,
) -> Result<(), ProjectionError> {
    let (mut posts, mut post_deltas) = (Vec::<Uuid>::new(), Vec::<i64>::new());
    let (mut comments, mut ns, mut comment_deltas) = (Vec::<Uuid>::new(), Vec::new(), Vec::new());
    for (target, delta) in moved {
        match target {
            LikeTarget::Post(post) => {
                posts.push(post.uuid());
                post_deltas.push(delta);
            }
            LikeTarget::Comment(comment) => {
                comments.push(comment.post.uuid());
                ns.push(comment.n as i32);
                comment_deltas.push(delta);
            }
        }
    }
    if !posts.is_empty() {
        sqlx::query(
            "INSERT INTO rm_post_stats AS s (post, like_count)
             SELECT * FROM unnest($1::uuid[], $2::bigint[]) ORDER BY 1
             ON CONFLICT (post) DO UPDATE SET like_count = s.like_count + excluded.like_count",
        )
        .bind(&posts)
        .bind(&post_deltas)
        .execute(&mut *conn)
        .await?;
    }
    if !comments.is_empty() {
        sqlx::query(
            "UPDATE rm_comments c SET like_count = c.like_count + k.delta
               FROM unnest($1::uuid[], $2::int[], $3::bigint[]) AS k(post, n, delta)
              WHERE c.post = k.post AND c.n = k.n",
        )
        .bind(&comments)
        .bind(&ns)
        .bind(&comment_deltas)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}
