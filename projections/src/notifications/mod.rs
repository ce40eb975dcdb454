//! Projector `notifications` (issue 27): for each user, what happened to them, grouped.
//!
//! **What notifies whom** ([`change`], written once): `followed` (a follow, not one an
//! approval brings), `follow_request` (while pending), `follow_request_approved`, `liked_post`
//! and `liked_comment` (the author), `commented` (the post's author) and `replied` (the parent
//! comment's author; a reply to the post author's own comment tells them once, as `replied`).
//! Never one's own action; never from a user the recipient mutes at the cause's time.
//!
//! **Undo is exact.** Each live notification is one row of `notify_causes` (keyed per
//! recipient: `like:{target}:{actor}`, `comment:{id}`, `follow:{actor}`, `request:{actor}`,
//! `approved:{actor}:{position}`), so an unlike, an unfollow, a request's end (approved,
//! rejected, withdrawn) or a comment's deletion removes exactly its own row. A deleted post
//! or comment also takes every notification about it; a block takes every notification
//! between the two users both ways; a mute takes the muted user's notifications to the
//! muter (and none come while it lasts: after its end, new actions notify again); an erasure
//! takes every notification to or from the user and about their posts.
//!
//! **Grouped.** `notify_groups` holds one row per (recipient, group): likes per post or
//! comment, comments per post, replies per comment, follows, requests and approvals per UTC
//! day. Its `count` is the number of live causes, its `actors` the newest distinct ones (at
//! most 5), its newest live cause's position (what the marker is compared with), and its
//! place: the position of the last cause that joined it, which moves it to the top and which
//! an undo never lowers (so paging stays put). Pages, counts and the unread count read
//! only these rows. A group's row always equals a fold of its live causes ([`model`]); an
//! undo recomputes the actors only when it took one of them (reading the group's newest
//! causes by index).
//!
//! **What is bounded.** Served rows are groups: a user with 1M followers receiving 10,000
//! likes a minute on one post has one group row for that post however many likes it gets.
//! Stored rows are not: each live notifying like, comment, follow or request keeps its cause
//! row (the same order of rows `rm_likes`, `rm_comments` and `rm_follows` already hold), which
//! exact undo needs; they are touched by index, never scanned to answer a read.
//!
//! Each batch is folded in runs: the additions between two removals are written at once (a
//! few set-based statements per run), a removal, block, mute, erasure or notification policy
//! change on its own.
//!
//! **Whose notifications reach a user (issue 47).** A user's notification policy
//! (`notify_policies`, rows only when not the default) disposes of each cause when it is
//! caused: judged against the follows between its recipient and its actor at the cause's own
//! event, read from their pair's stream in the log (so a rebuild, which folds the log in
//! memory, judges the same), it is kept, kept in the filtered list (its group key ends in
//! [`change::FILTERED`]; `notify_groups.filtered` says so for the lists' index), or dropped.

pub mod change;
pub mod live;
pub mod model;
pub mod query;
pub mod verify;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use async_trait::async_trait;
use relations_domain::{NotificationPolicy, PairId, PostId, RelationPair, UserId};
use relations_store::log::RecordedEvent;
use relations_store::LogPosition;
use sqlx::PgConnection;
use uuid::Uuid;

use crate::error::ProjectionError;
use crate::runtime::projector::Projector;
use change::{
    admits, comment_causes, disposed, is_filtered, Cause, Change, ChangeReader, GroupDelta,
    NewComment, NewPost, ACTORS,
};

/// The projector's name.
pub const NAME: &str = "notifications";

/// What its reads read, and so wait for with `min_position`: its own tables, and projector
/// `feed`'s `rm_posts` for the posts that groups are about (who may read them, issue 26), and
/// projector `filters`' table for the reader's filters (issue 47).
pub const READS: [&str; 3] = [NAME, crate::feed::NAME, crate::filters::NAME];

/// See the module docs.
pub struct Notifications;

