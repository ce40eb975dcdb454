//! The one engagement fold against its reference (issue 43): random likes, unlikes, reposts,
//! unreposts, quotes and their deletions or detaching (issue 44), bookmarks and unbookmarks
//! (issue 46), comments (replies of replies), deletions, pins and erasures. The tables folded
//! keep the counts and visibility the rules give when recounted from their rows (`verify`'s
//! reference), a run of likes folded at once gives what folding it one by one gives, and no
//! bookmark of an erased user stands.

use chrono::DateTime;
use proptest::prelude::*;
use relations_domain::{CommentId, LikeTarget, PostId};

use super::fold::{
    fold, fold_changes, Bookmark, EngagementChange, Key, Like, NewComment, Quote, Repost,
};
use super::memory::EngagementMemory;
use super::verify::EngagementCheck;
use crate::feed::fold::in_memory;

const USERS: i64 = 4;
const POSTS: u128 = 2;

#[derive(Debug, Clone)]
enum Op {
    /// User likes (`true`) or unlikes post p, or the c-th comment (modulo) when `Some(c)`.
    Like(i64, u128, Option<usize>, bool),
    /// User reposts (`true`) or unreposts post p.
    Repost(i64, u128, bool),
    /// User bookmarks (`true`) or unbookmarks post p.
    Bookmark(i64, u128, bool),
    /// User publishes a post quoting post p.
    Quote(i64, u128),
    /// The q-th quoting post (modulo) is deleted or its quote detached (once more: nothing).
    Unquote(usize),
    /// User comments on post p, answering the c-th comment of it (modulo) when `Some(c)`.
    Comment(i64, u128, Option<usize>),
    /// The c-th comment (modulo) is deleted.
    Delete(usize),
    /// The c-th comment (modulo) is pinned or unpinned.
    Pin(usize, bool),
    Erase(i64),
}

fn op() -> impl Strategy<Value = Op> {
    let who = 1..=USERS;
    let post = 0..POSTS;
    let nth = proptest::option::of(0usize..32);
    prop_oneof![
        4 => (who.clone(), post.clone(), nth.clone(), any::<bool>())
            .prop_map(|(u, p, c, on)| Op::Like(u, p, c, on)),
        3 => (who.clone(), post.clone(), any::<bool>()).prop_map(|(u, p, on)| Op::Repost(u, p, on)),
        3 => (who.clone(), post.clone(), any::<bool>())
            .prop_map(|(u, p, on)| Op::Bookmark(u, p, on)),
        2 => (who.clone(), post.clone()).prop_map(|(u, p)| Op::Quote(u, p)),
        1 => (0usize..16).prop_map(Op::Unquote),
        5 => (who.clone(), post, nth).prop_map(|(u, p, c)| Op::Comment(u, p, c)),
        3 => (0usize..32).prop_map(Op::Delete),
        1 => (0usize..32, any::<bool>()).prop_map(|(c, on)| Op::Pin(c, on)),
        1 => who.prop_map(Op::Erase),
    ]
}

fn post(p: u128) -> uuid::Uuid {
    uuid::Uuid::from_u128(p + 1)
}

/// A comment as the history knows it: its key, author, and whether it is deleted.
type Known = (Key, i64, bool);

