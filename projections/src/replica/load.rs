//! Loading the replica: the read models and their projectors' checkpoints, read in one
//! read-only snapshot (it takes no transaction id, so it holds back no horizon). The tail then
//! replays the log from the lower checkpoint, skipping for each kind of event what its read
//! model already held.

use chrono::{DateTime, Utc};
use futures::TryStreamExt;
use relations_domain::{Account, LogEvent, Post, PostEvent, PostId};
use relations_store::log::{self, RecordedEvent};
use relations_store::LogPosition;
use sqlx::{PgPool, Row};

use super::tail::ReplicaTail;
use super::timelines::{Caps, HeldPost};
use super::{GraphChange, MemoryGraph};
use crate::error::ProjectionError;
use crate::relations::fold::{EdgeKind, RelationChange};
use crate::runtime::checkpoint;
use crate::{engagement, feed, relations};

/// Reads the read models and their checkpoints in one snapshot; the tail then replays from the
/// lower checkpoint.
pub(super) async fn load(
    pool: &PgPool,
    caps: Caps,
    keys: Option<relations_store::Keyring>,
) -> Result<ReplicaTail, ProjectionError> {
    let mut graph = MemoryGraph::new(caps);
    let mut tx = pool.begin().await?;
    let result = async {
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .execute(&mut *tx)
            .await?;
        // The load sorts and indexes what it read between its statements: at 1M users that
        // took longer than the 10 s idle limit every session gets, and the load was killed and
        // retried for ever. Its own transaction only; it holds no lock.
        sqlx::query("SET LOCAL idle_in_transaction_session_timeout = '5min'")
            .execute(&mut *tx)
            .await?;
        let relations_loaded = checkpoint::read(&mut *tx, relations::NAME).await?;
        let posts_loaded = checkpoint::read(&mut *tx, feed::NAME).await?;
        // Without held posts no engagement is kept: the tail need not start earlier for it.
        let engagement_loaded = match caps.on() {
            true => checkpoint::read(&mut *tx, engagement::NAME).await?,
            false => posts_loaded,
        };
        read_models(&mut tx, &mut graph).await?;
        let from = held_posts(&mut tx, &mut graph, caps).await?;
        if caps.on() {
            let gap = log::read_type(&mut tx, Post::TYPE, posts_loaded, engagement_loaded).await?;
            held_engagement(&mut tx, &mut graph, from, &gap).await?;
        }
        // Accounts are few: their events up to where the tail starts, read in full. No event
        // the tail replays is older than an erasure folded here.
        let accounts_loaded = relations_loaded.min(posts_loaded).min(engagement_loaded);
        let accounts = log::read_type(&mut tx, Account::TYPE, LogPosition::START, accounts_loaded);
        for event in accounts.await? {
            match event.event {
                LogEvent::Account(account) => graph.apply(GraphChange::Account(account)),
                // Read by type: none of these comes.
                LogEvent::Relation(_)
                | LogEvent::Post(_)
                | LogEvent::Thread(_)
                | LogEvent::Like(_) => {}
            }
        }
        let loaded = (relations_loaded, posts_loaded, engagement_loaded);
        Ok::<_, sqlx::Error>((loaded, accounts_loaded))
    }
    .await;
    let ((relations_loaded, posts_loaded, engagement_loaded), accounts_loaded) =
        relations_store::db::end_transaction(tx, result, |_| true).await?;
    graph.advance(accounts_loaded);
    Ok(ReplicaTail {
        pending: Some(Box::new(graph)),
        position: accounts_loaded,
        relations_loaded,
        posts_loaded,
        engagement_loaded,
        accounts_loaded,
        keys,
    })
}

/// The newest posts projector `feed` wrote, up to `caps` (issue 28), and its newest seq;
/// the lowest seq it may hold.
async fn held_posts(
    tx: &mut sqlx::PgConnection,
    graph: &mut MemoryGraph,
    caps: Caps,
) -> Result<i64, sqlx::Error> {
    let head: i64 = sqlx::query_scalar("SELECT COALESCE(max(seq), 0) FROM rm_posts")
        .fetch_one(&mut *tx)
        .await?;
    let from = (head - caps.total as i64 + 1).max(1);
    graph.start_timelines(head, from);
    if !caps.on() {
        return Ok(from);
    }
    let sql = format!(
        "SELECT {} FROM rm_posts WHERE seq >= $1 AND NOT deleted ORDER BY seq",
        feed::query::POST_COLUMNS
    );
    let mut rows = sqlx::query(&sql).bind(from).fetch(&mut *tx);
    while let Some(row) = rows.try_next().await? {
        let (seq, view) = feed::query::post(&row).map_err(|e| sqlx::Error::Decode(e.into()))?;
        let (author, post) = HeldPost::of_view(seq, view);
        graph.hold_post(author, post);
    }
    Ok(from)
}

