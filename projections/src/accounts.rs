//! The token check's table, in memory: every account with a token revocation, a ban, an
//! erasure or a privacy setting (a lock, a hidden graph), folded from the account events (no
//! projector keeps them: they are few, and read from the log at the replica's load), so that
//! each request's check is two hash probes under the replica's read lock
//! ([`crate::replica::live::LiveGraph::with`]).

use chrono::{DateTime, Utc};
use relations_domain::{Account, AccountEvent, LogEvent, Privacy, TokenStamp, UserId};
use relations_store::log;
use relations_store::LogPosition;
use sqlx::PgConnection;

use foldhash::HashMap; // as the replica's other tables (see crate::relations::memory)

use crate::replica::MemoryModel;

/// Accounts with a revocation or a ban (the check every request makes).
#[derive(Debug, Default, Clone)]
pub struct Accounts {
    accounts: HashMap<u64, Account>,
    /// Account events up to here were read by the load.
    loaded: LogPosition,
}

impl MemoryModel for Accounts {
    async fn checkpoint(
        &mut self,
        _: &mut PgConnection,
    ) -> Result<Option<LogPosition>, sqlx::Error> {
        Ok(None)
    }

    /// Every account event up to where the replay begins, in log order (below the readers'
    /// horizon there, so none is missed or read twice).
    async fn load(
        &mut self,
        tx: &mut PgConnection,
        replay: LogPosition,
    ) -> Result<(), sqlx::Error> {
        for event in log::read_type(tx, Account::TYPE, LogPosition::START, replay).await? {
            match event.event {
                LogEvent::Account(account) => self.fold(account),
                // Read by type: none of these comes.
                LogEvent::Relation(_)
                | LogEvent::Post(_)
                | LogEvent::Thread(_)
                | LogEvent::Like(_)
                | LogEvent::Repost(_)
                | LogEvent::Bookmark(_)
                | LogEvent::Lists(_)
                | LogEvent::Filters(_) => {}
            }
        }
        self.loaded = replay;
        Ok(())
    }

    fn apply(&mut self, at: LogPosition, _: DateTime<Utc>, event: &LogEvent) {
        match event {
            LogEvent::Account(account) if at > self.loaded => self.fold(account.clone()),
            LogEvent::Account(_)
            | LogEvent::Relation(_)
            | LogEvent::Post(_)
            | LogEvent::Thread(_)
            | LogEvent::Like(_)
            | LogEvent::Repost(_)
            | LogEvent::Bookmark(_)
            | LogEvent::Lists(_)
            | LogEvent::Filters(_) => {}
        }
    }
}

impl Accounts {
    /// Folds one account event.
    pub fn fold(&mut self, event: AccountEvent) {
        let user = event.user().get() as u64;
        self.accounts.entry(user).or_default().apply(event);
    }

    /// Whether `user`'s token with `stamp` is refused (revoked).
    pub fn refuses(&self, user: UserId, stamp: &TokenStamp) -> bool {
        self.accounts
            .get(&(user.get() as u64))
            .is_some_and(|a| a.refuses(stamp))
    }

    /// Whether `user` is erased (issue 25): every token of theirs is refused for good.
    pub fn erased(&self, user: UserId) -> bool {
        self.accounts
            .get(&(user.get() as u64))
            .is_some_and(|a| a.erased)
    }

    /// `user`'s settings the private-content rules read (issue 26: locked, graph hidden).
    pub fn privacy(&self, user: UserId) -> Privacy {
        self.accounts
            .get(&(user.get() as u64))
            .map_or_else(Privacy::default, Account::privacy)
    }

    /// Whether `user` is banned, and their settings: one look-up for both.
    pub fn standing(&self, user: UserId) -> (bool, Privacy) {
        self.accounts
            .get(&(user.get() as u64))
            .map_or_else(Default::default, |a| (a.banned, a.privacy()))
    }

    /// Whether `user` is banned.
    pub fn banned(&self, user: UserId) -> bool {
        self.accounts
            .get(&(user.get() as u64))
            .is_some_and(|a| a.banned)
    }
}
