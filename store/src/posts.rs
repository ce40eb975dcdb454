//! Post commands: publish and delete, each on the post's own stream, appended in one
//! transaction with the idempotency answer.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use relations_domain::{Post, PostCommand, PostContent, PostId, UserId};
use serde::Serialize;
use sqlx::{PgConnection, PgPool};

use crate::command::{Executed, Executor, StoreCommand};
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
    executor: Executor,
}

impl PostStore {
    /// A store on `pool` that wakes log readers through `signal` after each commit.
    pub fn new(pool: PgPool, signal: CommitSignal) -> Self {
        Self {
            executor: Executor { pool, signal },
        }
    }

    /// Publishes a new post by `author`, made now.
    #[tracing::instrument(name = "command.execute", skip_all, fields(
        command = "publish_post", user.id = %author, post.id, attempts
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
        };
        let command = PostCommand::Publish {
            post_id,
            author,
            content,
            created_at,
        };
        let command = Publish { command, post };
        self.executor.execute(&command, metadata, idempotency).await
    }

    /// Deletes `post_id` on behalf of `actor` (rule 8: only its author).
    #[tracing::instrument(name = "command.execute", skip_all, fields(
        command = "delete_post", user.id = %actor, post.id = %post_id, attempts
    ))]
    pub async fn delete(
        &self,
        actor: UserId,
        post_id: PostId,
        metadata: &EventMetadata,
        idempotency: Option<&Idempotency>,
    ) -> Result<Executed<Deleted>, StoreError> {
        let command = Delete(PostCommand::Delete { post_id, actor });
        self.executor.execute(&command, metadata, idempotency).await
    }
}

/// A publish, with the view it answers.
struct Publish {
    command: PostCommand,
    post: PostView,
}

/// A delete.
struct Delete(PostCommand);

// A post command that is decided always appends (the aggregate refuses a no-op with an
// error), so the position below is never the default.

#[async_trait]
impl StoreCommand for Publish {
    type Aggregate = Post;
    type Answer = Published;

    fn stream(&self) -> String {
        self.command.post_id().to_string()
    }

    fn actor(&self) -> UserId {
        self.command.actor()
    }

    fn command(&self) -> PostCommand {
        self.command.clone()
    }

    fn status(&self) -> u16 {
        201
    }

    async fn prepare(&self, _conn: &mut PgConnection) -> Result<(), StoreError> {
        Ok(())
    }

    fn answer(&self, _post: &Post, position: Option<LogPosition>) -> Published {
        Published {
            post: self.post.clone(),
            position: position.unwrap_or_default(),
        }
    }
}

#[async_trait]
impl StoreCommand for Delete {
    type Aggregate = Post;
    type Answer = Deleted;

    fn stream(&self) -> String {
        self.0.post_id().to_string()
    }

    fn actor(&self) -> UserId {
        self.0.actor()
    }

    fn command(&self) -> PostCommand {
        self.0.clone()
    }

    async fn prepare(&self, _conn: &mut PgConnection) -> Result<(), StoreError> {
        Ok(())
    }

    fn answer(&self, _post: &Post, position: Option<LogPosition>) -> Deleted {
        Deleted {
            position: position.unwrap_or_default(),
        }
    }
}
