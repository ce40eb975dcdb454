//! Queries on projector `feed`'s read models: author timelines, the follow feed (pushed inbox
//! merged with pulled timelines), the recommended feed, and the count of new posts.
//!
//! Every page is ordered by `seq`, newest first, and paged by a seq cursor (exclusive), so a
//! post that becomes visible while a reader scrolls lands above the first page, never inside
//! pages already read. A page is assembled from candidate seqs (inbox, pulled authors, and
//! below the inbox's watermark every followed author), then hydrated with a filter that holds
//! rules 8 and 9 whatever the candidates' source: live posts of authors the reader follows at
//! the feed's position (a block removes both follows first, so that excludes blocks too). Then
//! a [`PostFilter`] keeps what the reader may read at the moment of reading (issue 26: the
//! visibility beside each post is a column; the follows and locks come from the caller's
//! graph state, the replica). When the filters drop candidates (a cached inbox behind the
//! model, a follow that ended), the page is refilled from further down, so a page is only
//! short at the true end.

use std::collections::BTreeSet;

use crate::views::{PostView, QuoteView};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use relations_domain::{ListId, PostId, UserId, Visibility};
use sqlx::{PgPool, Row};

use crate::error::ProjectionError;
use crate::filters::screen::Screening;

/// A page of posts by seq (the feed and a timeline), newest first, and the seq to continue below.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeqPage {
    /// The posts.
    pub items: Vec<PostView>,
    /// The seq to continue below, when there may be more.
    pub next: Option<i64>,
}

/// Where a page starts: below a cursor, at or before a time, or at the top.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PageStart {
    /// Only posts with a seq below this (a cursor).
    pub before: Option<i64>,
    /// Only posts created at or before this.
    pub max_time: Option<DateTime<Utc>>,
}

/// Which part of a reader's inbox to read: up to `limit` seqs below `before`.
#[derive(Debug, Clone, Copy)]
pub struct InboxRange {
    /// Whose inbox.
    pub reader: UserId,
    /// Seqs strictly below this one.
    pub before: i64,
    /// At most this many.
    pub limit: i64,
}

/// Inbox seqs, newest first, and the watermark (below it the inbox may be incomplete).
pub type InboxEntries = (Vec<i64>, i64);

/// A reader's pushed inbox: PostgreSQL, or a cache in front of it.
#[async_trait]
pub trait Inbox: Send + Sync {
    /// The entries in `range` above the watermark, and the watermark.
    async fn entries(
        &self,
        pool: &PgPool,
        range: InboxRange,
    ) -> Result<InboxEntries, ProjectionError>;
}

/// The inbox as PostgreSQL holds it.
pub struct PgInbox;

#[async_trait]
impl Inbox for PgInbox {
    async fn entries(
        &self,
        pool: &PgPool,
        range: InboxRange,
    ) -> Result<InboxEntries, ProjectionError> {
        let row = sqlx::query(
            "SELECT w, ARRAY(SELECT seq FROM feed_inbox
                              WHERE reader = $1 AND seq < $2 AND seq > w
                              ORDER BY seq DESC LIMIT $3) AS seqs
               FROM (SELECT COALESCE((SELECT watermark FROM feed_readers WHERE reader = $1), 0) AS w) t",
        )
        .bind(range.reader.get())
        .bind(range.before)
        .bind(range.limit)
        .fetch_one(pool)
        .await?;
        Ok((row.try_get("seqs")?, row.try_get("w")?))
    }
}

/// The newest `limit` inbox entries and the watermark: what a cache loads.
pub async fn inbox_head(
    pool: &PgPool,
    reader: UserId,
    limit: i64,
) -> Result<(Vec<i64>, i64), ProjectionError> {
    let range = InboxRange {
        reader,
        before: i64::MAX,
        limit,
    };
    PgInbox.entries(pool, range).await
}

/// Which posts a reader may read, judged at the moment of reading (see `crate::privacy`).
#[async_trait]
pub trait PostFilter: Send + Sync {
    /// For each `(author, visibility)`, whether the reader may read such a post; of the
    /// recommended feed (`recommended`), whether it may be recommended.
    async fn readable(
        &self,
        posts: &[(UserId, Visibility)],
        recommended: bool,
    ) -> Result<Vec<bool>, ProjectionError>;
}

