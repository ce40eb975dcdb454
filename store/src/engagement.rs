//! Comments and likes (seed 002), reposts (issue 44), bookmarks (issue 46): commands on a
//! post's `thread` stream and on `like`, `repost` and `bookmark` streams,
//! through the same group-commit executor as every other command. Each locks and folds the
//! relation pair between the actor and the author in its transaction, so a block and a comment
//! or like never pass each other.

use chrono::{DateTime, Utc};
use relations_domain::{
    Bookmark, BookmarkCommand, BookmarkServices, CommentId, Like, LikeCommand, LikeServices,
    LikeTarget, PairId, PostContent, PostId, Repost, RepostCommand, RepostServices, Thread,
    ThreadCommand, ThreadServices, UserId,
};
use sqlx::PgPool;

use crate::error::StoreError;
use crate::executor::{Executed, Executor, Render, StoreCommand, Workers};
pub use crate::guards::pairs::PostAccess;
use crate::guards::pairs::{PairAsk, PairGuard};
use crate::idempotency::Idempotency;
use crate::keys::Keyring;
use crate::metadata::EventMetadata;
use crate::position::LogPosition;
use crate::posts::Deletion;
use crate::signal::CommitSignal;

/// A comment added: what was decided, and where its event sits in the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewComment {
    /// The new comment's id.
    pub comment: CommentId,
    /// The comment it replies to.
    pub parent: Option<CommentId>,
    /// Who wrote it.
    pub author: UserId,
    /// Its text.
    pub content: PostContent,
    /// When it was written (to the microsecond, as PostgreSQL keeps it).
    pub created_at: DateTime<Utc>,
    /// Where its event sits in the log.
    pub position: LogPosition,
}

/// A pin or unpin decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinChange {
    /// Whether anything changed.
    pub changed: bool,
    /// Pinned now.
    pub pinned: bool,
    /// Where the event sits in the log; none when nothing changed.
    pub position: Option<LogPosition>,
}

/// A like or unlike decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LikeChange {
    /// Whether anything changed.
    pub changed: bool,
    /// Liked now.
    pub liked: bool,
    /// Where the event sits in the log; none when nothing changed.
    pub position: Option<LogPosition>,
}

/// A repost or unrepost decided (issue 44).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepostChange {
    /// Whether anything changed.
    pub changed: bool,
    /// Reposted now.
    pub reposted: bool,
    /// Where the event sits in the log; none when nothing changed.
    pub position: Option<LogPosition>,
}

/// A bookmark or unbookmark decided (issue 46).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BookmarkChange {
    /// Whether anything changed.
    pub changed: bool,
    /// Bookmarked now.
    pub bookmarked: bool,
    /// Where the event sits in the log; none when nothing changed.
    pub position: Option<LogPosition>,
}

/// What a thread command decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ThreadOutcome {
    /// A new comment.
    Commented(NewComment),
    /// A deletion.
    Deleted(Deletion),
    /// A pin or unpin.
    Pinned(PinChange),
}

/// Carries out comment, like, repost and bookmark commands against the event store.
#[derive(Clone)]
pub struct EngagementStore {
    threads: Executor<ThreadCommandOf>,
    likes: Executor<LikeCommandOf>,
    reposts: Executor<RepostCommandOf>,
    bookmarks: Executor<BookmarkCommandOf>,
}

/// How each kind of outcome is kept under its idempotency key.
pub struct EngagementRenders {
    /// Comments, deletions and pins.
    pub threads: Render<ThreadOutcome>,
    /// Likes and unlikes.
    pub likes: Render<LikeChange>,
    /// Reposts and unreposts.
    pub reposts: Render<RepostChange>,
    /// Bookmarks and unbookmarks.
    pub bookmarks: Render<BookmarkChange>,
}

