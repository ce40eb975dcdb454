//! `verify`'s check of projector `feed`'s tables against a fold of the log up to its
//! checkpoint, and of the inbox invariant (see the `feed` module docs).

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use relations_domain::{AccountEvent, LogEvent, PostEvent, Visibility};
use relations_store::log::RecordedEvent;
use sqlx::{PgConnection, Row};

use super::Settings;
use crate::error::ProjectionError;
use crate::relations::verify::RelationFold;
use crate::runtime::verify::{diff, pairs, Check};

/// The feed's fold: the relations and the posts.
#[derive(Debug)]
pub struct FeedCheck {
    settings: Settings,
    relations: RelationFold,
    /// post id -> (seq, author, live); seqs numbered in log order, as projector `feed` does.
    posts: BTreeMap<uuid::Uuid, (i64, i64, bool)>,
    /// Banned authors.
    banned: BTreeSet<i64>,
    /// Posts that are not public, with their visibility (issue 26).
    not_public: BTreeSet<(uuid::Uuid, String)>,
}

impl FeedCheck {
    /// A check of a feed projector run with `settings`.
    pub fn new(settings: Settings) -> Self {
        Self {
            settings,
            relations: RelationFold::default(),
            posts: BTreeMap::new(),
            banned: BTreeSet::new(),
            not_public: BTreeSet::new(),
        }
    }
}

impl FeedCheck {
    /// An account event: bans hide posts, an erasure removes its user's.
    fn account(&mut self, account: &AccountEvent) {
        match *account {
            AccountEvent::UserBanned { user } => {
                self.banned.insert(user.get());
            }
            AccountEvent::UserUnbanned { user } => {
                self.banned.remove(&user.get());
            }
            AccountEvent::UserErased { user } => {
                self.banned.remove(&user.get());
                for post in self.posts.values_mut().filter(|p| p.1 == user.get()) {
                    post.2 = false;
                }
            }
            AccountEvent::TokensRevoked { .. }
            | AccountEvent::AccountLocked { .. }
            | AccountEvent::AccountUnlocked { .. }
            | AccountEvent::GraphHidden { .. }
            | AccountEvent::GraphShown { .. } => {}
        }
    }
}

#[async_trait]
impl Check for FeedCheck {
    fn projector(&self) -> Option<&'static str> {
        Some(super::NAME)
    }

    fn fold(&mut self, event: &RecordedEvent) -> Result<(), ProjectionError> {
        self.relations.fold(event)?;
        let post = match &event.event {
            LogEvent::Post(post) => post,
            LogEvent::Account(account) => {
                self.account(account);
                return Ok(());
            }
            LogEvent::Relation(_) | LogEvent::Thread(_) | LogEvent::Like(_) => return Ok(()),
        };
        match post {
            PostEvent::PostPublished {
                post_id,
                author,
                visibility,
                ..
            } => {
                if *visibility != Visibility::Public {
                    self.not_public
                        .insert((post_id.uuid(), visibility.as_str().to_owned()));
                }
                let seq = self.posts.len() as i64 + 1;
                self.posts.insert(post_id.uuid(), (seq, author.get(), true));
            }
            PostEvent::PostDeleted { post_id, .. } => {
                if let Some(post) = self.posts.get_mut(&post_id.uuid()) {
                    post.2 = false;
                }
            }
        }
        Ok(())
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
        Ok(Self {
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
        let feed = fold.settings;
        diff(
            "feed_follows (follower, followee)",
            &fold.relations.edges.follows,
            &self.follows,
            out,
        );
        for post in &self.kept_content {
            out.push(format!(
                "rm_posts: deleted post {post} still holds its text"
            ));
        }
        let posts: BTreeSet<_> = fold.posts.iter().map(|(k, v)| (*k, *v)).collect();
        diff(
            "rm_posts (post_id, (seq, author, live))",
            &posts,
            &self.posts,
            out,
        );
        diff(
            "rm_posts (post_id, visibility) not public",
            &fold.not_public,
            &self.not_public,
            out,
        );
        let mut authors: BTreeMap<i64, (i64, i64, bool)> = BTreeMap::new();
        for &(_, followee) in &fold.relations.edges.follows {
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

        diff("feed_banned (author)", &fold.banned, &self.banned, out);
        diff(
            "feed_mutes (muter, muted, until)",
            &fold.relations.mute_rows(),
            &self.mutes,
            out,
        );
        self.compare_inbox(fold, out);
    }

    /// The inbox: only live posts of followed authors; every live post of a followed
    /// push-mode author above the reader's watermark; sizes counted; the cap kept.
    fn compare_inbox(&self, fold: &FeedCheck, out: &mut Vec<String>) {
        let feed = fold.settings;
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
                Some(&(author, true))
                    if fold.relations.edges.follows.contains(&(reader, author)) => {}
                _ => out.push(format!(
                    "feed_inbox: reader {reader} holds post seq {seq}, which it must not"
                )),
            }
        }
        for &(reader, author) in &fold.relations.edges.follows {
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
