//! Post commands: publish and delete, each on the post's own stream, appended in one
//! transaction with the idempotency answer.

use chrono::{DateTime, Utc};
use relations_domain::{Post, PostCommand, PostContent, PostId, UserId, Visibility};
use sqlx::PgPool;

use crate::error::StoreError;
use crate::executor::{Executed, Executor, Render, StoreCommand, Workers};
use crate::idempotency::Idempotency;
use crate::keys::Keyring;
use crate::metadata::EventMetadata;
use crate::position::LogPosition;
use crate::signal::CommitSignal;

/// A post published: what was decided, and where its event sits in the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Publication {
    /// The new post's id.
    pub post: PostId,
    /// Who wrote it.
    pub author: UserId,
    /// Its text.
    pub content: PostContent,
    /// Who may read it.
    pub visibility: Visibility,
    /// When it was written (to the microsecond, as PostgreSQL keeps it).
    pub created_at: DateTime<Utc>,
    /// Where its event sits in the log.
    pub position: LogPosition,
}

/// A post or a comment deleted: where the deletion sits in the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deletion {
    /// Where the deletion sits in the log.
    pub position: LogPosition,
}

/// What a post command decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PostOutcome {
    /// A publish.
    Published(Publication),
    /// A delete.
    Deleted(Deletion),
}

/// Carries out post commands against the event store.
#[derive(Clone)]
pub struct PostStore {
    executor: Executor<PostCommandOf>,
}

impl PostStore {
    /// A store on `pool` that wakes log readers through `signal` after each commit; `workers`
    /// groups of commands are decided at once, and an outcome is kept under its idempotency key
    /// as `render` gives it; content is sealed with `keys`. Starts its workers on the current
    /// runtime.
    pub fn new(
        pool: PgPool,
        keys: Keyring,
        signal: CommitSignal,
        workers: Workers,
        render: Render<PostOutcome>,
    ) -> Self {
        Self {
            executor: Executor::spawn(pool, Some(keys), signal, workers, render),
        }
    }

    /// Publishes a new post by `author`, readable as `visibility` says, made now.
    #[tracing::instrument(name = "command.execute", skip_all, fields(
        command = "publish_post", user.id = %author, post.id
    ))]
    pub async fn publish(
        &self,
        author: UserId,
        content: PostContent,
        visibility: Visibility,
        metadata: &EventMetadata,
        idempotency: Option<&Idempotency>,
    ) -> Result<Executed<Publication>, StoreError> {
        let post_id = PostId::from_uuid(uuid::Uuid::now_v7());
        tracing::Span::current().record("post.id", tracing::field::display(post_id));
        let command = PostCommand::Publish {
            post_id,
            author,
            content,
            visibility,
            created_at: crate::metadata::now(),
        };
        let command = PostCommandOf::new(command);
        let executed = self
            .executor
            .execute(command, metadata, idempotency)
            .await?;
        Ok(executed.map(|outcome| match outcome {
            PostOutcome::Published(publication) => publication,
            PostOutcome::Deleted(_) => unreachable!("a publish answers Published"),
        }))
    }

    /// The post as committed now: whether it is live and who wrote it (a check before a
    /// command that needs it: a comment), and its stream's version.
    pub async fn peek(&self, post_id: PostId) -> Result<(Post, usize), StoreError> {
        self.executor.peek(&post_id.to_string()).await
    }

    /// The post as this process last knew it, and its stream's version, with no round trip
    /// when it is cached: for a like, whose guard checks under lock that the post was not
    /// deleted since (see [`crate::PostAccess`]).
    pub async fn known(&self, post_id: PostId) -> Result<(Post, usize), StoreError> {
        self.executor.known(&post_id.to_string()).await
    }

    /// Deletes `post_id` on behalf of `actor` (rule 8: only its author).
    #[tracing::instrument(name = "command.execute", skip_all, fields(
        command = "delete_post", user.id = %actor, post.id = %post_id
    ))]
    pub async fn delete(
        &self,
        actor: UserId,
        post_id: PostId,
        metadata: &EventMetadata,
        idempotency: Option<&Idempotency>,
    ) -> Result<Executed<Deletion>, StoreError> {
        let command = PostCommandOf::new(PostCommand::Delete { post_id, actor });
        let executed = self
            .executor
            .execute(command, metadata, idempotency)
            .await?;
        Ok(executed.map(|outcome| match outcome {
            PostOutcome::Deleted(deletion) => deletion,
            PostOutcome::Published(_) => unreachable!("a delete answers Deleted"),
        }))
    }
}

/// A post command with its stream.
struct PostCommandOf {
    command: PostCommand,
    stream: String,
}

impl PostCommandOf {
    fn new(command: PostCommand) -> Self {
        Self {
            stream: command.post_id().to_string(),
            command,
        }
    }
}

impl StoreCommand for PostCommandOf {
    type Aggregate = Post;
    type Guard = ();
    type Outcome = PostOutcome;

    fn stream(&self) -> &str {
        &self.stream
    }

    fn actor(&self) -> UserId {
        self.command.actor()
    }

    fn users(&self) -> Vec<UserId> {
        vec![self.command.actor()]
    }

    fn command(&self) -> PostCommand {
        self.command.clone()
    }

    fn ask(&self) {}

    fn services(&self, _guard: &()) {}

    // A post command that is decided always appends (the aggregate refuses a no-op with an
    // error), so the position is never the default.
    fn outcome(&self, _post: &Post, position: Option<LogPosition>) -> PostOutcome {
        let position = position.unwrap_or_default();
        match &self.command {
            PostCommand::Publish {
                post_id,
                author,
                content,
                visibility,
                created_at,
            } => PostOutcome::Published(Publication {
                post: *post_id,
                author: *author,
                content: content.clone(),
                visibility: *visibility,
                created_at: *created_at,
                position,
            }),
            PostCommand::Delete { .. } => PostOutcome::Deleted(Deletion { position }),
        }
    }
}
