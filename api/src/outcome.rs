//! What a command's answer looks like: the view the API shows of each outcome the store
//! decided, with its status ([`Answer`]), and how it is kept under an Idempotency-Key
//! ([`render`]) so that a retry is given the first answer again, status and body as they were.
//!
//! What is kept is exactly what a fresh answer serialises to, so an answer stored by an
//! earlier build replays unchanged.

use axum::http::StatusCode;
use relations_domain::Relation;
use relations_projections::views::{CommentView, PostView, QuoteView};
use relations_store::{
    AccountOutcome, BookmarkChange, Deletion, LikeChange, ListChange, LogPosition, NewComment,
    PinChange, PostChange, PostOutcome, Publication, RelationDecision, RepostChange, StoredAnswer,
    ThreadOutcome,
};
use serde::Serialize;
use utoipa::ToSchema;

/// A view a command answers with, and the status it is answered with.
pub trait Answer: Serialize {
    /// The status of a fresh answer (and of its replays).
    fn status(&self) -> StatusCode {
        StatusCode::OK
    }
}

/// `outcome` as the answer kept under its Idempotency-Key: the view `A`'s status and body.
pub fn render<O: Clone, A: Answer + From<O>>(outcome: &O) -> StoredAnswer {
    let answer = A::from(outcome.clone());
    StoredAnswer {
        code: answer.status().as_u16(),
        body: serde_json::to_value(&answer).expect("an answer serialises"),
    }
}

/// The answer to a publish: `{post, position}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Published {
    /// The new post.
    pub post: PostView,
    /// Where its event sits in the log.
    #[schema(value_type = String)]
    pub position: LogPosition,
}

impl From<Publication> for Published {
    fn from(publication: Publication) -> Self {
        Self {
            post: PostView {
                id: publication.post,
                author: publication.author,
                content: publication.content.as_str().to_owned(),
                created_at: publication.created_at,
                visibility: publication.visibility,
                like_count: 0,
                comment_count: 0,
                liked: Some(false),
                repost_count: 0,
                reposted: Some(false),
                reposted_by: None,
                bookmarked: Some(false),
                quote_policy: publication.quote_policy,
                comment_policy: publication.comment_policy,
                quote_count: 0,
                // The handler shows the quoted post as the author may see it (and a replay,
                // as they may see it then): `routes::posts::publish`.
                quote: QuoteView::pending(publication.quote_of.map(|q| q.post), false),
                filtered: None,
            },
            position: publication.position,
        }
    }
}

impl Answer for Published {
    fn status(&self) -> StatusCode {
        StatusCode::CREATED
    }
}

/// The answer to a delete (of a post or a comment): `{position}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Deleted {
    /// Where the deletion sits in the log.
    #[schema(value_type = String)]
    pub position: LogPosition,
}

impl From<Deletion> for Deleted {
    fn from(deletion: Deletion) -> Self {
        Self {
            position: deletion.position,
        }
    }
}

impl Answer for Deleted {}

/// What a post command answers (serialised as the answer itself).
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum PostAnswer {
    /// A publish.
    Published(Published),
    /// A delete.
    Deleted(Deleted),
    /// A quote policy set, a quote detached.
    Changed(Changed),
}

impl From<PostOutcome> for PostAnswer {
    fn from(outcome: PostOutcome) -> Self {
        match outcome {
            PostOutcome::Published(publication) => Self::Published(publication.into()),
            PostOutcome::Deleted(deletion) => Self::Deleted(deletion.into()),
            PostOutcome::Changed(change) => Self::Changed(change.into()),
        }
    }
}

impl Answer for PostAnswer {
    fn status(&self) -> StatusCode {
        match self {
            Self::Published(published) => published.status(),
            Self::Deleted(deleted) => deleted.status(),
            Self::Changed(changed) => changed.status(),
        }
    }
}

/// The answer to a change that may change nothing (issue 44's quote policy and detach):
/// `{changed, position}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Changed {
    /// Whether anything changed.
    pub changed: bool,
    /// Where the event sits in the log; null when nothing changed.
    #[schema(value_type = Option<String>)]
    pub position: Option<LogPosition>,
}