/// The changes a history makes, as the log would hold them: comments numbered per post,
/// replies to live comments of their post, nothing by an erased user after the erasure and
/// nothing naming one (the write side refuses a command that names an erased user).
fn history(ops: &[Op]) -> Vec<EngagementChange<'static>> {
    let at = DateTime::UNIX_EPOCH;
    let (mut comments, mut erased) = (Vec::<Known>::new(), Vec::new());
    let mut quotes = 0u128;
    let mut changes = Vec::new();
    let nth = |comments: &[Known], c: usize| comments.get(c % comments.len().max(1)).copied();
    for op in ops {
        let change = match *op {
            Op::Like(user, p, c, on) if !erased.contains(&user) => {
                let (target, author) = match c.and_then(|c| nth(&comments, c)) {
                    Some(((post, n), author, deleted)) => {
                        if deleted || erased.contains(&author) {
                            continue;
                        }
                        let post = PostId::from_uuid(post);
                        (LikeTarget::Comment(CommentId { post, n: n as u32 }), author)
                    }
                    None => (LikeTarget::Post(PostId::from_uuid(post(p))), 9),
                };
                EngagementChange::Like(Like {
                    target,
                    user,
                    author,
                    at,
                    on,
                })
            }
            Op::Repost(user, p, on) if !erased.contains(&user) => {
                let (post, author) = (post(p), 9);
                EngagementChange::Repost(Repost {
                    post,
                    user,
                    author,
                    at,
                    on,
                })
            }
            Op::Bookmark(user, p, on) if !erased.contains(&user) => {
                EngagementChange::Bookmark(Bookmark {
                    post: post(p),
                    user,
                    author: 9,
                    at,
                    on,
                })
            }
            Op::Quote(author, p) if !erased.contains(&author) => {
                quotes += 1;
                EngagementChange::Quoted(Quote {
                    post: post(1000 + quotes),
                    quote_of: post(p),
                    author,
                    quoted_author: 9,
                })
            }
            Op::Unquote(q) if quotes > 0 => {
                EngagementChange::Unquoted(post(1001 + (q as u128 % quotes)))
            }
            Op::Comment(author, p, c) if !erased.contains(&author) => {
                let on_post: Vec<Known> = comments
                    .iter()
                    .filter(|k| k.0 .0 == post(p))
                    .copied()
                    .collect();
                let parent = c.and_then(|c| nth(&on_post, c));
                if parent.is_some_and(|(_, by, deleted)| deleted || erased.contains(&by)) {
                    continue;
                }
                let key = (post(p), on_post.len() as i32 + 1);
                comments.push((key, author, false));
                EngagementChange::Commented(NewComment {
                    key,
                    author,
                    post_author: 9,
                    parent: parent.map(|k| k.0 .1),
                    content: Some("text"),
                    created_at: at,
                })
            }
            Op::Delete(c) => match nth(&comments, c) {
                Some((key, by, false)) if !erased.contains(&by) => {
                    let known = comments.iter_mut().find(|k| k.0 == key).unwrap();
                    known.2 = true;
                    EngagementChange::Uncommented(key)
                }
                _ => continue,
            },
            Op::Pin(c, on) => match nth(&comments, c) {
                Some((key, by, false)) if !erased.contains(&by) => {
                    EngagementChange::Pinned(key, on)
                }
                _ => continue,
            },
            Op::Erase(user) => {
                erased.push(user);
                for known in comments.iter_mut().filter(|k| k.1 == user) {
                    known.2 = true;
                }
                EngagementChange::Erased(user)
            }
            Op::Like(..)
            | Op::Repost(..)
            | Op::Bookmark(..)
            | Op::Quote(..)
            | Op::Unquote(_)
            | Op::Comment(..) => continue,
        };
        changes.push(change);
    }
    changes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_fold_keeps_the_counts_the_rules_give(ops in proptest::collection::vec(op(), 0..80)) {
        let changes = history(&ops);
        let mut runs = EngagementCheck::default();
        in_memory(fold_changes(runs.tables_mut(), &changes)).unwrap();
        let mut one_by_one = EngagementMemory::default();
        for change in &changes {
            in_memory(fold(&mut one_by_one, change)).unwrap();
        }
        let mismatches = runs.recount_mismatches();
        prop_assert!(mismatches.is_empty(), "{mismatches:#?}");
        prop_assert_eq!(&runs.tables_mut().likes, &one_by_one.likes);
        prop_assert_eq!(&runs.tables_mut().reposts, &one_by_one.reposts);
        prop_assert_eq!(&runs.tables_mut().bookmarks, &one_by_one.bookmarks);
        let erased: Vec<i64> = ops
            .iter()
            .filter_map(|op| match op {
                Op::Erase(user) => Some(*user),
                _ => None,
            })
            .collect();
        let left = one_by_one.bookmarks.keys().find(|(_, u)| erased.contains(u));
        prop_assert!(left.is_none(), "an erased user's bookmark stands: {left:?}");
        prop_assert_eq!(&runs.tables_mut().quotes, &one_by_one.quotes);
        prop_assert_eq!(&runs.tables_mut().stats, &one_by_one.stats);
        prop_assert_eq!(&runs.tables_mut().comments, &one_by_one.comments);
    }
}