/// The posts of `posts` that `filter` keeps, in order.
async fn keep(
    filter: &dyn PostFilter,
    posts: Vec<(i64, PostView)>,
    recommended: bool,
) -> Result<Vec<(i64, PostView)>, ProjectionError> {
    let asked: Vec<(UserId, Visibility)> = posts
        .iter()
        .map(|(_, p)| (p.author, p.visibility))
        .collect();
    let readable = filter.readable(&asked, recommended).await?;
    Ok(posts
        .into_iter()
        .zip(readable)
        .filter_map(|(post, keep)| keep.then_some(post))
        .collect())
}

/// The posts of `posts` that `screening` does not hide (issue 47), in order, those a `warn`
/// filter matches marked.
fn screened(
    posts: Vec<(i64, PostView)>,
    screening: Screening<'_>,
) -> impl Iterator<Item = (i64, PostView)> + '_ {
    posts.into_iter().filter_map(move |(seq, mut post)| {
        post.filtered = screening.shown(&post.content)?;
        Some((seq, post))
    })
}

/// A post's visibility as `rm_posts` stores it.
fn visibility(stored: &str) -> Result<Visibility, sqlx::Error> {
    stored.parse().map_err(|e| sqlx::Error::Decode(Box::new(e)))
}

/// The columns [`post`] reads.
pub(crate) const POST_COLUMNS: &str =
    "seq, post_id, author, content, created_at, visibility, quote_of, quote_policy, quote_detached,
     comment_policy";

/// A post row of `rm_posts` and its seq.
pub(crate) fn post(row: &sqlx::postgres::PgRow) -> Result<(i64, PostView), ProjectionError> {
    let author: i64 = row.try_get("author")?;
    let visibility = visibility(row.try_get("visibility")?)?;
    Ok((
        row.try_get("seq")?,
        PostView {
            id: PostId::from_uuid(row.try_get("post_id")?),
            author: UserId::try_from(author).map_err(|e| sqlx::Error::Decode(Box::new(e)))?,
            content: row
                .try_get::<Option<String>, _>("content")?
                .unwrap_or_default(),
            created_at: row.try_get("created_at")?,
            visibility,
            // Filled by the API from projector `engagement` for the page shown.
            like_count: 0,
            comment_count: 0,
            liked: None,
            repost_count: 0,
            reposted: None,
            bookmarked: None,
            reposted_by: None,
            quote_policy: parsed(row, "quote_policy")?,
            comment_policy: parsed(row, "comment_policy")?,
            quote_count: 0,
            quote: QuoteView::pending(
                row.try_get::<Option<uuid::Uuid>, _>("quote_of")?
                    .map(PostId::from_uuid),
                row.try_get("quote_detached")?,
            ),
            filtered: None,
        },
    ))
}

/// Column `name` of `row`, a text parsed (a policy's name).
fn parsed<T: std::str::FromStr>(row: &sqlx::postgres::PgRow, name: &str) -> Result<T, sqlx::Error>
where
    T::Err: std::error::Error + Send + Sync + 'static,
{
    let text: &str = row.try_get(name)?;
    text.parse().map_err(|e| sqlx::Error::Decode(Box::new(e)))
}

/// The exclusive seq bound a page starts below.
async fn start_bound(pool: &PgPool, start: PageStart) -> Result<i64, ProjectionError> {
    let mut bound = start.before.unwrap_or(i64::MAX);
    if let Some(max_time) = start.max_time {
        // The first post after max_time; seq and created_at agree up to commit races, which
        // the hydration filter on created_at settles.
        let after: Option<i64> =
            sqlx::query_scalar("SELECT min(seq) FROM rm_posts WHERE created_at > $1")
                .bind(max_time)
                .fetch_one(pool)
                .await?;
        if let Some(after) = after {
            bound = bound.min(after);
        }
    }
    Ok(bound)
}

