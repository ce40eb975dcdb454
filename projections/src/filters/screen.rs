//! A reader's filters as every read judges with them: which of their live filters in a
//! context match a text, and what that does to it ([`Marks`]). Built once per change of the
//! reader's filters (the replica keeps one per user) or per read from the tables (a read
//! ahead of the replica).

use chrono::{DateTime, Utc};
use relations_domain::{FilterAction, FilterContext, FilterId};
use serde::Serialize;

use super::held::HeldFilter;
use super::matching::Matcher;

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

/// How a text shows to a reader, when it shows: with the `warn` filters it matches (in the
/// order they were made), or `None` when none does. A text a `hide` filter matches does not
/// show (`Option<Marks>` is `None`).
pub type Marks = Option<Vec<FilterHit>>;

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

    /// How `text` shows by the filters live at `now` in `context`: `None` when a `hide` one
    /// matches, else its marks.
    pub fn shown(&self, text: &str, context: FilterContext, now: DateTime<Utc>) -> Option<Marks> {
        let mut warned = Vec::new();
        for filter in self.matched(text, context, now) {
            match filter.action {
                FilterAction::Hide => return None,
                FilterAction::Warn => warned.push(FilterHit {
                    filter: filter.id,
                    phrase: filter.phrase.clone().unwrap_or_default(),
                }),
            }
        }
        Some((!warned.is_empty()).then_some(warned))
    }

    /// Whether a `hide` filter live at `now` in `context` matches `text` (a count's question:
    /// no marks made).
    pub fn hides(&self, text: &str, context: FilterContext, now: DateTime<Utc>) -> bool {
        (self.matched(text, context, now)).any(|f| f.action == FilterAction::Hide)
    }

    /// The filters live at `now` in `context` that match `text`, in the order they were made.
    fn matched<'s>(
        &'s self,
        text: &str,
        context: FilterContext,
        now: DateTime<Utc>,
    ) -> impl Iterator<Item = &'s HeldFilter> {
        (self.matcher.matching(text).into_iter())
            .map(|index| &self.filters[index])
            .filter(move |f| f.applies(context, now))
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

    /// How `text` shows: `None` when a `hide` filter matches it, else the `warn` filters it
    /// matches (`None` when none does), which the read marks it with (`filtered`).
    pub fn shown(&self, text: &str) -> Option<Marks> {
        match self.screen {
            Some(screen) => screen.shown(text, self.context, self.now),
            None => Some(None),
        }
    }

    /// Whether it hides `text` (a count's question).
    pub fn hides(&self, text: &str) -> bool {
        self.screen
            .is_some_and(|screen| screen.hides(text, self.context, self.now))
    }
}

impl Default for Screening<'_> {
    fn default() -> Self {
        Self::none()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use chrono::TimeDelta;
    use proptest::prelude::*;

    use super::*;
    use crate::filters::matching::tests::{phrase, reference, text};

    const CONTEXTS: [FilterContext; 4] = [
        FilterContext::Home,
        FilterContext::Lists,
        FilterContext::Notifications,
        FilterContext::Comments,
    ];

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).unwrap()
    }

    /// A filter drawn: its phrase, whole_word, contexts (a mask), hide, and expiry in seconds
    /// from now (past, now or future; none: never).
    type Drawn = (String, bool, u8, bool, Option<i64>);

    fn held(n: usize, (phrase, whole_word, mask, hide, expiry): &Drawn) -> HeldFilter {
        HeldFilter {
            id: FilterId::from_uuid(uuid::Uuid::from_u128(n as u128 + 1)),
            user: 7,
            phrase: Some(phrase.clone()),
            whole_word: *whole_word,
            contexts: (0..4)
                .filter(|i| mask & (1 << i) != 0)
                .map(|i| CONTEXTS[i])
                .collect::<BTreeSet<_>>(),
            action: match hide {
                true => FilterAction::Hide,
                false => FilterAction::Warn,
            },
            expires_at: expiry.map(|s| now() + TimeDelta::seconds(s)),
            created_at: now() - TimeDelta::days(1),
        }
    }

    /// The rule said plainly: the matching filters live at now in the context; any hide
    /// hides, else the warn ones mark, in the order they were made.
    fn expected(filters: &[HeldFilter], body: &str, context: FilterContext) -> Option<Marks> {
        let phrases: Vec<(String, bool)> = filters
            .iter()
            .map(|f| (f.phrase.clone().unwrap(), f.whole_word))
            .collect();
        let matched: Vec<&HeldFilter> = reference(&phrases, body)
            .into_iter()
            .map(|i| &filters[i])
            .filter(|f| f.contexts.contains(&context))
            .filter(|f| f.expires_at.is_none_or(|e| e > now()))
            .collect();
        if matched.iter().any(|f| f.action == FilterAction::Hide) {
            return None;
        }
        let hits: Vec<FilterHit> = matched
            .iter()
            .map(|f| FilterHit {
                filter: f.id,
                phrase: f.phrase.clone().unwrap(),
            })
            .collect();
        Some((!hits.is_empty()).then_some(hits))
    }

    fn drawn() -> impl Strategy<Value = Drawn> {
        (
            phrase(),
            any::<bool>(),
            0u8..16,
            any::<bool>(),
            prop::option::of(-5i64..5),
        )
    }

    proptest! {
        #[test]
        fn a_screen_agrees_with_the_rule_said_plainly(
            drawn in prop::collection::vec(drawn(), 0..8),
            body in text(),
            context in 0usize..4,
        ) {
            let filters: Vec<HeldFilter> = drawn.iter().enumerate().map(|(n, d)| held(n, d)).collect();
            let context = CONTEXTS[context];
            let screen = Screen::new(filters.clone());
            let expected = expected(&filters, &body, context);
            prop_assert_eq!(screen.shown(&body, context, now()), expected.clone());
            prop_assert_eq!(screen.hides(&body, context, now()), expected.is_none());
            let screening = Screening::new(Some(&screen), context, now());
            prop_assert_eq!(screening.shown(&body), expected.clone());
            prop_assert_eq!(screening.hides(&body), expected.is_none());
        }
    }

    #[test]
    fn a_filter_ends_at_its_expiry_and_applies_only_in_its_contexts() {
        let filter = held(0, &("Spoiler".into(), true, 0b0001, true, Some(10)));
        let screen = Screen::new(vec![filter]);
        let (home, lists) = (FilterContext::Home, FilterContext::Lists);
        assert_eq!(screen.shown("a SPOILER!", home, now()), None);
        assert_eq!(screen.shown("spoilers", home, now()), Some(None));
        assert_eq!(screen.shown("a spoiler", lists, now()), Some(None));
        let later = now() + TimeDelta::seconds(10);
        assert_eq!(screen.shown("a spoiler", home, later), Some(None));
        assert!(!Screening::new(Some(&screen), home, later).active());
    }
}
