//! The relations between users, and projector `following` (its checkpoint name, kept from
//! before the module held more than follows): who follows whom (`rm_follows`), the follow counters
//! (`rm_follow_counts`: following, followers, friends), who blocks whom (`rm_blocks`), who
//! mutes whom (`rm_mutes`), the pending follow requests (`rm_follow_requests`), each follow's
//! preferences (`rm_follow_prefs`) and the suggestions each user dismissed (`rm_dismissals`).
//!
//! Follows and blocks are one projector on purpose: a block's unfollows and the block itself
//! land in one read-model transaction, so no reader ever sees a follow beside a block (rule 5).
//! Two projectors at different positions could show exactly that. Requests are here for the
//! same reason: a block ends them in its transaction.

use std::borrow::Cow;
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use relations_domain::FollowPrefs;
use relations_store::log::RecordedEvent;
use sqlx::PgConnection;

use crate::error::ProjectionError;
use crate::runtime::copy_out::{copy_nullable_timestamp, copy_timestamp, CopyOut};
use crate::runtime::projector::{erased_user, BulkFold, Projector};
use fold::{
    EdgeKind, EdgeTables, ErasableTables, FollowCounts, RelationChange, RelationTables, UserPair,
};

mod fans;
pub mod fold;
pub mod memory;
pub mod query;
pub mod reads;
pub mod verify;

/// The projector's name.
pub const NAME: &str = "following";

/// Projector `following` (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct Relations {
    /// How it lays out its tables.
    pub settings: Settings,
}

/// How projector `following` lays out its tables (every process that runs or rebuilds it needs
/// the same values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// An account with at least this many followers has them kept in a table of its own
    /// (`RELATIONS_FAN_TABLE_THRESHOLD`; seed 001's routes).
    pub fan_table_threshold: i64,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            fan_table_threshold: 100_000,
        }
    }
}

#[async_trait]
impl Projector for Relations {
    fn name(&self) -> &'static str {
        NAME
    }

    fn tables(&self) -> &'static [&'static str] {
        &[
            "rm_follows",
            "rm_fans",
            "rm_fan_routes",
            "rm_follow_counts",
            "rm_blocks",
            "rm_mutes",
            "rm_follow_requests",
            "rm_follow_prefs",
            "rm_dismissals",
        ]
    }

    fn bulk(&self) -> Option<Box<dyn BulkFold>> {
        Some(Box::new(RelationsBulk {
            settings: self.settings,
            ..RelationsBulk::default()
        }))
    }

    /// The batch's net effect in a handful of statements: the touched edges' rows are read
    /// once, the events are folded over them in memory in log order, and what changed is
    /// written back with array parameters. An erasure splits the batch: what comes before it
    /// is written, the erasure is folded set-based ([`erase`]), then the rest.
    async fn apply_batch(
        &self,
        conn: &mut PgConnection,
        events: &[RecordedEvent],
    ) -> Result<(), ProjectionError> {
        let mut start = 0;
        for (i, event) in events.iter().enumerate() {
            if let Some(user) = erased_user(event) {
                apply_relations(conn, self.settings, &events[start..i]).await?;
                erase(conn, user).await?;
                start = i + 1;
            }
        }
        apply_relations(conn, self.settings, &events[start..]).await
    }
}

/// Folds the relation events of `events` (no erasure among them) in one pass over the rows
/// they touch.
async fn apply_relations(
    conn: &mut PgConnection,
    settings: Settings,
    events: &[RecordedEvent],
) -> Result<(), ProjectionError> {
    let mut changes = Vec::with_capacity(events.len());
    for event in events {
        changes.extend(RelationChange::of_recorded(event));
    }
    if changes.is_empty() {
        return Ok(());
    }
    let mut tables = BatchTables::load(conn, &changes).await?;
    let mut deltas = BTreeMap::new();
    for change in changes {
        if let Some(count) = fold::fold(&mut tables, change) {
            count.add_to(&mut deltas);
        }
    }
    tables.write(conn, settings, deltas).await
}