/// What a timeline shows of an author (`GET /api/v1/users/{id}/posts`).
#[derive(Debug, Clone, Copy)]
pub struct TimelineAsk<'a> {
    /// Whose.
    pub author: UserId,
    /// The visibilities of the author's posts the viewer may read
    /// (`relations_domain::privacy::readable`).
    pub readable: &'a [Visibility],
    /// Who reads (a block with a reposted post's author hides that repost).
    pub viewer: Option<UserId>,
    /// With the author's reposts (issue 44).
    pub reposts: bool,
}

/// `ask.author`'s live posts of the visibilities the viewer may read and, when asked, their
/// reposts of posts `filter` lets the viewer read, newest first.
pub async fn timeline(
    pool: &PgPool,
    filter: &dyn PostFilter,
    ask: TimelineAsk<'_>,
    start: PageStart,
    size: i64,
) -> Result<SeqPage, ProjectionError> {
    if ask.readable.is_empty() {
        return Ok(SeqPage {
            items: vec![],
            next: None,
        });
    }
    let mut bound = start_bound(pool, start).await?;
    let sql = format!(
        "SELECT p.seq, {ITEM_COLUMNS} FROM {ITEM_FROM}
          WHERE p.author = $1 AND {ITEM_LIVE} AND p.seq < $2
            AND ($3::timestamptz IS NULL OR p.created_at <= $3)
            AND NOT EXISTS (SELECT 1 FROM feed_banned WHERE author = $1)
            AND CASE WHEN p.repost_of IS NULL THEN p.visibility = ANY($5)
                     ELSE $6 AND NOT EXISTS (SELECT 1 FROM feed_banned b WHERE b.author = o.author)
                          AND NOT {blocked} END
          ORDER BY p.seq DESC LIMIT $4",
        blocked = blocked("$7", "o.author"),
    );
    let readable: Vec<&str> = ask.readable.iter().map(|v| v.as_str()).collect();
    let mut found = Vec::new();
    // Reposts the viewer may not read are left out: the page is refilled from further down.
    loop {
        let rows = sqlx::query(&sql)
            .bind(ask.author.get())
            .bind(bound)
            .bind(start.max_time)
            .bind(size + 1)
            .bind(&readable)
            .bind(ask.reposts)
            .bind(ask.viewer.map(UserId::get))
            .fetch_all(pool)
            .await?;
        let items = rows.iter().map(item).collect::<Result<Vec<_>, _>>()?;
        let Some(lowest) = items.last().map(|i| i.seq) else {
            break;
        };
        let full = items.len() as i64 > size;
        let (reposts, posts): (Vec<Item>, Vec<Item>) = items.into_iter().partition(|i| i.repost);
        let reposts = keep(
            filter,
            reposts.into_iter().map(Item::shown).collect(),
            false,
        );
        let mut round: Vec<(i64, PostView)> = reposts.await?;
        for post in posts {
            round.push(post.shown());
        }
        round.sort_unstable_by_key(|(seq, _)| std::cmp::Reverse(*seq));
        found.extend(round);
        if found.len() as i64 > size || !full {
            break;
        }
        bound = lowest;
    }
    if ask.reposts {
        for (_, post) in &mut found {
            post.reposted_by.get_or_insert_with(Vec::new);
        }
    }
    Ok(paginate(found, size))
}

/// A block either way between the user `reader` and the user `other` (SQL expressions).
fn blocked(reader: &str, other: &str) -> String {
    format!(
        "EXISTS (SELECT 1 FROM rm_blocks WHERE (blocker = {reader} AND blocked = {other})
                                            OR (blocker = {other} AND blocked = {reader}))"
    )
}

/// The user `user` is neither banned nor muted by `reader` at the moment of reading (SQL).
fn shown_to(reader: &str, user: &str) -> String {
    format!(
        "NOT EXISTS (SELECT 1 FROM feed_banned b WHERE b.author = {user})
         AND NOT EXISTS (SELECT 1 FROM feed_mutes m
                          WHERE m.muter = {reader} AND m.muted = {user}
                            AND (m.until IS NULL OR m.until > now()))"
    )
}

