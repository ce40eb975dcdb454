//! Every author's recent posts in memory (issue 28): the replica's part a first feed page and
//! `new_count` are answered from, bounded per author and in all.
//!
//! A post is held with what a page shows of it (id, body, time, visibility) under the seq
//! projector `feed` gives it: seqs count the log's publishes in log order (`rm_posts` never
//! loses a row), so the replica, folding the same log, gives every post the same seq.
//!
//! What is not held is known by its bound, never guessed: every live post of an author with a
//! seq at or above [`Timelines::unknown_below`] is held. Past the bounds a post leaves from
//! the oldest end: per author (its seq then raises that author's floor) or in all (it raises
//! the global floor). An author whose held posts are all their live posts (each author's live
//! count is kept here, whatever is held: the graph's post counter) has nothing unknown. A
//! reader that would need a post below a bound reads PostgreSQL instead.

use std::collections::VecDeque;

use chrono::{DateTime, Utc};
use foldhash::HashMap; // as the replica's other tables (see its module)
use relations_domain::{CommentPolicy, PostId, QuotePolicy, UserId, Visibility};

use crate::engagement::held::{Engagement, Shown};
use crate::feed::fold::Setting;
use crate::views::{PostView, QuoteState, QuoteView};

/// How many posts are held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// At most this many per author.
    pub per_author: usize,
    /// At most this many in all (the newest); 0 holds none and answers nothing from memory.
    pub total: usize,
}

impl Caps {
    /// Nothing held: every feed read goes to PostgreSQL.
    pub const OFF: Self = Self {
        per_author: 0,
        total: 0,
    };

    /// Whether posts are held at all.
    pub fn on(self) -> bool {
        self.per_author > 0 && self.total > 0
    }
}

impl Default for Caps {
    fn default() -> Self {
        Self::OFF
    }
}

/// A post as held: what a page shows of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldPost {
    /// Its seq (projector `feed`'s).
    pub seq: i64,
    /// Its id.
    pub id: PostId,
    /// When it was written, in microseconds.
    pub created_at: i64,
    /// Who may read it.
    pub visibility: Visibility,
    /// Its text (empty once its author's key is destroyed, as `rm_posts` holds null; a
    /// repost's is its post's).
    pub content: Box<str>,
    /// A repost (issue 44): the post it reposts and that post's author. A page shows the
    /// post, held beside its author's.
    pub repost_of: Option<(PostId, u64)>,
    /// Who may quote it and comment on it, and what it quotes (issues 44, 47).
    pub controls: Controls,
}

/// A held post's settings after its text: who may quote it (issue 44) and comment on it
/// (issue 47), and the post it quotes, boxed (few posts quote, and the held posts are many).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Controls {
    /// Who may quote it.
    pub quotes: QuotePolicy,
    /// Who may comment on it.
    pub comments: CommentPolicy,
    /// The post it quotes, and whether the quote was detached.
    pub quote: Option<Box<(PostId, bool)>>,
}

impl Controls {
    /// What a post shows of its quote before the quoted post is looked up.
    fn pending(&self) -> Option<Option<QuoteView>> {
        let quote = self.quote.as_deref().copied();
        QuoteView::pending(quote.map(|q| q.0), quote.is_some_and(|q| q.1))
    }

    /// A post's controls as its view shows them (a pending quote: [`QuoteView::pending`]).
    fn of_view(view: &PostView) -> Self {
        let quote = match &view.quote {
            Some(Some(QuoteView::Gone { id, state })) => {
                Some(Box::new((*id, *state == QuoteState::Detached)))
            }
            _ => None,
        };
        Self {
            quotes: view.quote_policy,
            comments: view.comment_policy,
            quote,
        }
    }
}

impl HeldPost {
    /// A post as projector `feed` wrote it, under its seq: its author and the post held.
    pub fn of_view(seq: i64, view: PostView) -> (u64, Self) {
        let post = Self {
            seq,
            id: view.id,
            created_at: view.created_at.timestamp_micros(),
            visibility: view.visibility,
            controls: Controls::of_view(&view),
            content: view.content.into(),
            repost_of: None,
        };
        (view.author.get() as u64, post)
    }

