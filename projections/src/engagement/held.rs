//! The likes, reposts (issue 44), bookmarks (issue 46) and live comments of the held posts
//! (issue 28): what a feed page from memory shows of each post beside its body (its like and
//! comment counts, and whether the reader likes, reposts or bookmarks it), folded from the
//! same events as projector `engagement`'s `rm_likes`, `rm_bookmarks` and `rm_post_stats`, so
//! that a page needs no round trip at all.
//!
//! Only posts that are held and have a like, a repost, a bookmark, a quote or a live comment
//! have an entry: a post that
//! leaves memory (past a cap, deleted, its author erased) takes its entry with it. The counts
//! are those of `rm_post_stats`: a like counts while it stands, a comment while it is not
//! deleted (a tombstone does not count). An erasure voids every like and live comment of the
//! user; entries are few beside the posts, so it walks them all.

use foldhash::{HashMap, HashSet}; // as the replica's other tables (see its module)
use relations_domain::PostId;

/// Who likes one held post and its live comments.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PostStats {
    /// The post's author (an entry can be checked against the post it belongs to).
    author: u64,
    likers: HashSet<u64>,
    reposters: HashSet<u64>,
    /// Who bookmarks it (issue 46): only ever shown to each of them, as `bookmarked`.
    bookmarkers: HashSet<u64>,
    /// `(n, author)` of every live comment.
    comments: Vec<(u32, u64)>,
    /// The posts that quote it, live and not detached (issue 44).
    quotes: HashSet<PostId>,
}

impl PostStats {
    fn is_empty(&self) -> bool {
        self.likers.is_empty()
            && self.reposters.is_empty()
            && self.bookmarkers.is_empty()
            && self.comments.is_empty()
            && self.quotes.is_empty()
    }
}

/// Which set of users of an entry a change is about: its likers, reposters or bookmarkers.
type Users = fn(&mut PostStats) -> &mut HashSet<u64>;

/// What a page shows of a post's engagement.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Shown {
    /// Likes.
    pub likes: i64,
    /// Live comments.
    pub comments: i64,
    /// Whether the reader likes it.
    pub liked: bool,
    /// Live reposts.
    pub reposts: i64,
    /// Whether the reader reposts it.
    pub reposted: bool,
    /// Whether the reader bookmarks it.
    pub bookmarked: bool,
    /// Live quotes that are not detached.
    pub quotes: i64,
}

/// Every held post's likes and live comments; see the module docs.
#[derive(Debug, Default, Clone)]
pub struct Engagement {
    by_post: HashMap<PostId, PostStats>,
    /// Each quote counted above: quoting post -> (quoted post, the quoting post's author), so
    /// that a deletion or a detach, which names the quoting post, finds its entry.
    quoting: HashMap<PostId, (PostId, u64)>,
}

impl Engagement {
    /// What `reader` sees of `post`'s engagement.
    pub fn shown(&self, post: PostId, reader: u64) -> Shown {
        self.by_post
            .get(&post)
            .map_or_else(Shown::default, |s| Shown {
                likes: s.likers.len() as i64,
                comments: s.comments.len() as i64,
                liked: s.likers.contains(&reader),
                reposts: s.reposters.len() as i64,
                reposted: s.reposters.contains(&reader),
                bookmarked: s.bookmarkers.contains(&reader),
                quotes: s.quotes.len() as i64,
            })
    }

    /// `post` by `by` quotes `quoted` of `author`; the caller adds only to held posts.
    pub fn quote(&mut self, post: PostId, by: u64, quoted: PostId, author: u64) {
        if self.entry(quoted, author).quotes.insert(post) {
            self.quoting.insert(post, (quoted, by));
        }
    }

    /// `post` quotes no more (deleted, or its quote detached), if it quoted a held post.
    pub fn unquote(&mut self, post: PostId) {
        if let Some((quoted, _)) = self.quoting.remove(&post) {
            if let Some(stats) = self.by_post.get_mut(&quoted) {
                stats.quotes.remove(&post);
                self.forget_if_empty(quoted);
            }
        }
    }

    /// Each quote by `user` is void (an erasure).
    pub fn unquote_all(&mut self, user: u64) {
        let theirs: Vec<PostId> = self
            .quoting
            .iter()
            .filter(|(_, &(_, by))| by == user)
            .map(|(&post, _)| post)
            .collect();
        for post in theirs {
            self.unquote(post);
        }
    }

    /// `user` likes `post` of `author` (`on`), or took the like back. Liking twice, or taking
    /// back a like that is not there, changes nothing, as in `rm_likes`. The caller adds only
    /// to held posts.
    pub fn like(&mut self, post: PostId, author: u64, user: u64, on: bool) {
        self.mark(post, author, user, on, |s| &mut s.likers);
    }