impl EngagementStore {
    /// A store on `pool`; see [`crate::PostStore::new`]. Outcomes are kept under their
    /// idempotency keys as `renders` says; comments are sealed with `keys`.
    pub fn new(
        pool: PgPool,
        keys: Keyring,
        signal: CommitSignal,
        workers: Workers,
        renders: EngagementRenders,
    ) -> Self {
        let EngagementRenders {
            threads,
            likes,
            reposts,
            bookmarks,
        } = renders;
        Self {
            threads: Executor::spawn(pool.clone(), Some(keys), signal.clone(), workers, threads),
            likes: Executor::spawn(pool.clone(), None, signal.clone(), workers, likes),
            reposts: Executor::spawn(pool.clone(), None, signal.clone(), workers, reposts),
            bookmarks: Executor::spawn(pool, None, signal, workers, bookmarks),
        }
    }

    /// The post's thread as committed now, and its version (for checks before a command: does
    /// the comment exist, who wrote it).
    pub async fn thread(&self, post: PostId) -> Result<(Thread, usize), StoreError> {
        self.threads.peek(&post.to_string()).await
    }

    /// Decides a thread command on `post` and appends its events; a comment is refused as not
    /// found when its author may not read the post.
    #[tracing::instrument(name = "command.execute", skip_all, fields(
        command = command.name(), user.id = %command.actor(), post.id = %command.post_id()
    ))]
    pub async fn thread_command(
        &self,
        command: ThreadCommand,
        post: PostAccess,
        metadata: &EventMetadata,
        idempotency: Option<&Idempotency>,
    ) -> Result<Executed<ThreadOutcome>, StoreError> {
        let command = ThreadCommandOf::new(command, post);
        self.threads.execute(command, metadata, idempotency).await
    }

    /// A new comment by `author` on `post` (by `access.author`), made now.
    #[allow(clippy::too_many_arguments)]
    pub async fn comment(
        &self,
        post: PostId,
        author: UserId,
        access: PostAccess,
        parent: Option<(u32, UserId)>,
        content: PostContent,
        metadata: &EventMetadata,
        idempotency: Option<&Idempotency>,
    ) -> Result<Executed<ThreadOutcome>, StoreError> {
        let created_at = crate::metadata::now();
        let command = ThreadCommand::Add {
            post_id: post,
            author,
            post_author: access.author,
            parent: parent.map(|p| p.0),
            parent_author: parent.map(|p| p.1),
            content,
            created_at,
        };
        self.thread_command(command, access, metadata, idempotency)
            .await
    }

    /// Decides a like or unlike of something on `post` and appends its event; refused as not
    /// found when the user may not read the post, or when the comment liked, found live at
    /// version `thread_seen` of its thread, was deleted since.
    #[tracing::instrument(name = "command.execute", skip_all, fields(
        command = command.name(), user.id = %command.user, target = %command.target
    ))]
    pub async fn like(
        &self,
        command: LikeCommand,
        post: PostAccess,
        thread_seen: Option<usize>,
        metadata: &EventMetadata,
        idempotency: Option<&Idempotency>,
    ) -> Result<Executed<LikeChange>, StoreError> {
        let command = LikeCommandOf {
            stream: command.stream(),
            command,
            post,
            thread_seen,
        };
        self.likes.execute(command, metadata, idempotency).await
    }

    /// Decides a repost or unrepost of `post` (found live by the caller) and appends its
    /// event; refused as not found when the user may not read the post, as blocked across a
    /// block either way, as not repostable when the post is `followers` only or its author
    /// locked, each read under the pair's lock (issue 44).
    #[tracing::instrument(name = "command.execute", skip_all, fields(
        command = command.name(), user.id = %command.user, post.id = %command.post
    ))]
    pub async fn repost(
        &self,
        command: RepostCommand,
        post: PostAccess,
        metadata: &EventMetadata,
        idempotency: Option<&Idempotency>,
    ) -> Result<Executed<RepostChange>, StoreError> {
        let command = RepostCommandOf {
            stream: command.stream(),
            command,
            post,
        };
        self.reposts.execute(command, metadata, idempotency).await
    }

    /// Decides a bookmark or unbookmark of `post` (found live by the caller) and appends its
    /// event; refused as not found when the user may not read the post, as blocked across a
    /// block either way, each read under the pair's lock (issue 46; an unbookmark as a
    /// bookmark: [`Bookmark::decide`]).
    #[tracing::instrument(name = "command.execute", skip_all, fields(
        command = command.name(), user.id = %command.user, post.id = %command.post
    ))]
    pub async fn bookmark(
        &self,
        command: BookmarkCommand,
        post: PostAccess,
        metadata: &EventMetadata,
        idempotency: Option<&Idempotency>,
    ) -> Result<Executed<BookmarkChange>, StoreError> {
        let command = BookmarkCommandOf {
            stream: command.stream(),
            command,
            post,
        };
        self.bookmarks.execute(command, metadata, idempotency).await
    }
}