#[async_trait]
impl Projector for Notifications {
    fn name(&self) -> &'static str {
        NAME
    }

    /// A rebuild folds the whole log in memory, as `verify` does, and writes each table at once.
    fn bulk(&self) -> Option<Box<dyn crate::runtime::projector::BulkFold>> {
        Some(Box::<model::NotificationsBulk>::default())
    }

    fn tables(&self) -> &'static [&'static str] {
        &[
            "notify_causes",
            "notify_groups",
            "notify_comments",
            "notify_mutes",
            "notify_watchers",
            "notify_policies",
        ]
    }

    /// Notifications gate no command and no read but their own.
    fn essential(&self) -> bool {
        false
    }

    async fn apply_batch(
        &self,
        conn: &mut PgConnection,
        events: &[RecordedEvent],
    ) -> Result<(), ProjectionError> {
        let mut reader = ChangeReader::default();
        let mut run = Run::default();
        for event in events {
            for change in reader.changes(event)? {
                match change {
                    Change::Add(cause) => run.causes.push(cause),
                    Change::Comment(comment) => run.comments.push(comment),
                    Change::Posted(post) => run.posts.push(post),
                    other => {
                        run.flush(conn).await?;
                        remove(conn, other).await?;
                    }
                }
            }
        }
        run.flush(conn).await
    }
}

/// The additions since the last removal: written together.
#[derive(Default)]
struct Run {
    causes: Vec<Cause>,
    comments: Vec<NewComment>,
    posts: Vec<NewPost>,
}

impl Run {
    /// Writes the run: the comments, then every cause the recipients' mutes admit, then the
    /// groups they join.
    async fn flush(&mut self, conn: &mut PgConnection) -> Result<(), ProjectionError> {
        let (mut causes, comments, posts) = (
            std::mem::take(&mut self.causes),
            std::mem::take(&mut self.comments),
            std::mem::take(&mut self.posts),
        );
        if !posts.is_empty() {
            let watchers = watchers_of(conn, &posts).await?;
            for post in &posts {
                let of_author = watchers.get(&post.author).into_iter().flatten();
                causes.extend(of_author.map(|&watcher| post.cause(watcher)));
            }
            causes.sort_by_key(|c| c.position);
        }
        if !comments.is_empty() {
            write_comments(conn, &comments).await?;
            let parents = parent_authors(conn, &comments).await?;
            for c in &comments {
                let parent = c.parent.and_then(|p| parents.get(&(c.post, p)).copied());
                causes.extend(comment_causes(c, parent));
            }
            causes.sort_by_key(|c| c.position);
        }
        if causes.is_empty() {
            return Ok(());
        }
        let mutes = mutes_of(conn, &causes).await?;
        causes.retain(|c| admits(c, mutes.get(&(c.recipient, c.actor)).copied()));
        let causes = dispose(conn, causes).await?;
        if causes.is_empty() {
            return Ok(());
        }
        insert_causes(conn, &causes).await?;
        join_groups(conn, &GroupDelta::of(&causes)).await
    }
}

