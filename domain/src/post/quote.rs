//! Quotes (issue 44): who may quote a post, and what a quote is judged against. A post may
//! quote another ([`super::QuoteOf`]), as its author may read it, unless a block separates
//! them or the quoted post's policy says no; the quoted post's author may detach the quote.

use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Who may quote a post: `anyone` (the default), the author's `followers`, or `nobody` but
/// the author.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum QuotePolicy {
    /// Anyone who may read the post.
    #[default]
    Anyone,
    /// Those who follow the post's author.
    Followers,
    /// Nobody but its author.
    Nobody,
}

impl QuotePolicy {
    /// The name the API, the events and the read models use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Anyone => "anyone",
            Self::Followers => "followers",
            Self::Nobody => "nobody",
        }
    }

    /// Whether it is the default (an event leaves it out).
    pub fn is_anyone(&self) -> bool {
        *self == Self::Anyone
    }

    /// Whether it lets a user quote the post: `own` (they wrote it), or `follows` its author.
    pub fn allows(self, own: bool, follows: bool) -> bool {
        own || match self {
            Self::Anyone => true,
            Self::Followers => follows,
            Self::Nobody => false,
        }
    }
}

/// A string that is not a quote policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("quote_policy: anyone, followers or nobody")]
pub struct BadQuotePolicy;

impl FromStr for QuotePolicy {
    type Err = BadQuotePolicy;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "anyone" => Ok(Self::Anyone),
            "followers" => Ok(Self::Followers),
            "nobody" => Ok(Self::Nobody),
            _ => Err(BadQuotePolicy),
        }
    }
}

/// What a quote is judged against beyond the new post's stream, read under the pair's lock
/// and the quoted post's stream (none for a post that quotes nothing).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QuoteJudged {
    /// The author may not read the quoted post (or it is gone).
    pub unreadable: bool,
    /// A block stands between the author and the quoted post's author, either way.
    pub blocked: bool,
    /// The quoted post's policy, as it stands now, does not let the author quote it.
    pub not_quotable: bool,
}
