//! How a filter's phrase matches a post's or a comment's text (issue 47): case-insensitively,
//! by Unicode's default case folding ([`fold`]), and for a `whole_word` phrase only where both
//! its ends fall on word boundaries as Unicode's text segmentation (UAX #29) finds them in the
//! folded text, so Chinese and Japanese text, written without spaces, is cut by the same rule
//! as Latin text. A reader's live phrases are searched together, in one pass over the text
//! ([`Matcher`]).

use aho_corasick::{AhoCorasick, MatchKind};
use unicode_segmentation::UnicodeSegmentation;

/// `text` as Unicode's canonical caseless matching compares it: decomposed (NFD), every
/// character case-folded (default full folding: `ß` is `ss`, `Σ` and `ς` are `σ`, `İ` is `i`
/// and a combining dot), then composed again (NFC), so that a phrase and a text that differ
/// only by case or by how an accent is encoded fold alike.
pub fn fold(text: &str) -> String {
    // ASCII is its own NFD and NFC, and folds only A to Z: one pass, one allocation.
    if text.is_ascii() {
        return text.to_ascii_lowercase();
    }
    canonical_fold(text)
}

/// [`fold`] the long way, for any text.
fn canonical_fold(text: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    caseless::default_case_fold_str(&text.nfd().collect::<String>())
        .nfc()
        .collect()
}

/// The byte offsets in `folded` where a word may begin or end: every boundary UAX #29's word
/// segmentation places, the text's two ends among them.
fn boundaries(folded: &str) -> Vec<usize> {
    let mut at: Vec<usize> = folded.split_word_bound_indices().map(|(i, _)| i).collect();
    at.push(folded.len());
    at
}

/// A reader's phrases, searched together.
#[derive(Debug, Clone)]
pub struct Matcher {
    automaton: Option<AhoCorasick>,
    /// Each phrase's `whole_word`, by its index.
    whole_word: Vec<bool>,
}

