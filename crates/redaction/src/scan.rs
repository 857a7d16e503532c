//! Searches every view of a text for the configured secrets with one Aho-Corasick automaton
//! and splices the marker over what it finds.

use std::borrow::Cow;
use std::ops::{ControlFlow, Range};

use aho_corasick::automaton::{Automaton, OverlappingState, StateID};
use aho_corasick::nfa::contiguous;
use aho_corasick::{Anchored, Input, MatchKind, StartKind, dfa};

use crate::error::{Error, Result};
use crate::secret::REDACTED;
use crate::view::{self, Level, Unit, Windows};

/// The compiled form of a secret set.
pub(crate) struct Matcher {
    engine: Engine,
    start: StateID,
    max_len: usize,
}

impl Matcher {
    /// Compiles `patterns` (non-empty, distinct) into one automaton.
    pub(crate) fn build(patterns: &[String]) -> Result<Self> {
        let fail = |source: Box<dyn std::error::Error + Send + Sync>| Error::Build {
            count: patterns.len(),
            source,
        };
        let engine = Engine::build(patterns).map_err(|e| fail(Box::new(e)))?;
        let start = match &engine {
            Engine::Dfa(a) => a.start_state(Anchored::No),
            Engine::Nfa(a) => a.start_state(Anchored::No),
        }
        .map_err(|e| fail(Box::new(e)))?;
        let max_len = match &engine {
            Engine::Dfa(a) => a.max_pattern_len(),
            Engine::Nfa(a) => a.max_pattern_len(),
        };
        Ok(Self {
            engine,
            start,
            max_len,
        })
    }

    /// Whether any view of `text` contains a secret. Allocates nothing.
    pub(crate) fn contains(&self, text: &str) -> bool {
        match &self.engine {
            Engine::Dfa(a) => self.scan(a).contains(text),
            Engine::Nfa(a) => self.scan(a).contains(text),
        }
    }

    /// `text` with every secret, in every view, replaced by the marker.
    pub(crate) fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        match &self.engine {
            Engine::Dfa(a) => self.scan(a).redact(text),
            Engine::Nfa(a) => self.scan(a).redact(text),
        }
    }

    fn scan<'a, A: Automaton>(&self, automaton: &'a A) -> Scan<'a, A> {
        Scan {
            automaton,
            start: self.start,
            max_len: self.max_len,
        }
    }
}

/// The two automaton shapes the set may compile to. Both are walked through the same
/// [`Automaton`] trait; the enum exists so the walk is monomorphised instead of paying for
/// dynamic dispatch on every byte.
enum Engine {
    Dfa(dfa::DFA),
    Nfa(contiguous::NFA),
}

impl Engine {
    fn build(patterns: &[String]) -> std::result::Result<Self, aho_corasick::BuildError> {
        // A DFA costs one table row per pattern byte, so it is only worth building while that
        // table stays small; past the budget, or if it fails, the compact NFA is nearly as
        // fast and far smaller.
        let total: usize = patterns.iter().map(String::len).sum();
        if total <= DFA_BUDGET {
            let dfa = dfa::Builder::new()
                .match_kind(MatchKind::Standard)
                .start_kind(StartKind::Unanchored)
                .build(patterns);
            if let Ok(dfa) = dfa {
                return Ok(Self::Dfa(dfa));
            }
        }
        contiguous::NFA::builder()
            .match_kind(MatchKind::Standard)
            .build(patterns)
            .map(Self::Nfa)
    }
}

/// Rounds of redaction after which the marker is assumed to be feeding new occurrences.
const MAX_ROUNDS: usize = 16;

/// Total pattern bytes up to which the set compiles to a DFA.
const DFA_BUDGET: usize = 64 * 1024;

/// One search over one automaton.
struct Scan<'a, A> {
    automaton: &'a A,
    start: StateID,
    max_len: usize,
}

/// Where a search looks.
#[derive(Clone, Copy)]
enum Scope<'r> {
    /// The whole text.
    Everywhere,
    /// Only matches lying within these sorted, disjoint ranges.
    Near(&'r [Range<usize>]),
}

/// How a walk over one view ended.
enum Walk {
    Found,
    Clean { saw_backslash: bool },
}