/// Folds `user`'s erasure set-based, as [`fold::erase`] folds it in memory: the other side's
/// counters lose each follow of or by the user (and a friend where both held), every row of
/// the user goes, their followers' table of its own too. (Their followers' rule-3 counts were
/// settled by the erasure itself, in the store.)
async fn erase(conn: &mut PgConnection, user: i64) -> Result<(), ProjectionError> {
    let statements = [
        // In ascending user order, like every other writer of these rows.
        "WITH d AS (
             SELECT u, sum(fg)::bigint AS fg, sum(fr)::bigint AS fr,
                    (count(*) = 2)::int::bigint AS fd
               FROM (SELECT followee AS u, 0 AS fg, 1 AS fr FROM rm_follows WHERE follower = $1
                     UNION ALL
                     SELECT follower, 1, 0 FROM rm_fans
                      WHERE route = rm_fan_route($1) AND followee = $1) AS x
              GROUP BY u ORDER BY u)
         UPDATE rm_follow_counts c
            SET following = c.following - d.fg, followers = c.followers - d.fr,
                friends = c.friends - d.fd
           FROM d WHERE c.user_id = d.u",
        "DELETE FROM rm_follow_counts WHERE user_id = $1",
        // The user's follows, in both tables: found by follower in `rm_follows`, and by
        // follower in `rm_fans` through them (before they go).
        "DELETE FROM rm_fans x USING rm_follows f
          WHERE f.follower = $1 AND x.route = rm_fan_route(f.followee)
            AND x.followee = f.followee AND x.since = f.since AND x.follower = $1",
        "DELETE FROM rm_follows WHERE follower = $1",
        // Their followers' follows: found by followee in `rm_fans`.
        "DELETE FROM rm_follows f USING rm_fans x
          WHERE x.route = rm_fan_route($1) AND x.followee = $1
            AND f.follower = x.follower AND f.followee = $1",
        "DELETE FROM rm_fans WHERE route = rm_fan_route($1) AND followee = $1",
        "DELETE FROM rm_blocks WHERE blocker = $1 OR blocked = $1",
        "DELETE FROM rm_follow_requests WHERE requester = $1 OR target = $1",
        "DELETE FROM rm_mutes WHERE muter = $1 OR muted = $1",
        "DELETE FROM rm_follow_prefs WHERE follower = $1 OR followee = $1",
        "DELETE FROM rm_dismissals WHERE user_id = $1 OR dismissed = $1",
    ];
    for sql in statements {
        sqlx::query(sql).bind(user).execute(&mut *conn).await?;
    }
    fans::unroute(conn, user).await
}

/// The rows of one edge table a batch touches: as they were, and as the batch leaves them.
struct Edges {
    /// The statement that deletes the edges `$1 -> $2` (arrays), and the one that inserts the
    /// edges `$1 -> $2` with their `$3` since: the table's own, unless [`Edges::written_by`].
    delete: Cow<'static, str>,
    insert: Cow<'static, str>,
    /// Present before the batch.
    before: HashSet<UserPair>,
    /// Present now, with their `since` when (re)made by the batch (`None`: the old row stands).
    now: HashMap<UserPair, Option<DateTime<Utc>>>,
}