    /// The post as a feed's reader sees it, with what they see of its engagement.
    pub fn view(&self, author: UserId, shown: Shown) -> PostView {
        PostView {
            id: self.id,
            author,
            content: self.content.to_string(),
            created_at: DateTime::<Utc>::from_timestamp_micros(self.created_at)
                .unwrap_or(DateTime::<Utc>::MIN_UTC),
            visibility: self.visibility,
            like_count: shown.likes,
            comment_count: shown.comments,
            liked: Some(shown.liked),
            repost_count: shown.reposts,
            reposted: Some(shown.reposted),
            bookmarked: Some(shown.bookmarked),
            // Reposts are not held: a page from memory shows posts above every repost of a
            // followed user (`Timelines::unknown_below`), seen as their authors' followers.
            reposted_by: Some(Vec::new()),
            quote_policy: self.controls.quotes,
            comment_policy: self.controls.comments,
            quote_count: shown.quotes,
            quote: self.controls.pending(),
            filtered: None,
        }
    }
}

/// One author's live post count and held posts.
#[derive(Debug, Default, Clone)]
pub(super) struct Timeline {
    /// Ascending seq.
    pub(super) posts: VecDeque<HeldPost>,
    /// The newest held post's seq (0: none), beside the count so that a merge's first look at
    /// an author reads no post.
    newest: i64,
    /// Live posts, held or not.
    live: i64,
    /// Every live post with a seq at or above this is held, as far as the per-author cap goes
    /// (one above the newest post it dropped).
    floor: i64,
    /// Live reposts (issue 44), held or not: items beside the posts, under the same caps and
    /// bounds.
    reposts: i64,
}

/// `order`'s length below which it is never compacted.
const MIN_COMPACT: usize = 4_096;

/// Every author's recent posts; see the module docs.
#[derive(Debug, Default, Clone)]
pub struct Timelines {
    caps: Caps,
    by_author: HashMap<u64, Timeline>,
    /// `(seq, author)` of every post held or dropped per author since, ascending: the order
    /// posts leave in when there are more than `caps.total`. The entries of posts dropped
    /// per author are taken out once they are as many again as when it was last compacted
    /// ([`Timelines::compact`]).
    order: VecDeque<(i64, u64)>,
    /// `order`'s length that compacts it next.
    compact_at: usize,
    /// Every live post with a seq at or above this is held, as far as the total cap goes.
    global_floor: i64,
    /// The newest seq given.
    head: i64,
    /// The held posts' likes and live comments.
    engagement: Engagement,
    /// Who holds a repost of each post (issue 44): held reposts by the post they repost, so
    /// that a deletion or an erasure finds them whether the post is held or not.
    reposts_of: HashMap<PostId, Vec<u64>>,
}

impl Timelines {
    /// Empty, holding up to `caps`.
    pub fn new(caps: Caps) -> Self {
        Self {
            caps,
            compact_at: MIN_COMPACT,
            ..Self::default()
        }
    }

    /// Whether posts are held at all.
    pub fn on(&self) -> bool {
        self.caps.on()
    }

    /// How many posts it holds at most.
    pub fn caps(&self) -> Caps {
        self.caps
    }

    /// The newest seq given (the newest post's, deleted or not).
    pub fn head(&self) -> i64 {
        self.head
    }

    /// `author`'s live posts.
    pub fn live(&self, author: u64) -> i64 {
        self.by_author.get(&author).map_or(0, |t| t.live)
    }

    /// `author`'s live post count moves by `delta` (the load's counts).
    pub fn count(&mut self, author: u64, delta: i64) {
        let timeline = self.by_author.entry(author).or_default();
        timeline.live += delta;
        self.forget_if_empty(author);
    }

    /// Drops an author's entry once nothing is left in it.
    fn forget_if_empty(&mut self, author: u64) {
        // With no live post, nothing is unknown: its floor may go too.
        let empty = self
            .by_author
            .get(&author)
            .is_some_and(|t| t.live == 0 && t.reposts == 0 && t.posts.is_empty());
        if empty {
            self.by_author.remove(&author);
        }
    }

    /// Posts held.
    pub fn held(&self) -> usize {
        self.by_author.values().map(|t| t.posts.len()).sum()
    }

