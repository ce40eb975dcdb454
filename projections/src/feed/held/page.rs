//! A feed page and `new_count` from memory (issue 28): the followed (or recommended)
//! authors' held timelines merged newest first, judged by the same rules as the PostgreSQL
//! path (`crate::feed::query`) on the replica's one state: live posts of authors the reader
//! follows (or, following nobody, the recommended authors with no block either way), none
//! banned, none muted by the reader, and only what the reader may read (issue 26).
//!
//! A page is answered only when it is certain: every post it shows and the cursor after it
//! are above every seq below which some source's posts are not all held
//! ([`super::timelines::Timelines::unknown_below`]). Otherwise the answer is `None` and the
//! caller reads PostgreSQL.

use std::collections::BinaryHeap;

use foldhash::HashSet;

use chrono::{DateTime, Utc};
use relations_domain::privacy::{self, Access, Privacy, Reader};
use relations_domain::{ListId, PostId, UserId, Visibility};

use super::timelines::{HeldPost, Timeline};
use crate::feed::query::SeqPage;
use crate::filters::screen::{FilterHit, Screening};
use crate::replica::Replica;

/// What a feed read asks.
#[derive(Debug, Clone, Copy)]
pub struct FeedAsk<'a> {
    /// Who reads.
    pub reader: UserId,
    /// The recommended authors (the feed of a reader who follows nobody).
    pub recommended: &'a [UserId],
    /// The moment of reading (mutes end in time).
    pub now: DateTime<Utc>,
    /// A list of the reader's whose feed is read (issue 46); the home feed when `None`, which
    /// leaves out the members of the reader's exclusive lists.
    pub list: Option<ListId>,
    /// The reader's filters in the feed's context (issue 47): `hide` leaves a post out,
    /// `warn` marks it.
    pub screening: Screening<'a>,
}

/// How a source's posts are judged.
#[derive(Clone, Copy)]
enum Judge {
    /// A followed author: what the reader may read of them.
    Followed(Access),
    /// A recommended author: what may be recommended of them.
    Recommended(Privacy),
}

impl Judge {
    /// A followed author's posts, as `reader` may read them.
    fn followed(privacy: Privacy, reader: UserId, author: UserId) -> Self {
        Self::Followed(Access {
            privacy,
            reader: Reader::of(Some(reader), author, true),
        })
    }

    /// A recommended author's posts, as they may be recommended.
    fn recommended(privacy: Privacy, _: UserId, _: UserId) -> Self {
        Self::Recommended(privacy)
    }

    fn keeps(self, visibility: Visibility) -> bool {
        match self {
            Self::Followed(access) => access.may_read(visibility),
            Self::Recommended(privacy) => privacy::recommendable(visibility, privacy),
        }
    }
}

/// One author whose posts make the feed.
struct Source<'g> {
    author: u64,
    judge: Judge,
    /// Their live posts and those held.
    timeline: &'g Timeline,
    /// The highest seq of theirs that may not be held (0: none).
    unknown_top: i64,
    /// Whether their reposts are in the feed: followed, and kept (issue 44).
    keeps_reposts: bool,
}

/// A post a page shows: its author, the post, who brought it (`reposted_by`), the seq of the
/// item that shows it (the post's, or a repost's: the cursor), and the warn filters it
/// matches (issue 47).
type Shown<'g> = (u64, &'g HeldPost, Vec<UserId>, i64, Option<Vec<FilterHit>>);

/// The sources whose reposts the reader keeps (built for pages with reposts).
type Reposters = HashSet<u64>;