impl Edges {
    async fn load(
        conn: &mut PgConnection,
        table: &'static str,
        from: &'static str,
        to: &'static str,
        keys: &HashSet<UserPair>,
    ) -> Result<Self, sqlx::Error> {
        let (a, b): (Vec<i64>, Vec<i64>) = keys.iter().copied().unzip();
        let rows: Vec<(i64, i64)> = if keys.is_empty() {
            vec![]
        } else {
            sqlx::query_as(&format!(
                "SELECT t.{from}, t.{to} FROM {table} t
                   JOIN unnest($1::bigint[], $2::bigint[]) AS k(a, b) ON t.{from} = k.a AND t.{to} = k.b"
            ))
            .bind(&a)
            .bind(&b)
            .fetch_all(&mut *conn)
            .await?
        };
        let before: HashSet<UserPair> = rows.into_iter().collect();
        let now = before.iter().map(|&e| (e, None)).collect();
        Ok(Self {
            delete: Cow::Owned(format!(
                "DELETE FROM {table} t USING unnest($1::bigint[], $2::bigint[]) AS k(a, b)
                  WHERE t.{from} = k.a AND t.{to} = k.b"
            )),
            insert: Cow::Owned(format!(
                "INSERT INTO {table} ({from}, {to}, since)
                 SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::timestamptz[])"
            )),
            before,
            now,
        })
    }

    /// The same edges, written by `delete` and `insert` (with the parameters of the table's
    /// own statements): for a table whose rows another keeps too.
    fn written_by(self, delete: &'static str, insert: &'static str) -> Self {
        Self {
            delete: Cow::Borrowed(delete),
            insert: Cow::Borrowed(insert),
            ..self
        }
    }

    fn has(&self, edge: UserPair) -> bool {
        self.now.contains_key(&edge)
    }

    /// Adds the edge unless present; whether it was added.
    fn add(&mut self, edge: UserPair, since: DateTime<Utc>) -> bool {
        if self.has(edge) {
            return false;
        }
        self.now.insert(edge, Some(since));
        true
    }

    /// Removes the edge if present; whether it was.
    fn remove(&mut self, edge: UserPair) -> bool {
        self.now.remove(&edge).is_some()
    }

    /// Deletes what went (or was made anew), inserts what came.
    async fn write(self, conn: &mut PgConnection) -> Result<(), sqlx::Error> {
        let (mut gone_a, mut gone_b) = (Vec::new(), Vec::new());
        for &(a, b) in &self.before {
            if !matches!(self.now.get(&(a, b)), Some(None)) {
                gone_a.push(a);
                gone_b.push(b);
            }
        }
        let (mut new_a, mut new_b, mut new_since) = (Vec::new(), Vec::new(), Vec::new());
        for (&(a, b), since) in &self.now {
            if let Some(since) = since {
                new_a.push(a);
                new_b.push(b);
                new_since.push(*since);
            }
        }
        if !gone_a.is_empty() {
            sqlx::query(&self.delete)
                .bind(&gone_a)
                .bind(&gone_b)
                .execute(&mut *conn)
                .await?;
        }
        if !new_a.is_empty() {
            sqlx::query(&self.insert)
                .bind(&new_a)
                .bind(&new_b)
                .bind(&new_since)
                .execute(&mut *conn)
                .await?;
        }
        Ok(())
    }
}

/// The rows a batch touches, in every table the fold writes: the edges as loaded and as the
/// batch leaves them, and the batch's mute changes in log order (mutes are rare: written one
/// statement each, after the rest).
struct BatchTables {
    edges: EdgeTables<Edges>,
    mutes: Vec<RelationChange>,
    /// The preferences the batch leaves on each pair it sets or ends (issue 44).
    prefs: BTreeMap<UserPair, FollowPrefs>,
    /// The batch's dismissals, the first of each pair (issue 46).
    dismissals: BTreeMap<UserPair, DateTime<Utc>>,
}

impl BatchTables {
    /// Loads the rows `changes` touch (a follow's reverse too: it decides friendships).
    async fn load(
        conn: &mut PgConnection,
        changes: &[RelationChange],
    ) -> Result<Self, sqlx::Error> {
        let mut keys: [HashSet<UserPair>; 3] = Default::default();
        for change in changes {
            let (RelationChange::Begin(kind, (a, b), _) | RelationChange::End(kind, (a, b))) =
                *change
            else {
                continue;
            };
            keys[kind as usize].insert((a, b));
            if kind == EdgeKind::Follow {
                keys[kind as usize].insert((b, a));
            }
        }
        let [follows, blocks, requests] = keys;
        Ok(Self {
            edges: EdgeTables {
                // Kept by followee in `rm_fans` too (issue 48).
                follows: Edges::load(conn, "rm_follows", "follower", "followee", &follows)
                    .await?
                    .written_by(fans::DELETE_FOLLOWS, fans::INSERT_FOLLOWS),
                blocks: Edges::load(conn, "rm_blocks", "blocker", "blocked", &blocks).await?,
                requests: Edges::load(conn, "rm_follow_requests", "requester", "target", &requests)
                    .await?,
            },
            mutes: Vec::new(),
            prefs: BTreeMap::new(),
            dismissals: BTreeMap::new(),
        })
    }

