//! Comments and likes (seed 002): commands on a post's `thread` stream and on `like` streams,
//! through the same group-commit executor as every other command. Each locks and folds the
//! relation pair between the actor and the author in its transaction, so a block and a comment
//! or like never pass each other.

use chrono::{DateTime, Utc};
use relations_domain::{
    CommentId, Like, LikeCommand, LikeServices, PairId, PostContent, PostId, Thread, ThreadCommand,
    ThreadServices, UserId,
};
use serde::Serialize;
use sqlx::PgPool;

use crate::command::{Executed, Executor, Guards, StoreCommand};
use crate::error::StoreError;
use crate::idempotency::Idempotency;
use crate::metadata::EventMetadata;
use crate::position::LogPosition;
use crate::signal::CommitSignal;

/// SPEC.md's `Comment`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CommentView {
    /// `"{post id}.{n}"`.
    pub id: CommentId,
    /// The post.
    pub post: PostId,
    /// Who wrote it.
    pub author: UserId,
    /// The comment replied to.
    pub parent: Option<CommentId>,
    /// Its text; null once deleted.
    pub content: Option<String>,
    /// When it was written.
    pub created_at: DateTime<Utc>,
    /// Likes.
    pub like_count: i64,
    /// Replies the replies list shows.
    pub reply_count: i64,
    /// Pinned by the post's author.
    pub pinned: bool,
    /// Deleted (shown only while replies remain).
    pub deleted: bool,
    /// Whether the bearer likes it (answers to a bearer token only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub liked: Option<bool>,
}

/// The answer to a new comment: `{comment, position}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Commented {
    /// The new comment.
    pub comment: CommentView,
    /// Where its event sits in the log.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub position: LogPosition,
}

/// The answer to a pin or unpin: `{changed, pinned, position}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Pinned {
    /// Whether anything changed.
    pub changed: bool,
    /// Pinned now.
    pub pinned: bool,
    /// Where the event sits in the log; null when nothing changed.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub position: Option<LogPosition>,
}

/// The answer to a like or unlike: `{changed, liked, position}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Liking {
    /// Whether anything changed.
    pub changed: bool,
    /// Liked now.
    pub liked: bool,
    /// Where the event sits in the log; null when nothing changed.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub position: Option<LogPosition>,
}

/// What a thread command answers (serialised as the answer itself).
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum ThreadAnswer {
    /// A new comment.
    Commented(Commented),
    /// A deletion: `{position}`.
    Deleted(crate::posts::Deleted),
    /// A pin or unpin.
    Pinned(Pinned),
}

/// Carries out comment and like commands against the event store.
#[derive(Clone)]
pub struct EngagementStore {
    threads: Executor<ThreadCommandOf>,
    likes: Executor<LikeCommandOf>,
}

impl EngagementStore {
    /// A store on `pool`; see [`crate::PostStore::new`].
    pub fn new(pool: PgPool, signal: CommitSignal, workers: usize) -> Self {
        Self {
            threads: Executor::spawn(pool.clone(), signal.clone(), workers),
            likes: Executor::spawn(pool, signal, workers),
        }
    }

    /// The post's thread as committed now (for checks before a command: does the comment
    /// exist, who wrote it).
    pub async fn thread(&self, post: PostId) -> Result<Thread, StoreError> {
        self.threads.peek(&post.to_string()).await
    }

    /// Decides a thread command and appends its events.
    #[tracing::instrument(name = "command.execute", skip_all, fields(
        command = command.name(), user.id = %command.actor(), post.id = %command.post_id()
    ))]
    pub async fn thread_command(
        &self,
        command: ThreadCommand,
        metadata: &EventMetadata,
        idempotency: Option<&Idempotency>,
    ) -> Result<Executed<ThreadAnswer>, StoreError> {
        let command = ThreadCommandOf::new(command);
        self.threads.execute(command, metadata, idempotency).await
    }

    /// A new comment by `author` on `post` (by `post_author`), made now.
    #[allow(clippy::too_many_arguments)]
    pub async fn comment(
        &self,
        post: PostId,
        author: UserId,
        post_author: UserId,
        parent: Option<(u32, UserId)>,
        content: PostContent,
        metadata: &EventMetadata,
        idempotency: Option<&Idempotency>,
    ) -> Result<Executed<ThreadAnswer>, StoreError> {
        // Microseconds: what PostgreSQL keeps, so every read model shows the same instant.
        let now = Utc::now();
        let created_at = DateTime::from_timestamp_micros(now.timestamp_micros()).unwrap_or(now);
        let command = ThreadCommand::Add {
            post_id: post,
            author,
            post_author,
            parent: parent.map(|p| p.0),
            parent_author: parent.map(|p| p.1),
            content,
            created_at,
        };
        self.thread_command(command, metadata, idempotency).await
    }

    /// Decides a like or unlike and appends its event.
    #[tracing::instrument(name = "command.execute", skip_all, fields(
        command = command.name(), user.id = %command.user, target = %command.target
    ))]
    pub async fn like(
        &self,
        command: LikeCommand,
        metadata: &EventMetadata,
        idempotency: Option<&Idempotency>,
    ) -> Result<Executed<Liking>, StoreError> {
        let command = LikeCommandOf {
            stream: command.stream(),
            command,
        };
        self.likes.execute(command, metadata, idempotency).await
    }
}