impl<A: Automaton> Scan<'_, A> {
    fn contains(&self, text: &str) -> bool {
        let found = self
            .automaton
            .try_find(&Input::new(text))
            .expect("unanchored searches are supported: the automaton was built for them");
        if found.is_some() {
            return true;
        }
        Windows::new(text, self.max_len).any(|window| {
            match self.walk_any(Level::Once, text, &window) {
                Walk::Found => true,
                Walk::Clean { saw_backslash } => {
                    saw_backslash
                        && matches!(self.walk_any(Level::Twice, text, &window), Walk::Found)
                }
            }
        })
    }

    /// Replaces matches until none is left.
    ///
    /// One round nearly always suffices. A second is needed when the marker itself helps form
    /// a new occurrence: with the secret `ed]secret`, the text `ed]secretsecret` becomes
    /// `[redacted]secret`, which contains it again. Each round merges any marker it touches
    /// into its replacement, so the bytes outside markers shrink every round and the loop
    /// ends.
    ///
    /// Each round copies the text, and a text built to feed the marker round after round
    /// (`ed]secret` followed by thousands of `secret`) would make that quadratic. After
    /// [`MAX_ROUNDS`] the whole text is replaced by one marker instead: crude, but it contains
    /// no secret and it is only reached by such contrived input.
    fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut current = Cow::Borrowed(text);
        let mut markers = Vec::new();
        let mut found = self.find(text, Scope::Everywhere);
        for _ in 0..MAX_ROUNDS {
            if found.is_empty() {
                return current;
            }
            self.widen(&current, &mut found);
            found.append(&mut markers);
            merge(&mut found);
            let (next, inserted) = splice(&current, &found);
            // Splicing at whole-escape boundaries leaves the decoding of text away from the
            // markers as it was, so only their surroundings can hold a new match.
            let near = neighbourhoods(&next, &inserted, self.max_len);
            found = self.find(&next, Scope::Near(&near));
            current = Cow::Owned(next);
            markers = inserted;
        }
        if found.is_empty() {
            current
        } else {
            Cow::Owned(REDACTED.to_owned())
        }
    }

    /// Every match in every view within `scope`, as merged source ranges.
    fn find(&self, text: &str, scope: Scope<'_>) -> Vec<Range<usize>> {
        let mut found = Vec::new();
        let whole = 0..text.len();
        let regions = match scope {
            Scope::Everywhere => std::slice::from_ref(&whole),
            Scope::Near(regions) => regions,
        };
        for region in regions {
            let input = Input::new(text).span(region.clone());
            let mut state = OverlappingState::start();
            loop {
                self.automaton
                    .try_find_overlapping(&input, &mut state)
                    .expect("unanchored overlapping searches are supported: Standard semantics");
                let Some(found_match) = state.get_match() else {
                    break;
                };
                push(&mut found, found_match.range());
            }
        }
        // A power of two, so that wrapping around the ring is a mask rather than a division.
        let mut starts = vec![0; self.max_len.next_power_of_two()];
        for window in Windows::new(text, self.max_len) {
            let parts = match scope {
                Scope::Everywhere => vec![window],
                Scope::Near(regions) => view::parts(text, &window, regions),
            };
            for part in parts {
                if self.walk_all(Level::Once, text, &part, &mut starts, &mut found) {
                    self.walk_all(Level::Twice, text, &part, &mut starts, &mut found);
                }
            }
        }
        merge(&mut found);
        found
    }

    /// Walks one view of `text[window]`, stopping at the first match.
    fn walk_any(&self, level: Level, text: &str, window: &Range<usize>) -> Walk {
        let aut = self.automaton;
        let mut state = self.start;
        let mut saw_backslash = false;
        let flow = view::visit(level, text, window.clone(), &mut |unit: Unit| {
            saw_backslash |= unit.is_backslash();
            for byte in unit.bytes() {
                state = aut.next_state(Anchored::No, state, byte);
                if aut.is_special(state) && aut.is_match(state) {
                    return ControlFlow::Break(());
                }
            }
            ControlFlow::Continue(())
        });
        match flow {
            ControlFlow::Break(()) => Walk::Found,
            ControlFlow::Continue(()) => Walk::Clean { saw_backslash },
        }
    }

    /// Walks one view of `text[window]`, pushing the source range of every match onto
    /// `found`, and reports whether the view contained a backslash (and so is worth decoding
    /// once more).
    ///
    /// `starts` is a ring of at least `max_len` entries (a power of two) holding, for each
    /// of the latest bytes of the view, where its unit began in the source. A match of `n`
    /// bytes that ends at the current byte began `n - 1` bytes earlier, on the first byte of
    /// a character since every pattern is whole UTF-8, and so at the start of a unit.
    fn walk_all(
        &self,
        level: Level,
        text: &str,
        window: &Range<usize>,
        starts: &mut [usize],
        found: &mut Vec<Range<usize>>,
    ) -> bool {
        let aut = self.automaton;
        let mut state = self.start;
        let mut saw_backslash = false;
        let mut decoded = 0_usize;
        let mask = starts.len() - 1;
        let _ = view::visit(level, text, window.clone(), &mut |unit: Unit| {
            saw_backslash |= unit.is_backslash();
            for byte in unit.bytes() {
                starts[decoded & mask] = unit.start;
                decoded += 1;
                state = aut.next_state(Anchored::No, state, byte);
                if aut.is_special(state) && aut.is_match(state) {
                    // All patterns reported here end at this byte, so the longest one alone
                    // decides the range.
                    let longest = (0..aut.match_len(state))
                        .map(|i| aut.pattern_len(aut.match_pattern(state, i)))
                        .max()
                        .unwrap_or(0);
                    let first = decoded - longest;
                    push(found, starts[first & mask]..unit.end);
                }
            }
            ControlFlow::Continue(())
        });
        saw_backslash
    }

    /// Grows each range to whole characters of the twice-decoded view.
    ///
    /// A plain-view match may begin or end inside an escape sequence (the secret `\nabc…` in
    /// the text `\\nabc…`), and replacing half an escape would corrupt the JSON string it
    /// sits in. The twice-decoded characters are the coarsest units, made of whole escape
    /// sequences at both levels, so aligning to them keeps one and two levels of JSON valid.
    fn widen(&self, text: &str, found: &mut Vec<Range<usize>>) {
        for window in Windows::new(text, self.max_len) {
            for part in view::parts(text, &window, found) {
                let mut next = found.partition_point(|r| r.end <= part.start);
                let _ = view::visit(Level::Twice, text, part, &mut |unit: Unit| {
                    if !unit.is_escape() {
                        // A byte written as itself cannot be split by a range that is already
                        // on character boundaries.
                        return ControlFlow::Continue(());
                    }
                    while found.get(next).is_some_and(|r| r.end <= unit.start) {
                        next += 1;
                    }
                    for range in found[next..].iter_mut().take_while(|r| r.start < unit.end) {
                        range.start = range.start.min(unit.start);
                        range.end = range.end.max(unit.end);
                    }
                    ControlFlow::Continue(())
                });
            }
        }
        merge(found);
    }
}