/// `causes` (in log order) as their recipients' notification policies dispose of them (issue
/// 47): each judged against the follows between its recipient and its actor at its own place
/// in the log, read from their pair's stream up to it (with the cause's own event: a follow
/// is judged as made). Policies change only between runs (a change flushes the run), so the
/// ones read now hold for every cause of it.
async fn dispose(
    conn: &mut PgConnection,
    causes: Vec<Cause>,
) -> Result<Vec<Cause>, ProjectionError> {
    if causes.is_empty() {
        return Ok(causes);
    }
    let recipients: Vec<i64> = causes.iter().map(|c| c.recipient).collect();
    let rows: Vec<(i64, String, String)> = sqlx::query_as(
        "SELECT user_id, not_following, not_followers FROM notify_policies
          WHERE user_id = ANY($1::bigint[])",
    )
    .bind(&recipients)
    .fetch_all(&mut *conn)
    .await?;
    if rows.is_empty() {
        return Ok(causes);
    }
    let mut policies: HashMap<i64, NotificationPolicy> = HashMap::new();
    for (user, not_following, not_followers) in rows {
        let parse = |s: &str| {
            s.parse()
                .map_err(|e: relations_domain::BadDisposition| sqlx::Error::Decode(e.into()))
        };
        let policy = NotificationPolicy {
            not_following: parse(&not_following)?,
            not_followers: parse(&not_followers)?,
        };
        policies.insert(user, policy);
    }
    let pair = |c: &Cause| {
        let (a, b) = (UserId::try_from(c.recipient), UserId::try_from(c.actor));
        a.ok().zip(b.ok()).and_then(|(a, b)| PairId::new(a, b).ok())
    };
    let judged = causes
        .iter()
        .filter(|c| policies.contains_key(&c.recipient));
    let mut pairs: Vec<PairId> = judged.clone().filter_map(pair).collect();
    pairs.sort_unstable();
    pairs.dedup();
    let up_to = judged.map(|c| c.position).max().unwrap_or_default();
    let facts = relations_store::log::relation_streams_up_to(&mut *conn, &pairs, up_to).await?;
    let mut facts = facts.into_iter().peekable();
    let mut states: HashMap<PairId, RelationPair> = HashMap::new();
    let mut kept = Vec::with_capacity(causes.len());
    for cause in causes {
        let Some(policy) = policies.get(&cause.recipient) else {
            kept.push(cause);
            continue;
        };
        while let Some((_, _, event)) = facts.next_if(|f| f.0 <= cause.position) {
            let (a, b) = event.users();
            if let Ok(pair) = PairId::new(a, b) {
                states.entry(pair).or_default().apply(event);
            }
        }
        let state = pair(&cause).and_then(|p| states.get(&p));
        let (recipient, actor) = (
            UserId::try_from(cause.recipient),
            UserId::try_from(cause.actor),
        );
        let facts = match (state, recipient, actor) {
            (Some(state), Ok(r), Ok(a)) => state.facts(r, a),
            _ => Default::default(),
        };
        kept.extend(disposed(cause, policy, facts.following, facts.followed_by));
    }
    Ok(kept)
}

/// Who asked to be notified of each author's posts: author → watchers.
async fn watchers_of(
    conn: &mut PgConnection,
    posts: &[NewPost],
) -> Result<HashMap<i64, Vec<i64>>, ProjectionError> {
    let authors: Vec<i64> = posts.iter().map(|p| p.author).collect();
    let rows: Vec<(i64, i64)> = sqlx::query_as(
        "SELECT author, watcher FROM notify_watchers WHERE author = ANY($1::bigint[])",
    )
    .bind(&authors)
    .fetch_all(&mut *conn)
    .await?;
    let mut watchers: HashMap<i64, Vec<i64>> = HashMap::new();
    for (author, watcher) in rows {
        watchers.entry(author).or_default().push(watcher);
    }
    Ok(watchers)
}

async fn write_comments(
    conn: &mut PgConnection,
    comments: &[NewComment],
) -> Result<(), ProjectionError> {
    let posts: Vec<Uuid> = comments.iter().map(|c| c.post).collect();
    let ns: Vec<i32> = comments.iter().map(|c| c.n).collect();
    let authors: Vec<i64> = comments.iter().map(|c| c.author).collect();
    let post_authors: Vec<i64> = comments.iter().map(|c| c.post_author).collect();
    sqlx::query(
        "INSERT INTO notify_comments (post, n, author, post_author)
         SELECT * FROM unnest($1::uuid[], $2::int[], $3::bigint[], $4::bigint[])
         ON CONFLICT DO NOTHING",
    )
    .bind(&posts)
    .bind(&ns)
    .bind(&authors)
    .bind(&post_authors)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// The authors of the comments `comments` reply to.
async fn parent_authors(
    conn: &mut PgConnection,
    comments: &[NewComment],
) -> Result<HashMap<(Uuid, i32), i64>, ProjectionError> {
    let (posts, ns): (Vec<Uuid>, Vec<i32>) = comments
        .iter()
        .filter_map(|c| c.parent.map(|p| (c.post, p)))
        .unzip();
    if posts.is_empty() {
        return Ok(HashMap::new());
    }
    let rows: Vec<(Uuid, i32, i64)> = sqlx::query_as(
        "SELECT c.post, c.n, c.author FROM notify_comments c
           JOIN unnest($1::uuid[], $2::int[]) AS k(post, n) ON c.post = k.post AND c.n = k.n",
    )
    .bind(&posts)
    .bind(&ns)
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows.into_iter().map(|(p, n, a)| ((p, n), a)).collect())
}