impl From<PostChange> for Changed {
    fn from(change: PostChange) -> Self {
        Self {
            changed: change.changed,
            position: change.position,
        }
    }
}

impl From<RelationDecision> for Changed {
    fn from(decision: RelationDecision) -> Self {
        Self {
            changed: decision.changed,
            position: decision.position,
        }
    }
}

impl Answer for Changed {}

/// How the relation store keeps each of its outcomes under its idempotency key: a dismissed
/// suggestion's as `{changed, position}` (SPEC), every other command's as
/// `{changed, relation, position}`.
pub fn render_relation(decision: &RelationDecision) -> StoredAnswer {
    match decision.command {
        relations_domain::RelationCommand::Dismiss { .. } => render::<_, Changed>(decision),
        _ => render::<_, RelationOutcome>(decision),
    }
}

/// The answer to a new comment: `{comment, position}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Commented {
    /// The new comment.
    pub comment: CommentView,
    /// Where its event sits in the log.
    #[schema(value_type = String)]
    pub position: LogPosition,
}

impl From<NewComment> for Commented {
    fn from(new: NewComment) -> Self {
        Self {
            comment: CommentView {
                id: new.comment,
                post: new.comment.post,
                author: new.author,
                parent: new.parent,
                content: Some(new.content.as_str().to_owned()),
                created_at: new.created_at,
                like_count: 0,
                reply_count: 0,
                pinned: false,
                deleted: false,
                liked: Some(false),
                filtered: None,
            },
            position: new.position,
        }
    }
}

impl Answer for Commented {
    fn status(&self) -> StatusCode {
        StatusCode::CREATED
    }
}

/// The answer to a pin or unpin: `{changed, pinned, position}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Pinned {
    /// Whether anything changed.
    pub changed: bool,
    /// Pinned now.
    pub pinned: bool,
    /// Where the event sits in the log; null when nothing changed.
    #[schema(value_type = Option<String>)]
    pub position: Option<LogPosition>,
}

impl From<PinChange> for Pinned {
    fn from(change: PinChange) -> Self {
        Self {
            changed: change.changed,
            pinned: change.pinned,
            position: change.position,
        }
    }
}

impl Answer for Pinned {}

/// What a thread command answers (serialised as the answer itself).
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum ThreadAnswer {
    /// A new comment.
    Commented(Commented),
    /// A deletion: `{position}`.
    Deleted(Deleted),
    /// A pin or unpin.
    Pinned(Pinned),
}

impl From<ThreadOutcome> for ThreadAnswer {
    fn from(outcome: ThreadOutcome) -> Self {
        match outcome {
            ThreadOutcome::Commented(new) => Self::Commented(new.into()),
            ThreadOutcome::Deleted(deletion) => Self::Deleted(deletion.into()),
            ThreadOutcome::Pinned(change) => Self::Pinned(change.into()),
        }
    }
}

impl Answer for ThreadAnswer {
    fn status(&self) -> StatusCode {
        match self {
            Self::Commented(commented) => commented.status(),
            Self::Deleted(deleted) => deleted.status(),
            Self::Pinned(pinned) => pinned.status(),
        }
    }
}

/// The answer to a like or unlike: `{changed, liked, position}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Liking {
    /// Whether anything changed.
    pub changed: bool,
    /// Liked now.
    pub liked: bool,
    /// Where the event sits in the log; null when nothing changed.
    #[schema(value_type = Option<String>)]
    pub position: Option<LogPosition>,
}

impl From<LikeChange> for Liking {
    fn from(change: LikeChange) -> Self {
        Self {
            changed: change.changed,
            liked: change.liked,
            position: change.position,
        }
    }
}

impl Answer for Liking {}

/// The answer to a repost or unrepost: `{changed, reposted, position}` (issue 44).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Reposting {
    /// Whether anything changed.
    pub changed: bool,
    /// Reposted now.
    pub reposted: bool,
    /// Where the event sits in the log; null when nothing changed.
    #[schema(value_type = Option<String>)]
    pub position: Option<LogPosition>,
}

