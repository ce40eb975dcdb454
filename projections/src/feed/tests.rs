//! The one feed fold against its reference (issue 43): random follows, unfollows, posts,
//! reposts and unreposts (issue 44), deletions, bans and erasures, with a small threshold and cap so that every path (push,
//! pull, switches both ways, trimmed inboxes) is in play. Folding in runs gives the tables
//! folding one by one gives, and those keep the feed's invariant (module docs) against a plain
//! model of the follows and posts.

use std::collections::{BTreeMap, BTreeSet};

use chrono::DateTime;
use proptest::prelude::*;
use relations_domain::Visibility;
use relations_store::LogPosition;

use super::fold::{fold, fold_changes, in_memory, Change, FeedChange, NewPost, NewRepost};
use super::memory::FeedMemory;
use super::Settings;

const USERS: i64 = 5;

#[derive(Debug, Clone)]
enum Op {
    Follow(i64, i64),
    /// Every other user follows this one, one after the other: a run that crosses the
    /// threshold.
    Fans(i64),
    /// This user posts three times in a row.
    Posts(i64),
    Unfollow(i64, i64),
    Post(i64),
    /// The n-th post published so far (modulo).
    Delete(usize),
    Ban(i64, bool),
    Erase(i64),
    /// This user reposts the n-th post published so far (modulo).
    Repost(i64, usize),
    /// This user takes back their repost of the n-th post.
    Unrepost(i64, usize),
}

fn op() -> impl Strategy<Value = Op> {
    let who = 1..=USERS;
    prop_oneof![
        5 => (who.clone(), who.clone()).prop_map(|(a, b)| Op::Follow(a, b)),
        1 => who.clone().prop_map(Op::Fans),
        1 => who.clone().prop_map(Op::Posts),
        2 => (who.clone(), who.clone()).prop_map(|(a, b)| Op::Unfollow(a, b)),
        5 => who.clone().prop_map(Op::Post),
        1 => (0usize..64).prop_map(Op::Delete),
        1 => (who.clone(), any::<bool>()).prop_map(|(a, on)| Op::Ban(a, on)),
        1 => who.clone().prop_map(Op::Erase),
        3 => (who.clone(), 0usize..64).prop_map(|(a, n)| Op::Repost(a, n)),
        1 => (who, 0usize..64).prop_map(|(a, n)| Op::Unrepost(a, n)),
    ]
}

/// The plain model: follows, and items `(seq, author, live)` (posts and reposts) with the
/// post each repost reposts (its seq).
#[derive(Default)]
struct Model {
    follows: BTreeSet<(i64, i64)>,
    posts: Vec<(i64, i64, bool)>,
    repost_of: BTreeMap<i64, i64>,
    erased: BTreeSet<i64>,
}

impl Model {
    /// The seq of the n-th post (modulo), not counting reposts.
    fn nth_post(&self, n: usize) -> Option<i64> {
        let posts: Vec<i64> = (1..=self.posts.len() as i64)
            .filter(|seq| !self.repost_of.contains_key(seq))
            .collect();
        (!posts.is_empty()).then(|| posts[n % posts.len()])
    }

    /// `user`'s live repost of post `post`, if any.
    fn repost_by(&self, user: i64, post: i64) -> Option<i64> {
        let reposts = self.repost_of.iter().filter(|(_, &p)| p == post);
        let mut live = reposts.map(|(&seq, _)| seq).filter(|&seq| {
            let item = self.posts[(seq - 1) as usize];
            item.1 == user && item.2
        });
        live.next()
    }

    /// Item `seq` dies, and when it is a post, its reposts.
    fn kill(&mut self, seq: i64) {
        self.posts[(seq - 1) as usize].2 = false;
        let reposts: Vec<i64> = (self.repost_of.iter())
            .filter(|(_, &p)| p == seq)
            .map(|(&r, _)| r)
            .collect();
        for repost in reposts {
            self.posts[(repost - 1) as usize].2 = false;
        }
    }
}

