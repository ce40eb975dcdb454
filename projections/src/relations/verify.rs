//! `verify`'s checks of projector `following`'s tables and of the write side's guard rows,
//! against a fold of the relation events.

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use relations_domain::{Account, AccountEvent, RelationEvent, RelationPair};
use relations_store::log::RecordedEvent;
use sqlx::{PgConnection, Row};

use crate::error::ProjectionError;
use crate::runtime::projector::decode;
use crate::runtime::verify::{diff, pairs, Check};

/// Who follows, blocks, mutes and asks to follow whom, folded from the relation events, and
/// which accounts are locked, from the account events (other streams are skipped).
#[derive(Debug, Default)]
pub(crate) struct RelationFold {
    /// (follower, followee)
    pub follows: BTreeSet<(i64, i64)>,
    /// (blocker, blocked)
    pub blocks: BTreeSet<(i64, i64)>,
    /// Pending follow requests (requester, target).
    pub requests: BTreeSet<(i64, i64)>,
    /// Locked accounts.
    pub locked: BTreeSet<i64>,
    /// (muter, muted) -> until, in microseconds (`None`: for good); ended mutes included
    /// (the read models keep them until replaced or lifted).
    pub mutes: BTreeMap<(i64, i64), Option<i64>>,
}

impl RelationFold {
    /// Folds `event` if it is a relation event.
    pub fn fold(&mut self, event: &RecordedEvent) -> Result<(), ProjectionError> {
        if event.stream_type == Account::TYPE {
            match decode(event)? {
                AccountEvent::AccountLocked { user } => self.locked.insert(user.get()),
                AccountEvent::AccountUnlocked { user } => self.locked.remove(&user.get()),
                _ => false,
            };
            return Ok(());
        }
        if event.stream_type != RelationPair::TYPE {
            return Ok(());
        }
        match decode(event)? {
            RelationEvent::Followed { follower, followee } => {
                self.follows.insert((follower.get(), followee.get()));
            }
            RelationEvent::Unfollowed {
                follower, followee, ..
            } => {
                self.follows.remove(&(follower.get(), followee.get()));
            }
            RelationEvent::Blocked { blocker, blocked } => {
                self.blocks.insert((blocker.get(), blocked.get()));
            }
            RelationEvent::Unblocked { blocker, blocked } => {
                self.blocks.remove(&(blocker.get(), blocked.get()));
            }
            RelationEvent::Muted {
                muter,
                muted,
                until,
            } => {
                let until = until.map(|t| t.timestamp_micros());
                self.mutes.insert((muter.get(), muted.get()), until);
            }
            RelationEvent::Unmuted { muter, muted } => {
                self.mutes.remove(&(muter.get(), muted.get()));
            }
            request @ (RelationEvent::FollowRequested { .. }
            | RelationEvent::FollowRequestApproved { .. }
            | RelationEvent::FollowRequestRejected { .. }
            | RelationEvent::FollowRequestWithdrawn { .. }) => {
                if let Some(((a, b), pending)) = request.request() {
                    match pending {
                        true => self.requests.insert((a.get(), b.get())),
                        false => self.requests.remove(&(a.get(), b.get())),
                    };
                }
            }
        }
        Ok(())
    }

    /// The mutes as rows: (muter, muted, until µs).
    pub fn mute_rows(&self) -> BTreeSet<(i64, i64, Option<i64>)> {
        self.mutes.iter().map(|(&(a, b), &u)| (a, b, u)).collect()
    }

    /// user -> (following, followers, friends), zero rows left out.
    fn counts(&self) -> BTreeMap<i64, (i64, i64, i64)> {
        let mut counts: BTreeMap<i64, (i64, i64, i64)> = BTreeMap::new();
        for &(a, b) in &self.follows {
            counts.entry(a).or_default().0 += 1;
            counts.entry(b).or_default().1 += 1;
            if self.follows.contains(&(b, a)) {
                counts.entry(a).or_default().2 += 1;
            }
        }
        counts
    }
}

/// A mutes table's rows: (muter, muted, until µs).
pub(crate) async fn mute_rows(
    conn: &mut PgConnection,
    table: &str,
) -> Result<BTreeSet<(i64, i64, Option<i64>)>, sqlx::Error> {
    let rows: Vec<(i64, i64, Option<chrono::DateTime<chrono::Utc>>)> =
        sqlx::query_as(&format!("SELECT muter, muted, until FROM {table}"))
            .fetch_all(conn)
            .await?;
    Ok(rows
        .into_iter()
        .map(|(a, b, u)| (a, b, u.map(|t| t.timestamp_micros())))
        .collect())
}

