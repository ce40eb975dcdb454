//! Private content (issue 26): who may read a post, and who may see a user's graph. The one
//! home of both rules; every reader (timelines, feeds, `new_count`, the live stream, likes,
//! comments, replies, the like and comment commands, the graph lists and relation queries)
//! asks these functions, each with facts read from one state.
//!
//! - A post is readable by its author and, if it is `followers` or its author is locked, only
//!   by the author's followers at the moment of reading; otherwise by anyone. Unlocking
//!   restores each post's own visibility.
//! - `unlisted` posts are readable like `public` ones but never recommended.
//! - A user's graph (following, followers, friends, known followers) is hidden from everyone
//!   but the user when they hide it, and from everyone but the user and their followers while
//!   they are locked. Relation queries naming a hidden user are for the pair's two users only.
//!   Counts stay public.

use crate::ids::UserId;
use crate::post::Visibility;

/// What the reader is to the author (or to the user whose graph is asked), at one state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    /// The author themselves.
    Author,
    /// One of the author's followers (an approved follow; a pending request is not one).
    Follower,
    /// Anyone else: a stranger, a requester, a blocked user, or no token.
    Other,
}

impl Reader {
    /// What `viewer` (none without a token) is to `author`, given whether they follow them.
    pub fn of(viewer: Option<UserId>, author: UserId, follows: bool) -> Self {
        match viewer {
            Some(v) if v == author => Self::Author,
            Some(_) if follows => Self::Follower,
            _ => Self::Other,
        }
    }
}

/// The author's settings the rules read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Privacy {
    /// The account approves its followers, and its posts are for them.
    pub locked: bool,
    /// The account's graph is for the user alone.
    pub hide_graph: bool,
}

/// What a viewer is to one user, and that user's settings, read from one state: all the
/// rules need to know about the pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    /// The user's settings.
    pub privacy: Privacy,
    /// What the viewer is to them.
    pub reader: Reader,
}

impl Access {
    /// Whether the viewer may read the user's post of `visibility`.
    pub fn may_read(self, visibility: Visibility) -> bool {
        may_read(visibility, self.privacy, self.reader)
    }

    /// Whether the user hides their graph from the viewer.
    pub fn graph_hidden(self) -> bool {
        graph_hidden(self.privacy, self.reader)
    }
}

/// Whether a post of `visibility` by an author with `privacy` is readable by `reader`.
pub fn may_read(visibility: Visibility, privacy: Privacy, reader: Reader) -> bool {
    match reader {
        Reader::Author | Reader::Follower => true,
        Reader::Other => !restricted(visibility, privacy),
    }
}

/// Whether only the author and their followers may read such a post.
pub fn restricted(visibility: Visibility, privacy: Privacy) -> bool {
    privacy.locked || visibility == Visibility::Followers
}

/// The visibilities `reader` may read of an author with `privacy` (a timeline's filter).
pub fn readable(privacy: Privacy, reader: Reader) -> Vec<Visibility> {
    [
        Visibility::Public,
        Visibility::Unlisted,
        Visibility::Followers,
    ]
    .into_iter()
    .filter(|&v| may_read(v, privacy, reader))
    .collect()
}

/// Whether a post of `visibility` may be in the recommended feed (which is read by users who
/// follow nobody, so it holds no restricted post either).
pub fn recommendable(visibility: Visibility, privacy: Privacy) -> bool {
    visibility == Visibility::Public && !privacy.locked
}

/// Whether a user with `privacy` hides their graph (lists) from `reader`.
pub fn graph_hidden(privacy: Privacy, reader: Reader) -> bool {
    match reader {
        Reader::Author => false,
        Reader::Follower => privacy.hide_graph,
        Reader::Other => privacy.hide_graph || privacy.locked,
    }
}