/// Items `p` (a post, or a repost) with, for a repost, the post `o` it shows (no probe for a
/// post: it shows itself).
const ITEM_FROM: &str = "rm_posts p LEFT JOIN rm_posts o ON o.post_id = p.repost_of";

/// Whether item `p` of [`ITEM_FROM`] is live: it, and a repost's post.
const ITEM_LIVE: &str = "NOT p.deleted AND (p.repost_of IS NULL OR NOT o.deleted)";

/// The post item `p` of [`ITEM_FROM`] shows, by id.
const ITEM_POST: &str = "COALESCE(p.repost_of, p.post_id)";

/// The columns [`item`] reads beside `p.seq`: the post item `p` shows ([`ITEM_FROM`]).
const ITEM_COLUMNS: &str = "COALESCE(o.post_id, p.post_id) AS post_id,
        COALESCE(o.author, p.author) AS author,
        CASE WHEN p.repost_of IS NULL THEN p.content ELSE o.content END AS content,
        COALESCE(o.created_at, p.created_at) AS created_at,
        COALESCE(o.visibility, p.visibility) AS visibility,
        COALESCE(o.quote_of, p.quote_of) AS quote_of,
        COALESCE(o.quote_policy, p.quote_policy) AS quote_policy,
        COALESCE(o.quote_detached, p.quote_detached) AS quote_detached,
        COALESCE(o.comment_policy, p.comment_policy) AS comment_policy,
        p.repost_of IS NOT NULL AS repost, p.author AS via";

/// A feed item (issue 44): a post, or a repost of one, under the item's seq.
struct Item {
    seq: i64,
    /// A repost (by `via`), not the post itself.
    repost: bool,
    via: i64,
    post: PostView,
}

impl Item {
    /// As a timeline shows it: a repost names its reposter.
    fn shown(mut self) -> (i64, PostView) {
        if self.repost {
            self.post.reposted_by = Some(UserId::try_from(self.via).into_iter().collect());
        }
        (self.seq, self.post)
    }
}

/// An item row ([`ITEM_COLUMNS`] beside `seq`).
fn item(row: &sqlx::postgres::PgRow) -> Result<Item, ProjectionError> {
    let (seq, post) = post(row)?;
    Ok(Item {
        seq,
        post,
        repost: row.try_get("repost")?,
        via: row.try_get("via")?,
    })
}

fn paginate(mut posts: Vec<(i64, PostView)>, size: i64) -> SeqPage {
    let more = posts.len() as i64 > size;
    posts.truncate(size as usize);
    SeqPage {
        next: if more {
            posts.last().map(|p| p.0)
        } else {
            None
        },
        items: posts.into_iter().map(|p| p.1).collect(),
    }
}

/// Whose posts make a reader's feed.
enum Sources {
    /// The reader follows someone: their inbox, their pulled authors, and below the inbox's
    /// watermark every author they follow.
    Following {
        /// Followed authors in pull mode.
        pulled: Vec<i64>,
        /// The inbox's watermark in PostgreSQL. A cached inbox may know an older one (its
        /// projector lags), and raising a watermark is always safe, so pages use the higher.
        watermark: i64,
        /// The members of the reader's exclusive lists (issue 46): left out.
        excluded: Vec<i64>,
    },
    /// A list of the reader's (issue 46): its members, each followed.
    List {
        /// The list's members.
        members: Vec<i64>,
    },
    /// The reader follows nobody: the recommended authors they have no block with.
    Recommended {
        /// The recommended authors (the reader left out).
        authors: Vec<i64>,
    },
}