/// A post's id in these tests (never a repost's: theirs are below 2^64).
fn post_id(seq: i64) -> uuid::Uuid {
    uuid::Uuid::from_u128((1 << 64) | seq as u128)
}

/// The changes a history makes, as the log would hold them (nothing by or of an erased user
/// after the erasure), and the model after it.
fn history(ops: &[Op]) -> (Vec<Change<'static>>, Model) {
    let mut model = Model::default();
    let mut changes = Vec::new();
    let ops = ops.iter().flat_map(|op| match *op {
        Op::Fans(b) => (1..=USERS).map(|a| Op::Follow(a, b)).collect(),
        Op::Posts(a) => vec![Op::Post(a); 3],
        _ => vec![op.clone()],
    });
    for (i, op) in ops.enumerate() {
        let gone = |u: &i64| model.erased.contains(u);
        let change = match op {
            Op::Fans(_) | Op::Posts(_) => unreachable!("expanded"),
            Op::Follow(a, b) | Op::Unfollow(a, b) if a == b || gone(&a) || gone(&b) => continue,
            Op::Follow(a, b) => {
                model.follows.insert((a, b));
                FeedChange::Followed((a, b))
            }
            Op::Unfollow(a, b) => {
                model.follows.remove(&(a, b));
                FeedChange::Unfollowed((a, b))
            }
            Op::Post(a) | Op::Ban(a, _) | Op::Erase(a) if gone(&a) => continue,
            Op::Post(a) => {
                let seq = model.posts.len() as i64 + 1;
                model.posts.push((seq, a, true));
                FeedChange::Published(NewPost {
                    id: post_id(seq),
                    author: a,
                    content: Some("text"),
                    created_at: DateTime::from_timestamp(seq, 0).expect("a time"),
                    visibility: Visibility::Public,
                    // Every third post quotes the one before (issue 44).
                    quote_of: (seq % 3 == 0).then(|| post_id(seq - 1)),
                    quote_policy: Default::default(),
                    comment_policy: Default::default(),
                })
            }
            Op::Delete(n) => {
                let Some(seq) = model.nth_post(n) else {
                    continue;
                };
                let (_, author, live) = model.posts[(seq - 1) as usize];
                if !live {
                    continue;
                }
                model.kill(seq);
                FeedChange::Deleted {
                    post: post_id(seq),
                    author,
                }
            }
            Op::Repost(a, _) | Op::Unrepost(a, _) if gone(&a) => continue,
            Op::Repost(a, n) => {
                // The write side refuses a dead post, and a second repost changes nothing.
                let Some(post) = model.nth_post(n) else {
                    continue;
                };
                if !model.posts[(post - 1) as usize].2 || model.repost_by(a, post).is_some() {
                    continue;
                }
                let seq = model.posts.len() as i64 + 1;
                model.posts.push((seq, a, true));
                model.repost_of.insert(seq, post);
                FeedChange::Reposted(NewRepost {
                    post: post_id(post),
                    author: model.posts[(post - 1) as usize].1,
                    reposter: a,
                    created_at: DateTime::from_timestamp(seq, 0).expect("a time"),
                })
            }
            Op::Unrepost(a, n) => {
                let Some(post) = model.nth_post(n) else {
                    continue;
                };
                let Some(repost) = model.repost_by(a, post) else {
                    continue;
                };
                model.posts[(repost - 1) as usize].2 = false;
                FeedChange::Unreposted {
                    post: post_id(post),
                    reposter: a,
                }
            }
            Op::Ban(a, on) => FeedChange::Banned(a, on),
            Op::Erase(a) => {
                model.erased.insert(a);
                model.follows.retain(|&(x, y)| x != a && y != a);
                let theirs: Vec<i64> = (model.posts.iter())
                    .filter(|p| p.1 == a)
                    .map(|p| p.0)
                    .collect();
                for seq in theirs {
                    model.kill(seq);
                }
                FeedChange::Erased(a)
            }
        };
        let at = LogPosition {
            transaction_id: i as i64 + 1,
            global_position: i as i64 + 1,
        };
        changes.push((at, Some(change)));
    }
    (changes, model)
}