    /// Writes what the batch changed, and the counters' net changes.
    async fn write(
        self,
        conn: &mut PgConnection,
        settings: Settings,
        deltas: BTreeMap<i64, FollowCounts>,
    ) -> Result<(), ProjectionError> {
        self.edges.follows.write(conn).await?;
        self.edges.blocks.write(conn).await?;
        self.edges.requests.write(conn).await?;
        let gained: Vec<i64> = deltas
            .iter()
            .filter(|(_, d)| d.1 > 0)
            .map(|(&u, _)| u)
            .collect();
        write_counts(conn, deltas).await?;
        fans::route(conn, &gained, settings.fan_table_threshold).await?;
        for mute in &self.mutes {
            write_mute(conn, "rm_mutes", mute, true).await?;
        }
        write_dismissals(conn, &self.dismissals).await?;
        write_prefs(conn, &self.prefs).await
    }
}

/// Keeps a batch's dismissals; one already kept keeps its time.
async fn write_dismissals(
    conn: &mut PgConnection,
    dismissals: &BTreeMap<UserPair, DateTime<Utc>>,
) -> Result<(), ProjectionError> {
    if dismissals.is_empty() {
        return Ok(());
    }
    let (mut a, mut b, mut since) = (vec![], vec![], vec![]);
    for (&(user, dismissed), &at) in dismissals {
        a.push(user);
        b.push(dismissed);
        since.push(at);
    }
    sqlx::query(
        "INSERT INTO rm_dismissals (user_id, dismissed, since)
         SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::timestamptz[])
         ON CONFLICT (user_id, dismissed) DO NOTHING",
    )
    .bind(&a)
    .bind(&b)
    .bind(&since)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Writes the preferences a batch leaves: the defaults as no row.
async fn write_prefs(
    conn: &mut PgConnection,
    prefs: &BTreeMap<UserPair, FollowPrefs>,
) -> Result<(), ProjectionError> {
    if prefs.is_empty() {
        return Ok(());
    }
    let (mut a, mut b, mut reposts, mut notify) = (vec![], vec![], vec![], vec![]);
    for (&(follower, followee), p) in prefs {
        a.push(follower);
        b.push(followee);
        reposts.push(p.show_reposts);
        notify.push(p.notify);
    }
    sqlx::query(
        "WITH p AS (SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bool[], $4::bool[])
                        AS p(follower, followee, show_reposts, notify)),
              gone AS (DELETE FROM rm_follow_prefs r USING p
                        WHERE r.follower = p.follower AND r.followee = p.followee
                          AND p.show_reposts AND NOT p.notify)
         INSERT INTO rm_follow_prefs (follower, followee, show_reposts, notify)
         SELECT * FROM p WHERE NOT (p.show_reposts AND NOT p.notify)
         ON CONFLICT (follower, followee) DO UPDATE
            SET show_reposts = excluded.show_reposts, notify = excluded.notify",
    )
    .bind(&a)
    .bind(&b)
    .bind(&reposts)
    .bind(&notify)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

impl RelationTables for BatchTables {
    fn begin(&mut self, kind: EdgeKind, pair: UserPair, since: DateTime<Utc>) -> bool {
        self.edges.of(kind).add(pair, since)
    }

    fn end(&mut self, kind: EdgeKind, pair: UserPair) -> bool {
        self.edges.of(kind).remove(pair)
    }

    fn follows(&self, pair: UserPair) -> bool {
        self.edges.follows.has(pair)
    }

    fn mute(&mut self, pair: UserPair, since: DateTime<Utc>, until: Option<DateTime<Utc>>) {
        self.mutes.push(RelationChange::Mute(pair, since, until));
    }

    fn unmute(&mut self, pair: UserPair) {
        self.mutes.push(RelationChange::Unmute(pair));
    }

    fn prefs(&mut self, pair: UserPair, prefs: FollowPrefs) {
        self.prefs.insert(pair, prefs);
    }

    fn dismiss(&mut self, pair: UserPair, since: DateTime<Utc>) {
        self.dismissals.entry(pair).or_insert(since);
    }
}

