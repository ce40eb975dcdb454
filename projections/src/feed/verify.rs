//! `verify`'s check of projector `feed`'s tables against the one fold ([`super::fold`]) of the
//! log up to its checkpoint, into tables in memory without inboxes, and of the inbox invariant
//! (see the `feed` module docs): inboxes depend on the threshold and cap each batch was folded
//! with, so they are checked by what must hold whatever those were.

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use relations_store::log::RecordedEvent;
use sqlx::{PgConnection, Row};

use super::fold::{fold_events, in_memory};
use super::memory::FeedMemory;
use super::Settings;
use crate::error::ProjectionError;
use crate::runtime::verify::{diff, pairs, Check};

/// The feed's tables, folded in memory (no inboxes, no text).
pub struct FeedCheck {
    settings: Settings,
    tables: FeedMemory,
}

impl std::fmt::Debug for FeedCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FeedCheck")
            .field("settings", &self.settings)
            .field("posts", &self.tables.posts.len())
            .finish_non_exhaustive()
    }
}

impl FeedCheck {
    /// A check of a feed projector run with `settings`.
    pub fn new(settings: Settings) -> Self {
        Self {
            settings,
            tables: FeedMemory::new(settings, false),
        }
    }

    /// post id -> (seq, author, live).
    fn posts(&self) -> BTreeSet<(uuid::Uuid, (i64, i64, bool))> {
        let posts = self.tables.posts.iter().enumerate();
        posts
            .map(|(at, p)| (p.id, (at as i64 + 1, p.author, !p.deleted)))
            .collect()
    }

    /// Posts that are not public, with their visibility (issue 26).
    fn not_public(&self) -> BTreeSet<(uuid::Uuid, String)> {
        let posts = self.tables.posts.iter();
        posts
            .filter(|p| p.visibility != "public")
            .map(|p| (p.id, p.visibility.to_owned()))
            .collect()
    }

    /// Reposts, with the post each reposts (issue 44).
    fn reposts(&self) -> BTreeSet<(uuid::Uuid, uuid::Uuid)> {
        let posts = self.tables.posts.iter();
        posts.filter_map(|p| Some((p.id, p.repost_of?))).collect()
    }

    /// Posts that quote, or whose quote or comment policy is not the default: (post,
    /// (quote_of, quote policy, detached, comment policy)) (issues 44, 47).
    fn quotes(&self) -> BTreeSet<QuoteRow> {
        let posts = self.tables.posts.iter();
        posts
            .filter(|p| {
                p.quote_of.is_some() || p.quote_policy != "anyone" || p.comment_policy != "everyone"
            })
            .map(|p| {
                let policies = (p.quote_policy.to_owned(), p.comment_policy.to_owned());
                (p.id, (p.quote_of, policies, p.quote_detached))
            })
            .collect()
    }

    /// author -> (followers, posts, pulled), rows of nothing left out.
    fn authors(&self) -> BTreeSet<(i64, (i64, i64, bool))> {
        let rows = self.tables.authors.iter();
        rows.map(|(&a, r)| (a, (r.followers, r.posts, r.pulled)))
            .filter(|(_, c)| c.0 != 0 || c.1 != 0 || c.2)
            .collect()
    }

    /// (muter, muted, until µs)
    fn mutes(&self) -> BTreeSet<(i64, i64, Option<i64>)> {
        let mutes = self.tables.mutes.iter();
        mutes
            .map(|(&(a, b), u)| (a, b, u.map(|t| t.timestamp_micros())))
            .collect()
    }
}

#[async_trait]
impl Check for FeedCheck {
    fn projector(&self) -> Option<&'static str> {
        Some(super::NAME)
    }

    fn fold(&mut self, event: &RecordedEvent) -> Result<(), ProjectionError> {
        in_memory(fold_events(&mut self.tables, std::slice::from_ref(event)))
    }

    async fn compare(
        &self,
        conn: &mut PgConnection,
        out: &mut Vec<String>,
    ) -> Result<(), ProjectionError> {
        FeedRows::read(conn).await?.compare(self, out);
        Ok(())
    }
}

/// A compared post's settings: (post, (quote_of, (quote_policy, comment_policy),
/// quote_detached)).
type QuoteRow = (uuid::Uuid, (Option<uuid::Uuid>, (String, String), bool));

/// `rm_posts`' posts that quote, or whose quote or comment policy is not the default.
async fn quote_rows(conn: &mut sqlx::PgConnection) -> Result<BTreeSet<QuoteRow>, sqlx::Error> {
    sqlx::query(
        "SELECT post_id, quote_of, quote_policy, comment_policy, quote_detached FROM rm_posts
          WHERE quote_of IS NOT NULL OR quote_policy <> 'anyone' OR comment_policy <> 'everyone'",
    )
    .fetch_all(conn)
    .await?
    .iter()
    .map(|r| {
        let policies = (r.try_get(2)?, r.try_get(3)?);
        Ok((r.try_get(0)?, (r.try_get(1)?, policies, r.try_get(4)?)))
    })
    .collect()
}

