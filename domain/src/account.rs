//! A user's account as this service knows it: which of their tokens are refused, and whether
//! they are banned (seed 002's single sign-on: the sign-on service issues tokens carrying a
//! client, a per-client version and a per-user batch; revoking raises a bound, and every token
//! at or under it is refused), whether they are banned, and whether their account is locked
//! (they approve their followers), and whether the account is erased (issue 25: for good; the
//! id is never used again). One stream per user, `account:{id}`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::ids::UserId;
use crate::notification_policy::{Disposition, NotificationPolicy};

/// What a token says about itself (SPEC.md: a missing `cli` is `""`, a missing `ver` or `bat`
/// is 0).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenStamp {
    /// The client or device.
    pub client: String,
    /// The token's version for that client.
    pub ver: i64,
    /// The user's batch the token belongs to.
    pub bat: i64,
}

/// A command on an account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccountCommand {
    /// Refuse `client`'s tokens with `ver <= up_to`, or (no client) every token with
    /// `bat <= up_to`.
    Revoke {
        /// Whose account.
        user: UserId,
        /// One client, or every token of the user.
        client: Option<String>,
        /// The bound, inclusive.
        up_to: i64,
    },
    /// Refuse every request of the user and hide their posts.
    Ban {
        /// Whose account.
        user: UserId,
    },
    /// Lift a ban.
    Unban {
        /// Whose account.
        user: UserId,
    },
    /// Lock the account (follows become requests) or unlock it. Unlocking approves every
    /// pending request; the store decides those on their pairs in the same transaction.
    SetLocked {
        /// Whose account.
        user: UserId,
        /// Locked or not.
        locked: bool,
    },
    /// Hide the user's graph from everyone but them (issue 26), or show it again.
    SetHideGraph {
        /// Whose account.
        user: UserId,
        /// Hidden or not.
        hide: bool,
    },
    /// Set whose notifications reach the user (issue 47): each part given replaces its value,
    /// each left out keeps it.
    SetNotificationPolicy {
        /// Whose account.
        user: UserId,
        /// For notifications caused by users they do not follow.
        not_following: Option<Disposition>,
        /// For notifications caused by users who do not follow them.
        not_followers: Option<Disposition>,
    },
    /// Erase the user (issue 25): every relation, like, post and comment of theirs ends, and
    /// the id never acts or is acted on again. Erasing an erased user changes nothing.
    Erase {
        /// Whose account.
        user: UserId,
    },
}

impl AccountCommand {
    /// The account the command is about.
    pub fn user(&self) -> UserId {
        match self {
            Self::Revoke { user, .. }
            | Self::Ban { user }
            | Self::Unban { user }
            | Self::SetLocked { user, .. }
            | Self::SetHideGraph { user, .. }
            | Self::SetNotificationPolicy { user, .. }
            | Self::Erase { user } => *user,
        }
    }
}

/// The facts an account's stream holds. Version 1 of each.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AccountEvent {
    /// Tokens of `user` were revoked: of `client` with `ver <= up_to`, or (no client) every
    /// token with `bat <= up_to`. Bounds only grow.
    TokensRevoked {
        /// Whose tokens.
        user: UserId,
        /// One client, or `None` for every token of the user.
        client: Option<String>,
        /// The new bound, inclusive.
        up_to: i64,
    },
    /// `user` was banned: every request refused, posts hidden from every feed and timeline.
    UserBanned {
        /// Who.
        user: UserId,
    },
    /// The ban on `user` was lifted: their posts show again; no follow is restored.
    UserUnbanned {
        /// Who.
        user: UserId,
    },
    /// `user` locked their account: from now on a follow of them is a request they approve.
    AccountLocked {
        /// Who.
        user: UserId,
    },
    /// `user` unlocked their account. Every request pending at that moment was approved in the
    /// same transaction (`FollowRequestApproved` and `Followed` on each pair).
    AccountUnlocked {
        /// Who.
        user: UserId,
    },
    /// `user` hid their graph (issue 26): their following, followers, friends and known-followers
    /// lists are for them alone, relation queries naming them for the pair's two users alone.
    GraphHidden {
        /// Who.
        user: UserId,
    },
    /// `user` showed their graph again.
    GraphShown {
        /// Who.
        user: UserId,
    },
    /// `user` changed whose notifications reach them (issue 47): both parts as they are now.
    /// Notifications kept before stay as they were.
    NotificationPolicyChanged {
        /// Who.
        user: UserId,
        /// For notifications caused by users they do not follow.
        not_following: Disposition,
        /// For notifications caused by users who do not follow them.
        not_followers: Disposition,
    },
    /// `user` was erased (issue 25), in one decision: every relation of theirs ended both
    /// ways, their likes are void, their posts and comments deleted (a comment with live
    /// replies stays as a tombstone), and the id never acts or is acted on again. Not expanded
    /// into per-pair events: each reader folds it set-based (docs/events.md).
    UserErased {
        /// Who.
        user: UserId,
    },
}