/// The mutes in force between the causes' recipients and actors: (muter, muted) → until.
type Mutes = HashMap<(i64, i64), Option<chrono::DateTime<chrono::Utc>>>;

async fn mutes_of(conn: &mut PgConnection, causes: &[Cause]) -> Result<Mutes, ProjectionError> {
    let (muters, muted): (Vec<i64>, Vec<i64>) =
        causes.iter().map(|c| (c.recipient, c.actor)).unzip();
    let rows: Vec<(i64, i64, Option<chrono::DateTime<chrono::Utc>>)> = sqlx::query_as(
        "SELECT DISTINCT m.muter, m.muted, m.until FROM notify_mutes m
           JOIN unnest($1::bigint[], $2::bigint[]) AS k(muter, muted)
             ON m.muter = k.muter AND m.muted = k.muted",
    )
    .bind(&muters)
    .bind(&muted)
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows.into_iter().map(|(a, b, u)| ((a, b), u)).collect())
}

async fn insert_causes(conn: &mut PgConnection, causes: &[Cause]) -> Result<(), ProjectionError> {
    let column = |f: fn(&Cause) -> i64| causes.iter().map(f).collect::<Vec<i64>>();
    let text = |f: fn(&Cause) -> &str| causes.iter().map(f).collect::<Vec<&str>>();
    let posts: Vec<Option<Uuid>> = causes.iter().map(|c| c.post).collect();
    let comments: Vec<Option<i32>> = causes.iter().map(|c| c.comment).collect();
    let ats: Vec<chrono::DateTime<chrono::Utc>> = causes.iter().map(|c| c.at).collect();
    sqlx::query(
        // `kind` is read by no one here (the group key names the type); it is written for
        // the previous release's instances during a rolling upgrade, and goes next release.
        "INSERT INTO notify_causes (recipient, cause, grp, kind, actor, post, comment, tx, gp, at)
         SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::bigint[],
                              $6::uuid[], $7::int[], $8::bigint[], $9::bigint[], $10::timestamptz[])",
    )
    .bind(column(|c| c.recipient))
    .bind(text(|c| &c.cause))
    .bind(text(|c| &c.group))
    .bind(text(|c| c.kind.name()))
    .bind(column(|c| c.actor))
    .bind(&posts)
    .bind(&comments)
    .bind(column(|c| c.position.transaction_id))
    .bind(column(|c| c.position.global_position))
    .bind(&ats)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Makes or joins each group: new causes are the newest, so they move the group to the top
