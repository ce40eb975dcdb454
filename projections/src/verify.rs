//! `relations verify`: fold the log afresh in memory and compare every read model row by row.
//!
//! Everything is read in one REPEATABLE READ snapshot: the checkpoint and the rows it stands
//! for were committed together, so the read models are compared with a fold of the log up to
//! that checkpoint, and the write side's guard rows with a fold of every event in the snapshot.

use std::collections::{BTreeMap, BTreeSet};

use relations_domain::{Post, PostEvent, RelationEvent, RelationPair};
use relations_store::log::read_after;
use relations_store::LogPosition;
use sqlx::{PgPool, Row};

use crate::error::ProjectionError;
use crate::feed::Feed;
use crate::projector::decode;
use crate::runner::checkpoint;

#[derive(Default)]
struct Fold {
    follows: BTreeSet<(i64, i64)>,
    blocks: BTreeSet<(i64, i64)>,
    /// post id -> (seq, author, live); seqs numbered in log order, as projector `feed` does.
    posts: BTreeMap<uuid::Uuid, (i64, i64, bool)>,
}

impl Fold {
    fn apply(&mut self, event: RelationEvent) {
        match event {
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
        }
    }

    fn apply_post(&mut self, event: PostEvent) {
        match event {
            PostEvent::PostPublished {
                post_id, author, ..
            } => {
                let seq = self.posts.len() as i64 + 1;
                self.posts.insert(post_id.uuid(), (seq, author.get(), true));
            }
            PostEvent::PostDeleted { post_id, .. } => {
                if let Some(post) = self.posts.get_mut(&post_id.uuid()) {
                    post.2 = false;
                }
            }
        }
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

fn diff<T: Ord + std::fmt::Debug + Clone>(
    what: &str,
    expected: &BTreeSet<T>,
    actual: &BTreeSet<T>,
    out: &mut Vec<String>,
) {
    for missing in expected.difference(actual) {
        out.push(format!("{what}: missing {missing:?}"));
    }
    for extra in actual.difference(expected) {
        out.push(format!("{what}: unexpected {extra:?}"));
    }
}

async fn pairs(
    conn: &mut sqlx::PgConnection,
    sql: &'static str,
) -> Result<BTreeSet<(i64, i64)>, sqlx::Error> {
    let rows = sqlx::query(sql).fetch_all(conn).await?;
    rows.iter()
        .map(|r| Ok((r.try_get::<i64, _>(0)?, r.try_get::<i64, _>(1)?)))
        .collect()
}

/// Every difference between the read models (and guard rows) and a fresh fold of the log;
/// empty when they agree.
pub async fn verify(pool: &PgPool, feed: Feed) -> Result<Vec<String>, ProjectionError> {
    verify_with(pool, feed, &Scope::default()).await
}

/// What [`verify_with`] compares.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    /// Compare with every event below the horizon rather than each projector's checkpoint:
    /// for read models fed from Kafka (which keep offsets, not a log position), once they have
    /// caught up.
    pub whole_log: bool,
    /// Only these projectors' read models (`following`, `feed`); all when empty. The write
    /// side's guard rows are always compared.
    pub projectors: Vec<String>,
}

impl Scope {
    fn covers(&self, projector: &str) -> bool {
        self.projectors.is_empty() || self.projectors.iter().any(|p| p == projector)
    }
}

/// [`verify`], within `scope`.
pub async fn verify_with(
    pool: &PgPool,
    feed: Feed,
    scope: &Scope,
) -> Result<Vec<String>, ProjectionError> {
    let mut tx = pool.begin().await?;
    sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        .execute(&mut *tx)
        .await?;
    let end = LogPosition {
        transaction_id: i64::MAX,
        global_position: i64::MAX,
    };
    let (checkpoint, feed_checkpoint) = match scope.whole_log {
        true => (end, end),
        false => (
            checkpoint(&mut *tx, "following").await?,
            checkpoint(&mut *tx, "feed").await?,
        ),
    };

    let mut at_checkpoint = Fold::default();
    let mut at_feed = Fold::default();
    let mut everything = Fold::default();
    let mut after = LogPosition::START;
    loop {
        let batch = read_after(&mut tx, after, 5_000).await?;
        let Some(last) = batch.last() else { break };
        after = last.position;
        for event in &batch {
            if event.stream_type == Post::TYPE && event.position <= feed_checkpoint {
                at_feed.apply_post(decode(event)?);
            }
            if event.stream_type != RelationPair::TYPE {
                continue;
            }
            let decoded: RelationEvent = decode(event)?;
            if event.position <= feed_checkpoint {
                at_feed.apply(decoded);
            }
            everything.apply(decoded);
            if event.position <= checkpoint {
                at_checkpoint.apply(decoded);
            }
        }
    }
    // Events above the readers' horizon are in the snapshot too; the guard rows count them.
    let pending = sqlx::query(
        "SELECT payload::jsonb AS payload FROM events
          WHERE aggregate_type = 'relation' AND transaction_id >= pg_snapshot_xmin(pg_current_snapshot())
          ORDER BY transaction_id, global_position",
    )
    .fetch_all(&mut *tx)
    .await?;
    for row in &pending {
        let payload: serde_json::Value = row.try_get("payload")?;
        if let Ok(event) = serde_json::from_value::<RelationEvent>(payload) {
            everything.apply(event);
        }
    }

    let follows = pairs(&mut tx, "SELECT follower, followee FROM rm_follows").await?;
    let blocks = pairs(&mut tx, "SELECT blocker, blocked FROM rm_blocks").await?;
    let counts: BTreeSet<(i64, (i64, i64, i64))> = sqlx::query(
        "SELECT user_id, following, followers, friends FROM rm_follow_counts
          WHERE following <> 0 OR followers <> 0 OR friends <> 0",
    )
    .fetch_all(&mut *tx)
    .await?
    .iter()
    .map(|r| Ok((r.try_get(0)?, (r.try_get(1)?, r.try_get(2)?, r.try_get(3)?))))
    .collect::<Result<_, sqlx::Error>>()?;
    let guards: BTreeSet<(i64, i64)> =
        sqlx::query("SELECT user_id, following::bigint FROM follow_guard WHERE following <> 0")
            .fetch_all(&mut *tx)
            .await?
            .iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
            .collect::<Result<_, sqlx::Error>>()?;

    let feed_rows = FeedRows::read(&mut tx).await?;
    tx.rollback().await?;
    let mut out = Vec::new();
    if scope.covers("feed") {
        feed_rows.compare(&at_feed, feed, &mut out);
    }
    if scope.covers("following") {
        diff(
            "rm_follows (follower, followee)",
            &at_checkpoint.follows,
            &follows,
            &mut out,
        );
        diff(
            "rm_blocks (blocker, blocked)",
            &at_checkpoint.blocks,
            &blocks,
            &mut out,
        );
        let expected_counts: BTreeSet<_> = at_checkpoint.counts().into_iter().collect();
        diff(
            "rm_follow_counts (user, (following, followers, friends))",
            &expected_counts,
            &counts,
            &mut out,
        );
    }
    let expected_guards: BTreeSet<(i64, i64)> = everything
        .counts()
        .into_iter()
        .filter(|(_, c)| c.0 != 0)
        .map(|(u, c)| (u, c.0))
        .collect();
    diff(
        "follow_guard (user, following)",
        &expected_guards,
        &guards,
        &mut out,
    );
    Ok(out)
}

/// Projector `feed`'s rows, as read in the snapshot.
struct FeedRows {
    follows: BTreeSet<(i64, i64)>,
    posts: BTreeSet<(uuid::Uuid, (i64, i64, bool))>,
    /// author -> (followers, posts, pulled)
    authors: BTreeMap<i64, (i64, i64, bool)>,
    inbox: BTreeSet<(i64, i64)>,
    /// reader -> (size, watermark)
    readers: BTreeMap<i64, (i64, i64)>,
}

impl FeedRows {
    async fn read(conn: &mut sqlx::PgConnection) -> Result<Self, sqlx::Error> {
        let follows = pairs(&mut *conn, "SELECT follower, followee FROM feed_follows").await?;
        let inbox = pairs(&mut *conn, "SELECT reader, seq FROM feed_inbox").await?;
        let posts = sqlx::query("SELECT post_id, seq, author, NOT deleted FROM rm_posts")
            .fetch_all(&mut *conn)
            .await?
            .iter()
            .map(|r| Ok((r.try_get(0)?, (r.try_get(1)?, r.try_get(2)?, r.try_get(3)?))))
            .collect::<Result<_, sqlx::Error>>()?;
        let authors = sqlx::query(
            "SELECT author, followers, posts, pulled FROM feed_authors
              WHERE followers <> 0 OR posts <> 0 OR pulled",
        )
        .fetch_all(&mut *conn)
        .await?
        .iter()
        .map(|r| Ok((r.try_get(0)?, (r.try_get(1)?, r.try_get(2)?, r.try_get(3)?))))
        .collect::<Result<_, sqlx::Error>>()?;
        let readers = sqlx::query("SELECT reader, size::bigint, watermark FROM feed_readers")
            .fetch_all(&mut *conn)
            .await?
            .iter()
            .map(|r| Ok((r.try_get(0)?, (r.try_get(1)?, r.try_get(2)?))))
            .collect::<Result<_, sqlx::Error>>()?;
        Ok(Self {
            follows,
            posts,
            authors,
            inbox,
            readers,
        })
    }

