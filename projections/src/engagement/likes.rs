//! A batch's likes and unlikes, set-based: a run of consecutive like events is folded in
//! memory to its net effect on each (target, user), then written in at most four statements
//! (the counts' two are the tables' `count_likes`),
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
use relations_domain::LikeTarget;
use sqlx::PgConnection;

use super::fold::{net, Like};
use crate::error::ProjectionError;

/// What a run did to one (target, user).
#[derive(Debug, Default)]
struct Net {
    /// Whether an unlike is among the run's events.
    unliked: bool,
    /// Whether the last event is a like, and when that like was made.
    liked: Option<DateTime<Utc>>,
}

/// Writes `run`'s rows (see the module docs); each target's change of count, in target order.
pub(super) async fn like_run(
    conn: &mut PgConnection,
    run: &[Like],
) -> Result<Vec<(LikeTarget, i64)>, ProjectionError> {
    // By (target, user): in key order, so every write locks its rows in one order.
    let mut pairs: BTreeMap<(LikeTarget, i64), Net> = BTreeMap::new();
    for like in run {
        let net = pairs.entry((like.target, like.user)).or_default();
        net.unliked |= !like.on;
        net.liked = like.on.then_some(like.at);
    }
    let mut moved = Vec::new();
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
            moved.push((like_target(&target)?, -1));
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
            moved.push((like_target(&target)?, 1));
        }
    }
    Ok(net(moved))
}

/// A target as `rm_likes` keeps it.
pub(super) fn like_target(text: &str) -> Result<LikeTarget, ProjectionError> {
    text.parse()
        .map_err(|e| sqlx::Error::Decode(format!("{text}: {e}").into()).into())
}