/// Projector `feed`'s rows, as read in the snapshot.
struct FeedRows {
    follows: BTreeSet<(i64, i64)>,
    posts: BTreeSet<(uuid::Uuid, (i64, i64, bool))>,
    /// Deleted posts (by their author or by an erasure) that still hold their text.
    kept_content: BTreeSet<uuid::Uuid>,
    /// author -> (followers, posts, pulled)
    authors: BTreeMap<i64, (i64, i64, bool)>,
    inbox: BTreeSet<(i64, i64)>,
    /// reader -> (size, watermark)
    readers: BTreeMap<i64, (i64, i64)>,
    banned: BTreeSet<i64>,
    mutes: BTreeSet<(i64, i64, Option<i64>)>,
    not_public: BTreeSet<(uuid::Uuid, String)>,
    reposts: BTreeSet<(uuid::Uuid, uuid::Uuid)>,
    hiding_reposts: BTreeSet<(i64, i64)>,
    quotes: BTreeSet<QuoteRow>,
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
        let kept_content = sqlx::query_scalar(
            "SELECT post_id FROM rm_posts WHERE deleted AND content IS NOT NULL",
        )
        .fetch_all(&mut *conn)
        .await?
        .into_iter()
        .collect();
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
        let banned = sqlx::query_scalar("SELECT author FROM feed_banned")
            .fetch_all(&mut *conn)
            .await?
            .into_iter()
            .collect();
        let mutes = crate::relations::verify::mute_rows(&mut *conn, "feed_mutes").await?;
        let not_public =
            sqlx::query_as("SELECT post_id, visibility FROM rm_posts WHERE visibility <> 'public'")
                .fetch_all(&mut *conn)
                .await?
                .into_iter()
                .collect();
        let reposts =
            sqlx::query_as("SELECT post_id, repost_of FROM rm_posts WHERE repost_of IS NOT NULL")
                .fetch_all(&mut *conn)
                .await?
                .into_iter()
                .collect();
        let hiding_reposts = pairs(
            &mut *conn,
            "SELECT follower, followee FROM feed_follows WHERE NOT show_reposts",
        )
        .await?;
        Ok(Self {
            quotes: quote_rows(&mut *conn).await?,
            hiding_reposts,
            reposts,
            not_public,
            follows,
            posts,
            kept_content,
            authors,
            inbox,
            readers,
            banned,
            mutes,
        })
    }

    /// The feed's rows against a fold up to its checkpoint, and the inbox invariant.
    fn compare(&self, fold: &FeedCheck, out: &mut Vec<String>) {
        let tables = &fold.tables;
        diff(
            "feed_follows (follower, followee)",
            &tables.following,
            &self.follows,
            out,
        );
        for post in &self.kept_content {
            out.push(format!(
                "rm_posts: deleted post {post} still holds its text"
            ));
        }
        let posts = fold.posts();
        diff(
            "rm_posts (post_id, (seq, author, live))",
            &posts,
            &self.posts,
            out,
        );
        diff(
            "rm_posts (post_id, visibility) not public",
            &fold.not_public(),
            &self.not_public,
            out,
        );
        diff(
            "feed_follows (follower, followee) hiding the followee's reposts",
            &tables.hiding_reposts,
            &self.hiding_reposts,
            out,
        );
        diff(
            "rm_posts (post_id, repost_of) of reposts",
            &fold.reposts(),
            &self.reposts,
            out,
        );
        diff(
            "rm_posts (post_id, (quote_of, (quote_policy, comment_policy), quote_detached)) quoting or of a policy not the default",
            &fold.quotes(),
            &self.quotes,
            out,
        );
        let actual: BTreeSet<_> = self.authors.iter().map(|(k, v)| (*k, *v)).collect();
        diff(
            "feed_authors (author, (followers, posts, pulled))",
            &fold.authors(),
            &actual,
            out,
        );
        diff("feed_banned (author)", &tables.banned, &self.banned, out);
        diff(
            "feed_mutes (muter, muted, until)",
            &fold.mutes(),
            &self.mutes,
            out,
        );
        self.compare_inbox(fold, &posts, out);
    }

    /// The inbox: only live posts of followed authors; every live post of a followed
    /// push-mode author above the reader's watermark; sizes counted; the cap kept.
    fn compare_inbox(
        &self,
        fold: &FeedCheck,
        posts: &BTreeSet<(uuid::Uuid, (i64, i64, bool))>,
        out: &mut Vec<String>,
    ) {
        let feed = fold.settings;
        let follows = &fold.tables.following;
        let by_seq: BTreeMap<i64, (i64, bool)> = posts
            .iter()
            .map(|&(_, (seq, a, live))| (seq, (a, live)))
            .collect();
        let pulled = |author: i64| self.authors.get(&author).is_some_and(|a| a.2);
        let mut sizes: BTreeMap<i64, i64> = BTreeMap::new();
        for &(reader, seq) in &self.inbox {
            *sizes.entry(reader).or_default() += 1;
            match by_seq.get(&seq) {
                Some(&(author, true)) if follows.contains(&(reader, author)) => {}
                _ => out.push(format!(
                    "feed_inbox: reader {reader} holds post seq {seq}, which it must not"
                )),
            }
        }
        for &(reader, author) in follows {
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