    /// Starts from what projector `feed` had written: its newest seq, and (before any
    /// [`Timelines::hold`]) nothing below `from` is held.
    pub fn start(&mut self, head: i64, from: i64) {
        self.head = head;
        self.global_floor = from;
    }

    /// The seq a post published now gets; counted and held.
    pub fn publish_held(&mut self, author: u64, post: HeldPost) {
        self.head += 1;
        let post = HeldPost {
            seq: self.head,
            ..post
        };
        self.by_author.entry(author).or_default().live += 1;
        self.hold(author, post);
    }

    /// A repost made now (issue 44) by `reposter` of `reposted` (the post and its author), at
    /// `created_at` (µs): numbered with the next seq, counted and held as an item of the
    /// reposter's (its own visibility and text are never read: a page shows its post); its seq.
    pub fn repost_held(&mut self, reposter: u64, reposted: (PostId, u64), created_at: i64) -> i64 {
        self.head += 1;
        let item = HeldPost {
            seq: self.head,
            id: PostId::from_uuid(crate::feed::fold::NewRepost::item_id(self.head)),
            created_at,
            visibility: Visibility::Public,
            content: Box::default(),
            repost_of: Some(reposted),
            controls: Controls::default(),
        };
        self.by_author.entry(reposter).or_default().reposts += 1;
        self.hold(reposter, item);
        self.head
    }

    /// `reposter`'s live reposts move by `delta` (the load's counts).
    pub fn count_reposts(&mut self, reposter: u64, delta: i64) {
        self.by_author.entry(reposter).or_default().reposts += delta;
        self.forget_if_empty(reposter);
    }

    /// `reposter` took back their repost of `post`: it is live and held no more.
    pub fn unrepost_held(&mut self, reposter: u64, post: PostId) {
        if let Some(timeline) = self.by_author.get_mut(&reposter) {
            timeline.reposts = (timeline.reposts - 1).max(0);
            let item = timeline.posts.iter().rposition(|p| p.reposts(post));
            let removed = item.and_then(|i| timeline.posts.remove(i));
            timeline.newest = timeline.posts.back().map_or(0, |p| p.seq);
            if let Some(removed) = removed {
                self.dropped(reposter, &removed);
            }
        }
        self.forget_if_empty(reposter);
    }

    /// `author`'s `post`, if held, changed `setting`.
    pub fn setting_changed(&mut self, author: u64, post: PostId, setting: Setting) {
        let Some(timeline) = self.by_author.get_mut(&author) else {
            return;
        };
        let Some(held) = timeline.posts.iter_mut().rfind(|p| p.id == post) else {
            return;
        };
        let controls = &mut held.controls;
        match (setting, controls.quote.as_deref_mut()) {
            (Setting::Quotes(policy), _) => controls.quotes = policy,
            (Setting::Comments(policy), _) => controls.comments = policy,
            (Setting::Detached, Some(quote)) => quote.1 = true,
            (Setting::Detached, None) => {}
        }
    }

    /// The held repost of `post` by `reposter`: its seq.
    pub fn repost_by(&self, reposter: u64, post: PostId) -> Option<i64> {
        let timeline = self.by_author.get(&reposter)?;
        timeline
            .posts
            .iter()
            .rev()
            .find(|p| p.reposts(post))
            .map(|p| p.seq)
    }

    /// The held post `post` of `author`.
    pub fn find(&self, author: u64, post: PostId) -> Option<&HeldPost> {
        let timeline = self.by_author.get(&author)?;
        timeline
            .posts
            .iter()
            .rev()
            .find(|p| p.id == post && p.repost_of.is_none())
    }

    /// The reposts of `post` leave memory with it: those held, and those counted whose
    /// reposters the post's engagement knows (when it is held).
    fn unrepost_every(&mut self, post: PostId) {
        let mut reposters = self.reposts_of.remove(&post).unwrap_or_default();
        reposters.extend(self.engagement.reposters(post));
        reposters.sort_unstable();
        reposters.dedup();
        for reposter in reposters {
            self.unrepost_held(reposter, post);
        }
    }