/// Whether a block stands, either way, between `a` and any of `others` (none between a user
/// and themselves).
fn blocked(guards: &Guards, a: UserId, others: impl IntoIterator<Item = UserId>) -> bool {
    others.into_iter().any(|b| {
        let Ok(pair) = PairId::new(a, b) else {
            return false;
        };
        guards.pairs.get(&pair.stream_id()).is_some_and(|p| {
            let facts = p.facts(a, b);
            facts.blocking || facts.blocked_by
        })
    })
}

struct ThreadCommandOf {
    command: ThreadCommand,
    stream: String,
}

impl ThreadCommandOf {
    fn new(command: ThreadCommand) -> Self {
        Self {
            stream: command.post_id().to_string(),
            command,
        }
    }
}

impl StoreCommand for ThreadCommandOf {
    type Aggregate = Thread;
    type Answer = ThreadAnswer;

    fn stream(&self) -> &str {
        &self.stream
    }

    fn actor(&self) -> UserId {
        self.command.actor()
    }

    fn command(&self) -> ThreadCommand {
        self.command.clone()
    }

    fn status(&self) -> u16 {
        match self.command {
            ThreadCommand::Add { .. } => 201,
            _ => 200,
        }
    }

    /// A new comment reads whether a block stands between the commenter and the post's
    /// author, or the author of the comment replied to.
    fn pairs(&self) -> Vec<PairId> {
        let actor = self.command.actor();
        self.command
            .interacts_with()
            .into_iter()
            .filter_map(|other| PairId::new(actor, other).ok())
            .collect()
    }

    fn services(&self, guards: &Guards) -> ThreadServices {
        ThreadServices {
            blocked: blocked(guards, self.command.actor(), self.command.interacts_with()),
        }
    }

    fn answer(&self, thread: &Thread, position: Option<LogPosition>) -> ThreadAnswer {
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
                ThreadAnswer::Commented(Commented {
                    comment: CommentView {
                        id: CommentId { post: *post_id, n },
                        post: *post_id,
                        author: *author,
                        parent: parent.map(|n| CommentId { post: *post_id, n }),
                        content: Some(content.as_str().to_owned()),
                        created_at: *created_at,
                        like_count: 0,
                        reply_count: 0,
                        pinned: false,
                        deleted: false,
                        liked: Some(false),
                    },
                    position: position_or_start,
                })
            }
            ThreadCommand::Delete { .. } => ThreadAnswer::Deleted(crate::posts::Deleted {
                position: position_or_start,
            }),
            ThreadCommand::Pin { pinned, .. } => ThreadAnswer::Pinned(Pinned {
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
}

impl StoreCommand for LikeCommandOf {
    type Aggregate = Like;
    type Answer = Liking;

    fn stream(&self) -> &str {
        &self.stream
    }

    fn actor(&self) -> UserId {
        self.command.user
    }

    fn command(&self) -> LikeCommand {
        self.command
    }

    fn pairs(&self) -> Vec<PairId> {
        PairId::new(self.command.user, self.command.author)
            .into_iter()
            .collect()
    }

    fn services(&self, guards: &Guards) -> LikeServices {
        LikeServices {
            blocked: blocked(guards, self.command.user, [self.command.author]),
        }
    }

    fn answer(&self, like: &Like, position: Option<LogPosition>) -> Liking {
        Liking {
            changed: position.is_some(),
            liked: like.liked,
            position,
        }
    }
}
