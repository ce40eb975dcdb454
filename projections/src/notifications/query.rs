//! Reading notifications: a page of groups, the unread count, the read marker.
//!
//! **Paging while groups move.** Groups are listed by their place (the log position of the
//! last cause that joined them; an undo never lowers it), newest first. A group moves to the
//! top when something joins it, so a plain
//! "before this place" cursor would skip a group that moved up past the cursor while the
//! reader pages, or show it twice. A page therefore reads the list *as of a snapshot*: the
//! first page fixes `snapshot`, the newest place then, and every later page orders groups by
//! their place as of the snapshot (a group that moved since is placed by its newest cause at
//! or below the snapshot) and continues below `before`, the last place shown. So a group that
//! moves up while the reader pages keeps its place in this reading, and one made after the
//! first page is not in it (it is on top of the next first page). The one case the cursor
//! cannot hold still: a group that moves up while the reader pages *and* whose last cause
//! joined before the snapshot was undone meanwhile is placed by its newest live cause before
//! the snapshot, which is lower, so it may be listed again further down.
//!
//! **Who may read the post (issue 26).** A comment's likes and replies do not exist to a viewer
//! who may not read the comment's post, judged at the moment of reading. Groups of those two
//! kinds therefore carry what the rule asks ([`PostAsk`]: the post's author, from `rm_posts`,
//! and its visibility), and the reader leaves out those the caller may not read, in the list
//! and in the unread count alike. Groups about one's own posts ask nothing.

use chrono::{DateTime, Utc};
use relations_store::LogPosition;
use sqlx::PgPool;
use uuid::Uuid;

/// Where a reading of the list stands: its snapshot and the last place shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reading {
    /// The newest place when the first page was read.
    pub snapshot: LogPosition,
    /// The next page lists places below this one (as of the snapshot).
    pub before: LogPosition,
}

/// One group, as a page lists it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct GroupRow {
    /// The group's key.
    pub grp: String,
    /// Its type.
    pub kind: String,
    /// The post it is about.
    pub post: Option<Uuid>,
    /// The comment it is about (its number in the post's thread).
    pub comment: Option<i32>,
    /// Live notifications in it.
    pub count: i64,
    /// The newest distinct actors, newest first, at most 5.
    pub actors: Vec<i64>,
    /// Its newest notification's place.
    pub tx: i64,
    /// (with `tx`)
    pub gp: i64,
    /// And time.
    pub latest_at: DateTime<Utc>,
    /// Its place as of the reading's snapshot (the page's order and the cursor).
    pub ktx: i64,
    /// (with `ktx`)
    pub kgp: i64,
    /// What reading it asks ([`PostAsk::of`]).
    pub ask_author: Option<i64>,
    /// (with `ask_author`)
    pub ask_visibility: Option<String>,
    /// (with `ask_author`)
    pub ask_subject: Option<String>,
}

/// What a group asks of its reader: that they may read the post by `author` (0 when the feed
/// has not folded the post yet: nobody may, until it has) of `visibility`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostAsk {
    /// The post's author, or 0 when unknown.
    pub author: i64,
    /// The post's visibility as `rm_posts` stores it.
    pub visibility: Option<String>,
    /// The text the group shows of someone else's writing, which the reader's filters of
    /// context `notifications` judge (issue 47): a `posted` or `quoted` group's post's.
    pub subject: Option<String>,
}

impl PostAsk {
    /// Whether a group or notification of `kind` may ask anything (the kinds [`ASK`] names).
    pub fn asked_of(kind: &str) -> bool {
        matches!(kind, "liked_comment" | "replied" | "posted" | "quoted")
    }

    /// From the three columns [`ASK`] selects: `None` when the group asks nothing.
    pub fn of(
        author: Option<i64>,
        visibility: Option<String>,
        subject: Option<String>,
    ) -> Option<Self> {
        author.map(|author| Self {
            author,
            visibility,
            subject,
        })
    }
}

