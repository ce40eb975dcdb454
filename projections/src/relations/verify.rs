//! `verify`'s checks of projector `following`'s tables and of the write side's guard rows,
//! against a fold of the relation events.

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use relations_domain::{AccountEvent, FollowPrefs, LogEvent};
use relations_store::log::RecordedEvent;
use sqlx::{PgConnection, Row};

use super::fold::{
    self, EdgeKind, EdgeTables, ErasableTables, FollowCounts, RelationChange, RelationTables,
    UserPair,
};
use crate::error::ProjectionError;
use crate::runtime::verify::{diff, pairs, Check};

/// Who follows, blocks, mutes and asks to follow whom, folded from the relation events, and
/// which accounts are locked or hide their graph, from the account events (other streams are skipped).
#[derive(Debug, Default)]
pub(crate) struct RelationFold {
    /// Follows, blocks and pending follow requests.
    pub edges: EdgeTables<BTreeSet<UserPair>>,
    /// Locked accounts.
    pub locked: BTreeSet<i64>,
    /// Accounts that hide their graph (issue 26).
    pub hidden_graphs: BTreeSet<i64>,
    /// (muter, muted) -> until, in microseconds (`None`: for good); ended mutes included
    /// (the read models keep them until replaced or lifted).
    pub mutes: BTreeMap<UserPair, Option<i64>>,
    /// user -> (following, followers, friends), as the fold counts them.
    counts: BTreeMap<i64, FollowCounts>,
    /// Each erased user -> who followed them when they were erased (the follows the store
    /// settles right after the erasure: `follow_edges` keeps them until then).
    pub erased: BTreeMap<i64, Vec<i64>>,
    /// Preferences that are not the defaults (issue 44).
    pub prefs: BTreeMap<UserPair, FollowPrefs>,
    /// (user, dismissed) -> since, in microseconds (issue 46).
    pub dismissals: BTreeMap<UserPair, i64>,
}

impl ErasableTables for RelationFold {
    fn edges_of(&self, user: i64) -> Vec<(EdgeKind, UserPair)> {
        self.edges.touching(user, |set| set.iter())
    }

    fn lift_all(&mut self, user: i64) {
        self.mutes.retain(|&(a, b), _| a != user && b != user);
        self.dismissals.retain(|&(a, b), _| a != user && b != user);
    }
}

impl RelationTables for RelationFold {
    fn begin(&mut self, kind: EdgeKind, pair: UserPair, _: DateTime<Utc>) -> bool {
        self.edges.of(kind).insert(pair)
    }

    fn end(&mut self, kind: EdgeKind, pair: UserPair) -> bool {
        self.edges.of(kind).remove(&pair)
    }

    fn follows(&self, pair: UserPair) -> bool {
        self.edges.follows.contains(&pair)
    }

    fn mute(&mut self, pair: UserPair, _: DateTime<Utc>, until: Option<DateTime<Utc>>) {
        self.mutes.insert(pair, until.map(|t| t.timestamp_micros()));
    }

    fn unmute(&mut self, pair: UserPair) {
        self.mutes.remove(&pair);
    }

    fn prefs(&mut self, pair: UserPair, prefs: FollowPrefs) {
        super::keep_prefs(&mut self.prefs, pair, prefs);
    }

    fn dismiss(&mut self, pair: UserPair, since: DateTime<Utc>) {
        self.dismissals
            .entry(pair)
            .or_insert(since.timestamp_micros());
    }
}

impl RelationFold {
    /// Folds `event` if it is a relation or account event.
    pub fn fold(&mut self, event: &RecordedEvent) -> Result<(), ProjectionError> {
        let account = match &event.event {
            LogEvent::Account(account) => account,
            LogEvent::Relation(_) => {
                if let Some(change) = RelationChange::of_recorded(event) {
                    if let Some(count) = fold::fold(self, change) {
                        count.add_to(&mut self.counts);
                    }
                }
                return Ok(());
            }
            LogEvent::Post(_)
            | LogEvent::Thread(_)
            | LogEvent::Like(_)
            | LogEvent::Repost(_)
            | LogEvent::Bookmark(_)
            | LogEvent::Lists(_)
            | LogEvent::Filters(_) => return Ok(()),
        };
        match *account {
            AccountEvent::AccountLocked { user } => self.locked.insert(user.get()),
            AccountEvent::AccountUnlocked { user } => self.locked.remove(&user.get()),
            AccountEvent::GraphHidden { user } => self.hidden_graphs.insert(user.get()),
            AccountEvent::GraphShown { user } => self.hidden_graphs.remove(&user.get()),
            AccountEvent::UserErased { user } => {
                let user = user.get();
                let followers = self.edges.follows.iter().filter(|&&(_, b)| b == user);
                self.erased
                    .insert(user, followers.map(|&(a, _)| a).collect());
                for count in fold::erase(self, user) {
                    count.add_to(&mut self.counts);
                }
                self.hidden_graphs.remove(&user);
                self.locked.remove(&user)
            }
            AccountEvent::TokensRevoked { .. }
            | AccountEvent::UserBanned { .. }
            | AccountEvent::UserUnbanned { .. }
            | AccountEvent::NotificationPolicyChanged { .. } => false,
        };
        Ok(())
    }