/// and lead its actors.
async fn join_groups(
    conn: &mut PgConnection,
    groups: &[GroupDelta],
) -> Result<(), ProjectionError> {
    let mut keys: (Vec<i64>, Vec<&str>, Vec<&str>) = Default::default();
    let filtered: Vec<bool> = groups.iter().map(|g| is_filtered(&g.group)).collect();
    let (mut posts, mut comments, mut counts, mut actors) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut txs, mut gps, mut ats) = (Vec::new(), Vec::new(), Vec::new());
    for g in groups {
        keys.0.push(g.recipient);
        keys.1.push(&g.group);
        keys.2.push(g.kind.name());
        posts.push(g.post);
        comments.push(g.comment);
        counts.push(g.count);
        actors.push(
            g.actors
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(","),
        );
        txs.push(g.position.transaction_id);
        gps.push(g.position.global_position);
        ats.push(g.at);
    }
    sqlx::query(
        "INSERT INTO notify_groups AS g
              (recipient, grp, kind, post, comment, count, actors, tx, gp, latest_at,
               place_tx, place_gp, filtered)
         SELECT r, k, t, p, c, n, string_to_array(a, ',')::bigint[], x, y, z, x, y, f
           FROM unnest($1::bigint[], $2::text[], $3::text[], $4::uuid[], $5::int[],
                       $6::bigint[], $7::text[], $8::bigint[], $9::bigint[], $10::timestamptz[],
                       $11::boolean[])
                AS d(r, k, t, p, c, n, a, x, y, z, f)
         ON CONFLICT (recipient, grp) DO UPDATE
            SET count = g.count + excluded.count, tx = excluded.tx, gp = excluded.gp,
                latest_at = excluded.latest_at, place_tx = excluded.tx, place_gp = excluded.gp,
                actors = (SELECT array_agg(s.a ORDER BY s.o) FROM (
                            SELECT u.a, min(u.o) AS o
                              FROM unnest(excluded.actors || g.actors) WITH ORDINALITY AS u(a, o)
                             GROUP BY u.a ORDER BY min(u.o) LIMIT 5) AS s)",
    )
    .bind(&keys.0)
    .bind(&keys.1)
    .bind(&keys.2)
    .bind(&posts)
    .bind(&comments)
    .bind(&counts)
    .bind(&actors)
    .bind(&txs)
    .bind(&gps)
    .bind(&ats)
    .bind(&filtered)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// A removed cause: (recipient, group, actor, tx, gp).
type Removed = (i64, String, i64, i64, i64);

/// What a removal returns of each cause: a [`Removed`].
const RETURNING: &str = "RETURNING recipient, grp, actor, tx, gp";

/// Applies a change that removes notifications (or a mute's end), then settles the groups it
/// touched.
async fn remove(conn: &mut PgConnection, change: Change) -> Result<(), ProjectionError> {
    let removed: Vec<Removed> = match change {
        Change::Add(_) | Change::Comment(_) | Change::Posted(_) => return Ok(()),
        Change::Watch {
            watcher,
            author,
            on,
        } => return watch(conn, (author, watcher), on).await,
        Change::Remove {
            recipient,
            actor,
            cause,
        } => remove_cause(conn, recipient, actor, &cause).await?,
        Change::CommentDeleted { post, n } => {
            sqlx::query_as(&format!(
            "DELETE FROM notify_causes WHERE post = $1 AND (cause = $2 OR comment = $3) {RETURNING}"
        ))
            .bind(post)
            .bind(format!("comment:{}.{n}", PostId::from_uuid(post)))
            .bind(n)
            .fetch_all(&mut *conn)
            .await?
        }
        Change::PostDeleted { post } => {
            sqlx::query_as(&format!(
                "DELETE FROM notify_causes WHERE post = $1 {RETURNING}"
            ))
            .bind(post)
            .fetch_all(&mut *conn)
            .await?
        }
        Change::Block(a, b) => {
            sqlx::query_as(&format!(
                "DELETE FROM notify_causes
              WHERE (actor = $1 AND recipient = $2) OR (actor = $2 AND recipient = $1) {RETURNING}"
            ))
            .bind(a)
            .bind(b)
            .fetch_all(&mut *conn)
            .await?
        }
        Change::Mute {
            muter,
            muted,
            until,
        } => {
            sqlx::query(
                "INSERT INTO notify_mutes (muter, muted, until) VALUES ($1, $2, $3)
                 ON CONFLICT (muter, muted) DO UPDATE SET until = excluded.until",
            )
            .bind(muter)
            .bind(muted)
            .bind(until)
            .execute(&mut *conn)
            .await?;
            sqlx::query_as(&format!(
                "DELETE FROM notify_causes WHERE actor = $1 AND recipient = $2 {RETURNING}"
            ))
            .bind(muted)
            .bind(muter)
            .fetch_all(&mut *conn)
            .await?
        }
        Change::Policy { user, policy } => return set_policy(conn, user, policy).await,
        Change::Unmute { muter, muted } => {
            sqlx::query("DELETE FROM notify_mutes WHERE muter = $1 AND muted = $2")
                .bind(muter)
                .bind(muted)
                .execute(&mut *conn)
                .await?;
            return Ok(());
        }
        Change::Erase(user) => erase(conn, user).await?,
    };
    settle(conn, &removed).await
}