/// The columns of what a group `g` of recipient `$1`, joined to its post `p` in `rm_posts`,
/// asks: `ask_author` (null: nothing; 0: a post the feed has not folded yet) and
/// `ask_visibility`. A comment's likes and replies, and `posted` and `quoted` (issue 44), ask
/// ([`PostAsk::asked_of`]); a group about one's own post (or a reply on it) asks nothing.
const ASK: &str = "CASE WHEN g.kind IN ('liked_comment', 'replied', 'posted', 'quoted')
                         AND p.author IS DISTINCT FROM $1
                        THEN coalesce(p.author, 0) END AS ask_author,
                   p.visibility AS ask_visibility,
                   CASE WHEN g.kind IN ('posted', 'quoted') THEN p.content END AS ask_subject";

impl GroupRow {
    /// What reading it asks, if anything.
    pub fn ask(&self) -> Option<PostAsk> {
        PostAsk::of(
            self.ask_author,
            self.ask_visibility.clone(),
            self.ask_subject.clone(),
        )
    }
}

impl GroupRow {
    /// Its newest notification's place.
    pub fn position(&self) -> LogPosition {
        LogPosition {
            transaction_id: self.tx,
            global_position: self.gp,
        }
    }

    /// Its place in the reading.
    pub fn key(&self) -> LogPosition {
        LogPosition {
            transaction_id: self.ktx,
            global_position: self.kgp,
        }
    }
}

/// The end of the log, above every place.
const TOP: LogPosition = LogPosition {
    transaction_id: i64::MAX,
    global_position: i64::MAX,
};

/// Up to `limit` groups of `user` (of `kinds`, when given) after `reading` (from the top when
/// `None`), and the snapshot they are read at (`None`: the user has no notification). The
/// main list, or (`filtered`) the filtered list beside it (issue 47).
pub async fn page(
    pool: &PgPool,
    user: i64,
    (kinds, filtered): (Option<&[&str]>, bool),
    reading: Option<Reading>,
    limit: i64,
) -> Result<(Vec<GroupRow>, Option<LogPosition>), sqlx::Error> {
    let reading = match reading {
        Some(r) => r,
        None => {
            let newest: Option<LogPosition> = sqlx::query_as(
                "SELECT place_tx AS transaction_id, place_gp AS global_position
                   FROM notify_groups WHERE recipient = $1 AND filtered = $2
                  ORDER BY place_tx DESC, place_gp DESC LIMIT 1",
            )
            .bind(user)
            .bind(filtered)
            .fetch_optional(pool)
            .await?;
            let Some(snapshot) = newest else {
                return Ok((Vec::new(), None));
            };
            Reading {
                snapshot,
                before: TOP,
            }
        }
    };
    let kinds: Option<Vec<String>> = kinds.map(|k| k.iter().map(|s| s.to_string()).collect());
    let sql = format!(
        "WITH still AS (
             SELECT grp, kind, post, comment, count, actors, tx, gp, latest_at,
                    place_tx AS ktx, place_gp AS kgp
               FROM notify_groups
              WHERE recipient = $1 AND filtered = $8 AND (place_tx, place_gp) <= ($2, $3)
                AND (place_tx, place_gp) < ($4, $5)
                AND ($6::text[] IS NULL OR kind = ANY($6))
              ORDER BY place_tx DESC, place_gp DESC LIMIT $7),
         moved AS (
             SELECT n.grp, n.kind, n.post, n.comment, n.count, n.actors, n.tx, n.gp,
                    n.latest_at, l.tx AS ktx, l.gp AS kgp
               FROM notify_groups n
              CROSS JOIN LATERAL (
                    SELECT c.tx, c.gp FROM notify_causes c
                     WHERE c.recipient = n.recipient AND c.grp = n.grp
                       AND (c.tx, c.gp) <= ($2, $3)
                     ORDER BY c.tx DESC, c.gp DESC LIMIT 1) AS l
              WHERE n.recipient = $1 AND n.filtered = $8 AND (n.place_tx, n.place_gp) > ($2, $3)
                AND (l.tx, l.gp) < ($4, $5)
                AND ($6::text[] IS NULL OR n.kind = ANY($6)))
         SELECT g.*, {ASK}
           FROM (SELECT * FROM still UNION ALL SELECT * FROM moved) AS g
           LEFT JOIN rm_posts p ON p.post_id = g.post
          ORDER BY g.ktx DESC, g.kgp DESC LIMIT $7"
    );
    let rows = sqlx::query_as::<_, GroupRow>(&sql)
        .bind(user)
        .bind(reading.snapshot.transaction_id)
        .bind(reading.snapshot.global_position)
        .bind(reading.before.transaction_id)
        .bind(reading.before.global_position)
        .bind(kinds)
        .bind(limit)
        .bind(filtered)
        .fetch_all(pool)
        .await?;
    Ok((rows, Some(reading.snapshot)))
}