impl From<RepostChange> for Reposting {
    fn from(change: RepostChange) -> Self {
        Self {
            changed: change.changed,
            reposted: change.reposted,
            position: change.position,
        }
    }
}

impl Answer for Reposting {}

/// The answer to a bookmark or unbookmark: `{changed, bookmarked, position}` (issue 46).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Bookmarking {
    /// Whether anything changed.
    pub changed: bool,
    /// Bookmarked now.
    pub bookmarked: bool,
    /// Where the event sits in the log; null when nothing changed.
    #[schema(value_type = Option<String>)]
    pub position: Option<LogPosition>,
}

impl From<BookmarkChange> for Bookmarking {
    fn from(change: BookmarkChange) -> Self {
        Self {
            changed: change.changed,
            bookmarked: change.bookmarked,
            position: change.position,
        }
    }
}

impl Answer for Bookmarking {}

/// How the engagement store keeps each of its outcomes under its idempotency key.
pub fn engagement_renders() -> relations_store::EngagementRenders {
    relations_store::EngagementRenders {
        threads: render::<_, ThreadAnswer>,
        likes: render::<_, Liking>,
        reposts: render::<_, Reposting>,
        bookmarks: render::<_, Bookmarking>,
    }
}

/// The answer to a relation command (SPEC.md: `{changed, relation, position}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct RelationOutcome {
    /// Whether any event was appended.
    pub changed: bool,
    /// The actor's relation to the target as the decision left it.
    pub relation: Relation,
    /// Where the appended events ended in the log; null when nothing changed.
    #[schema(value_type = Option<String>)]
    pub position: Option<LogPosition>,
}

impl From<RelationDecision> for RelationOutcome {
    fn from(change: RelationDecision) -> Self {
        Self {
            changed: change.changed,
            relation: change.relation,
            position: change.position,
        }
    }
}

impl Answer for RelationOutcome {}

/// The answer to an account command: `{changed, position}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct AccountChange {
    /// Whether the command changed the account (a lower revocation, a second ban or an unban of
    /// someone not banned change nothing).
    pub changed: bool,
    /// Where its event sits in the log; null when nothing changed.
    #[schema(value_type = Option<String>)]
    pub position: Option<LogPosition>,
}

impl From<AccountOutcome> for AccountChange {
    fn from(outcome: AccountOutcome) -> Self {
        Self {
            changed: outcome.changed,
            position: outcome.position,
        }
    }
}

impl Answer for AccountChange {}

/// The answer to `PUT /me/settings`: `{locked, position}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Settings {
    /// Whether the account approves its followers (and its posts are for them).
    pub locked: bool,
    /// Whether the account's graph is hidden (issue 26).
    pub hide_graph: bool,
    /// Where the last event of the change sits in the log; null when nothing changed.
    #[schema(value_type = Option<String>)]
    pub position: Option<LogPosition>,
}

/// A list as the API shows it (issue 46): `{id, title, exclusive, members, created_at}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct ListView {
    /// Its id.
    #[schema(value_type = String)]
    pub id: relations_domain::ListId,
    /// Its title.
    pub title: String,
    /// Whether its members leave the owner's home feed.
    pub exclusive: bool,
    /// How many members it has.
    pub members: i64,
    /// When it was made.
    pub created_at: chrono::DateTime<chrono::Utc>,
}

/// The answer to a list's creation or change: `{list, position}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct ListAnswer {
    /// The list as the command left it.
    pub list: ListView,
    /// Where the event sits in the log; null when nothing changed.
    #[schema(value_type = Option<String>)]
    pub position: Option<LogPosition>,
}

/// The answer to a members call: `{changed, position}`, `changed` the number of members
/// added or removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct MembersChanged {
    /// How many members were added or removed.
    pub changed: usize,
    /// Where the event sits in the log; null when nothing changed.
    #[schema(value_type = Option<String>)]
    pub position: Option<LogPosition>,
}

/// What a list command answers (serialised as the answer itself).
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum ListOutcome {
    /// A creation (201).
    Made(ListAnswer),
    /// A change.
    Changed(ListAnswer),
    /// A deletion: `{position}`.
    Deleted {
        /// Where the deletion sits in the log.
        position: Option<LogPosition>,
    },
    /// A members call.
    Members(MembersChanged),
}