    /// The mutes as rows: (muter, muted, until µs).
    pub fn mute_rows(&self) -> BTreeSet<(i64, i64, Option<i64>)> {
        self.mutes.iter().map(|(&(a, b), &u)| (a, b, u)).collect()
    }

    /// user -> (following, followers, friends), zero rows left out.
    fn counts(&self) -> BTreeSet<(i64, FollowCounts)> {
        let counts = self.counts.iter().filter(|(_, c)| **c != (0, 0, 0));
        counts.map(|(&user, &c)| (user, c)).collect()
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

/// The same follows by followee (`rm_fans`, issue 48), each at its follow's time and in its
/// followee's route; each routed account with its table and each table with its route.
async fn compare_fans(
    conn: &mut PgConnection,
    relations: &RelationFold,
    out: &mut Vec<String>,
) -> Result<(), ProjectionError> {
    let fans = pairs(&mut *conn, "SELECT follower, followee FROM rm_fans").await?;
    diff(
        "rm_fans (follower, followee)",
        &relations.edges.follows,
        &fans,
        out,
    );
    let misplaced = pairs(
        &mut *conn,
        "SELECT x.follower, x.followee FROM rm_fans x
               LEFT JOIN rm_fan_routes r ON r.followee = x.followee
               LEFT JOIN rm_follows f ON f.follower = x.follower AND f.followee = x.followee
              WHERE x.route <> coalesce(r.followee, -1 - x.followee % 8)
                 OR f.since IS DISTINCT FROM x.since",
    )
    .await?;
    for (follower, followee) in misplaced {
        out.push(format!(
                "rm_fans: ({follower}, {followee}) is outside its followee's route or not at its follow's time"
            ));
    }
    // Each routed account has its table, and each table its route.
    let tables: BTreeSet<i64> = sqlx::query_as::<_, (String, i64)>(super::fans::OWN_TABLES)
        .fetch_all(&mut *conn)
        .await?
        .into_iter()
        .map(|(_, followee)| followee)
        .collect();
    let routes: BTreeSet<i64> = sqlx::query_scalar("SELECT followee FROM rm_fan_routes")
        .fetch_all(&mut *conn)
        .await?
        .into_iter()
        .collect();
    diff("rm_fans' own tables (by route)", &routes, &tables, out);
    Ok(())
}

/// The choices kept per pair: each follow's preferences (issue 44) and each dismissed
/// suggestion, with its time (issue 46).
async fn compare_choices(
    conn: &mut PgConnection,
    relations: &RelationFold,
    out: &mut Vec<String>,
) -> Result<(), ProjectionError> {
    let prefs: Vec<(i64, i64, bool, bool)> =
        sqlx::query_as("SELECT follower, followee, show_reposts, notify FROM rm_follow_prefs")
            .fetch_all(&mut *conn)
            .await?;
    let prefs: BTreeSet<_> = prefs.into_iter().collect();
    let folded = (relations.prefs.iter())
        .map(|(&(a, b), p)| (a, b, p.show_reposts, p.notify))
        .collect();
    diff(
        "rm_follow_prefs (follower, followee, show_reposts, notify)",
        &folded,
        &prefs,
        out,
    );
    let dismissals: Vec<(i64, i64, DateTime<Utc>)> =
        sqlx::query_as("SELECT user_id, dismissed, since FROM rm_dismissals")
            .fetch_all(&mut *conn)
            .await?;
    let dismissals: BTreeSet<_> = (dismissals.into_iter())
        .map(|(a, b, since)| (a, b, since.timestamp_micros()))
        .collect();
    let folded = (relations.dismissals.iter())
        .map(|(&(a, b), &since)| (a, b, since))
        .collect();
    diff(
        "rm_dismissals (user, dismissed, since)",
        &folded,
        &dismissals,
        out,
    );
    Ok(())
}

/// Projector `following`'s tables against the fold up to its checkpoint, or the write side's
/// guard rows against every relation event committed.
#[derive(Debug)]
pub struct FollowingCheck {
    relations: RelationFold,
    write_side: bool,
}

impl FollowingCheck {
    /// `rm_follows`, `rm_blocks` and `rm_follow_counts`.
    pub fn read_model() -> Self {
        Self {
            relations: RelationFold::default(),
            write_side: false,
        }
    }

    /// The write side's rows, which count every committed event: `follow_guard` (rule 3:
    /// follows and pending requests), `follow_edges`, `pending_requests`, `account_locks` and
    /// `hidden_graphs`.
    pub fn guards() -> Self {
        Self {
            relations: RelationFold::default(),
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
        let relations = &self.relations;
        diff(
            "rm_follows (follower, followee)",
            &relations.edges.follows,
            &follows,
            out,
        );
        compare_fans(&mut *conn, relations, out).await?;
        diff(
            "rm_blocks (blocker, blocked)",
            &relations.edges.blocks,
            &blocks,
            out,
        );
        let requests = pairs(
            &mut *conn,
            "SELECT requester, target FROM rm_follow_requests",
        )
        .await?;
        diff(
            "rm_follow_requests (requester, target)",
            &relations.edges.requests,
            &requests,
            out,
        );
        let mutes = mute_rows(&mut *conn, "rm_mutes").await?;
        diff(
            "rm_mutes (muter, muted, until)",
            &relations.mute_rows(),
            &mutes,
            out,
        );
        compare_choices(&mut *conn, relations, out).await?;
        let expected = relations.counts();
        diff(
            "rm_follow_counts (user, (following, followers, friends))",
            &expected,
            &counts,
            out,
        );
        Ok(())
    }

    /// The store's own index of follows against the fold. A follow of an erased user stays in
    /// it, and counted in its follower's guard row, until the store settles the erasure
    /// (`guard_settled`): it must be one the user had when erased. Those counts, by follower.
    async fn compare_edges(
        &self,
        conn: &mut PgConnection,
        out: &mut Vec<String>,
    ) -> Result<BTreeMap<i64, i64>, ProjectionError> {
        let unsettled: BTreeSet<i64> =
            sqlx::query_scalar("SELECT user_id FROM erased_users WHERE NOT guard_settled")
                .fetch_all(&mut *conn)
                .await?
                .into_iter()
                .collect();
        let (pending, edges): (BTreeSet<_>, BTreeSet<_>) =
            pairs(&mut *conn, "SELECT follower, followee FROM follow_edges")
                .await?
                .into_iter()
                .partition(|(_, followee)| unsettled.contains(followee));
        diff(
            "follow_edges (follower, followee)",
            &self.relations.edges.follows,
            &edges,
            out,
        );
        let mut counted: BTreeMap<i64, i64> = BTreeMap::new();
        for &(follower, user) in &pending {
            *counted.entry(follower).or_default() += 1;
            let erased = self.relations.erased.get(&user);
            if !erased.is_some_and(|followers| followers.contains(&follower)) {
                out.push(format!(
                    "follow_edges: {follower} -> {user} is not a follow {user} had when erased"
                ));
            }
        }
        Ok(counted)
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
        let mut expected = self.compare_edges(conn, out).await?;
        let erased = pairs(&mut *conn, "SELECT user_id, 0::bigint FROM erased_users").await?;
        let expected_erased: BTreeSet<(i64, i64)> =
            self.relations.erased.keys().map(|&u| (u, 0)).collect();
        diff("erased_users (user, 0)", &expected_erased, &erased, out);
        for &(requester, _) in self
            .relations
            .edges
            .follows
            .iter()
            .chain(&self.relations.edges.requests)
        {
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
            &self.relations.edges.requests,
            &pending,
            out,
        );
        let locked = pairs(&mut *conn, "SELECT user_id, 0::bigint FROM account_locks").await?;
        let expected: BTreeSet<(i64, i64)> =
            self.relations.locked.iter().map(|&u| (u, 0)).collect();
        diff("account_locks (user, 0)", &expected, &locked, out);
        let hidden = pairs(&mut *conn, "SELECT user_id, 0::bigint FROM hidden_graphs").await?;
        let expected: BTreeSet<(i64, i64)> = self
            .relations
            .hidden_graphs
            .iter()
            .map(|&u| (u, 0))
            .collect();
        diff("hidden_graphs (user, 0)", &expected, &hidden, out);
        Ok(())
    }
}

#[async_trait]
impl Check for FollowingCheck {
    fn projector(&self) -> Option<&'static str> {
        (!self.write_side).then_some(super::NAME)
    }

    fn fold(&mut self, event: &RecordedEvent) -> Result<(), ProjectionError> {
        self.relations.fold(event)
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