/// Adds a range, folding it into the previous one when they touch, which keeps long runs of
/// overlapping matches from piling up.
fn push(found: &mut Vec<Range<usize>>, range: Range<usize>) {
    if let Some(last) = found.last_mut()
        && range.start <= last.end
        && last.start <= range.end
    {
        last.start = last.start.min(range.start);
        last.end = last.end.max(range.end);
        return;
    }
    found.push(range);
}

/// Sorts ranges and joins those that overlap or touch, so adjacent occurrences become one
/// marker.
fn merge(ranges: &mut Vec<Range<usize>>) {
    ranges.sort_unstable_by_key(|r| r.start);
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(ranges.len());
    for range in ranges.drain(..) {
        match merged.last_mut() {
            Some(last) if range.start <= last.end => last.end = last.end.max(range.end),
            _ => merged.push(range),
        }
    }
    *ranges = merged;
}

/// Replaces each (sorted, disjoint) range with the marker, returning the new text and where
/// the markers landed in it.
fn splice(text: &str, ranges: &[Range<usize>]) -> (String, Vec<Range<usize>>) {
    let mut out = String::with_capacity(text.len());
    let mut markers = Vec::with_capacity(ranges.len());
    let mut copied = 0;
    for range in ranges {
        // The ranges are built from whole characters; rounding outward only guards against
        // a future bug turning into a panic on someone's chat message.
        let start = text.floor_char_boundary(range.start).max(copied);
        let end = text.ceil_char_boundary(range.end).max(start);
        out.push_str(&text[copied..start]);
        markers.push(out.len()..out.len() + REDACTED.len());
        out.push_str(REDACTED);
        copied = end;
    }
    out.push_str(&text[copied..]);
    (out, markers)
}

