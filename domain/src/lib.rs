//! The relations service's domain: who follows and blocks whom, and what a command may change.
//!
//! Aggregates take commands, decide, and emit past-tense events; `apply` only folds events.
//! Everything here is pure and synchronous. This crate must not depend on an async runtime, a
//! database, a cache or a web framework; the optional `cqrs` feature implements cqrs-es's traits
//! for the store, which brings tokio in through cqrs-es, and stays off for the domain's own use.

pub mod account;
pub mod bookmark;
pub mod event;
pub mod filters;
pub mod ids;
pub mod like;
pub mod lists;
pub mod notification_policy;
pub mod pair;
pub mod post;
pub mod privacy;
pub mod relation;
pub mod repost;
pub mod thread;
pub mod time;

#[cfg(feature = "cqrs")]
mod cqrs;

pub use account::{Account, AccountCommand, AccountError, AccountEvent, TokenStamp};
pub use bookmark::{Bookmark, BookmarkCommand, BookmarkError, BookmarkEvent, BookmarkServices};
pub use event::{DecodeError, LogEvent};
pub use filters::{
    BadFilterId, BadFilterName, BadPhrase, FilterAction, FilterCommand, FilterContext, FilterError,
    FilterEvent, FilterId, FilterSpec, Phrase, UserFilters,
};
pub use ids::{PairId, SelfRelation, UserId, UserIdError};
pub use like::{BadLikeTarget, Like, LikeCommand, LikeError, LikeEvent, LikeServices, LikeTarget};
pub use lists::{
    BadListId, BadListTitle, ListCommand, ListError, ListEvent, ListId, ListServices, ListState,
    ListTitle, UserLists,
};
pub use notification_policy::{BadDisposition, Disposition, NotificationPolicy};
pub use pair::{
    following_deltas, guarded_users, FollowBudget, RelationCommand, RelationError, RelationEvent,
    RelationPair, RequestEndCause, UnfollowCause,
};
pub use post::{
    BadCommentPolicy, BadPostId, BadQuotePolicy, BadVisibility, CommentPolicy, Post, PostCommand,
    PostContent, PostContentError, PostError, PostEvent, PostId, QuoteJudged, QuoteOf, QuotePolicy,
    Visibility,
};
pub use privacy::{Privacy, Reader};
pub use relation::{Facts, FollowPrefs, PrefsChange, Relation, RelationState};
pub use repost::{Repost, RepostCommand, RepostError, RepostEvent, RepostServices};
pub use thread::{
    BadCommentId, CommentAct, CommentId, CommentState, Thread, ThreadCommand, ThreadError,
    ThreadEvent, ThreadServices,
};