impl AccountEvent {
    /// The event's type name, as stored in the log's `event_type` column.
    pub fn event_type(&self) -> &'static str {
        match self {
            Self::TokensRevoked { .. } => "TokensRevoked",
            Self::UserBanned { .. } => "UserBanned",
            Self::UserUnbanned { .. } => "UserUnbanned",
            Self::AccountLocked { .. } => "AccountLocked",
            Self::AccountUnlocked { .. } => "AccountUnlocked",
            Self::GraphHidden { .. } => "GraphHidden",
            Self::GraphShown { .. } => "GraphShown",
            Self::NotificationPolicyChanged { .. } => "NotificationPolicyChanged",
            Self::UserErased { .. } => "UserErased",
        }
    }

    /// The schema version of the event's payload.
    pub fn event_version(&self) -> &'static str {
        "1"
    }

    /// The account it is about.
    pub fn user(&self) -> UserId {
        match self {
            Self::TokensRevoked { user, .. }
            | Self::UserBanned { user }
            | Self::UserUnbanned { user }
            | Self::AccountLocked { user }
            | Self::AccountUnlocked { user }
            | Self::GraphHidden { user }
            | Self::GraphShown { user }
            | Self::NotificationPolicyChanged { user, .. }
            | Self::UserErased { user } => *user,
        }
    }
}

/// Why an account command was refused. Only an erased account refuses: a revocation that
/// lowers a bound, a second ban or an unban of someone not banned changes nothing
/// (`changed: false`), and erasing an erased user changes nothing either.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AccountError {
    /// The account is erased: nothing is decided on it again.
    #[error("the user is erased")]
    Erased,
}

/// An account's state, folded from its stream.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Account {
    /// Per client: tokens with `ver` at or under this are refused.
    pub clients: BTreeMap<String, i64>,
    /// Tokens with `bat` at or under this are refused.
    pub batch: Option<i64>,
    /// Whether the user is banned.
    pub banned: bool,
    /// Whether the user approves their followers.
    #[serde(default)]
    pub locked: bool,
    /// Whether the user hides their graph (issue 26).
    #[serde(default)]
    pub hide_graph: bool,
    /// Whether the user is erased (for good).
    #[serde(default)]
    pub erased: bool,
    /// Whose notifications reach the user (issue 47).
    #[serde(default)]
    pub notification_policy: NotificationPolicy,
}

impl Account {
    /// The aggregate's type, as the event store names its streams.
    pub const TYPE: &'static str = "account";