/// Keeps `user`'s notification policy (a row only when it is not the default).
async fn set_policy(
    conn: &mut PgConnection,
    user: i64,
    policy: NotificationPolicy,
) -> Result<(), ProjectionError> {
    let query = match policy.is_default() {
        true => sqlx::query("DELETE FROM notify_policies WHERE user_id = $1").bind(user),
        false => sqlx::query(
            "INSERT INTO notify_policies (user_id, not_following, not_followers)
             VALUES ($1, $2, $3)
             ON CONFLICT (user_id) DO UPDATE
                SET not_following = excluded.not_following, not_followers = excluded.not_followers",
        )
        .bind(user)
        .bind(policy.not_following.as_str())
        .bind(policy.not_followers.as_str()),
    };
    query.execute(&mut *conn).await?;
    Ok(())
}

/// Removes the cause `cause` of `recipient` by `actor`, found through
/// `notify_causes_actor (actor, recipient)`: causes have no key index of their own (migration
/// `20261128000032_bytes_that_buy_nothing.sql`, which says what that reads).
async fn remove_cause(
    conn: &mut PgConnection,
    recipient: i64,
    actor: i64,
    cause: &str,
) -> Result<Vec<Removed>, ProjectionError> {
    Ok(sqlx::query_as(&format!(
        "DELETE FROM notify_causes WHERE actor = $1 AND recipient = $2 AND cause = $3 {RETURNING}"
    ))
    .bind(actor)
    .bind(recipient)
    .bind(cause)
    .fetch_all(&mut *conn)
    .await?)
}