    /// Holds a post at its seq (newer than any held of its author), dropping the oldest past
    /// the caps.
    pub fn hold(&mut self, author: u64, post: HeldPost) {
        if !self.on() {
            return;
        }
        self.head = self.head.max(post.seq);
        self.order.push_back((post.seq, author));
        if self.order.len() >= self.compact_at {
            self.compact();
        }
        let timeline = self.by_author.entry(author).or_default();
        timeline.newest = post.seq;
        if timeline.posts.capacity() == 0 {
            // Most authors have a post or two: a first allocation of four would be mostly room.
            timeline.posts.reserve_exact(1);
        }
        if let Some((reposted, _)) = post.repost_of {
            self.reposts_of.entry(reposted).or_default().push(author);
        }
        timeline.posts.push_back(post);
        if timeline.posts.len() > self.caps.per_author {
            let dropped = timeline.posts.pop_front().expect("over the cap");
            timeline.floor = dropped.seq + 1;
            self.dropped(author, &dropped);
        }
        while self.order.len() > self.caps.total {
            let (seq, author) = self.order.pop_front().expect("over the cap");
            self.global_floor = seq + 1;
            if let Some(timeline) = self.by_author.get_mut(&author) {
                if timeline.posts.front().is_some_and(|p| p.seq == seq) {
                    let dropped = timeline.posts.pop_front().expect("just seen");
                    self.dropped(author, &dropped);
                }
            }
        }
    }

    /// `post` of `author` left memory (past a cap, taken back, deleted): what is kept beside
    /// it goes.
    fn dropped(&mut self, author: u64, post: &HeldPost) {
        match post.repost_of {
            None => self.engagement.forget(post.id),
            Some((reposted, _)) => {
                if let Some(reposters) = self.reposts_of.get_mut(&reposted) {
                    if let Some(i) = reposters.iter().position(|&r| r == author) {
                        reposters.swap_remove(i);
                    }
                    if reposters.is_empty() {
                        self.reposts_of.remove(&reposted);
                    }
                }
            }
        }
    }

    /// Takes the entries of posts no longer held out of `order`. Without it, an author's 33rd
    /// post left its first one's entry behind for good, until `caps.total` entries (4M by
    /// default, 64 MiB and its spare room): issue 48's soak found held posts' bytes growing at
    /// a fixed count. A post dropped per author is below its author's own floor, so
    /// `global_floor` need not move for it; the order of the rest is kept. Amortized: each
    /// compaction at least halves what it walks, or doubles the length that comes next.
    fn compact(&mut self) {
        let by_author = &self.by_author;
        self.order.retain(|&(seq, author)| {
            by_author
                .get(&author)
                .is_some_and(|t| t.posts.binary_search_by_key(&seq, |p| p.seq).is_ok())
        });
        self.order.shrink_to(2 * self.order.len());
        self.compact_at = (2 * self.order.len()).max(MIN_COMPACT);
    }

    /// `author` deleted `post`: it is live and held no more, nor are its reposts.
    pub fn delete_held(&mut self, author: u64, post: PostId) {
        self.unrepost_every(post);
        if let Some(timeline) = self.by_author.get_mut(&author) {
            timeline.live -= 1;
            if let Some(i) = timeline.posts.iter().rposition(|p| p.id == post) {
                timeline.posts.remove(i);
                timeline.newest = timeline.posts.back().map_or(0, |p| p.seq);
            }
        }
        self.engagement.forget(post);
        self.forget_if_empty(author);
    }

    /// Every post and repost of `author` is deleted, with their likes, comments and reposts.
    pub fn delete_author(&mut self, author: u64) {
        if let Some(timeline) = self.by_author.remove(&author) {
            for post in timeline.posts {
                if post.repost_of.is_none() {
                    self.unrepost_every(post.id);
                }
                self.dropped(author, &post);
            }
        }
    }

    /// Whether `post` of `author` is held.
    pub fn holds(&self, author: u64, post: PostId) -> bool {
        self.by_author.get(&author).is_some_and(|t| t.holds(post))
    }

    /// The held posts' likes and live comments.
    pub fn engagement(&self) -> &Engagement {
        &self.engagement
    }

