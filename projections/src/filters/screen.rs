//! A reader's filters as every read judges with them: which of their live filters in a
//! context match a text, and what that does to it ([`Verdict`]). Built once per change of the
//! reader's filters (the replica keeps one per user) or per read from the tables (a read
//! ahead of the replica).

use chrono::{DateTime, Utc};
use relations_domain::{FilterAction, FilterContext, FilterId};
use serde::Serialize;

use super::matching::Matcher;
use super::HeldFilter;

/// A warn filter a text matched, as the answer shows it: `{"filter": id, "phrase"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FilterHit {
    /// The filter's id.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub filter: FilterId,
    /// Its phrase.
    pub phrase: String,
}

/// What a reader's filters do to a text in a context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// No live filter of the context matches: shown as it is.
    Show,
    /// A live `hide` filter matches: left out.
    Hide,
    /// Only live `warn` filters match: shown, marked with them (in the order they were made).
    Warn(Vec<FilterHit>),
}

/// A reader's filters, searched together.
#[derive(Debug, Clone)]
pub struct Screen {
    filters: Vec<HeldFilter>,
    matcher: Matcher,
}

impl Screen {
    /// The screen of `filters` (one user's, in the order they were made). A filter whose
    /// phrase is gone (its user erased) matches nothing.
    pub fn new(filters: Vec<HeldFilter>) -> Self {
        let phrases = filters
            .iter()
            .map(|f| (f.phrase.as_deref().unwrap_or(""), f.whole_word));
        let matcher = Matcher::new(phrases);
        Self { filters, matcher }
    }

    /// The filters, in the order they were made.
    pub fn filters(&self) -> &[HeldFilter] {
        &self.filters
    }

    /// Whether any filter is live at `now` in `context`: a read with none skips the text.
    pub fn applies(&self, context: FilterContext, now: DateTime<Utc>) -> bool {
        self.filters.iter().any(|f| f.applies(context, now))
    }

    /// What the filters live at `now` in `context` do to `text`.
    pub fn verdict(&self, text: &str, context: FilterContext, now: DateTime<Utc>) -> Verdict {
        if !self.applies(context, now) {
            return Verdict::Show;
        }
        let mut warned = Vec::new();
        for index in self.matcher.matching(text) {
            let filter = &self.filters[index];
            if !filter.applies(context, now) {
                continue;
            }
            match filter.action {
                FilterAction::Hide => return Verdict::Hide,
                FilterAction::Warn => warned.push(FilterHit {
                    filter: filter.id,
                    phrase: filter.phrase.clone().unwrap_or_default(),
                }),
            }
        }
        match warned.is_empty() {
            true => Verdict::Show,
            false => Verdict::Warn(warned),
        }
    }
}

/// A reader's screen as one read applies it: in one context, at the moment of reading. With no
/// screen (a reader with no filter) it shows everything and reads no text.
#[derive(Debug, Clone, Copy)]
pub struct Screening<'s> {
    screen: Option<&'s Screen>,
    context: FilterContext,
    now: DateTime<Utc>,
}

impl<'s> Screening<'s> {
    /// `screen` in `context` at `now`; none applies when no filter of it is live there.
    pub fn new(screen: Option<&'s Screen>, context: FilterContext, now: DateTime<Utc>) -> Self {
        let screen = screen.filter(|s| s.applies(context, now));
        Self {
            screen,
            context,
            now,
        }
    }

    /// Nothing screened ([`Default`] too).
    pub fn none() -> Self {
        Self {
            screen: None,
            context: FilterContext::Home,
            now: DateTime::<Utc>::MIN_UTC,
        }
    }

    /// Whether any filter applies: a read with none need not read texts.
    pub fn active(&self) -> bool {
        self.screen.is_some()
    }

    /// What it does to `text`.
    pub fn verdict(&self, text: &str) -> Verdict {
        match self.screen {
            Some(screen) => screen.verdict(text, self.context, self.now),
            None => Verdict::Show,
        }
    }

    /// `items` without those whose text it hides, each warned one marked (through `mark`,
    /// given the item and its warn filters), in order.
    pub fn keep<T>(
        &self,
        items: Vec<T>,
        text: impl Fn(&T) -> &str,
        mark: impl Fn(&mut T, Vec<FilterHit>),
    ) -> Vec<T> {
        if !self.active() {
            return items;
        }
        items
            .into_iter()
            .filter_map(|mut item| match self.verdict(text(&item)) {
                Verdict::Show => Some(item),
                Verdict::Hide => None,
                Verdict::Warn(hits) => {
                    mark(&mut item, hits);
                    Some(item)
                }
            })
            .collect()
    }
}

impl Default for Screening<'_> {
    fn default() -> Self {
        Self::none()
    }
}
