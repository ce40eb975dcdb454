//! A filter as every reader of projector `filters` holds it.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use relations_domain::{FilterAction, FilterContext, FilterId};

/// One filter not deleted, as every reader holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldFilter {
    /// Its id.
    pub id: FilterId,
    /// Whose.
    pub user: i64,
    /// Its phrase (none once its user's key is destroyed).
    pub phrase: Option<String>,
    /// Only at word boundaries.
    pub whole_word: bool,
    /// Where it applies.
    pub contexts: BTreeSet<FilterContext>,
    /// What it does.
    pub action: FilterAction,
    /// When it ends by itself (none: never).
    pub expires_at: Option<DateTime<Utc>>,
    /// When it was made.
    pub created_at: DateTime<Utc>,
}

impl HeldFilter {
    /// Whether it is live at `now`.
    pub fn live(&self, now: DateTime<Utc>) -> bool {
        self.expires_at.is_none_or(|e| e > now)
    }

    /// Whether it applies in `context` at `now`.
    pub fn applies(&self, context: FilterContext, now: DateTime<Utc>) -> bool {
        self.contexts.contains(&context) && self.live(now)
    }
}