impl Matcher {
    /// A matcher of `phrases` (their text as the user wrote it, and `whole_word`), each known
    /// by its index. An empty phrase never matches.
    pub fn new<'p>(phrases: impl IntoIterator<Item = (&'p str, bool)>) -> Self {
        let (folded, whole_word): (Vec<String>, Vec<bool>) = phrases
            .into_iter()
            .map(|(phrase, whole)| (fold(phrase), whole))
            .unzip();
        // An empty phrase (none is: a phrase has 1 to 100 characters) stands as NUL, which no
        // text holds.
        let patterns = folded.iter().map(|p| match p.is_empty() {
            true => "\u{0}",
            false => p.as_str(),
        });
        let automaton = (!folded.is_empty()).then(|| {
            AhoCorasick::builder()
                .match_kind(MatchKind::Standard)
                .build(patterns)
                .expect("an automaton of at most 100 phrases of 100 characters builds")
        });
        Self {
            automaton,
            whole_word,
        }
    }

    /// The indexes of the phrases that match `text`, ascending.
    pub fn matching(&self, text: &str) -> Vec<usize> {
        let Some(automaton) = &self.automaton else {
            return Vec::new();
        };
        let folded = fold(text);
        let mut found = vec![false; self.whole_word.len()];
        let mut bounds: Option<Vec<usize>> = None;
        for m in automaton.find_overlapping_iter(&folded) {
            let phrase = m.pattern().as_usize();
            if found[phrase] {
                continue;
            }
            if self.whole_word[phrase] {
                let bounds = bounds.get_or_insert_with(|| boundaries(&folded));
                let on = |at: usize| bounds.binary_search(&at).is_ok();
                if !(on(m.start()) && on(m.end())) {
                    continue;
                }
            }
            found[phrase] = true;
        }
        (0..found.len()).filter(|&i| found[i]).collect()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The rule said plainly: each phrase searched at every place of the folded text, a whole
    /// word only between two of the segmentation's boundaries.
    pub(crate) fn reference(phrases: &[(String, bool)], text: &str) -> Vec<usize> {
        let folded = fold(text);
        let words: Vec<&str> = folded.split_word_bounds().collect();
        let mut starts = vec![0];
        for w in &words {
            starts.push(starts.last().unwrap() + w.len());
        }
        phrases
            .iter()
            .enumerate()
            .filter(|(_, (phrase, whole))| {
                let phrase = fold(phrase);
                !phrase.is_empty()
                    && (0..=folded.len()).any(|i| {
                        folded.is_char_boundary(i)
                            && folded[i..].starts_with(&phrase)
                            && (!whole
                                || (starts.contains(&i) && starts.contains(&(i + phrase.len()))))
                    })
            })
            .map(|(i, _)| i)
            .collect()
    }

    fn matcher(phrases: &[(String, bool)]) -> Matcher {
        Matcher::new(phrases.iter().map(|(p, w)| (p.as_str(), *w)))
    }

    #[test]
    fn case_folding_whole_words_and_cjk() {
        let phrases = [
            ("Rust".to_owned(), true),
            ("STRASSE".to_owned(), false),
            ("你好".to_owned(), true),
            ("cat".to_owned(), true),
            ("cat".to_owned(), false),
        ];
        let m = matcher(&phrases);
        assert_eq!(m.matching("I like rust."), vec![0]);
        assert_eq!(m.matching("rusty"), Vec::<usize>::new());
        assert_eq!(m.matching("die Straße"), vec![1]);
        assert_eq!(m.matching("我说你好吗"), vec![2]);
        assert_eq!(m.matching("concatenate"), vec![4]);
        assert_eq!(m.matching("a CAT!"), vec![3, 4]);
        assert!(Matcher::new([]).matching("anything").is_empty());
    }

    #[test]
    fn folding_is_canonical_caseless() {
        // An accent composed or decomposed, on either side, folds alike.
        let composed = matcher(&[("CAF\u{c9}".to_owned(), true)]);
        assert_eq!(composed.matching("un cafe\u{301} noir"), vec![0]);
        let decomposed = matcher(&[("cafe\u{301}".to_owned(), true)]);
        assert_eq!(decomposed.matching("CAF\u{c9}!"), vec![0]);
        // Greek sigma in all three forms.
        let sigma = matcher(&[("ΟΔΟΣ".to_owned(), true)]);
        assert_eq!(
            sigma.matching("η οδός"),
            Vec::<usize>::new(),
            "the accent differs"
        );
        assert_eq!(sigma.matching("η οδος"), vec![0]);
        assert_eq!(fold("Σσς"), "σσσ");
        // Turkish dotted capital I folds to i and a combining dot: not to a plain i.
        assert_eq!(fold("İ"), "i\u{307}");
        assert_eq!(fold("ß"), "ss");
    }

    pub(crate) fn text() -> impl Strategy<Value = String> {
        let pieces = prop::sample::select(vec![
            "rust",
            "Rust",
            "RUST",
            "rusty",
            " ",
            ".",
            "猫",
            "你好",
            "你",
            "好",
            "ß",
            "ss",
            "SS",
            "café",
            "cafe\u{301}",
            "Σ",
            "ς",
            "カタカナ",
            "a",
            "b",
            "-",
            "123",
        ]);
        prop::collection::vec(pieces, 0..12).prop_map(|p| p.concat())
    }

    /// A phrase of one to four characters of a text, so that many are found in a body.
    pub(crate) fn phrase() -> impl Strategy<Value = String> {
        text()
            .prop_filter("a phrase", |p| !p.is_empty())
            .prop_flat_map(|p| {
                let chars: Vec<char> = p.chars().collect();
                let n = chars.len();
                (0..n, 1..=n.min(4)).prop_map(move |(start, len)| {
                    chars[start..(start + len).min(n)]
                        .iter()
                        .collect::<String>()
                })
            })
    }

    proptest! {
        #[test]
        fn ascii_folds_as_the_long_way_folds_it(text in "[\\x00-\\x7f]{0,40}") {
            prop_assert_eq!(fold(&text), canonical_fold(&text));
        }

        #[test]
        fn the_matcher_agrees_with_the_rule_said_plainly(
            phrases in prop::collection::vec((phrase(), any::<bool>()), 0..6),
            body in text(),
        ) {
            let phrases: Vec<(String, bool)> =
                phrases.into_iter().filter(|(p, _)| !p.is_empty()).collect();
            prop_assert_eq!(matcher(&phrases).matching(&body), reference(&phrases, &body));
        }
    }
}