/// What reading one notification of `kind` about `post` asks of `user` ([`PostAsk`]), as
/// [`page`] judges a group of it (the live stream's judgement).
pub async fn post_ask(
    pool: &PgPool,
    user: i64,
    kind: &str,
    post: Option<Uuid>,
) -> Result<Option<PostAsk>, sqlx::Error> {
    let sql = format!(
        "SELECT {ASK} FROM (SELECT $2::text AS kind, $3::uuid AS post) AS g
           LEFT JOIN rm_posts p ON p.post_id = g.post"
    );
    let (author, visibility, subject): (Option<i64>, Option<String>, Option<String>) =
        sqlx::query_as(&sql)
            .bind(user)
            .bind(kind)
            .bind(post)
            .fetch_one(pool)
            .await?;
    Ok(PostAsk::of(author, visibility, subject))
}

/// `user`'s read marker (the start of the log when never set).
pub async fn marker(pool: &PgPool, user: i64) -> Result<LogPosition, sqlx::Error> {
    let mark: Option<LogPosition> = sqlx::query_as(
        "SELECT tx AS transaction_id, gp AS global_position FROM notify_marks WHERE user_id = $1",
    )
    .bind(user)
    .fetch_optional(pool)
    .await?;
    Ok(mark.unwrap_or(LogPosition::START))
}

/// How many of `user`'s groups have something newer than their marker, by what reading them
/// asks ([`PostAsk`]; its `subject` only when the caller's filters `screened` it, so that a
/// reader with none is counted per post author and visibility alone): the caller counts those
/// the user may read. Filtered groups (issue 47) are never unread.
pub async fn unread_count(
    pool: &PgPool,
    user: i64,
    screened: bool,
) -> Result<Vec<(Option<PostAsk>, i64)>, sqlx::Error> {
    let sql = format!(
        "SELECT ask_author, ask_visibility, CASE WHEN $2 THEN ask_subject END, count(*) FROM (
             SELECT {ASK} FROM notify_groups g
               LEFT JOIN rm_posts p ON p.post_id = g.post
              WHERE g.recipient = $1 AND NOT g.filtered
                AND (g.tx, g.gp) > (SELECT coalesce(max(m.tx), 0), coalesce(max(m.gp), 0)
                                      FROM notify_marks m WHERE m.user_id = $1)) AS a
          GROUP BY 1, 2, 3"
    );
    type Counted = (Option<i64>, Option<String>, Option<String>, i64);
    let rows: Vec<Counted> = sqlx::query_as(&sql)
        .bind(user)
        .bind(screened)
        .fetch_all(pool)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(author, visibility, subject, n)| (PostAsk::of(author, visibility, subject), n))
        .collect())
}

/// Raises `user`'s marker to `up_to`; whether it moved (it never moves back).
pub async fn mark(pool: &PgPool, user: i64, up_to: LogPosition) -> Result<bool, sqlx::Error> {
    let moved = sqlx::query(
        "INSERT INTO notify_marks AS m (user_id, tx, gp) VALUES ($1, $2, $3)
         ON CONFLICT (user_id) DO UPDATE SET tx = excluded.tx, gp = excluded.gp
          WHERE (m.tx, m.gp) < (excluded.tx, excluded.gp)",
    )
    .bind(user)
    .bind(up_to.transaction_id)
    .bind(up_to.global_position)
    .execute(pool)
    .await?
    .rows_affected();
    Ok(moved > 0 && up_to > LogPosition::START)
}