    /// Decides a command: the events it appends (none when it changes nothing).
    pub fn decide(&self, command: AccountCommand) -> Result<Vec<AccountEvent>, AccountError> {
        // An erasure is final: erasing again changes nothing, anything else is refused.
        if self.erased {
            return match command {
                AccountCommand::Erase { .. } => Ok(vec![]),
                _ => Err(AccountError::Erased),
            };
        }
        Ok(match command {
            AccountCommand::Erase { user } => vec![AccountEvent::UserErased { user }],
            AccountCommand::Revoke {
                user,
                client,
                up_to,
            } => {
                let current = match &client {
                    Some(client) => self.clients.get(client).copied(),
                    None => self.batch,
                };
                if current.is_some_and(|c| c >= up_to) {
                    vec![]
                } else {
                    vec![AccountEvent::TokensRevoked {
                        user,
                        client,
                        up_to,
                    }]
                }
            }
            AccountCommand::Ban { user } if !self.banned => vec![AccountEvent::UserBanned { user }],
            AccountCommand::Unban { user } if self.banned => {
                vec![AccountEvent::UserUnbanned { user }]
            }
            AccountCommand::SetLocked { user, locked } if locked != self.locked => {
                vec![match locked {
                    true => AccountEvent::AccountLocked { user },
                    false => AccountEvent::AccountUnlocked { user },
                }]
            }
            AccountCommand::SetHideGraph { user, hide } if hide != self.hide_graph => {
                vec![match hide {
                    true => AccountEvent::GraphHidden { user },
                    false => AccountEvent::GraphShown { user },
                }]
            }
            AccountCommand::SetNotificationPolicy {
                user,
                not_following,
                not_followers,
            } => {
                let now = self.notification_policy;
                let next = NotificationPolicy {
                    not_following: not_following.unwrap_or(now.not_following),
                    not_followers: not_followers.unwrap_or(now.not_followers),
                };
                match next == now {
                    true => vec![],
                    false => vec![AccountEvent::NotificationPolicyChanged {
                        user,
                        not_following: next.not_following,
                        not_followers: next.not_followers,
                    }],
                }
            }
            AccountCommand::Ban { .. }
            | AccountCommand::Unban { .. }
            | AccountCommand::SetLocked { .. }
            | AccountCommand::SetHideGraph { .. } => vec![],
        })
    }

    /// Folds one event into the state.
    pub fn apply(&mut self, event: AccountEvent) {
        match event {
            AccountEvent::TokensRevoked { client, up_to, .. } => {
                let bound = match client {
                    Some(client) => self.clients.entry(client).or_insert(up_to),
                    None => self.batch.get_or_insert(up_to),
                };
                *bound = (*bound).max(up_to);
            }
            AccountEvent::UserBanned { .. } => self.banned = true,
            AccountEvent::UserUnbanned { .. } => self.banned = false,
            AccountEvent::AccountLocked { .. } => self.locked = true,
            AccountEvent::AccountUnlocked { .. } => self.locked = false,
            AccountEvent::GraphHidden { .. } => self.hide_graph = true,
            AccountEvent::GraphShown { .. } => self.hide_graph = false,
            AccountEvent::NotificationPolicyChanged {
                not_following,
                not_followers,
                ..
            } => {
                self.notification_policy = NotificationPolicy {
                    not_following,
                    not_followers,
                }
            }
            AccountEvent::UserErased { .. } => self.erased = true,
        }
    }

    /// The settings the private-content rules read ([`crate::privacy`]).
    pub fn privacy(&self) -> crate::privacy::Privacy {
        if self.erased {
            // An erased user has no relation with anyone, and nothing left to hide.
            return crate::privacy::Privacy::default();
        }
        crate::privacy::Privacy {
            locked: self.locked,
            hide_graph: self.hide_graph,
        }
    }

