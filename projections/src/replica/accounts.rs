//! The token check's table: every account with a token revocation, a ban, an erasure or a
//! privacy setting (a lock, a hidden graph), folded from the
//! account events, so that each request's check is two hash probes under the replica's read
//! lock ([`super::live::LiveGraph::with`]).

use relations_domain::{Account, AccountEvent, Privacy, TokenStamp, UserId};

use foldhash::HashMap; // as the replica's other tables (see its module)

/// Accounts with a revocation or a ban (the check every request makes).
#[derive(Debug, Default, Clone)]
pub struct Accounts(HashMap<u64, Account>);

impl Accounts {
    /// Folds one account event.
    pub fn apply(&mut self, event: AccountEvent) {
        let user = event.user().get() as u64;
        self.0.entry(user).or_default().apply(event);
    }

    /// Whether `user`'s token with `stamp` is refused (revoked).
    pub fn refuses(&self, user: UserId, stamp: &TokenStamp) -> bool {
        self.0
            .get(&(user.get() as u64))
            .is_some_and(|a| a.refuses(stamp))
    }

    /// Whether `user` is erased (issue 25): every token of theirs is refused for good.
    pub fn erased(&self, user: UserId) -> bool {
        self.0.get(&(user.get() as u64)).is_some_and(|a| a.erased)
    }

    /// `user`'s settings the private-content rules read (issue 26: locked, graph hidden).
    pub fn privacy(&self, user: UserId) -> Privacy {
        self.0
            .get(&(user.get() as u64))
            .map_or_else(Privacy::default, Account::privacy)
    }

    /// Whether `user` is banned, and their settings: one look-up for both.
    pub fn standing(&self, user: UserId) -> (bool, Privacy) {
        self.0
            .get(&(user.get() as u64))
            .map_or_else(Default::default, |a| (a.banned, a.privacy()))
    }

    /// Whether `user` is banned.
    pub fn banned(&self, user: UserId) -> bool {
        self.0.get(&(user.get() as u64)).is_some_and(|a| a.banned)
    }
}