/// Writes a mute change into a mutes table: `rm_mutes` keeps the mute's `since`
/// (`with_since`), `feed_mutes` does not. Other changes write nothing.
pub(crate) async fn write_mute(
    conn: &mut PgConnection,
    table: &str,
    change: &RelationChange,
    with_since: bool,
) -> Result<(), ProjectionError> {
    match *change {
        RelationChange::Mute((muter, muted), since, until) => {
            let sql = match with_since {
                true => format!(
                    "INSERT INTO {table} (muter, muted, until, since) VALUES ($1, $2, $3, $4)
                     ON CONFLICT (muter, muted) DO UPDATE
                        SET until = excluded.until, since = excluded.since"
                ),
                false => format!(
                    "INSERT INTO {table} (muter, muted, until) VALUES ($1, $2, $3)
                     ON CONFLICT (muter, muted) DO UPDATE SET until = excluded.until"
                ),
            };
            let mut query = sqlx::query(&sql).bind(muter).bind(muted).bind(until);
            if with_since {
                query = query.bind(since);
            }
            query.execute(&mut *conn).await?;
        }
        RelationChange::Unmute((muter, muted)) => {
            sqlx::query(&format!(
                "DELETE FROM {table} WHERE muter = $1 AND muted = $2"
            ))
            .bind(muter)
            .bind(muted)
            .execute(&mut *conn)
            .await?;
        }
        RelationChange::Begin(..)
        | RelationChange::End(..)
        | RelationChange::Prefs(..)
        | RelationChange::Dismiss(..) => {}
    }
    Ok(())
}

