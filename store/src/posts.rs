//! Post commands: publish and delete, each on the post's own stream, appended in one
//! transaction with the idempotency answer.

use chrono::{DateTime, Utc};
use relations_domain::{Post, PostCommand, PostContent, PostId, UserId};
use serde::Serialize;
use sqlx::PgPool;

use crate::command::{Executed, Executor, Guards, StoreCommand};
use crate::error::StoreError;
use crate::idempotency::Idempotency;
use crate::metadata::EventMetadata;
use crate::position::LogPosition;
use crate::signal::CommitSignal;

/// A post as the API shows it (SPEC.md's `Post`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PostView {
    /// The post's id.
    pub id: PostId,
    /// Who wrote it.
    pub author: UserId,
    /// Its text.
    pub content: String,
    /// When it was written.
    pub created_at: DateTime<Utc>,
    /// Likes (projector `engagement`).
    pub like_count: i64,
    /// Live comments, replies included (projector `engagement`).
    pub comment_count: i64,
    /// Whether the bearer likes it (answers to a bearer token only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub liked: Option<bool>,
}

/// The answer to a publish: `{post, position}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Published {
    /// The new post.
    pub post: PostView,
    /// Where its event sits in the log.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub position: LogPosition,
}

/// The answer to a delete: `{position}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Deleted {
    /// Where the deletion sits in the log.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub position: LogPosition,
}

/// Carries out post commands against the event store.
#[derive(Clone)]
pub struct PostStore {
    executor: Executor<PostCommandOf>,
}

impl PostStore {
    /// A store on `pool` that wakes log readers through `signal` after each commit; `workers`
    /// groups of commands are decided at once. Starts its workers on the current runtime.
    pub fn new(pool: PgPool, signal: CommitSignal, workers: usize) -> Self {
        Self {
            executor: Executor::spawn(pool, signal, workers),
        }
    }

    /// Publishes a new post by `author`, made now.
    #[tracing::instrument(name = "command.execute", skip_all, fields(
        command = "publish_post", user.id = %author, post.id
    ))]
    pub async fn publish(
        &self,
        author: UserId,
        content: PostContent,
        metadata: &EventMetadata,
        idempotency: Option<&Idempotency>,
    ) -> Result<Executed<Published>, StoreError> {
        let post_id = PostId::from_uuid(uuid::Uuid::now_v7());
        tracing::Span::current().record("post.id", tracing::field::display(post_id));
        // Microseconds: what PostgreSQL keeps, so every read model shows the same instant.
        let now = Utc::now();
        let created_at = DateTime::from_timestamp_micros(now.timestamp_micros()).unwrap_or(now);
        let post = PostView {
            id: post_id,
            author,
            content: content.as_str().to_owned(),
            created_at,
            like_count: 0,
            comment_count: 0,
            liked: Some(false),
        };
        let command = PostCommand::Publish {
            post_id,
            author,
            content,
            created_at,
        };
        let command = PostCommandOf::new(command, Some(post));
        match self
            .executor
            .execute(command, metadata, idempotency)
            .await?
        {
            Executed::Fresh(PostAnswer::Published(published)) => Ok(Executed::Fresh(published)),
            Executed::Replayed(stored) => Ok(Executed::Replayed(stored)),
            Executed::Fresh(PostAnswer::Deleted(_)) => unreachable!("a publish answers Published"),
        }
    }

    /// The post as committed now: whether it is live and who wrote it (a check before a
    /// command that needs it: a comment, a like).
    pub async fn peek(&self, post_id: PostId) -> Result<Post, StoreError> {
        self.executor.peek(&post_id.to_string()).await
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
    ) -> Result<Executed<Deleted>, StoreError> {
        let command = PostCommandOf::new(PostCommand::Delete { post_id, actor }, None);
        match self
            .executor
            .execute(command, metadata, idempotency)
            .await?
        {
            Executed::Fresh(PostAnswer::Deleted(deleted)) => Ok(Executed::Fresh(deleted)),
            Executed::Replayed(stored) => Ok(Executed::Replayed(stored)),
            Executed::Fresh(PostAnswer::Published(_)) => unreachable!("a delete answers Deleted"),
        }
    }
}

/// A post command with its stream, and for a publish the view it answers.
struct PostCommandOf {
    command: PostCommand,
    stream: String,
    published: Option<PostView>,
}

impl PostCommandOf {
    fn new(command: PostCommand, published: Option<PostView>) -> Self {
        Self {
            stream: command.post_id().to_string(),
            command,
            published,
        }
    }
}

/// What a post command answers (serialised as the answer itself).
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
enum PostAnswer {
    Published(Published),
    Deleted(Deleted),
}

impl StoreCommand for PostCommandOf {
    type Aggregate = Post;
    type Answer = PostAnswer;

    fn stream(&self) -> &str {
        &self.stream
    }

    fn actor(&self) -> UserId {
        self.command.actor()
    }

    fn command(&self) -> PostCommand {
        self.command.clone()
    }

    fn status(&self) -> u16 {
        match self.published {
            Some(_) => 201,
            None => 200,
        }
    }

    fn services(&self, _guards: &Guards) {}

    // A post command that is decided always appends (the aggregate refuses a no-op with an
    // error), so the position is never the default.
    fn answer(&self, _post: &Post, position: Option<LogPosition>) -> PostAnswer {
        let position = position.unwrap_or_default();
        match &self.published {
            Some(post) => PostAnswer::Published(Published {
                post: post.clone(),
                position,
            }),
            None => PostAnswer::Deleted(Deleted { position }),
        }
    }
}