/// The reader's sources, the newest post's seq as they were read, and (for a follow feed)
/// the first round's pull: the newest `first.limit` live posts below `first.before` of
/// their pulled authors. One round trip.
async fn sources(
    pool: &PgPool,
    reader: UserId,
    recommended: &[UserId],
    first: (i64, i64),
    list: Option<ListId>,
) -> Result<(Sources, i64, Vec<i64>), ProjectionError> {
    if let Some(list) = list {
        let (head, members): (i64, Vec<i64>) = sqlx::query_as(
            "SELECT (SELECT COALESCE(max(seq), 0) FROM rm_posts),
                    ARRAY(SELECT member FROM rm_list_members WHERE list_id = $1 AND owner = $2)",
        )
        .bind(list.uuid())
        .bind(reader.get())
        .fetch_one(pool)
        .await?;
        return Ok((Sources::List { members }, head, Vec::new()));
    }
    let row = sqlx::query(
        "WITH pulled AS (SELECT f.followee AS author FROM feed_follows f
                           JOIN feed_authors a ON a.author = f.followee AND a.pulled
                          WHERE f.follower = $1)
         SELECT (SELECT COALESCE(max(seq), 0) FROM rm_posts) AS head,
                EXISTS (SELECT 1 FROM feed_follows WHERE follower = $1) AS follows,
                ARRAY(SELECT author FROM pulled) AS pulled,
                ARRAY(SELECT p.seq FROM pulled
                      CROSS JOIN LATERAL (SELECT seq FROM rm_posts
                                           WHERE author = pulled.author AND NOT deleted AND seq < $2
                                           ORDER BY seq DESC LIMIT $3) AS p
                       ORDER BY p.seq DESC LIMIT $3) AS first_pull,
                COALESCE((SELECT watermark FROM feed_readers WHERE reader = $1), 0) AS watermark,
                ARRAY(SELECT m.member FROM rm_list_members m
                        JOIN rm_lists l ON l.list_id = m.list_id AND l.exclusive
                       WHERE m.owner = $1) AS excluded",
    )
    .bind(reader.get())
    .bind(first.0)
    .bind(first.1)
    .fetch_one(pool)
    .await?;
    let sources = if row.try_get("follows")? {
        Sources::Following {
            pulled: row.try_get("pulled")?,
            watermark: row.try_get("watermark")?,
            excluded: row.try_get("excluded")?,
        }
    } else {
        Sources::Recommended {
            authors: recommended
                .iter()
                .map(|u| u.get())
                .filter(|&u| u != reader.get())
                .collect(),
        }
    };
    Ok((sources, row.try_get("head")?, row.try_get("first_pull")?))
}

/// The newest `limit` live posts below `before` of each of `authors`, merged.
async fn pull(
    pool: &PgPool,
    authors: &[i64],
    before: i64,
    limit: i64,
) -> Result<Vec<i64>, ProjectionError> {
    if authors.is_empty() {
        return Ok(vec![]);
    }
    Ok(sqlx::query_scalar(
        "SELECT p.seq FROM unnest($1::bigint[]) AS a(author)
         CROSS JOIN LATERAL (SELECT seq FROM rm_posts
                              WHERE author = a.author AND NOT deleted AND seq < $2
                              ORDER BY seq DESC LIMIT $3) AS p
          ORDER BY p.seq DESC LIMIT $3",
    )
    .bind(authors)
    .bind(before)
    .bind(limit)
    .fetch_all(pool)
    .await?)
}

/// The newest `limit` live posts below `before` of every author `reader` follows.
async fn pull_followed(
    pool: &PgPool,
    reader: UserId,
    before: i64,
    limit: i64,
) -> Result<Vec<i64>, ProjectionError> {
    Ok(sqlx::query_scalar(
        "SELECT p.seq FROM feed_follows f
         CROSS JOIN LATERAL (SELECT seq FROM rm_posts
                              WHERE author = f.followee AND NOT deleted AND seq < $2
                              ORDER BY seq DESC LIMIT $3) AS p
          WHERE f.follower = $1
          ORDER BY p.seq DESC LIMIT $3",
    )
    .bind(reader.get())
    .bind(before)
    .bind(limit)
    .fetch_all(pool)
    .await?)
}