/// Projector `following`'s tables against the fold up to its checkpoint, or the write side's
/// guard rows against every relation event committed.
#[derive(Debug)]
pub struct FollowingCheck {
    graph: RelationFold,
    write_side: bool,
}

impl FollowingCheck {
    /// `rm_follows`, `rm_blocks` and `rm_follow_counts`.
    pub fn read_model() -> Self {
        Self {
            graph: RelationFold::default(),
            write_side: false,
        }
    }

    /// The write side's rows, which count every committed event, settled or not:
    /// `follow_guard` (rule 3: follows and pending requests), `pending_requests` and
    /// `account_locks`.
    pub fn guards() -> Self {
        Self {
            graph: RelationFold::default(),
            write_side: true,
        }
    }

    async fn compare_read_model(
        &self,
        conn: &mut PgConnection,
        out: &mut Vec<String>,
    ) -> Result<(), ProjectionError> {
        let follows = pairs(&mut *conn, "SELECT follower, followee FROM rm_follows").await?;
        let blocks = pairs(&mut *conn, "SELECT blocker, blocked FROM rm_blocks").await?;
        let counts: BTreeSet<(i64, (i64, i64, i64))> = sqlx::query(
            "SELECT user_id, following, followers, friends FROM rm_follow_counts
              WHERE following <> 0 OR followers <> 0 OR friends <> 0",
        )
        .fetch_all(&mut *conn)
        .await?
        .iter()
        .map(|r| Ok((r.try_get(0)?, (r.try_get(1)?, r.try_get(2)?, r.try_get(3)?))))
        .collect::<Result<_, sqlx::Error>>()?;
        let graph = &self.graph;
        diff(
            "rm_follows (follower, followee)",
            &graph.follows,
            &follows,
            out,
        );
        diff("rm_blocks (blocker, blocked)", &graph.blocks, &blocks, out);
        let requests = pairs(
            &mut *conn,
            "SELECT requester, target FROM rm_follow_requests",
        )
        .await?;
        diff(
            "rm_follow_requests (requester, target)",
            &graph.requests,
            &requests,
            out,
        );
        let mutes = mute_rows(&mut *conn, "rm_mutes").await?;
        diff(
            "rm_mutes (muter, muted, until)",
            &graph.mute_rows(),
            &mutes,
            out,
        );
        let expected: BTreeSet<_> = graph.counts().into_iter().collect();
        diff(
            "rm_follow_counts (user, (following, followers, friends))",
            &expected,
            &counts,
            out,
        );
        Ok(())
    }

    async fn compare_guards(
        &self,
        conn: &mut PgConnection,
        out: &mut Vec<String>,
    ) -> Result<(), ProjectionError> {
        let guards = pairs(
            &mut *conn,
            "SELECT user_id, following::bigint FROM follow_guard WHERE following <> 0",
        )
        .await?;
        let mut expected: BTreeMap<i64, i64> = BTreeMap::new();
        for &(requester, _) in self.graph.follows.iter().chain(&self.graph.requests) {
            *expected.entry(requester).or_default() += 1;
        }
        let expected: BTreeSet<(i64, i64)> = expected.into_iter().collect();
        diff(
            "follow_guard (user, follows and pending requests)",
            &expected,
            &guards,
            out,
        );
        let pending = pairs(&mut *conn, "SELECT requester, target FROM pending_requests").await?;
        diff(
            "pending_requests (requester, target)",
            &self.graph.requests,
            &pending,
            out,
        );
        let locked = pairs(&mut *conn, "SELECT user_id, 0::bigint FROM account_locks").await?;
        let expected: BTreeSet<(i64, i64)> = self.graph.locked.iter().map(|&u| (u, 0)).collect();
        diff("account_locks (user, 0)", &expected, &locked, out);
        Ok(())
    }
}

#[async_trait]
impl Check for FollowingCheck {
    fn projector(&self) -> Option<&'static str> {
        (!self.write_side).then_some(super::NAME)
    }

    fn fold(&mut self, event: &RecordedEvent) -> Result<(), ProjectionError> {
        self.graph.fold(event)
    }

    async fn compare(
        &self,
        conn: &mut PgConnection,
        out: &mut Vec<String>,
    ) -> Result<(), ProjectionError> {
        match self.write_side {
            true => self.compare_guards(conn, out).await,
            false => self.compare_read_model(conn, out).await,
        }
    }
}