impl From<ListChange> for ListOutcome {
    fn from(change: ListChange) -> Self {
        let ListChange {
            command,
            list,
            state,
            members,
            changed,
            position,
        } = change;
        match (command, state) {
            ("add_list_members" | "remove_list_members", _) => {
                Self::Members(MembersChanged { changed, position })
            }
            (verb, Some(state)) => {
                let answer = ListAnswer {
                    list: ListView {
                        id: list,
                        title: state.title,
                        exclusive: state.exclusive,
                        members,
                        created_at: state.created_at,
                    },
                    position,
                };
                match verb {
                    "create_list" => Self::Made(answer),
                    _ => Self::Changed(answer),
                }
            }
            (_, None) => Self::Deleted { position },
        }
    }
}

impl Answer for ListOutcome {
    fn status(&self) -> StatusCode {
        match self {
            Self::Made(_) => StatusCode::CREATED,
            Self::Changed(_) | Self::Deleted { .. } | Self::Members(_) => StatusCode::OK,
        }
    }
}

/// A filter as the API shows it (issue 47): the body it was made with, with its `id` and
/// `expires_at`; `expires_in_secs` is what is left of it at the answer (as asked, at its
/// creation), null when it never ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct FilterView {
    /// Its id.
    #[schema(value_type = String)]
    pub id: relations_domain::FilterId,
    /// What it matches.
    pub phrase: String,
    /// Only at word boundaries.
    pub whole_word: bool,
    /// Where it applies.
    pub contexts: Vec<relations_domain::FilterContext>,
    /// What it does.
    pub action: relations_domain::FilterAction,
    /// Seconds until it ends by itself (rounded up), null when never.
    pub expires_in_secs: Option<i64>,
    /// When it ends by itself, null when never.
    pub expires_at: Option<chrono::DateTime<chrono::Utc>>,
}

impl FilterView {
    /// A filter's view at `now`.
    pub fn at(
        id: relations_domain::FilterId,
        phrase: String,
        whole_word: bool,
        contexts: impl IntoIterator<Item = relations_domain::FilterContext>,
        action: relations_domain::FilterAction,
        expires_at: Option<chrono::DateTime<chrono::Utc>>,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Self {
        let left = |end: chrono::DateTime<chrono::Utc>| {
            let micros = (end - now).num_microseconds().unwrap_or(i64::MAX);
            (micros.max(0) + 999_999) / 1_000_000
        };
        Self {
            id,
            phrase,
            whole_word,
            contexts: contexts.into_iter().collect(),
            action,
            expires_in_secs: expires_at.map(left),
            expires_at,
        }
    }
}

/// The answer to a filter's creation: `{filter, position}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct FilterAnswer {
    /// The new filter.
    pub filter: FilterView,
    /// Where the event sits in the log.
    #[schema(value_type = Option<String>)]
    pub position: Option<LogPosition>,
}

/// What a filter command answers (serialised as the answer itself).
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum FilterOutcome {
    /// A creation (201).
    Made(FilterAnswer),
    /// A deletion: `{position}`.
    Deleted {
        /// Where the deletion sits in the log.
        position: Option<LogPosition>,
    },
}

impl From<relations_store::FilterChange> for FilterOutcome {
    fn from(change: relations_store::FilterChange) -> Self {
        match change.created {
            Some((spec, at)) => Self::Made(FilterAnswer {
                filter: FilterView::at(
                    change.filter,
                    spec.phrase.as_str().to_owned(),
                    spec.whole_word,
                    spec.contexts,
                    spec.action,
                    spec.expires_at,
                    at,
                ),
                position: change.position,
            }),
            None => Self::Deleted {
                position: change.position,
            },
        }
    }
}

impl Answer for FilterOutcome {
    fn status(&self) -> StatusCode {
        match self {
            Self::Made(_) => StatusCode::CREATED,
            Self::Deleted { .. } => StatusCode::OK,
        }
    }
}