/// Loads the items behind `seqs` that may be shown to `reader` (rules 8 and 9), newest
/// first, each post at its newest appearance only (issue 44).
///
/// An item is a post or a repost of one (by its `via`). It is shown when its post is live, the
/// reader follows its author (of a repost: its reposter, keeping their reposts), neither the
/// author nor (of a repost) the reposter is banned or muted by the reader, and no block
/// separates the reader and the post's author (a block ends follows, so one with the reposter
/// is left out already). Of the items of one post, the newest such one is the post's
/// appearance: a post's reposts are all newer than it, so an item is shown when it is the
/// newest of the post's reposts that pass the same rules, or the post itself when none does;
/// the newest three of them are its `reposted_by`. Whichever page a reader reads, a post is
/// shown at that one seq, so a reading never shows it twice.
async fn hydrate(
    pool: &PgPool,
    reader: UserId,
    seqs: &[i64],
    sources: &Sources,
    max_time: Option<DateTime<Utc>>,
) -> Result<Vec<(i64, PostView)>, ProjectionError> {
    const FOLLOWED: &str = "EXISTS (SELECT 1 FROM feed_follows
                   WHERE follower = $2 AND followee = p.author
                     AND (p.repost_of IS NULL OR show_reposts))";
    // The items' and reposters' scope (issue 46): the home feed leaves out the members of the
    // reader's exclusive lists, a list's feed keeps its members only.
    let (visible, scope, scoped): (String, &str, &[i64]) = match sources {
        Sources::Following { excluded, .. } => (
            format!("{FOLLOWED} AND p.author <> ALL($4)"),
            "r.author <> ALL($4)",
            excluded,
        ),
        Sources::List { members } => (
            format!("{FOLLOWED} AND p.author = ANY($4)"),
            "r.author = ANY($4)",
            members,
        ),
        // Reposts are not recommended.
        Sources::Recommended { .. } => (
            format!("p.repost_of IS NULL AND NOT {}", blocked("$2", "p.author")),
            "true",
            &[],
        ),
    };
    let sql = format!(
        "SELECT p.seq, {ITEM_COLUMNS}, v.reposters, v.newest
           FROM {ITEM_FROM}
          CROSS JOIN LATERAL (
                SELECT array_agg(r.author ORDER BY r.seq DESC) AS reposters, max(r.seq) AS newest
                  FROM (SELECT r.seq, r.author FROM rm_posts r
                          JOIN feed_follows f
                            ON f.follower = $2 AND f.followee = r.author AND f.show_reposts
                         WHERE r.repost_of = {ITEM_POST} AND NOT r.deleted AND {shown_reposter}
                           AND {scope}
                         ORDER BY r.seq DESC LIMIT 3) AS r) AS v
          WHERE p.seq = ANY($1) AND {ITEM_LIVE}
            AND ($3::timestamptz IS NULL OR p.created_at <= $3)
            AND {shown_via}
            AND (p.repost_of IS NULL OR ({shown_author} AND NOT {blocked}))
            AND {visible}
          ORDER BY p.seq DESC",
        shown_reposter = shown_to("$2", "r.author"),
        shown_via = shown_to("$2", "p.author"),
        shown_author = shown_to("$2", "o.author"),
        blocked = blocked("$2", "o.author"),
    );
    let rows = sqlx::query(&sql)
        .bind(seqs)
        .bind(reader.get())
        .bind(max_time)
        .bind(scoped)
        .fetch_all(pool)
        .await?;
    let mut shown = Vec::with_capacity(rows.len());
    for row in &rows {
        let item = item(row)?;
        let newest: Option<i64> = row.try_get("newest")?;
        let appears = match newest {
            Some(newest) => newest == item.seq,
            None => !item.repost,
        };
        if appears {
            let (seq, mut post) = (item.seq, item.post);
            let reposters: Option<Vec<i64>> = row.try_get("reposters")?;
            let reposters = reposters.unwrap_or_default().into_iter();
            let reposters = reposters.map(UserId::try_from).collect::<Result<_, _>>();
            post.reposted_by = Some(reposters.map_err(|e| sqlx::Error::Decode(Box::new(e)))?);
            shown.push((seq, post));
        }
    }
    Ok(shown)
}