    /// `user` likes `post` of `author` (`on`), or took the like back; a post not held keeps
    /// nothing.
    pub fn like(&mut self, post: PostId, author: u64, user: u64, on: bool) {
        if !on || self.holds(author, post) {
            self.engagement.like(post, author, user, on);
        }
    }

    /// Comment `n` of `by` on `post` of `author`; a post not held keeps nothing.
    pub fn comment(&mut self, post: PostId, author: u64, n: u32, by: u64) {
        if self.holds(author, post) {
            self.engagement.comment(post, author, n, by);
        }
    }

    /// Comment `n` of `post` was deleted.
    pub fn uncomment(&mut self, post: PostId, n: u32) {
        self.engagement.uncomment(post, n);
    }

    /// The held likes and comments, as the load found them and as an erasure voids them (the
    /// load's are kept whether held or not until [`Timelines::settle`]).
    pub(crate) fn engagement_mut(&mut self) -> &mut Engagement {
        &mut self.engagement
    }

    /// The replay is over: engagement the load read for posts that did not end up held goes.
    pub(crate) fn settle(&mut self) {
        let by_author = &self.by_author;
        self.engagement
            .retain_held(|author, post| by_author.get(&author).is_some_and(|t| t.holds(post)));
    }

    /// `author`'s held posts, ascending seq.
    pub(super) fn of(&self, author: u64) -> Option<&Timeline> {
        self.by_author.get(&author)
    }

    /// The seq below which the live posts and reposts of the author of `timeline` may not all
    /// be held (0: all are).
    pub(super) fn unknown_below(&self, timeline: &Timeline) -> i64 {
        if timeline.posts.len() as i64 >= timeline.live + timeline.reposts {
            return 0;
        }
        timeline.floor.max(self.global_floor)
    }

    /// An estimate of the heap held, in bytes: the posts, their bodies, the tables' slots.
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        let posts: usize = self
            .by_author
            .values()
            .map(|t| {
                t.posts.capacity() * size_of::<HeldPost>()
                    + t.posts.iter().map(|p| p.content.len()).sum::<usize>()
            })
            .sum();
        let reposts: usize = self.reposts_of.values().map(|r| r.capacity() * 8).sum();
        posts
            + reposts
            + self.reposts_of.capacity() * (size_of::<(PostId, Vec<u64>)>() + 1)
            + self.by_author.capacity() * (size_of::<(u64, Timeline)>() + 1)
            + self.order.capacity() * size_of::<(i64, u64)>()
            + self.engagement.heap_bytes()
    }
}

impl HeldPost {
    /// Whether this is a repost of `post`.
    fn reposts(&self, post: PostId) -> bool {
        self.repost_of.is_some_and(|(p, _)| p == post)
    }
}

impl Timeline {
    /// Whether `post` is held (newest first: likes and comments go mostly to new posts).
    fn holds(&self, post: PostId) -> bool {
        self.posts.iter().rev().any(|p| p.id == post)
    }

    /// Live reposts, held or not.
    pub(super) fn reposts(&self) -> i64 {
        self.reposts
    }

    /// How many held posts are below `before` (the index one past the newest of them); no
    /// post is read when all are.
    pub(super) fn count_below(&self, before: i64) -> usize {
        if self.newest < before {
            return self.posts.len();
        }
        self.posts.partition_point(|p| p.seq < before)
    }