/// The likes and live comments projector `engagement` wrote of the posts held (from `rm_posts`
/// at seq `from` and above) and of those `gap`'s events publish (after projector `feed`'s
/// checkpoint, up to `engagement`'s, when it is ahead: the replay publishes them but skips
/// their likes and comments). Whatever ends up not held goes when the replay is over.
async fn held_engagement(
    tx: &mut sqlx::PgConnection,
    graph: &mut MemoryGraph,
    from: i64,
    gap: &[RecordedEvent],
) -> Result<(), sqlx::Error> {
    let (mut ids, mut authors) = (Vec::new(), Vec::new());
    for event in gap {
        if let LogEvent::Post(PostEvent::PostPublished {
            post_id, author, ..
        }) = event.event
        {
            ids.push(post_id.uuid());
            authors.push(author.get());
        }
    }
    // The posts, as `(post_id, author)`.
    const POSTS: &str = "(SELECT post_id, author FROM rm_posts WHERE seq >= $1 AND NOT deleted
          UNION ALL SELECT * FROM unnest($2::uuid[], $3::bigint[])) AS p(post_id, author)";
    let likes = format!(
        "SELECT p.post_id, p.author, l.user_id FROM rm_likes l
           JOIN {POSTS} ON l.target = 'post:' || p.post_id::text"
    );
    let comments = format!(
        "SELECT p.post_id, p.author, c.author, c.n FROM rm_comments c
           JOIN {POSTS} ON c.post = p.post_id WHERE NOT c.deleted"
    );
    let engagement = graph.engagement_mut();
    for (sql, like) in [(likes, true), (comments, false)] {
        let query = sqlx::query(&sql).bind(from).bind(&ids).bind(&authors);
        let mut rows = query.fetch(&mut *tx);
        while let Some(row) = rows.try_next().await? {
            let post = PostId::from_uuid(row.try_get(0)?);
            let (author, by): (i64, i64) = (row.try_get(1)?, row.try_get(2)?);
            match like {
                true => engagement.like(post, author as u64, by as u64, true),
                false => {
                    let n: i32 = row.try_get(3)?;
                    engagement.comment(post, author as u64, n as u32, by as u64);
                }
            }
        }
    }
    Ok(())
}

/// The graph's read models, as of the snapshot: follows, blocks, requests, mutes, post counts.
async fn read_models(
    tx: &mut sqlx::PgConnection,
    graph: &mut MemoryGraph,
) -> Result<(), sqlx::Error> {
    let mut rows = sqlx::query("SELECT follower, followee, since FROM rm_follows").fetch(&mut *tx);
    let mut follows = Vec::new();
    while let Some(row) = rows.try_next().await? {
        let (a, b, since) = edge_row(&row)?;
        follows.push((a as u64, b as u64, since.timestamp_micros()));
    }
    drop(rows);
    graph.load_follows(follows);
    let edges = [
        (
            EdgeKind::Block,
            "SELECT blocker, blocked, since FROM rm_blocks",
        ),
        (
            EdgeKind::Request,
            "SELECT requester, target, since FROM rm_follow_requests",
        ),
    ];
    for (kind, sql) in edges {
        let mut rows = sqlx::query(sql).fetch(&mut *tx);
        while let Some(row) = rows.try_next().await? {
            let (a, b, since) = edge_row(&row)?;
            graph.apply(GraphChange::Relation(RelationChange::Begin(
                kind,
                (a, b),
                since,
            )));
        }
    }
    let mut rows = sqlx::query("SELECT muter, muted, since, until FROM rm_mutes").fetch(&mut *tx);
    while let Some(row) = rows.try_next().await? {
        let (a, b, since) = edge_row(&row)?;
        let until: Option<DateTime<Utc>> = row.try_get(3)?;
        graph.apply(GraphChange::Relation(RelationChange::Mute(
            (a, b),
            since,
            until,
        )));
    }
    drop(rows);
    let mut rows =
        sqlx::query("SELECT author, posts FROM feed_authors WHERE posts <> 0").fetch(&mut *tx);
    while let Some(row) = rows.try_next().await? {
        let (author, posts): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
        graph.apply(GraphChange::Posts(author as u64, posts));
    }
    Ok(())
}

/// `(from, to, since)` of an edge row.
fn edge_row(row: &sqlx::postgres::PgRow) -> Result<(i64, i64, DateTime<Utc>), sqlx::Error> {
    Ok((row.try_get(0)?, row.try_get(1)?, row.try_get(2)?))
}