fn folded(settings: Settings, changes: &[Change<'_>], in_runs: bool) -> FeedMemory {
    let mut tables = FeedMemory::new(settings, true);
    if in_runs {
        tables = tables.folding_runs();
        in_memory(fold_changes(&mut tables, changes)).expect("folded");
    } else {
        for (at, change) in changes.iter().filter_map(|(at, c)| Some((*at, (*c)?))) {
            in_memory(fold(&mut tables, at, change)).expect("folded");
        }
    }
    tables
}

/// Whether the tables keep the feed's invariant against the model.
fn check(tables: &FeedMemory, model: &Model, settings: Settings) -> Result<(), TestCaseError> {
    prop_assert_eq!(&tables.following, &model.follows);
    let mut expected: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
    for &(_, followee) in &model.follows {
        expected.entry(followee).or_default().0 += 1;
    }
    for &(seq, author, live) in &model.posts {
        if !model.repost_of.contains_key(&seq) {
            expected.entry(author).or_default().1 += i64::from(live);
        }
    }
    for (&author, row) in &tables.authors {
        let (followers, posts) = expected.remove(&author).unwrap_or_default();
        prop_assert_eq!(
            (row.followers, row.posts),
            (followers, posts),
            "author {}",
            author
        );
        prop_assert_eq!(row.pulled, followers >= settings.big_v_threshold);
    }
    prop_assert!(expected.values().all(|c| *c == (0, 0)), "rows missing");
    prop_assert_eq!(tables.posts.len(), model.posts.len());
    for (seq, author, live) in &model.posts {
        let row = &tables.posts[(*seq - 1) as usize];
        prop_assert_eq!((row.author, !row.deleted), (*author, *live));
        let repost_of = model.repost_of.get(seq).map(|&p| post_id(p));
        prop_assert_eq!(row.repost_of, repost_of);
        prop_assert_eq!(row.content.is_some(), *live && repost_of.is_none());
    }
    let live: BTreeMap<i64, i64> = model
        .posts
        .iter()
        .filter(|p| p.2)
        .map(|p| (p.0, p.1))
        .collect();
    for (reader, inbox) in &tables.inboxes {
        prop_assert!(inbox.entries.len() as i64 <= settings.inbox_cap);
        for &(seq, author) in &inbox.entries {
            prop_assert_eq!(live.get(&seq), Some(&author), "a dead post in {}", reader);
            prop_assert!(model.follows.contains(&(*reader, author)));
        }
    }
    for &(reader, author) in &model.follows {
        if tables.authors.get(&author).is_some_and(|a| a.pulled) {
            continue;
        }
        let inbox = tables.inboxes.get(&reader);
        let watermark = inbox.map_or(0, |i| i.watermark);
        for (&seq, _) in live.range(watermark + 1..).filter(|(_, &a)| a == author) {
            let held = inbox.is_some_and(|i| i.entries.contains(&(seq, author)));
            prop_assert!(held, "{} misses {} of {}", reader, seq, author);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_fold_in_runs_is_the_fold_one_by_one_and_keeps_the_invariant(
        ops in prop::collection::vec(op(), 1..80),
        threshold in 2i64..=3,
        cap in 2i64..=4,
    ) {
        let settings = Settings { big_v_threshold: threshold, inbox_cap: cap };
        let (changes, model) = history(&ops);
        let runs = folded(settings, &changes, true);
        let one_by_one = folded(settings, &changes, false);
        prop_assert_eq!(runs.rows(), one_by_one.rows());
        check(&runs, &model, settings)?;
    }
}