/// Whether a relation query about a pair is refused to its asker: when a user of the pair
/// hides their graph from the asker, unless the asker is one of the pair. `hidden` says, for
/// each user of the pair, whether [`graph_hidden`] holds for the asker.
pub fn pair_hidden(asker: Option<UserId>, pair: (UserId, UserId), hidden: (bool, bool)) -> bool {
    let member = asker.is_some_and(|a| a == pair.0 || a == pair.1);
    !member && (hidden.0 || hidden.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PUBLIC: Visibility = Visibility::Public;
    const UNLISTED: Visibility = Visibility::Unlisted;
    const FOLLOWERS: Visibility = Visibility::Followers;

    fn u(id: i64) -> UserId {
        UserId::try_from(id).unwrap()
    }

    fn locked() -> Privacy {
        Privacy {
            locked: true,
            hide_graph: false,
        }
    }

    #[test]
    fn the_reader_is_the_author_a_follower_or_anyone_else() {
        assert_eq!(Reader::of(Some(u(1)), u(1), false), Reader::Author);
        assert_eq!(Reader::of(Some(u(2)), u(1), true), Reader::Follower);
        assert_eq!(Reader::of(Some(u(2)), u(1), false), Reader::Other);
        assert_eq!(Reader::of(None, u(1), false), Reader::Other);
    }

    #[test]
    fn public_and_unlisted_posts_of_an_unlocked_author_are_for_anyone() {
        for v in [PUBLIC, UNLISTED] {
            for r in [Reader::Author, Reader::Follower, Reader::Other] {
                assert!(may_read(v, Privacy::default(), r), "{v:?} {r:?}");
            }
        }
    }

    #[test]
    fn followers_only_posts_are_for_the_author_and_followers() {
        assert!(may_read(FOLLOWERS, Privacy::default(), Reader::Author));
        assert!(may_read(FOLLOWERS, Privacy::default(), Reader::Follower));
        assert!(!may_read(FOLLOWERS, Privacy::default(), Reader::Other));
    }

    #[test]
    fn a_locked_authors_posts_are_all_for_followers_whatever_their_visibility() {
        for v in [PUBLIC, UNLISTED, FOLLOWERS] {
            assert!(may_read(v, locked(), Reader::Follower));
            assert!(may_read(v, locked(), Reader::Author));
            assert!(!may_read(v, locked(), Reader::Other), "{v:?}");
        }
        assert_eq!(readable(locked(), Reader::Other), vec![]);
        assert_eq!(
            readable(Privacy::default(), Reader::Other),
            vec![PUBLIC, UNLISTED]
        );
    }

    #[test]
    fn only_public_posts_of_unlocked_authors_are_recommended() {
        assert!(recommendable(PUBLIC, Privacy::default()));
        assert!(!recommendable(UNLISTED, Privacy::default()));
        assert!(!recommendable(FOLLOWERS, Privacy::default()));
        assert!(!recommendable(PUBLIC, locked()));
    }

    #[test]
    fn a_hidden_graph_is_for_the_user_and_a_locked_one_for_followers_too() {
        let hidden = Privacy {
            locked: false,
            hide_graph: true,
        };
        assert!(!graph_hidden(hidden, Reader::Author));
        assert!(graph_hidden(hidden, Reader::Follower));
        assert!(graph_hidden(hidden, Reader::Other));
        assert!(!graph_hidden(locked(), Reader::Follower));
        assert!(graph_hidden(locked(), Reader::Other));
        assert!(!graph_hidden(Privacy::default(), Reader::Other));
    }

    #[test]
    fn relation_queries_about_a_hidden_user_are_for_the_pair_alone() {
        let pair = (u(1), u(2));
        assert!(!pair_hidden(Some(u(1)), pair, (false, true)));
        assert!(!pair_hidden(Some(u(2)), pair, (true, true)));
        assert!(pair_hidden(Some(u(3)), pair, (false, true)));
        assert!(pair_hidden(None, pair, (true, false)));
        assert!(!pair_hidden(None, pair, (false, false)));
    }
}
