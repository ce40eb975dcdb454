//! Filters (issue 47): a user's muted words, applied at read time on the text the replica
//! already holds opened, and projector `filters`: every filter not deleted (`rm_filters`), with
//! its phrase opened (the log holds it sealed with the user's key, as a post's content).
//!
//! **The fold is written once** ([`fold`] over [`FilterTables`]): the projector's statements,
//! the replica's filters (`memory.rs`) and `verify` fold with it. A filter ends by itself at its
//! expiry, with no event: every reader judges it live while `expires_at` is after the moment
//! of reading ([`HeldFilter::applies`]). A `UserErased` takes the user's filters.
//!
//! How a phrase matches is [`matching`]'s; what a reader's live filters do to a text in a
//! context is [`screen`]'s.

use std::borrow::Cow;

use async_trait::async_trait;
use relations_domain::{FilterEvent, FilterId, LogEvent};
use relations_store::log::{self, RecordedEvent};
use relations_store::Keyring;
use sqlx::PgConnection;

use crate::error::ProjectionError;
use crate::runtime::projector::Projector;
pub use held::HeldFilter;

mod held;
pub mod matching;
pub mod memory;
pub mod query;
pub mod read;
pub mod screen;
pub mod verify;

/// The projector's name.
pub const NAME: &str = "filters";

/// What a fold of filters writes to; each reader of the log keeps its own.
pub trait FilterTables {
    /// Makes a filter (nothing when it exists).
    fn create(&mut self, filter: HeldFilter);
    /// Deletes `user`'s `filter`.
    fn delete(&mut self, user: i64, filter: FilterId);
    /// Takes `user`'s filters.
    fn erase(&mut self, user: i64);
}

/// Folds `event` into `tables`.
pub fn fold(tables: &mut impl FilterTables, event: &LogEvent) {
    if let Some(user) = event.erased_user() {
        tables.erase(user.get());
        return;
    }
    let LogEvent::Filters(event) = event else {
        return;
    };
    match event {
        FilterEvent::FilterCreated {
            author,
            filter,
            content,
            whole_word,
            contexts,
            action,
            expires_at,
            created_at,
        } => tables.create(HeldFilter {
            id: *filter,
            user: author.get(),
            phrase: content.as_ref().map(|c| c.as_str().to_owned()),
            whole_word: *whole_word,
            contexts: contexts.clone(),
            action: *action,
            expires_at: *expires_at,
            created_at: *created_at,
        }),
        FilterEvent::FilterDeleted { user, filter } => tables.delete(user.get(), *filter),
    }
}

/// See the module docs.
pub struct Filters {
    /// Opens the phrases.
    pub keys: Keyring,
}

#[async_trait]
impl Projector for Filters {
    fn name(&self) -> &'static str {
        NAME
    }

    fn tables(&self) -> &'static [&'static str] {
        &["rm_filters"]
    }

    async fn apply_batch(
        &self,
        conn: &mut PgConnection,
        events: &[RecordedEvent],
    ) -> Result<(), ProjectionError> {
        // Only a phrase is opened: a batch of posts and comments alone opens nothing (its
        // erasures still forget their users' keys).
        let phrases = events.iter().any(|e| {
            matches!(
                e.event,
                LogEvent::Filters(FilterEvent::FilterCreated { .. })
            )
        });
        let events = match phrases {
            true => log::revealed_to_fold(&self.keys, events).await?,
            false => {
                log::forget_erased(&self.keys, events);
                Cow::Borrowed(events)
            }
        };
        let mut statements = Statements::default();
        for event in events.iter() {
            fold(&mut statements, &event.event);
        }
        for statement in statements.0 {
            statement.run(conn).await?;
        }
        Ok(())
    }
}

/// One change to the table, as a statement.
enum Statement {
    Create(HeldFilter),
    Delete(i64, FilterId),
    Erase(i64),
}

impl Statement {
    async fn run(self, conn: &mut PgConnection) -> Result<(), sqlx::Error> {
        let query = match self {
            Self::Create(f) => sqlx::query(
                "INSERT INTO rm_filters (filter_id, user_id, phrase, whole_word, contexts, action,
                                         expires_at, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING",
            )
            .bind(f.id.uuid())
            .bind(f.user)
            .bind(f.phrase)
            .bind(f.whole_word)
            .bind(f.contexts.iter().map(|c| c.as_str()).collect::<Vec<_>>())
            .bind(f.action.as_str())
            .bind(f.expires_at)
            .bind(f.created_at),
            Self::Delete(user, filter) => {
                sqlx::query("DELETE FROM rm_filters WHERE filter_id = $1 AND user_id = $2")
                    .bind(filter.uuid())
                    .bind(user)
            }
            Self::Erase(user) => {
                sqlx::query("DELETE FROM rm_filters WHERE user_id = $1").bind(user)
            }
        };
        query.execute(conn).await.map(drop)
    }
}

/// The projector's fold, as statements in the batch's order.
#[derive(Default)]
struct Statements(Vec<Statement>);

impl FilterTables for Statements {
    fn create(&mut self, filter: HeldFilter) {
        self.0.push(Statement::Create(filter));
    }
    fn delete(&mut self, user: i64, filter: FilterId) {
        self.0.push(Statement::Delete(user, filter));
    }
    fn erase(&mut self, user: i64) {
        self.0.push(Statement::Erase(user));
    }
}