    /// The feed's rows against a fold up to its checkpoint, and the inbox invariant.
    fn compare(&self, fold: &Fold, feed: Feed, out: &mut Vec<String>) {
        diff(
            "feed_follows (follower, followee)",
            &fold.follows,
            &self.follows,
            out,
        );
        let posts: BTreeSet<_> = fold.posts.iter().map(|(k, v)| (*k, *v)).collect();
        diff(
            "rm_posts (post_id, (seq, author, live))",
            &posts,
            &self.posts,
            out,
        );
        let mut authors: BTreeMap<i64, (i64, i64, bool)> = BTreeMap::new();
        for &(_, followee) in &fold.follows {
            authors.entry(followee).or_default().0 += 1;
        }
        for &(_, author, live) in fold.posts.values() {
            if live {
                authors.entry(author).or_default().1 += 1;
            }
        }
        for counts in authors.values_mut() {
            counts.2 = counts.0 >= feed.big_v_threshold;
        }
        authors.retain(|_, c| c.0 != 0 || c.1 != 0 || c.2);
        let authors: BTreeSet<_> = authors.into_iter().collect();
        let actual: BTreeSet<_> = self.authors.iter().map(|(k, v)| (*k, *v)).collect();
        diff(
            "feed_authors (author, (followers, posts, pulled))",
            &authors,
            &actual,
            out,
        );

        // The inbox: only live posts of followed authors; every live post of a followed
        // push-mode author above the reader's watermark; sizes counted; the cap kept.
        let by_seq: BTreeMap<i64, (i64, bool)> = fold
            .posts
            .values()
            .map(|&(seq, a, live)| (seq, (a, live)))
            .collect();
        let pulled = |author: i64| self.authors.get(&author).is_some_and(|a| a.2);
        let mut sizes: BTreeMap<i64, i64> = BTreeMap::new();
        for &(reader, seq) in &self.inbox {
            *sizes.entry(reader).or_default() += 1;
            match by_seq.get(&seq) {
                Some(&(author, true)) if fold.follows.contains(&(reader, author)) => {}
                _ => out.push(format!(
                    "feed_inbox: reader {reader} holds post seq {seq}, which it must not"
                )),
            }
        }
        for &(reader, author) in &fold.follows {
            if pulled(author) {
                continue;
            }
            let watermark = self.readers.get(&reader).map_or(0, |r| r.1);
            for (&seq, &(a, live)) in by_seq.range(watermark + 1..) {
                if a == author && live && !self.inbox.contains(&(reader, seq)) {
                    out.push(format!(
                        "feed_inbox: reader {reader} misses post seq {seq} of {author} (watermark {watermark})"
                    ));
                }
            }
        }
        for (&reader, &(size, _)) in &self.readers {
            let held = sizes.get(&reader).copied().unwrap_or(0);
            if size != held {
                out.push(format!(
                    "feed_readers: reader {reader} counts {size} entries, holds {held}"
                ));
            }
            if held > feed.inbox_cap {
                out.push(format!(
                    "feed_inbox: reader {reader} holds {held}, over the cap"
                ));
            }
        }
    }
}