struct ThreadCommandOf {
    command: ThreadCommand,
    stream: String,
    post: PostAccess,
}

impl ThreadCommandOf {
    fn new(command: ThreadCommand, post: PostAccess) -> Self {
        Self {
            stream: command.post_id().to_string(),
            command,
            post,
        }
    }

    /// Only a new comment is refused on an unreadable post here (the API refuses the rest
    /// before they get here); the post's author is its pair's other user.
    fn adds(&self) -> bool {
        matches!(self.command, ThreadCommand::Add { .. })
    }
}

impl StoreCommand for ThreadCommandOf {
    type Aggregate = Thread;
    type Guard = PairGuard;
    type Outcome = ThreadOutcome;

    fn stream(&self) -> &str {
        &self.stream
    }

    fn actor(&self) -> UserId {
        self.command.actor()
    }

    fn users(&self) -> Vec<UserId> {
        self.command.users()
    }

    fn command(&self) -> ThreadCommand {
        self.command.clone()
    }

    /// A new comment reads whether a block stands between the commenter and the post's
    /// author, or the author of the comment replied to, and whether the commenter may read
    /// the post.
    fn ask(&self) -> PairAsk {
        let actor = self.command.actor();
        PairAsk {
            pairs: self
                .command
                .interacts_with()
                .into_iter()
                .filter_map(|other| PairId::new(actor, other).ok())
                .collect(),
            post: self.adds().then_some(self.post),
            comment: None,
        }
    }

    fn services(&self, guard: &PairGuard) -> ThreadServices {
        let actor = self.command.actor();
        ThreadServices {
            blocked: guard.blocked(actor, self.command.interacts_with()),
            unreadable: self.adds() && guard.unreadable(actor, self.post),
            restricted: self.adds() && guard.comments_restricted(actor, self.post),
        }
    }

    fn outcome(&self, thread: &Thread, position: Option<LogPosition>) -> ThreadOutcome {
        let position_or_start = position.unwrap_or_default();
        match &self.command {
            ThreadCommand::Add {
                post_id,
                author,
                parent,
                content,
                created_at,
                ..
            } => {
                // The decision appended this comment last.
                let n = thread.len() as u32;
                ThreadOutcome::Commented(NewComment {
                    comment: CommentId { post: *post_id, n },
                    parent: parent.map(|n| CommentId { post: *post_id, n }),
                    author: *author,
                    content: content.clone(),
                    created_at: *created_at,
                    position: position_or_start,
                })
            }
            ThreadCommand::Delete { .. } => ThreadOutcome::Deleted(Deletion {
                position: position_or_start,
            }),
            ThreadCommand::Pin { pinned, .. } => ThreadOutcome::Pinned(PinChange {
                changed: position.is_some(),
                pinned: *pinned,
                position,
            }),
        }
    }
}

struct LikeCommandOf {
    command: LikeCommand,
    stream: String,
    post: PostAccess,
    /// For a comment's like, the version of its thread the comment was found live at.
    thread_seen: Option<usize>,
}

impl LikeCommandOf {
    /// The comment liked, and the version of its thread it was found live at.
    fn comment(&self) -> Option<(CommentId, usize)> {
        match (self.command.target, self.thread_seen) {
            (LikeTarget::Comment(comment), Some(seen)) => Some((comment, seen)),
            _ => None,
        }
    }
}