/// The stretches around each marker where a match overlapping it could lie.
///
/// A match is at most `max_len` decoded bytes, and one decoded byte comes from at most
/// [`MAX_SPREAD`] bytes of the original text, so no match overlapping a marker reaches
/// further than this from it.
fn neighbourhoods(text: &str, markers: &[Range<usize>], max_len: usize) -> Vec<Range<usize>> {
    let reach = max_len * MAX_SPREAD;
    let mut near: Vec<Range<usize>> = markers
        .iter()
        .map(|m| m.start.saturating_sub(reach)..(m.end + reach).min(text.len()))
        .collect();
    merge(&mut near);
    near
}

/// The most original-text bytes one byte of the twice-decoded view can come from: an ASCII
/// character written as `\u0041` at the inner level, each of whose six characters is in
/// turn written as a six-byte `\u00XX` at the outer level.
const MAX_SPREAD: usize = 36;

#[cfg(test)]
mod tests {
    use crate::Secrets;

    /// Redacts `input` with a set built from `secrets` and compares with `expected`; also
    /// checks that `contains_secret` agrees and that the output is clean.
    fn check(secrets: &[&str], input: &str, expected: &str) {
        let set = Secrets::new(secrets).unwrap();
        let got = set.redact_text(input);
        assert_eq!(got, expected, "input: {input:?}");
        assert_eq!(
            set.contains_secret(input),
            input != expected,
            "input: {input:?}"
        );
        assert!(!set.contains_secret(&got), "output still matches: {got:?}");
    }

    #[test]
    fn raw() {
        check(&["hunter2hunter2"], "pw=hunter2hunter2!", "pw=[redacted]!");
        check(&["hunter2hunter2"], "hunter2hunter2", "[redacted]");
        check(&["pässwörd-ü"], "x pässwörd-ü y", "x [redacted] y");
    }

