//! Reply controls (issue 47): who besides a post's author may comment on it or reply in its
//! thread. Set at publishing and changed by the author (`CommentPolicyChanged`); a comment is
//! judged against the policy and the pair's follows as they stand in its own transaction.

use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Who besides the author may comment on a post or reply under it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum CommentPolicy {
    /// Anyone who may read the post.
    #[default]
    Everyone,
    /// The author's followers.
    Followers,
    /// The users the author follows.
    Following,
    /// Nobody but the author.
    Nobody,
}

impl CommentPolicy {
    /// The name the API, the events and the read models use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Everyone => "everyone",
            Self::Followers => "followers",
            Self::Following => "following",
            Self::Nobody => "nobody",
        }
    }

    /// Whether it is the default (an event leaves it out).
    pub fn is_everyone(&self) -> bool {
        *self == Self::Everyone
    }

    /// Whether it lets a user comment: `own` (they wrote the post), or they `follow` its
    /// author, or are `followed` by them.
    pub fn allows(self, own: bool, follows: bool, followed: bool) -> bool {
        own || match self {
            Self::Everyone => true,
            Self::Followers => follows,
            Self::Following => followed,
            Self::Nobody => false,
        }
    }
}

/// A string that is not a comment policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("comment_policy: everyone, followers, following or nobody")]
pub struct BadCommentPolicy;

impl FromStr for CommentPolicy {
    type Err = BadCommentPolicy;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "everyone" => Ok(Self::Everyone),
            "followers" => Ok(Self::Followers),
            "following" => Ok(Self::Following),
            "nobody" => Ok(Self::Nobody),
            _ => Err(BadCommentPolicy),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::CommentPolicy::{self, *};

    #[test]
    fn each_policy_lets_in_whom_it_names_and_the_author_always() {
        // (policy, [own, follows, followed, neither])
        let table: [(CommentPolicy, [bool; 4]); 4] = [
            (Everyone, [true, true, true, true]),
            (Followers, [true, true, false, false]),
            (Following, [true, false, true, false]),
            (Nobody, [true, false, false, false]),
        ];
        for (policy, expected) in table {
            let asked = [
                policy.allows(true, false, false),
                policy.allows(false, true, false),
                policy.allows(false, false, true),
                policy.allows(false, false, false),
            ];
            assert_eq!(asked, expected, "{policy:?}");
            assert_eq!(policy.as_str().parse(), Ok(policy));
        }
        assert!("anyone".parse::<CommentPolicy>().is_err());
    }
}