impl StoreCommand for LikeCommandOf {
    type Aggregate = Like;
    type Guard = PairGuard;
    type Outcome = LikeChange;

    fn stream(&self) -> &str {
        &self.stream
    }

    fn actor(&self) -> UserId {
        self.command.user
    }

    /// The liker and the author of what is liked.
    fn users(&self) -> Vec<UserId> {
        vec![self.command.user, self.command.author]
    }

    fn command(&self) -> LikeCommand {
        self.command
    }

    /// A like reads whether a block stands between the liker and the author, and whether the
    /// liker may read the post (its author's pair: the same one for a post).
    fn ask(&self) -> PairAsk {
        let user = self.command.user;
        PairAsk {
            pairs: [self.command.author, self.post.author]
                .into_iter()
                .filter_map(|other| PairId::new(user, other).ok())
                .collect(),
            post: Some(self.post),
            comment: self.comment(),
        }
    }

    fn services(&self, guard: &PairGuard) -> LikeServices {
        LikeServices {
            blocked: guard.blocked(self.command.user, [self.command.author]),
            unreadable: guard.unreadable(self.command.user, self.post)
                || self.comment().is_some_and(|(c, _)| guard.comment_gone(c)),
        }
    }

    fn outcome(&self, like: &Like, position: Option<LogPosition>) -> LikeChange {
        LikeChange {
            changed: position.is_some(),
            liked: like.liked,
            position,
        }
    }
}

struct RepostCommandOf {
    command: RepostCommand,
    stream: String,
    post: PostAccess,
}

impl StoreCommand for RepostCommandOf {
    type Aggregate = Repost;
    type Guard = PairGuard;
    type Outcome = RepostChange;

    fn stream(&self) -> &str {
        &self.stream
    }

    fn actor(&self) -> UserId {
        self.command.user
    }

    /// The reposter and the author: an erased one is named, and refused.
    fn users(&self) -> Vec<UserId> {
        vec![self.command.user, self.command.author]
    }

    fn command(&self) -> RepostCommand {
        self.command
    }

    /// A repost reads the pair of reposter and author and the post ([`PairAsk::on_post`]).
    fn ask(&self) -> PairAsk {
        PairAsk::on_post(self.command.user, self.post)
    }

    fn services(&self, guard: &PairGuard) -> RepostServices {
        RepostServices {
            unreadable: guard.unreadable(self.command.user, self.post),
            blocked: guard.blocked(self.command.user, [self.command.author]),
            not_repostable: guard.not_repostable(self.post),
        }
    }

    fn outcome(&self, repost: &Repost, position: Option<LogPosition>) -> RepostChange {
        RepostChange {
            changed: position.is_some(),
            reposted: repost.reposted,
            position,
        }
    }
}

struct BookmarkCommandOf {
    command: BookmarkCommand,
    stream: String,
    post: PostAccess,
}

impl StoreCommand for BookmarkCommandOf {
    type Aggregate = Bookmark;
    type Guard = PairGuard;
    type Outcome = BookmarkChange;

    fn stream(&self) -> &str {
        &self.stream
    }

    fn actor(&self) -> UserId {
        self.command.user
    }

    /// The bookmarker and the author: an erased one is named, and refused.
    fn users(&self) -> Vec<UserId> {
        vec![self.command.user, self.command.author]
    }

    fn command(&self) -> BookmarkCommand {
        self.command
    }

    /// A bookmark reads the pair of bookmarker and author and the post, as a repost does.
    fn ask(&self) -> PairAsk {
        PairAsk::on_post(self.command.user, self.post)
    }

    fn services(&self, guard: &PairGuard) -> BookmarkServices {
        BookmarkServices {
            unreadable: guard.unreadable(self.command.user, self.post),
            blocked: guard.blocked(self.command.user, [self.command.author]),
        }
    }

    fn outcome(&self, bookmark: &Bookmark, position: Option<LogPosition>) -> BookmarkChange {
        BookmarkChange {
            changed: position.is_some(),
            bookmarked: bookmark.bookmarked,
            position,
        }
    }
}