impl Replica {
    /// The authors whose posts make `ask.reader`'s feed, or `None` when posts are not held.
    /// One pass over the followed (or recommended) authors, each looked up once in the
    /// timelines (an author with no live post has no entry and is passed over there) and once
    /// in the accounts; the reader's mutes are found once.
    fn feed_sources(&self, ask: FeedAsk<'_>) -> Option<Vec<Source<'_>>> {
        let (relations, timelines) = (self.relations(), self.timelines());
        if !timelines.on() {
            return None;
        }
        let reader = ask.reader;
        let muted = relations.muter(reader, ask.now);
        let source = |author: u64, judge: fn(Privacy, UserId, UserId) -> Judge| {
            let timeline = timelines.of(author)?;
            let user = crate::relations::memory::user(author);
            let (banned, privacy) = self.accounts().standing(user);
            if banned || muted(author) {
                return None;
            }
            let judge = judge(privacy, reader, user);
            let keeps_reposts =
                matches!(judge, Judge::Followed(_)) && relations.prefs(reader, user).show_reposts;
            Some(Source {
                author,
                judge,
                timeline,
                unknown_top: timelines.unknown_below(timeline) - 1,
                keeps_reposts,
            })
        };
        if let Some(list) = ask.list {
            // A list's members, each followed (a membership ends with its follow).
            let members = self.lists().get(reader, list).map(|l| l.members.keys());
            let members = members.into_iter().flatten();
            let sources = members.filter_map(|&member| source(member as u64, Judge::followed));
            return Some(sources.collect());
        }
        let excluded = self.lists().excluded(reader);
        let followed = relations.followees(reader);
        let sources = if followed.len() == 0 {
            ask.recommended
                .iter()
                .filter(|&&author| {
                    let facts = relations.facts(reader, author);
                    author != reader && !facts.blocking && !facts.blocked_by
                })
                .filter_map(|author| source(author.get() as u64, Judge::recommended))
                .collect()
        } else {
            followed
                .filter(|author| !excluded.contains(author))
                .filter_map(|author| source(author, Judge::followed))
                .collect()
        };
        Some(sources)
    }

    /// A page of `ask.reader`'s feed below the seq `before` (from the top when `None`), of
    /// `size` posts, and the newest seq (the read mark a first page sets); `None` when memory
    /// cannot answer it exactly. Reposts (issue 44) are shown as `crate::feed::query`'s
    /// `hydrate` shows them: each post once, at its newest appearance, with `reposted_by`. A
    /// first page finds the newest appearance by walking down from the top; a page below a
    /// cursor cannot see the appearances above it, so it is answered only when no source has
    /// a live repost.
    pub fn feed_page(
        &self,
        ask: FeedAsk<'_>,
        before: Option<i64>,
        size: i64,
    ) -> Option<(SeqPage, i64)> {
        let sources = self.feed_sources(ask)?;
        let with_reposts = sources.iter().any(|s| s.timeline.reposts() > 0);
        if before.is_some() && with_reposts {
            return None;
        }
        let before = before.unwrap_or(i64::MAX);
        let want = size.max(0) as usize + 1;
        let unknown_top = sources.iter().map(|s| s.unknown_top).max().unwrap_or(0);
        // Each source's held posts below `before`, as a count still to read; the heap holds
        // each source's newest unread seq.
        let mut left: Vec<usize> = sources
            .iter()
            .map(|s| s.timeline.count_below(before))
            .collect();
        let mut heap: BinaryHeap<(i64, usize)> = (0..sources.len())
            .filter(|&i| left[i] > 0)
            .map(|i| (sources[i].timeline.posts[left[i] - 1].seq, i))
            .collect();
        let mut found: Vec<Shown<'_>> = Vec::with_capacity(want);
        let mut seen: HashSet<PostId> = HashSet::default();
        let keeps: Reposters = match with_reposts {
            true => sources
                .iter()
                .filter(|s| s.keeps_reposts)
                .map(|s| s.author)
                .collect(),
            false => Reposters::default(),
        };
        while found.len() < want {
            match heap.pop() {
                // A post below a bound may be preceded by one not held; only the one that
                // tells whether more follow the page may come from there (it is more).
                Some((seq, _)) if seq <= unknown_top && found.len() + 1 < want => return None,
                Some((_, i)) => {
                    let source = &sources[i];
                    left[i] -= 1;
                    let item = &source.timeline.posts[left[i]];
                    if let Some(mut shown) = self.appearance(ask, &keeps, source, item, &seen)? {
                        seen.insert(shown.1.id);
                        if let Some(marks) = ask.screening.shown(&shown.1.content) {
                            shown.4 = marks;
                            found.push(shown);
                        }
                    }
                    if left[i] > 0 {
                        heap.push((source.timeline.posts[left[i] - 1].seq, i));
                    }
                }
                // The end, unless posts below some bound are not held.
                None if unknown_top.min(before - 1) > 0 => return None,
                None => break,
            }
        }
        let more = found.len() == want;
        found.truncate(want - 1);
        // The cursor is the seq of the last item shown (a repost's, not its post's).
        let next = more.then(|| found.last().map(|p| p.3)).flatten();
        let engagement = self.timelines().engagement();
        let items = found
            .into_iter()
            .map(|(author, post, reposted_by, _, filtered)| {
                let shown = engagement.shown(post.id, ask.reader.get() as u64);
                let mut view = post.view(crate::relations::memory::user(author), shown);
                view.reposted_by = Some(reposted_by);
                view.filtered = filtered;
                view
            })
            .collect();
        Some((SeqPage { next, items }, self.timelines().head()))
    }

    /// What `item` of `source` shows `ask.reader`: a post, the post a repost brings, or
    /// nothing (not theirs to read, or shown already at a newer appearance, in `seen`); `None`
    /// when memory cannot tell (a reposted post or one of its reposts not held).
    fn appearance<'g>(
        &'g self,
        ask: FeedAsk<'_>,
        keeps: &Reposters,
        source: &Source<'g>,
        item: &'g HeldPost,
        seen: &HashSet<PostId>,
    ) -> Option<Option<Shown<'g>>> {
        let Some((post, author)) = item.repost_of else {
            let shown = !seen.contains(&item.id) && source.judge.keeps(item.visibility);
            return Some(shown.then(|| (source.author, item, Vec::new(), item.seq, None)));
        };
        if !source.keeps_reposts || seen.contains(&post) {
            return Some(None);
        }
        let timelines = self.timelines();
        let original = timelines.find(author, post)?;
        let author_user = crate::relations::memory::user(author);
        if !self.shows_reposted(ask.reader, author_user, original.visibility, ask.now) {
            return Some(None);
        }
        // Its followed reposters, newest first: this one and those below it.
        let mut by: Vec<(i64, u64)> = Vec::new();
        for reposter in timelines.engagement().reposters(post) {
            if keeps.contains(&reposter) {
                by.push((timelines.repost_by(reposter, post)?, reposter));
            }
        }
        by.sort_unstable_by(|a, b| b.cmp(a));
        let by = by
            .iter()
            .take(3)
            .map(|&(_, u)| crate::relations::memory::user(u));
        Some(Some((author, original, by.collect(), item.seq, None)))
    }

    /// Whether a repost may show `reader` a post of `author` of `visibility` at `now` (a
    /// page from memory, and the live stream): the author neither banned nor muted by the
    /// reader, no block either way, and the post readable (issue 26).
    pub(crate) fn shows_reposted(
        &self,
        reader: UserId,
        author: UserId,
        visibility: Visibility,
        now: DateTime<Utc>,
    ) -> bool {
        let (banned, privacy) = self.accounts().standing(author);
        let relations = self.relations();
        let facts = relations.facts(reader, author);
        if banned || facts.blocking || facts.blocked_by || relations.muting(reader, author, now) {
            return false;
        }
        let reader = Reader::of(Some(reader), author, facts.following);
        Access { privacy, reader }.may_read(visibility)
    }

    /// Whether `reader` sees a quoted post of `author` (live, and the author not erased) by
    /// the replica's state: [`crate::feed::quotes::shown`], and its author not banned.
    pub(crate) fn shows_quoted(
        &self,
        reader: UserId,
        author: UserId,
        visibility: Visibility,
    ) -> bool {
        let (banned, privacy) = self.accounts().standing(author);
        let facts = self.relations().facts(reader, author);
        let access = Access {
            privacy,
            reader: Reader::of(Some(reader), author, facts.following),
        };
        !banned
            && crate::feed::quotes::shown(&access, visibility, facts.blocking || facts.blocked_by)
    }

    /// How many posts of `ask.reader`'s feed are newer than `mark`; `None` when memory cannot
    /// tell exactly (a source's posts below a bound, or a source with live reposts: those are
    /// counted by PostgreSQL).
    pub fn feed_new_count(&self, ask: FeedAsk<'_>, mark: i64) -> Option<i64> {
        let mut count = 0;
        for source in self.feed_sources(ask)? {
            if source.unknown_top > mark || source.timeline.reposts() > 0 {
                return None;
            }
            count += source
                .timeline
                .below(i64::MAX)
                .take_while(|p| p.seq > mark)
                .filter(|p| source.judge.keeps(p.visibility))
                .filter(|p| !ask.screening.hides(&p.content))
                .count() as i64;
        }
        Some(count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::feed::held::timelines::Caps;
    use crate::relations::fold::{EdgeKind, RelationChange};
    use relations_domain::{AccountEvent, LogEvent, PostId};
    use relations_store::LogPosition;

    fn u(id: i64) -> UserId {
        UserId::try_from(id).unwrap()
    }

    fn now() -> DateTime<Utc> {
        DateTime::<Utc>::from_timestamp_micros(1_000_000).unwrap()
    }

    fn change(g: &mut Replica, change: RelationChange) {
        g.parts_mut().0.change(change);
    }

    fn account(g: &mut Replica, event: AccountEvent) {
        let at = LogPosition {
            transaction_id: 1,
            global_position: 1,
        };
        g.apply(at, now(), &LogEvent::Account(event));
    }

    fn follow(g: &mut Replica, a: i64, b: i64) {
        change(g, RelationChange::Begin(EdgeKind::Follow, (a, b), now()));
    }

    fn publish(g: &mut Replica, author: i64, visibility: Visibility) -> PostId {
        let id = PostId::from_uuid(uuid::Uuid::new_v4());
        let post = HeldPost {
            seq: 0,
            id,
            created_at: 0,
            visibility,
            content: "p".into(),
            repost_of: None,
            controls: Default::default(),
        };
        let posts = g.parts_mut().2.timelines_mut();
        posts.publish_held(author as u64, post);
        id
    }

    fn ask(reader: i64, recommended: &[UserId]) -> FeedAsk<'_> {
        FeedAsk {
            reader: u(reader),
            recommended,
            now: now(),
            list: None,
            screening: Screening::none(),
        }
    }

    fn ids(page: &SeqPage) -> Vec<PostId> {
        page.items.iter().map(|p| p.id).collect()
    }

    fn graph(per_author: usize) -> Replica {
        Replica::new(Caps {
            per_author,
            total: 1000,
        })
    }

    #[test]
    fn a_page_merges_followed_timelines_until_a_bound_it_does_not_hold() {
        let mut g = graph(2);
        follow(&mut g, 10, 1);
        follow(&mut g, 10, 2);
        let a1 = publish(&mut g, 1, Visibility::Public);
        let b1 = publish(&mut g, 2, Visibility::Followers);
        let a2 = publish(&mut g, 1, Visibility::Public);
        let a3 = publish(&mut g, 1, Visibility::Unlisted);
        publish(&mut g, 3, Visibility::Public); // not followed
        let (page, head) = g.feed_page(ask(10, &[]), None, 2).unwrap();
        assert_eq!((ids(&page), page.next, head), (vec![a3, a2], Some(3), 5));
        // Below seq 3: b1, then 1's a1 is not held (its cap is 2), so memory cannot end it.
        assert_eq!(g.feed_page(ask(10, &[]), Some(3), 2), None);
        assert_eq!(
            g.feed_page(ask(10, &[]), None, 3),
            None,
            "nor whether more follow b1"
        );
        // Once a1 is deleted, 1's live posts are all held, and the feed ends in memory.
        g.parts_mut().2.timelines_mut().delete_held(1, a1);
        let (page, _) = g.feed_page(ask(10, &[]), Some(3), 2).unwrap();
        assert_eq!((ids(&page), page.next), (vec![b1], None));
        assert_eq!(g.feed_new_count(ask(10, &[]), 0), Some(3));
        assert_eq!(g.feed_new_count(ask(10, &[]), 3), Some(1));
    }

    #[test]
    fn a_held_post_below_an_unheld_one_is_never_shown_before_it() {
        let mut g = graph(2);
        follow(&mut g, 10, 1);
        follow(&mut g, 10, 2);
        publish(&mut g, 2, Visibility::Public);
        let b1 = publish(&mut g, 2, Visibility::Public);
        publish(&mut g, 1, Visibility::Public); // a1, seq 3: dropped at 1's cap
        let a2 = publish(&mut g, 1, Visibility::Public);
        let a3 = publish(&mut g, 1, Visibility::Public);
        let (page, _) = g.feed_page(ask(10, &[]), None, 2).unwrap();
        assert_eq!((ids(&page), page.next), (vec![a3, a2], Some(4)));
        // The third post is a1, which memory does not hold: b1 must not take its place.
        assert_eq!(g.feed_page(ask(10, &[]), None, 3), None);
        assert_eq!(
            g.feed_new_count(ask(10, &[]), 2),
            None,
            "a1 is newer than the mark"
        );
        assert_eq!(g.feed_new_count(ask(10, &[]), 3), Some(2));
        let _ = b1;
    }

    #[test]
    fn mutes_bans_and_visibility_hold_in_memory() {
        let mut g = graph(32);
        follow(&mut g, 10, 1);
        follow(&mut g, 10, 2);
        let mine = publish(&mut g, 1, Visibility::Followers);
        publish(&mut g, 2, Visibility::Public);
        let mute = RelationChange::Mute((10, 2), now(), None);
        change(&mut g, mute);
        let (page, _) = g.feed_page(ask(10, &[]), None, 10).unwrap();
        assert_eq!(ids(&page), vec![mine], "a muted author is left out");
        account(&mut g, AccountEvent::UserBanned { user: u(1) });
        assert!(g
            .feed_page(ask(10, &[]), None, 10)
            .unwrap()
            .0
            .items
            .is_empty());
        assert_eq!(g.feed_new_count(ask(10, &[]), 0), Some(0));
        // Following nobody: the recommended feed holds public posts only, none blocked.
        let recommended = [u(1), u(3), u(4)];
        let public = publish(&mut g, 3, Visibility::Public);
        publish(&mut g, 3, Visibility::Followers);
        publish(&mut g, 4, Visibility::Public);
        let block = RelationChange::Begin(EdgeKind::Block, (4, 11), now());
        change(&mut g, block);
        let (page, _) = g.feed_page(ask(11, &recommended), None, 10).unwrap();
        assert_eq!(ids(&page), vec![public]);
    }

    #[test]
    fn an_erased_author_leaves_every_feed() {
        let mut g = graph(32);
        follow(&mut g, 10, 1);
        publish(&mut g, 1, Visibility::Public);
        account(&mut g, AccountEvent::UserErased { user: u(1) });
        let (page, head) = g.feed_page(ask(10, &[]), None, 10).unwrap();
        assert_eq!((page.items.len(), head), (0, 1));
    }

    fn repost(g: &mut Replica, user: i64, post: PostId, author: i64) {
        let at = LogPosition {
            transaction_id: 2,
            global_position: 2,
        };
        let event = relations_domain::RepostEvent::Reposted {
            user: u(user),
            post,
            author: u(author),
        };
        g.apply(at, now(), &LogEvent::Repost(event));
    }

    #[test]
    fn a_repost_shows_its_post_once_from_memory_with_its_followed_reposters() {
        let mut g = graph(32);
        for followee in [1, 2, 3] {
            follow(&mut g, 10, followee);
        }
        let p = publish(&mut g, 1, Visibility::Public);
        let q = publish(&mut g, 2, Visibility::Public);
        repost(&mut g, 2, p, 1);
        repost(&mut g, 3, p, 1);
        let (page, _) = g.feed_page(ask(10, &[]), None, 10).unwrap();
        assert_eq!(ids(&page), vec![p, q], "once, at its newest appearance");
        let by: Vec<_> = page.items.iter().map(|i| i.reposted_by.clone()).collect();
        assert_eq!(by, vec![Some(vec![u(3), u(2)]), Some(vec![])]);
        assert_eq!(
            page.items[0].author,
            u(1),
            "the post, as its author wrote it"
        );
        // Below a cursor memory cannot see the appearances above it: PostgreSQL answers.
        let (first, _) = g.feed_page(ask(10, &[]), None, 1).unwrap();
        assert_eq!((ids(&first), first.next), (vec![p], Some(4)));
        assert_eq!(g.feed_page(ask(10, &[]), first.next, 1), None);
        // Hiding 3's reposts leaves 2's; muting the post's author hides it either way.
        let hide = relations_domain::FollowPrefs {
            show_reposts: false,
            notify: false,
        };
        change(&mut g, RelationChange::Prefs((10, 3), hide));
        let (page, _) = g.feed_page(ask(10, &[]), None, 10).unwrap();
        assert_eq!((ids(&page), page.next), (vec![p, q], None));
        assert_eq!(page.items[0].reposted_by, Some(vec![u(2)]));
        change(&mut g, RelationChange::Mute((10, 1), now(), None));
        let (page, _) = g.feed_page(ask(10, &[]), None, 10).unwrap();
        assert_eq!(ids(&page), vec![q]);
        assert_eq!(
            g.feed_new_count(ask(10, &[]), 0),
            None,
            "counted by PostgreSQL"
        );
    }

    #[test]
    fn nothing_is_answered_when_no_post_is_held() {
        let g = Replica::new(Caps::OFF);
        assert_eq!(g.feed_page(ask(10, &[]), None, 10), None);
        assert_eq!(g.feed_new_count(ask(10, &[]), 0), None);
    }
}