/// Adds each user's net (following, followers, friends) changes to `rm_follow_counts`, in one
/// statement.
async fn write_counts(
    conn: &mut PgConnection,
    mut deltas: BTreeMap<i64, FollowCounts>,
) -> Result<(), ProjectionError> {
    deltas.retain(|_, d| *d != (0, 0, 0));
    if !deltas.is_empty() {
        let mut columns: [Vec<i64>; 4] = Default::default();
        for (user, (following, followers, friends)) in deltas {
            for (column, value) in columns
                .iter_mut()
                .zip([user, following, followers, friends])
            {
                column.push(value);
            }
        }
        let [users, following, followers, friends] = columns;
        // Ascending user order (a BTreeMap), like every other writer of these rows.
        sqlx::query(
            "INSERT INTO rm_follow_counts AS c (user_id, following, followers, friends)
             SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[])
             ON CONFLICT (user_id) DO UPDATE SET following = c.following + excluded.following,
                 followers = c.followers + excluded.followers, friends = c.friends + excluded.friends",
        )
        .bind(&users)
        .bind(&following)
        .bind(&followers)
        .bind(&friends)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// The whole log folded in memory, for a rebuild: the same rows batch application writes.
#[derive(Default)]
struct RelationsBulk {
    settings: Settings,
    /// Each edge -> since.
    edges: EdgeTables<HashMap<UserPair, DateTime<Utc>>>,
    /// (muter, muted) -> (since, until)
    mutes: HashMap<UserPair, (DateTime<Utc>, Option<DateTime<Utc>>)>,
    counts: BTreeMap<i64, FollowCounts>,
    /// Preferences that are not the defaults.
    prefs: BTreeMap<UserPair, FollowPrefs>,
    /// (user, dismissed) -> since.
    dismissals: HashMap<UserPair, DateTime<Utc>>,
}

impl RelationTables for RelationsBulk {
    fn begin(&mut self, kind: EdgeKind, pair: UserPair, since: DateTime<Utc>) -> bool {
        match self.edges.of(kind).entry(pair) {
            Entry::Vacant(entry) => {
                entry.insert(since);
                true
            }
            Entry::Occupied(_) => false,
        }
    }

    fn end(&mut self, kind: EdgeKind, pair: UserPair) -> bool {
        self.edges.of(kind).remove(&pair).is_some()
    }

    fn follows(&self, pair: UserPair) -> bool {
        self.edges.follows.contains_key(&pair)
    }

    fn mute(&mut self, pair: UserPair, since: DateTime<Utc>, until: Option<DateTime<Utc>>) {
        self.mutes.insert(pair, (since, until));
    }

    fn unmute(&mut self, pair: UserPair) {
        self.mutes.remove(&pair);
    }

    fn prefs(&mut self, pair: UserPair, prefs: FollowPrefs) {
        keep_prefs(&mut self.prefs, pair, prefs);
    }

    fn dismiss(&mut self, pair: UserPair, since: DateTime<Utc>) {
        self.dismissals.entry(pair).or_insert(since);
    }
}

impl RelationsBulk {
    /// The accounts whose followers have a table of their own when the log ends: those with
    /// at least the threshold's followers. (The runner routes an account once a batch leaves
    /// it there and never routes it back; where the two differ, only the layout does.)
    fn routed(&self) -> std::collections::BTreeSet<i64> {
        let threshold = self.settings.fan_table_threshold;
        self.counts
            .iter()
            .filter(|(_, c)| c.1 >= threshold)
            .map(|(&user, _)| user)
            .collect()
    }
}

/// Keeps `prefs` for `pair` in a map of the ones that are not the defaults.
pub(crate) fn keep_prefs(
    map: &mut BTreeMap<UserPair, FollowPrefs>,
    pair: UserPair,
    prefs: FollowPrefs,
) {
    match prefs == FollowPrefs::default() {
        true => map.remove(&pair),
        false => map.insert(pair, prefs),
    };
}

impl ErasableTables for RelationsBulk {
    fn edges_of(&self, user: i64) -> Vec<(EdgeKind, UserPair)> {
        self.edges.touching(user, |map| map.keys())
    }

    fn lift_all(&mut self, user: i64) {
        self.mutes.retain(|&(a, b), _| a != user && b != user);
        self.dismissals.retain(|&(a, b), _| a != user && b != user);
    }
}

#[async_trait]
impl BulkFold for RelationsBulk {
    fn fold(&mut self, event: &RecordedEvent) -> Result<(), ProjectionError> {
        if let Some(user) = erased_user(event) {
            for count in fold::erase(self, user) {
                count.add_to(&mut self.counts);
            }
            return Ok(());
        }
        let Some(change) = RelationChange::of_recorded(event) else {
            return Ok(());
        };
        if let Some(count) = fold::fold(self, change) {
            count.add_to(&mut self.counts);
        }
        Ok(())
    }

    /// A table of its own for each account routed at the end of the log, and none for any
    /// other (the shadows were made like the live tables).
    fn shadow_statements(&self) -> Vec<String> {
        fans::shadow_layout(&self.routed())
    }

    fn write(self: Box<Self>, out: &CopyOut) -> Result<(), ProjectionError> {
        copy_edges(
            out,
            "rm_follows (follower, followee, since)",
            &self.edges.follows,
        );
        let routed = self.routed();
        fans::copy(out, &self.edges.follows, &routed);
        copy_edges(
            out,
            "rm_blocks (blocker, blocked, since)",
            &self.edges.blocks,
        );
        let target = "rm_follow_requests (requester, target, since)";
        copy_edges(out, target, &self.edges.requests);
        let mut mutes = out.table("rm_mutes (muter, muted, since, until)");
        for (&(a, b), (since, until)) in &self.mutes {
            let until = copy_nullable_timestamp(*until);
            writeln!(mutes, "{a}\t{b}\t{}\t{until}", copy_timestamp(*since))
                .expect("rows in memory");
        }
        let mut prefs = out.table("rm_follow_prefs (follower, followee, show_reposts, notify)");
        for (&(a, b), p) in &self.prefs {
            writeln!(prefs, "{a}\t{b}\t{}\t{}", p.show_reposts, p.notify).expect("rows in memory");
        }
        let target = "rm_dismissals (user_id, dismissed, since)";
        copy_edges(out, target, &self.dismissals);
        // In user order (a BTreeMap); users whose follows all ended have no row.
        let mut rows = out.table("rm_follow_counts (user_id, following, followers, friends)");
        for (user, (following, followers, friends)) in self.counts {
            if (following, followers, friends) != (0, 0, 0) {
                writeln!(rows, "{user}\t{following}\t{followers}\t{friends}")
                    .expect("rows in memory");
            }
        }
        Ok(())
    }
}

/// `edges` (with their `since`) as the rows of `target`, in the key's order (the order the
/// reads by follower find them in).
fn copy_edges(out: &CopyOut, target: &str, edges: &HashMap<UserPair, DateTime<Utc>>) {
    let mut sorted: Vec<(&UserPair, &DateTime<Utc>)> = edges.iter().collect();
    sorted.sort_unstable_by_key(|(edge, _)| **edge);
    let mut rows = out.table(target);
    for (&(a, b), since) in sorted {
        writeln!(rows, "{a}\t{b}\t{}", copy_timestamp(*since)).expect("rows in memory");
    }
}