/// Keeps (`on`) or drops the follow `(author, watcher)` with `notify`.
async fn watch(conn: &mut PgConnection, pair: (i64, i64), on: bool) -> Result<(), ProjectionError> {
    let sql = match on {
        true => {
            "INSERT INTO notify_watchers (author, watcher) VALUES ($1, $2) ON CONFLICT DO NOTHING"
        }
        false => "DELETE FROM notify_watchers WHERE author = $1 AND watcher = $2",
    };
    sqlx::query(sql)
        .bind(pair.0)
        .bind(pair.1)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Removes everything of `user`'s: notifications to or from them and about their posts, their
/// groups, comments, mutes, read marker and notification policy; the causes removed from
/// others' groups.
async fn erase(conn: &mut PgConnection, user: i64) -> Result<Vec<Removed>, ProjectionError> {
    let removed: Vec<Removed> = sqlx::query_as(&format!(
        "DELETE FROM notify_causes
          WHERE recipient = $1 OR actor = $1
             OR post IN (SELECT post FROM notify_comments WHERE post_author = $1)
         {RETURNING}"
    ))
    .bind(user)
    .fetch_all(&mut *conn)
    .await?;
    for sql in [
        "DELETE FROM notify_groups WHERE recipient = $1",
        "DELETE FROM notify_comments WHERE author = $1 OR post_author = $1",
        "DELETE FROM notify_mutes WHERE muter = $1 OR muted = $1",
        "DELETE FROM notify_marks WHERE user_id = $1",
        "DELETE FROM notify_watchers WHERE author = $1 OR watcher = $1",
        "DELETE FROM notify_policies WHERE user_id = $1",
    ] {
        sqlx::query(sql).bind(user).execute(&mut *conn).await?;
    }
    Ok(removed.into_iter().filter(|r| r.0 != user).collect())
}

/// Takes the removed causes out of their groups: a group left empty goes; one that lost its
/// newest cause or one of its actors is read again from its newest causes (its place stays).
async fn settle(conn: &mut PgConnection, removed: &[Removed]) -> Result<(), ProjectionError> {
    if removed.is_empty() {
        return Ok(());
    }
    // Per group: how many went, which actors, the newest position that went.
    let mut groups: BTreeMap<(i64, &str), (i64, BTreeSet<i64>, LogPosition)> = BTreeMap::new();
    for (recipient, group, actor, tx, gp) in removed {
        let entry = groups.entry((*recipient, group.as_str())).or_default();
        entry.0 += 1;
        entry.1.insert(*actor);
        entry.2 = entry.2.max(LogPosition {
            transaction_id: *tx,
            global_position: *gp,
        });
    }
    let (recipients, keys, counts): (Vec<i64>, Vec<&str>, Vec<i64>) = {
        let mut cols = (Vec::new(), Vec::new(), Vec::new());
        for ((r, g), (k, _, _)) in &groups {
            cols.0.push(*r);
            cols.1.push(*g);
            cols.2.push(*k);
        }
        cols
    };
    let left: Vec<(i64, String, i64, Vec<i64>, i64, i64)> = sqlx::query_as(
        "UPDATE notify_groups g SET count = g.count - d.k
           FROM unnest($1::bigint[], $2::text[], $3::bigint[]) AS d(r, grp, k)
          WHERE g.recipient = d.r AND g.grp = d.grp
         RETURNING g.recipient, g.grp, g.count, g.actors, g.tx, g.gp",
    )
    .bind(&recipients)
    .bind(&keys)
    .bind(&counts)
    .fetch_all(&mut *conn)
    .await?;
    let (mut empty_r, mut empty_g) = (Vec::new(), Vec::new());
    for (recipient, group, count, actors, tx, gp) in left {
        let Some((_, gone, newest_gone)) = groups.get(&(recipient, group.as_str())) else {
            continue;
        };
        let newest = LogPosition {
            transaction_id: tx,
            global_position: gp,
        };
        if count <= 0 {
            empty_r.push(recipient);
            empty_g.push(group);
        } else if *newest_gone >= newest || actors.iter().any(|a| gone.contains(a)) {
            refresh(conn, recipient, &group).await?;
        }
    }
    sqlx::query(
        "DELETE FROM notify_groups g USING unnest($1::bigint[], $2::text[]) AS d(r, grp)
          WHERE g.recipient = d.r AND g.grp = d.grp",
    )
    .bind(&empty_r)
    .bind(&empty_g)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Causes read at first when a group's actors and newest cause are read again.
const NEWEST: i64 = 64;

/// Reads a group's actors and newest cause again from its newest causes (all of them only when the
/// newest few hold fewer than [`ACTORS`] distinct actors).
async fn refresh(
    conn: &mut PgConnection,
    recipient: i64,
    group: &str,
) -> Result<(), ProjectionError> {
    type Row = (i64, i64, i64, chrono::DateTime<chrono::Utc>);
    let newest = |limit: i64| {
        sqlx::query_as::<_, Row>(
            "SELECT actor, tx, gp, at FROM notify_causes WHERE recipient = $1 AND grp = $2
              ORDER BY tx DESC, gp DESC LIMIT $3",
        )
        .bind(recipient)
        .bind(group)
        .bind(limit)
    };
    let mut rows = newest(NEWEST).fetch_all(&mut *conn).await?;
    let distinct = |rows: &[Row]| {
        let mut actors: Vec<i64> = Vec::new();
        for row in rows {
            if actors.len() < ACTORS && !actors.contains(&row.0) {
                actors.push(row.0);
            }
        }
        actors
    };
    let mut actors = distinct(&rows);
    if actors.len() < ACTORS && rows.len() as i64 == NEWEST {
        rows = newest(i64::MAX).fetch_all(&mut *conn).await?;
        actors = distinct(&rows);
    }
    let Some(&(_, tx, gp, at)) = rows.first() else {
        return Ok(());
    };
    sqlx::query(
        "UPDATE notify_groups SET actors = $3, tx = $4, gp = $5, latest_at = $6
          WHERE recipient = $1 AND grp = $2",
    )
    .bind(recipient)
    .bind(group)
    .bind(&actors)
    .bind(tx)
    .bind(gp)
    .bind(at)
    .execute(&mut *conn)
    .await?;
    Ok(())
}