/// A page of `reader`'s feed: the follow feed, or the recommended feed when they follow
/// nobody. `inbox` serves the pushed part (PostgreSQL or its cache); `filter` keeps what the
/// reader may read. Also the newest post's seq, read before the page (the read mark a first
/// page sets: a post that lands meanwhile stays counted as new).
#[allow(clippy::too_many_arguments)]
pub async fn feed(
    pool: &PgPool,
    inbox: &dyn Inbox,
    filter: &dyn PostFilter,
    screening: Screening<'_>,
    reader: UserId,
    recommended: &[UserId],
    start: PageStart,
    size: i64,
    list: Option<ListId>,
) -> Result<(SeqPage, i64), ProjectionError> {
    let mut bound = start_bound(pool, start).await?;
    let want = |found: usize| (size + 1 - found as i64).max(10);
    let first = (bound, want(0));
    let (sources, head, first_pull) = sources(pool, reader, recommended, first, list).await?;
    let mut first_pull = Some(first_pull);
    let mut found: Vec<(i64, PostView)> = Vec::new();
    loop {
        let want = want(found.len());
        let mut candidates = BTreeSet::new();
        let mut exhausted = true;
        match &sources {
            Sources::Following {
                pulled, watermark, ..
            } => {
                let (pushed, cached) = inbox
                    .entries(
                        pool,
                        InboxRange {
                            reader,
                            before: bound,
                            limit: want,
                        },
                    )
                    .await?;
                let watermark = cached.max(*watermark);
                let pulled = match first_pull.take() {
                    Some(first) => first,
                    None => pull(pool, pulled, bound, want).await?,
                };
                exhausted &= pushed.len() < want as usize && pulled.len() < want as usize;
                if pushed.len() < want as usize && watermark > 0 {
                    // Below the watermark the inbox may have been trimmed: pull everyone.
                    let deep = pull_followed(pool, reader, bound.min(watermark + 1), want).await?;
                    exhausted &= deep.len() < want as usize;
                    candidates.extend(deep);
                }
                candidates.extend(pushed);
                candidates.extend(pulled);
            }
            Sources::Recommended { authors: pulled } | Sources::List { members: pulled } => {
                let pulled = pull(pool, pulled, bound, want).await?;
                exhausted &= pulled.len() < want as usize;
                candidates.extend(pulled);
            }
        }
        // The newest `want` candidates: everything above the last of them was in some source's
        // answer, so the next round continues below it without a gap.
        let round: Vec<i64> = candidates.into_iter().rev().take(want as usize).collect();
        let Some(&lowest) = round.last() else { break };
        let hydrated = hydrate(pool, reader, &round, &sources, start.max_time).await?;
        let recommended = matches!(sources, Sources::Recommended { .. });
        found.extend(screened(
            keep(filter, hydrated, recommended).await?,
            screening,
        ));
        if found.len() as i64 > size || (exhausted && round.len() < want as usize) {
            break;
        }
        bound = lowest;
    }
    Ok((paginate(found, size), head))
}

/// `reader`'s read mark: the written one, or `pending` when higher (see
/// [`super::read_marks`]).
pub async fn read_mark(
    pool: &PgPool,
    reader: UserId,
    pending: Option<i64>,
) -> Result<i64, ProjectionError> {
    Ok(sqlx::query_scalar(
        "SELECT greatest(COALESCE((SELECT seq FROM feed_read_marks WHERE reader = $1), 0), $2)",
    )
    .bind(reader.get())
    .bind(pending.unwrap_or(0))
    .fetch_one(pool)
    .await?)
}