    /// The held posts below `before`, newest first.
    pub(super) fn below(&self, before: i64) -> impl Iterator<Item = &HeldPost> {
        self.posts.range(..self.count_below(before)).rev()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(n: u128) -> HeldPost {
        HeldPost {
            seq: 0,
            id: PostId::from_uuid(uuid::Uuid::from_u128(n)),
            created_at: 0,
            visibility: Visibility::Public,
            content: "p".into(),
            repost_of: None,
            controls: Controls::default(),
        }
    }

    fn seqs(t: &Timelines, author: u64) -> Vec<i64> {
        t.of(author)
            .map(|t| t.posts.iter().map(|p| p.seq).collect())
            .unwrap_or_default()
    }

    #[test]
    fn the_leaving_order_keeps_no_more_than_twice_the_posts_held() {
        let mut t = Timelines::new(Caps {
            per_author: 2,
            total: 1_000_000,
        });
        for n in 0..50_000u128 {
            t.publish_held((n % 10) as u64, post(n));
        }
        // 10 authors hold 2 posts each; the order once grew with every post published.
        assert_eq!(t.held(), 20);
        assert!(t.order.len() <= MIN_COMPACT, "{}", t.order.len());
        let unknown = t.unknown_below(t.of(3).unwrap());
        assert_eq!(seqs(&t, 3), vec![49_984, 49_994]);
        assert_eq!(
            unknown, 49_975,
            "its own floor: the posts before are not held"
        );
    }

    #[test]
    fn posts_leave_past_each_cap_and_raise_its_floor() {
        let mut t = Timelines::new(Caps {
            per_author: 2,
            total: 4,
        });
        for (n, author) in [(1, 7), (2, 7), (3, 7), (4, 8), (5, 8), (6, 9)] {
            t.publish_held(author, post(n));
        }
        assert_eq!(t.head(), 6);
        // 7 held 1..3, dropped 1 at its cap; the total cap then dropped 2.
        assert_eq!(seqs(&t, 7), vec![3]);
        assert_eq!(seqs(&t, 8), vec![4, 5]);
        let unknown = |t: &Timelines, author| t.unknown_below(t.of(author).unwrap());
        assert_eq!(unknown(&t, 7), 3, "2 left for the total cap");
        assert_eq!(unknown(&t, 8), 0, "all of 8's posts are held");
        assert_eq!(unknown(&t, 9), 0);
        // 7 deletes its held post: 2 live, none held, all below 3.
        t.delete_held(7, post(3).id);
        assert_eq!((t.live(7), unknown(&t, 7)), (2, 3));
        // Deleting the unheld ones (their ids are not held) leaves nothing to know.
        t.delete_held(7, post(1).id);
        t.delete_held(7, post(2).id);
        assert!(t.live(7) == 0 && t.of(7).is_none());
        t.delete_author(8);
        assert!(seqs(&t, 8).is_empty());
        assert_eq!(t.held(), 1);
    }

    #[test]
    fn a_deleted_posts_held_reposts_go_with_it_even_when_it_is_not_held() {
        let mut t = Timelines::new(Caps {
            per_author: 1,
            total: 100,
        });
        t.publish_held(1, post(1));
        t.publish_held(1, post(2)); // 1's first post leaves memory at the cap
        t.repost_held(7, (post(1).id, 1), 0);
        assert_eq!(
            (t.of(7).unwrap().reposts(), t.repost_by(7, post(1).id)),
            (1, Some(3))
        );
        assert!(
            t.find(1, post(1).id).is_none(),
            "the reposted post is not held"
        );
        t.delete_held(1, post(1).id);
        assert_eq!(t.repost_by(7, post(1).id), None);
        assert!(t.of(7).is_none(), "nothing left of 7's");
        assert!(t.reposts_of.is_empty());
        // A repost that leaves memory past its reposter's cap leaves the index too.
        t.repost_held(8, (post(2).id, 1), 0);
        t.publish_held(8, post(3));
        assert!(t.reposts_of.is_empty(), "{:?}", t.reposts_of);
        assert_eq!(
            t.of(8).unwrap().reposts(),
            1,
            "still counted: not held, live"
        );
    }

    #[test]
    fn below_reads_newest_first_under_the_cursor() {
        let mut t = Timelines::new(Caps {
            per_author: 10,
            total: 10,
        });
        for n in 1..=5 {
            t.publish_held(1, post(n));
        }
        let below: Vec<i64> = t.of(1).unwrap().below(4).map(|p| p.seq).collect();
        assert_eq!(below, vec![3, 2, 1]);
    }

    #[test]
    fn nothing_is_held_when_off_but_posts_are_counted() {
        let mut t = Timelines::new(Caps::OFF);
        t.publish_held(1, post(1));
        assert_eq!((t.head(), t.held(), t.live(1)), (1, 0, 1));
        t.delete_held(1, post(1).id);
        assert!(
            t.by_author.is_empty(),
            "an author with nothing left is dropped"
        );
    }
}
