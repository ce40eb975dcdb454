//! Whose notifications reach a user (issue 47): a notification caused by someone the user
//! does not follow is governed by `not_following`, one caused by someone who does not follow
//! the user by `not_followers`; when both apply the stricter wins. Each says `accept` (the
//! default), `filter` (kept apart, out of the list and the unread count) or `drop` (kept
//! nowhere). Judged when the notification is caused, against the follows at that moment.

use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// What becomes of a notification, from the mildest to the strictest.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Disposition {
    /// Into the list.
    #[default]
    Accept,
    /// Into the filtered list beside it: not in the list, not counted unread.
    Filter,
    /// Nowhere.
    Drop,
}

impl Disposition {
    /// The name the API, the events and the read models use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Accept => "accept",
            Self::Filter => "filter",
            Self::Drop => "drop",
        }
    }

    /// Whether it is the default.
    pub fn is_accept(&self) -> bool {
        *self == Self::Accept
    }
}

/// A string that is not a disposition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("accept, filter or drop")]
pub struct BadDisposition;

impl FromStr for Disposition {
    type Err = BadDisposition;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "accept" => Ok(Self::Accept),
            "filter" => Ok(Self::Filter),
            "drop" => Ok(Self::Drop),
            _ => Err(BadDisposition),
        }
    }
}

/// A user's notification policy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct NotificationPolicy {
    /// For notifications caused by users the user does not follow.
    pub not_following: Disposition,
    /// For notifications caused by users who do not follow the user.
    pub not_followers: Disposition,
}

impl NotificationPolicy {
    /// Whether it is the default (everything accepted).
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// What becomes of a notification whose recipient `follows` its actor (or not) and whom
    /// the actor `followed_by` (or not): the stricter of the rules that apply.
    pub fn judge(self, follows: bool, followed_by: bool) -> Disposition {
        let by_following = if follows {
            Disposition::Accept
        } else {
            self.not_following
        };
        let by_followers = if followed_by {
            Disposition::Accept
        } else {
            self.not_followers
        };
        by_following.max(by_followers)
    }
}

#[cfg(test)]
mod tests {
    use super::Disposition::{self, *};
    use super::NotificationPolicy;

    #[test]
    fn the_stricter_rule_that_applies_wins() {
        let all = [Accept, Filter, Drop];
        for not_following in all {
            for not_followers in all {
                let policy = NotificationPolicy {
                    not_following,
                    not_followers,
                };
                assert_eq!(policy.judge(true, true), Accept, "{policy:?}");
                assert_eq!(policy.judge(false, true), not_following);
                assert_eq!(policy.judge(true, false), not_followers);
                assert_eq!(policy.judge(false, false), not_following.max(not_followers));
            }
        }
        assert!(Accept < Filter && Filter < Drop);
        for d in all {
            assert_eq!(d.as_str().parse::<Disposition>(), Ok(d));
        }
        assert!("reject".parse::<Disposition>().is_err());
    }
}