    /// Whether a token with `stamp` is refused.
    pub fn refuses(&self, stamp: &TokenStamp) -> bool {
        self.batch.is_some_and(|b| stamp.bat <= b)
            || self
                .clients
                .get(&stamp.client)
                .is_some_and(|&v| stamp.ver <= v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user() -> UserId {
        UserId::try_from(7).unwrap()
    }

    fn fold(commands: Vec<AccountCommand>) -> (Account, Vec<usize>) {
        let mut account = Account::default();
        let mut appended = Vec::new();
        for command in commands {
            let events = account.decide(command).unwrap();
            appended.push(events.len());
            for event in events {
                account.apply(event);
            }
        }
        (account, appended)
    }

    #[test]
    fn revocations_only_grow_and_refuse_at_or_under_their_bound() {
        let revoke = |client: Option<&str>, up_to| AccountCommand::Revoke {
            user: user(),
            client: client.map(str::to_owned),
            up_to,
        };
        let (account, appended) = fold(vec![
            revoke(Some("phone"), 3),
            revoke(Some("phone"), 2),
            revoke(Some("phone"), 3),
            revoke(Some("phone"), 5),
            revoke(None, 1),
        ]);
        assert_eq!(appended, vec![1, 0, 0, 1, 1]);
        let stamp = |client: &str, ver, bat| TokenStamp {
            client: client.into(),
            ver,
            bat,
        };
        assert!(account.refuses(&stamp("phone", 5, 9)));
        assert!(!account.refuses(&stamp("phone", 6, 9)));
        assert!(!account.refuses(&stamp("web", 0, 2)));
        assert!(account.refuses(&stamp("web", 9, 1)), "the batch bound");
    }

    #[test]
    fn bans_toggle_and_repeat_as_no_change() {
        let ban = AccountCommand::Ban { user: user() };
        let unban = AccountCommand::Unban { user: user() };
        let (account, appended) = fold(vec![unban.clone(), ban.clone(), ban, unban.clone(), unban]);
        assert_eq!(appended, vec![0, 1, 0, 1, 0]);
        assert!(!account.banned);
    }

    #[test]
    fn locking_toggles_and_repeats_as_no_change() {
        let set = |locked| AccountCommand::SetLocked {
            user: user(),
            locked,
        };
        let (account, appended) = fold(vec![set(false), set(true), set(true), set(false)]);
        assert_eq!(appended, vec![0, 1, 0, 1]);
        assert!(!account.locked);
        let (account, _) = fold(vec![set(true)]);
        assert!(account.locked);
    }

    #[test]
    fn hiding_the_graph_toggles_and_repeats_as_no_change() {
        let set = |hide| AccountCommand::SetHideGraph { user: user(), hide };
        let (account, appended) = fold(vec![set(false), set(true), set(true), set(false)]);
        assert_eq!(appended, vec![0, 1, 0, 1]);
        assert!(!account.hide_graph);
        let (account, _) = fold(vec![set(true)]);
        assert!(account.privacy().hide_graph && !account.privacy().locked);
    }

    #[test]
    fn a_notification_policy_keeps_what_is_left_out_and_repeats_as_no_change() {
        let set = |not_following, not_followers| AccountCommand::SetNotificationPolicy {
            user: user(),
            not_following,
            not_followers,
        };
        let (account, appended) = fold(vec![
            set(None, None),
            set(Some(Disposition::Accept), None),
            set(Some(Disposition::Filter), None),
            set(None, Some(Disposition::Drop)),
            set(Some(Disposition::Filter), Some(Disposition::Drop)),
        ]);
        assert_eq!(appended, vec![0, 0, 1, 1, 0]);
        let expected = NotificationPolicy {
            not_following: Disposition::Filter,
            not_followers: Disposition::Drop,
        };
        assert_eq!(account.notification_policy, expected);
        let events = Account::default()
            .decide(set(None, Some(Disposition::Filter)))
            .unwrap();
        let json = serde_json::to_value(&events[0]).unwrap();
        let body = &json["NotificationPolicyChanged"];
        assert_eq!(
            (&body["not_following"], &body["not_followers"]),
            (&serde_json::json!("accept"), &serde_json::json!("filter"))
        );
    }

    #[test]
    fn an_erasure_is_final_and_a_second_one_changes_nothing() {
        let erase = AccountCommand::Erase { user: user() };
        let (account, appended) = fold(vec![erase.clone(), erase]);
        assert_eq!(appended, vec![1, 0]);
        assert!(account.erased);
        for command in [
            AccountCommand::Ban { user: user() },
            AccountCommand::SetLocked {
                user: user(),
                locked: true,
            },
            AccountCommand::Revoke {
                user: user(),
                client: None,
                up_to: 1,
            },
        ] {
            assert_eq!(account.decide(command), Err(AccountError::Erased));
        }
    }
}