    /// `user` reposts `post` of `author` (`on`), or took the repost back, as [`Self::like`].
    pub fn repost(&mut self, post: PostId, author: u64, user: u64, on: bool) {
        self.mark(post, author, user, on, |s| &mut s.reposters);
    }

    /// `user` bookmarks `post` of `author` (`on`), or took the bookmark back (issue 46), as
    /// [`Self::like`].
    pub fn bookmark(&mut self, post: PostId, author: u64, user: u64, on: bool) {
        self.mark(post, author, user, on, |s| &mut s.bookmarkers);
    }

    /// Puts `user` into (`on`) or takes them out of the set `users` picks of `post`'s entry
    /// (an entry made for `author` when missing, and forgotten when left empty).
    fn mark(&mut self, post: PostId, author: u64, user: u64, on: bool, users: Users) {
        if on {
            users(self.entry(post, author)).insert(user);
        } else if let Some(stats) = self.by_post.get_mut(&post) {
            users(stats).remove(&user);
            self.forget_if_empty(post);
        }
    }

    /// Takes `user` out of the set `users` picks of every entry (an erasure).
    fn unmark_all(&mut self, user: u64, users: Users) {
        self.by_post.retain(|_, stats| {
            users(stats).remove(&user);
            !stats.is_empty()
        });
    }

    /// Comment `n` of `by` on `post` of `author`. The caller adds only to held posts.
    pub fn comment(&mut self, post: PostId, author: u64, n: u32, by: u64) {
        let comments = &mut self.entry(post, author).comments;
        if !comments.iter().any(|&(m, _)| m == n) {
            comments.push((n, by));
        }
    }

    /// Comment `n` of `post` was deleted (a second deletion changes nothing).
    pub fn uncomment(&mut self, post: PostId, n: u32) {
        if let Some(stats) = self.by_post.get_mut(&post) {
            stats.comments.retain(|&(m, _)| m != n);
            self.forget_if_empty(post);
        }
    }