    #[test]
    fn each_short_json_escape() {
        for (ch, escaped) in [
            ('"', r#"\""#),
            ('\\', r"\\"),
            ('/', r"\/"),
            ('\u{8}', r"\b"),
            ('\u{c}', r"\f"),
            ('\n', r"\n"),
            ('\r', r"\r"),
            ('\t', r"\t"),
        ] {
            let secret = format!("abc{ch}defgh");
            check(&[&secret], &format!("<abc{escaped}defgh>"), "<[redacted]>");
        }
    }

    #[test]
    fn unicode_escapes_lower_and_upper_hex() {
        check(&["password1"], r"p\u0061ssword1", "[redacted]");
        check(&["passwörd1"], r"passw\u00f6rd1", "[redacted]");
        check(&["passwörd1"], r"passw\u00F6rd1", "[redacted]");
        check(
            &["passwörd1"],
            r"\u0070\u0061\u0073\u0073\u0077\u00F6\u0072\u0064\u0031",
            "[redacted]",
        );
    }

    #[test]
    fn surrogate_pairs() {
        check(
            &["key-😀-value"],
            r"{key-\uD83D\uDE00-value}",
            "{[redacted]}",
        );
        check(
            &["key-😀-value"],
            r"{key-\ud83d\ude00-value}",
            "{[redacted]}",
        );
        check(&["𝄞music𝄞"], r"\uD834\uDD1Emusic𝄞", "[redacted]");
        // A lone high surrogate is not an escape; the text after it is still searched.
        check(&["abcdefgh"], r"\uD83Dabcdefgh", r"\uD83D[redacted]");
    }

    #[test]
    fn mixed_raw_and_escaped_in_one_occurrence() {
        check(&[r#"s3cr"et/v"#], r#"s\u0033cr\"et\/v"#, "[redacted]");
        check(&["line1\nline2"], r"line1\u000aline2", "[redacted]");
    }

    #[test]
    fn double_escaped() {
        // JSON text inside a JSON string: the secret is escaped twice.
        check(
            &[r#"say "hi" now"#],
            r#"{\"m\":\"say \\\"hi\\\" now\"}"#,
            r#"{\"m\":\"[redacted]\"}"#,
        );
        check(&["ABCDEFGH"], r"\\u0041BCDEFGH", "[redacted]");
        check(&["ABCDEFGH"], r"\u005cu0041BCDEFGH", "[redacted]");
        check(&["tab\there"], r"tab\\there", "[redacted]");
        // Escaped at both levels and mixed with plain characters.
        check(&["x\"y\"zzzzz"], r#"x\\\"y\\u0022zzzzz"#, "[redacted]");
    }

    #[test]
    fn overlapping_and_adjacent() {
        check(&["abcdefgh", "efghijkl"], "xabcdefghijklx", "x[redacted]x");
        check(&["abcdefgh"], "abcdefghabcdefgh", "[redacted]");
        check(&["abcdefgh"], "abcdefgh abcdefgh", "[redacted] [redacted]");
        check(&["aaaaaaaa"], &"a".repeat(40), "[redacted]");
        check(&["abcdefgh", "bcdefg12"], "abcdefg12", "a[redacted]");
    }

    #[test]
    fn short_and_marker_values_are_ignored() {
        check(
            &["true", "a", "1234567"],
            "true a 1234567",
            "true a 1234567",
        );
        check(
            &["redacted", "x[redacted]y"],
            "[redacted] x[redacted]y",
            "[redacted] x[redacted]y",
        );
    }

    #[test]
    fn text_without_secrets_is_borrowed() {
        let set = Secrets::new(["abcdefgh"]).unwrap();
        let text = r#"{"plain": "text \"with\" escapes \u0041 and \\ backslashes"}"#;
        assert!(matches!(set.redact_text(text), std::borrow::Cow::Borrowed(t) if t == text));
        assert!(matches!(
            Secrets::empty().redact_text("abcdefgh"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn marker_cannot_rebuild_a_secret() {
        // Redacting once leaves `[redacted]abcdef`, which contains the secret again.
        check(&["ed]abcdef"], "xed]abcdefabcdef", "x[redacted]");
        check(&["abcdef[re"], "abcdefabcdef[re", "[redacted]");
    }

    #[test]
    fn marker_fed_chains_end() {
        // Every round exposes `edacted]x` again, one `x` further on.
        check(
            &["edacted]x"],
            &format!("edacted]{}tail", "x".repeat(5)),
            "[redacted]tail",
        );
        // Too many rounds: the whole text goes rather than copying it thousands of times.
        check(
            &["edacted]x"],
            &format!("edacted]{}tail", "x".repeat(5000)),
            "[redacted]",
        );
    }

    #[test]
    fn replacement_never_splits_an_escape() {
        // The secret starts at the second character of the escape `\\`; replacing only that
        // part would leave `\[redacted]`, which is not valid JSON.
        check(&[r"\nabcdefg"], r"\\nabcdefg", "[redacted]");
        check(&["abcdefg\\"], r"abcdefg\\\n", r"[redacted]\n");
    }

    #[test]
    fn outer_string_delimiters_survive() {
        check(
            &["abcdefg\\"],
            r#"{"p":"abcdefg\\"}"#,
            r#"{"p":"[redacted]"}"#,
        );
    }

    #[test]
    fn invalid_escapes_are_literal() {
        check(&[r"ab\qcdefgh"], r"ab\qcdefgh", "[redacted]");
        check(&[r"\u12xyzabc"], r"x\u12xyzabc", "x[redacted]");
    }

    #[test]
    fn escape_at_either_end_of_a_long_secret() {
        let plain = "p".repeat(30);
        let filler = "q".repeat(100);
        let expected = format!("{filler}[redacted]{filler}");
        check(
            &[&format!("{plain}\"")],
            &format!(r#"{filler}{plain}\"{filler}"#),
            &expected,
        );
        check(
            &[&format!("\"{plain}")],
            &format!(r#"{filler}\"{plain}{filler}"#),
            &expected,
        );
        check(
            &[&format!("😀{plain}")],
            &format!(r"{filler}\uD83D\uDE00{plain}{filler}"),
            &expected,
        );
        check(
            &[&format!("{plain}😀")],
            &format!(r"{filler}{plain}\ud83d\ude00{filler}"),
            &expected,
        );
        check(
            &[&format!("A{plain}")],
            &format!(r"{filler}\\u0041{plain}{filler}"),
            &expected,
        );
        check(
            &[&format!("{plain}A")],
            &format!(r"{filler}{plain}\\u0041{filler}"),
            &expected,
        );
        let long = "p".repeat(300);
        check(
            &[&format!("\"{long}\"")],
            &format!(r#"{filler}\"{long}\"{filler}"#),
            &expected,
        );
    }

    #[test]
    fn escapes_far_apart_in_long_text() {
        let filler = "lorem ipsum ".repeat(200);
        let input = format!(r"{filler}\n{filler}se\u0063ret-value{filler}\t");
        let expected = format!(r"{filler}\n{filler}[redacted]{filler}\t");
        check(&["secret-value"], &input, &expected);
    }
}
