//! Post commands: publish and delete, each on the post's own stream, appended in one
//! transaction with the idempotency answer.

use chrono::{DateTime, Utc};
use relations_domain::{
    CommentPolicy, Post, PostCommand, PostContent, PostId, QuoteJudged, QuoteOf, QuotePolicy,
    UserId, Visibility,
};
use sqlx::PgPool;

use crate::error::StoreError;
use crate::executor::{Executed, Executor, Render, StoreCommand, Workers};
use crate::guards::pairs::{PairAsk, PairGuard, PostAccess};
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
    /// The post it quotes (issue 44).
    pub quote_of: Option<QuoteOf>,
    /// Who may quote it.
    pub quote_policy: QuotePolicy,
    /// Who may comment on it (issue 47).
    pub comment_policy: CommentPolicy,
    /// When it was written (to the microsecond, as PostgreSQL keeps it).
    pub created_at: DateTime<Utc>,
    /// Where its event sits in the log.
    pub position: LogPosition,
}

/// What a new post says beyond its text (issue 26's visibility, issue 44's quote).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PostOptions {
    /// Who may read it.
    pub visibility: Visibility,
    /// The post it quotes, as its author found it live and readable.
    pub quote_of: Option<PostAccess>,
    /// Who may quote it.
    pub quote_policy: QuotePolicy,
    /// Who may comment on it (issue 47).
    pub comment_policy: CommentPolicy,
}

/// A change to a post that may change nothing (a quote policy set, a quote detached).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostChange {
    /// Whether anything changed.
    pub changed: bool,
    /// Where the event sits in the log; none when nothing changed.
    pub position: Option<LogPosition>,
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
    /// A quote policy set or a quote detached.
    Changed(PostChange),
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

    /// Publishes a new post by `author` with `options`, made now. A quote is refused as not
    /// found when the author may not read the quoted post, as blocked across a block either
    /// way, as not quotable when its policy says no, each read under the pair's lock and the
    /// quoted post's stream (issue 44).
    #[tracing::instrument(name = "command.execute", skip_all, fields(
        command = "publish_post", user.id = %author, post.id
    ))]
    pub async fn publish(
        &self,
        author: UserId,
        content: PostContent,
        options: PostOptions,
        metadata: &EventMetadata,
        idempotency: Option<&Idempotency>,
    ) -> Result<Executed<Publication>, StoreError> {
        let post_id = PostId::from_uuid(uuid::Uuid::now_v7());
        tracing::Span::current().record("post.id", tracing::field::display(post_id));
        let command = PostCommand::Publish {
            post_id,
            author,
            content,
            visibility: options.visibility,
            created_at: crate::metadata::now(),
            quote_of: options.quote_of.map(|q| QuoteOf {
                post: q.post,
                author: q.author,
            }),
            quote_policy: options.quote_policy,
            comment_policy: options.comment_policy,
        };
        let mut command = PostCommandOf::new(command);
        command.quoted = options.quote_of;
        let executed = self
            .executor
            .execute(command, metadata, idempotency)
            .await?;
        Ok(executed.map(|outcome| match outcome {
            PostOutcome::Published(publication) => publication,
            _ => unreachable!("a publish answers Published"),
        }))
    }

    /// Sets who may quote `post_id` (its author only), or detaches its quote (the quoted
    /// post's author only): `command` is a `SetQuotePolicy`, a `SetCommentPolicy` or a `Detach`.
    #[tracing::instrument(name = "command.execute", skip_all, fields(
        command = command.name(), user.id = %command.actor(), post.id = %command.post_id()
    ))]
    pub async fn change(
        &self,
        command: PostCommand,
        metadata: &EventMetadata,
        idempotency: Option<&Idempotency>,
    ) -> Result<Executed<PostChange>, StoreError> {
        let command = PostCommandOf::new(command);
        let executed = self
            .executor
            .execute(command, metadata, idempotency)
            .await?;
        Ok(executed.map(|outcome| match outcome {
            PostOutcome::Changed(change) => change,
            _ => unreachable!("a policy change or a detach answers Changed"),
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
            _ => unreachable!("a delete answers Deleted"),
        }))
    }
}

/// A post command with its stream, and the post it quotes.
struct PostCommandOf {
    command: PostCommand,
    stream: String,
    quoted: Option<PostAccess>,
}

impl PostCommandOf {
    fn new(command: PostCommand) -> Self {
        Self {
            stream: command.post_id().to_string(),
            command,
            quoted: None,
        }
    }
}

impl StoreCommand for PostCommandOf {
    type Aggregate = Post;
    type Guard = PairGuard;
    type Outcome = PostOutcome;

    fn stream(&self) -> &str {
        &self.stream
    }

    fn actor(&self) -> UserId {
        self.command.actor()
    }

    /// The actor, and the quoted post's author: an erased one is named, and refused.
    fn users(&self) -> Vec<UserId> {
        let mut users = vec![self.command.actor()];
        users.extend(self.quoted.map(|q| q.author));
        users
    }

    fn command(&self) -> PostCommand {
        self.command.clone()
    }

    /// A quote reads the pair of its author and the quoted post's, and the quoted post; any
    /// other post command reads nothing beyond its stream.
    fn ask(&self) -> PairAsk {
        match self.quoted {
            Some(quoted) => PairAsk::on_post(self.command.actor(), quoted),
            None => PairAsk::default(),
        }
    }

    fn services(&self, guard: &PairGuard) -> QuoteJudged {
        let actor = self.command.actor();
        self.quoted
            .map_or_else(QuoteJudged::default, |quoted| QuoteJudged {
                unreadable: guard.unreadable(actor, quoted),
                blocked: guard.blocked(actor, [quoted.author]),
                not_quotable: guard.not_quotable(actor, quoted),
            })
    }

    // A publish and a delete that are decided always append (the aggregate refuses a no-op
    // with an error), so their position is never the default.
    fn outcome(&self, _post: &Post, position: Option<LogPosition>) -> PostOutcome {
        let change = PostChange {
            changed: position.is_some(),
            position,
        };
        let position = position.unwrap_or_default();
        match &self.command {
            PostCommand::Publish {
                post_id,
                author,
                content,
                visibility,
                created_at,
                quote_of,
                quote_policy,
                comment_policy,
            } => PostOutcome::Published(Publication {
                post: *post_id,
                author: *author,
                content: content.clone(),
                visibility: *visibility,
                quote_of: *quote_of,
                quote_policy: *quote_policy,
                comment_policy: *comment_policy,
                created_at: *created_at,
                position,
            }),
            PostCommand::Delete { .. } => PostOutcome::Deleted(Deletion { position }),
            PostCommand::SetQuotePolicy { .. }
            | PostCommand::SetCommentPolicy { .. }
            | PostCommand::Detach { .. } => PostOutcome::Changed(change),
        }
    }
}