/// How many posts of `reader`'s feed are newer than `mark` ([`read_mark`]), pushed and
/// pulled alike, that `filter` lets them read and does not hide (counted per author and
/// visibility, and text when screened, then judged).
pub async fn new_count(
    pool: &PgPool,
    filter: &dyn PostFilter,
    screening: Screening<'_>,
    reader: UserId,
    recommended: &[UserId],
    mark: i64,
) -> Result<i64, ProjectionError> {
    let (sources, ..) = sources(pool, reader, recommended, (0, 0), None).await?;
    // Each post counted once, by its author and visibility (and its text, when the reader's
    // filters screen it: issue 47), when one of its appearances (see [`hydrate`]) is newer
    // than the mark.
    let screened = screening.active();
    let groups: Vec<(i64, String, Option<String>, i64)> = match &sources {
        Sources::Following { excluded, .. } => {
            let sql = format!(
                "SELECT COALESCE(o.author, p.author), COALESCE(o.visibility, p.visibility),
                        CASE WHEN $4 THEN COALESCE(o.content, p.content) END,
                        count(DISTINCT {ITEM_POST})
                   FROM feed_follows f
                   JOIN rm_posts p ON p.author = f.followee AND NOT p.deleted AND p.seq > $2
                                  AND (p.repost_of IS NULL OR f.show_reposts)
                   LEFT JOIN rm_posts o ON o.post_id = p.repost_of
                  WHERE f.follower = $1 AND f.followee <> ALL($3) AND {ITEM_LIVE} AND {shown_via}
                    AND (p.repost_of IS NULL OR ({shown_author} AND NOT {blocked}))
                  GROUP BY 1, 2, 3",
                shown_via = shown_to("$1", "p.author"),
                shown_author = shown_to("$1", "o.author"),
                blocked = blocked("$1", "o.author"),
            );
            sqlx::query_as(&sql)
                .bind(reader.get())
                .bind(mark)
                .bind(excluded)
                .bind(screened)
                .fetch_all(pool)
                .await?
        }
        // Never asked: `sources` was asked for the home feed (a list has no read mark).
        Sources::List { .. } => Vec::new(),
        Sources::Recommended { authors } => {
            let sql = format!(
                "SELECT p.author, p.visibility, CASE WHEN $4 THEN p.content END, count(*)
                   FROM rm_posts p
                  WHERE p.author = ANY($2) AND NOT p.deleted AND p.seq > $3
                    AND p.repost_of IS NULL AND {shown} AND NOT {blocked}
                  GROUP BY 1, 2, 3",
                shown = shown_to("$1", "p.author"),
                blocked = blocked("$1", "p.author"),
            );
            sqlx::query_as(&sql)
                .bind(reader.get())
                .bind(authors)
                .bind(mark)
                .bind(screened)
                .fetch_all(pool)
                .await?
        }
    };
    let mut asked = Vec::with_capacity(groups.len());
    for (author, visibility, ..) in &groups {
        let author = UserId::try_from(*author).map_err(|e| sqlx::Error::Decode(Box::new(e)))?;
        asked.push((author, self::visibility(visibility)?));
    }
    let recommended = matches!(sources, Sources::Recommended { .. });
    let readable = filter.readable(&asked, recommended).await?;
    Ok(groups
        .iter()
        .zip(readable)
        .filter(|((.., text, _), keep)| {
            *keep && text.as_deref().is_none_or(|t| !screening.hides(t))
        })
        .map(|((.., count), _)| count)
        .sum())
}

/// The live posts among `ids` (reposts are not posts) whose authors are not banned, by id,
/// without their engagement: what a repost or a quote may show.
pub async fn live_posts(
    pool: &PgPool,
    ids: &[uuid::Uuid],
) -> Result<std::collections::HashMap<uuid::Uuid, PostView>, ProjectionError> {
    let sql = format!(
        "SELECT {POST_COLUMNS} FROM rm_posts p
          WHERE post_id = ANY($1) AND NOT deleted AND repost_of IS NULL
            AND NOT EXISTS (SELECT 1 FROM feed_banned b WHERE b.author = p.author)"
    );
    let rows = sqlx::query(&sql).bind(ids).fetch_all(pool).await?;
    rows.iter()
        .map(|row| post(row).map(|(_, p)| (p.id.uuid(), p)))
        .collect()
}

/// `author`'s live posts.
pub async fn post_count(pool: &PgPool, author: UserId) -> Result<i64, ProjectionError> {
    Ok(
        sqlx::query_scalar(
            "SELECT COALESCE((SELECT posts FROM feed_authors WHERE author = $1), 0)",
        )
        .bind(author.get())
        .fetch_one(pool)
        .await?,
    )
}