    /// Who reposts `post` (a held post), if anyone.
    pub fn reposters(&self, post: PostId) -> impl Iterator<Item = u64> + '_ {
        self.by_post
            .get(&post)
            .into_iter()
            .flat_map(|s| s.reposters.iter().copied())
    }

    /// `post` left memory: its entry goes.
    pub fn forget(&mut self, post: PostId) {
        if let Some(stats) = self.by_post.remove(&post) {
            self.unindex(&stats);
        }
    }

    /// The quotes of an entry that went leave the index.
    fn unindex(&mut self, stats: &PostStats) {
        for quoting in &stats.quotes {
            self.quoting.remove(quoting);
        }
    }

    /// Each like of `user` is void (an erasure).
    pub fn unlike_all(&mut self, user: u64) {
        self.unmark_all(user, |s| &mut s.likers);
    }

    /// Each repost of `user` is void (an erasure).
    pub fn unrepost_all(&mut self, user: u64) {
        self.unmark_all(user, |s| &mut s.reposters);
    }

    /// Each bookmark of `user` is void (an erasure).
    pub fn unbookmark_all(&mut self, user: u64) {
        self.unmark_all(user, |s| &mut s.bookmarkers);
    }

    /// Each live comment of `user` is deleted (an erasure).
    pub fn uncomment_all(&mut self, user: u64) {
        self.by_post.retain(|_, stats| {
            stats.comments.retain(|&(_, by)| by != user);
            !stats.is_empty()
        });
    }

    /// Keeps only the entries `held` says are of posts held (the load read some for posts
    /// its replay was to publish).
    pub fn retain_held(&mut self, held: impl Fn(u64, PostId) -> bool) {
        let quoting = &mut self.quoting;
        self.by_post.retain(|&post, stats| {
            let keep = held(stats.author, post);
            if !keep {
                for q in &stats.quotes {
                    quoting.remove(q);
                }
            }
            keep
        });
    }

    /// The likes and live comments held, in all.
    pub fn held(&self) -> (usize, usize) {
        self.by_post.values().fold((0, 0), |(l, c), s| {
            (l + s.likers.len(), c + s.comments.len())
        })
    }

    /// An estimate of the heap held, in bytes: the table's slots, each set's slots, each
    /// comment list's room.
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        let inner: usize = self
            .by_post
            .values()
            .map(|s| {
                (s.likers.capacity() + s.reposters.capacity() + s.bookmarkers.capacity())
                    * (size_of::<u64>() + 1)
                    + s.comments.capacity() * size_of::<(u32, u64)>()
                    + s.quotes.capacity() * (size_of::<PostId>() + 1)
            })
            .sum();
        let index = self.quoting.capacity() * (size_of::<(PostId, (PostId, u64))>() + 1);
        inner + index + self.by_post.capacity() * (size_of::<(PostId, PostStats)>() + 1)
    }

    fn entry(&mut self, post: PostId, author: u64) -> &mut PostStats {
        self.by_post.entry(post).or_insert_with(|| PostStats {
            author,
            ..PostStats::default()
        })
    }

    fn forget_if_empty(&mut self, post: PostId) {
        if self.by_post.get(&post).is_some_and(PostStats::is_empty) {
            self.by_post.remove(&post);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(n: u128) -> PostId {
        PostId::from_uuid(uuid::Uuid::from_u128(n))
    }

    fn shown(e: &Engagement, post: u128, reader: u64) -> (i64, i64, bool) {
        let s = e.shown(p(post), reader);
        (s.likes, s.comments, s.liked)
    }

    #[test]
    fn likes_and_comments_count_as_rm_post_stats_does() {
        let mut e = Engagement::default();
        e.like(p(1), 9, 2, true);
        e.like(p(1), 9, 2, true);
        e.like(p(1), 9, 3, true);
        e.comment(p(1), 9, 1, 4);
        e.comment(p(1), 9, 2, 2);
        assert_eq!(shown(&e, 1, 2), (2, 2, true));
        assert_eq!(shown(&e, 1, 5), (2, 2, false));
        e.like(p(1), 9, 3, false);
        e.like(p(1), 9, 3, false);
        e.uncomment(p(1), 1);
        e.uncomment(p(1), 1);
        assert_eq!(shown(&e, 1, 3), (1, 1, false));
        // User 2's erasure voids their like and comment: nothing is left, nor an entry.
        e.unlike_all(2);
        e.uncomment_all(2);
        assert_eq!(shown(&e, 1, 2), (0, 0, false));
        assert_eq!(e.held(), (0, 0));
    }

    #[test]
    fn quotes_count_until_deleted_detached_or_erased_and_leave_with_their_post() {
        let mut e = Engagement::default();
        e.quote(p(10), 2, p(1), 9);
        e.quote(p(10), 2, p(1), 9);
        e.quote(p(11), 3, p(1), 9);
        e.quote(p(12), 2, p(2), 8);
        assert_eq!(e.shown(p(1), 5).quotes, 2);
        e.unquote(p(11));
        e.unquote(p(11));
        e.unquote(p(99));
        assert_eq!(e.shown(p(1), 5).quotes, 1);
        // User 2's erasure voids both their quotes.
        e.unquote_all(2);
        assert_eq!(e.shown(p(1), 5).quotes, 0);
        assert_eq!(e.shown(p(2), 5).quotes, 0);
        assert!(e.quoting.is_empty() && e.by_post.is_empty());
        // A quoted post leaving memory takes its quotes out of the index.
        e.quote(p(13), 4, p(3), 7);
        e.forget(p(3));
        assert!(e.quoting.is_empty());
        e.quote(p(14), 4, p(4), 7);
        e.retain_held(|_, _| false);
        assert!(e.quoting.is_empty());
    }

    #[test]
    fn a_bookmark_shows_to_its_bookmarker_alone_until_taken_back_or_erased() {
        let mut e = Engagement::default();
        e.bookmark(p(1), 9, 2, true);
        e.bookmark(p(1), 9, 2, true);
        assert!(e.shown(p(1), 2).bookmarked);
        assert!(!e.shown(p(1), 3).bookmarked);
        assert_eq!(shown(&e, 1, 2), (0, 0, false), "no count moves");
        e.bookmark(p(1), 9, 2, false);
        e.bookmark(p(1), 9, 2, false);
        assert!(!e.shown(p(1), 2).bookmarked);
        assert!(e.by_post.is_empty(), "an empty entry goes");
        e.bookmark(p(1), 9, 2, true);
        e.bookmark(p(2), 8, 3, true);
        e.unbookmark_all(2);
        assert!(!e.shown(p(1), 2).bookmarked);
        assert!(e.shown(p(2), 3).bookmarked);
        assert_eq!(e.by_post.len(), 1);
    }

    #[test]
    fn an_entry_goes_with_its_post_and_when_not_held() {
        let mut e = Engagement::default();
        e.like(p(1), 9, 2, true);
        e.like(p(2), 8, 2, true);
        e.forget(p(1));
        assert_eq!(shown(&e, 1, 2), (0, 0, false));
        e.retain_held(|author, post| author == 8 && post == p(3));
        assert_eq!(e.held(), (0, 0));
    }
}
