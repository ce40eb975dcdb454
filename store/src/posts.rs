//! Post commands: publish and delete, each on the post's own stream, appended in one
//! transaction with the idempotency answer.

use chrono::{DateTime, Utc};
use cqrs_es::event_sink::EventSink;
use cqrs_es::Aggregate;
use postgres_es::PostgresEventRepository;
use relations_domain::{Post, PostCommand, PostContent, PostEvent, PostId, UserId};
use serde::Serialize;
use sqlx::{PgConnection, PgPool};

use crate::append::{append, load, Loaded};
use crate::command::{finish, Attempt, Executed, MAX_ATTEMPTS};
use crate::error::StoreError;
use crate::idempotency::{self, Idempotency};
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
    pool: PgPool,
    signal: CommitSignal,
}

impl PostStore {
    /// A store on `pool` that wakes log readers through `signal` after each commit.
    pub fn new(pool: PgPool, signal: CommitSignal) -> Self {
        Self { pool, signal }
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
        let view = PostView {
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
        self.execute(command, metadata, idempotency, 201, |position| Published {
            post: view.clone(),
            position,
        })
        .await
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
        let command = PostCommand::Delete { post_id, actor };
        self.execute(command, metadata, idempotency, 200, |position| Deleted {
            position,
        })
        .await
    }

    async fn execute<T: Serialize>(
        &self,
        command: PostCommand,
        metadata: &EventMetadata,
        idempotency: Option<&Idempotency>,
        status: u16,
        answer: impl Fn(LogPosition) -> T,
    ) -> Result<Executed<T>, StoreError> {
        let repo = PostgresEventRepository::new(self.pool.clone());
        let stream = command.post_id().to_string();
        for round in 1..=MAX_ATTEMPTS {
            let loaded = load::<Post>(&repo, &stream).await?;
            let mut tx = self.pool.begin().await?;
            let result = attempt(&mut tx, &command, &stream, loaded, metadata, idempotency)
                .await
                .map(|decided| decided.map(&answer));
            let result = match result {
                Ok(Attempt::Decided(outcome)) => match idempotency {
                    Some(idem) => {
                        idempotency::record(&mut tx, command.actor(), idem, status, &outcome)
                            .await
                            .map(|()| Attempt::Decided(outcome))
                    }
                    None => Ok(Attempt::Decided(outcome)),
                },
                other => other,
            };
            if let Some(done) = finish(tx, result, round, &self.signal).await? {
                return Ok(done);
            }
        }
        unreachable!("finish gives up after MAX_ATTEMPTS")
    }
}

/// One attempt inside `tx`: claim the idempotency key, decide, append.
async fn attempt(
    tx: &mut PgConnection,
    command: &PostCommand,
    stream: &str,
    loaded: Loaded<Post>,
    metadata: &EventMetadata,
    idempotency: Option<&Idempotency>,
) -> Result<Attempt<LogPosition>, StoreError> {
    if let Some(idem) = idempotency {
        if let Some(stored) = idempotency::claim(tx, command.actor(), idem).await? {
            return Ok(Attempt::Replayed(stored));
        }
    }
    let mut post = loaded.aggregate;
    let sink = EventSink::default();
    post.handle(command.clone(), &(), &sink).await?;
    let events: Vec<PostEvent> = sink.collect().await;
    Ok(
        match append::<Post>(tx, stream, loaded.version, &events, metadata).await? {
            Ok(position) => Attempt::Decided(position),
            Err(_conflict) => Attempt::Conflict,
        },
    )
}
