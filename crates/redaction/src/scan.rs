//! Searches a text and its decoded views for the configured secrets with Aho-Corasick
//! automata and splices the marker over what it finds.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::OnceLock;

use aho_corasick::automaton::{Automaton, OverlappingState};
use aho_corasick::nfa::contiguous;
use aho_corasick::{Anchored, Input, MatchKind, Span, StartKind, dfa, packed};

use crate::error::{Error, Result};
use crate::secret::REDACTED;
use crate::view::{Mode, Views, Windows};

/// The compiled form of one set of secrets.
pub(crate) struct Matcher {
    engine: Engine,
    /// Packed (Teddy) searchers over groups of the patterns, used to find candidates when
    /// the automaton has no prefilter of its own; empty when the engine searches alone.
    groups: Vec<packed::Searcher>,
    max_len: usize,
    /// The patterns, sorted.
    patterns: Vec<Box<str>>,
    /// What answers the prefix questions a continuing text asks; built on first use, since
    /// only streams ask them.
    prefixes: OnceLock<Option<Prefixes>>,
}

impl Matcher {
    /// Compiles `patterns` (non-empty, distinct, sorted) into one automaton.
    pub(crate) fn build(patterns: Vec<String>) -> Result<Self> {
        let engine = Engine::build(&patterns).map_err(|source| Error::Build {
            count: patterns.len(),
            source: Box::new(source),
        })?;
        let groups = if engine.has_prefilter() {
            Vec::new()
        } else {
            packed_groups(&patterns)
        };
        Ok(Self {
            max_len: patterns.iter().map(String::len).max().unwrap_or(0),
            engine,
            groups,
            patterns: patterns.into_iter().map(String::into_boxed_str).collect(),
            prefixes: OnceLock::new(),
        })
    }

    /// The patterns, in sorted order.
    pub(crate) fn patterns(&self) -> impl Iterator<Item = &str> {
        self.patterns.iter().map(|p| &**p)
    }

    /// Whether `value` is one of the patterns.
    pub(crate) fn has(&self, value: &str) -> bool {
        self.patterns.binary_search_by(|p| (**p).cmp(value)).is_ok()
    }

    /// Whether `hay` contains a pattern.
    fn any(&self, hay: &[u8]) -> bool {
        if self.groups.is_empty() {
            self.engine.any(hay)
        } else {
            self.groups.iter().any(|group| group.find(hay).is_some())
        }
    }

    /// Pushes the range of every occurrence of every pattern in `hay` onto `found`,
    /// overlapping occurrences included (touching ones may arrive joined).
    ///
    /// With packed groups, each group finds the leftmost occurrence of one of its patterns
    /// from some point on; no occurrence of its patterns starts between that point and the
    /// one found. The automaton then reports every occurrence of any pattern that starts in
    /// the next `max_len` bytes, and the group resumes after them. A region can be reported
    /// twice, which the caller's merging absorbs.
    fn each(&self, hay: &[u8], found: &mut Vec<Range<usize>>) {
        if self.groups.is_empty() {
            self.engine.overlapping(hay, 0..hay.len(), found);
            return;
        }
        for group in &self.groups {
            let mut at = 0;
            while at < hay.len() {
                let Some(hit) = group.find_in(hay, Span::from(at..hay.len())) else {
                    break;
                };
                let stop = (hit.start() + 2 * self.max_len).min(hay.len());
                self.engine.overlapping(hay, hit.start()..stop, found);
                if stop == hay.len() {
                    break;
                }
                at = stop - self.max_len + 1;
            }
        }
    }

    /// Where the longest suffix of `hay` that begins a pattern starts: the earliest point
    /// at which an occurrence that needs more input could begin.
    ///
    /// The suffix may also be a whole pattern; such an occurrence is complete but ends with
    /// the text, so the next chunk could still touch it. Only the last `max_len - 1` bytes
    /// are tried: each start is first looked up among the patterns' first two bytes, and
    /// only then checked by walking the anchored automaton until it dies.
    fn partial(&self, hay: &[u8]) -> Option<usize> {
        let from = hay.len().saturating_sub(self.max_len.saturating_sub(1));
        let prefixes = self
            .prefixes
            .get_or_init(|| Prefixes::build(&self.patterns));
        let Some(prefixes) = prefixes else {
            // Cannot happen when the main automaton compiled; holding back the most that
            // could matter is still correct.
            return (from < hay.len()).then_some(from);
        };
        (from..hay.len()).find(|&at| prefixes.begins(&hay[at..]))
    }
}

/// Which strings begin a pattern.
struct Prefixes {
    /// Which bytes, and which pairs of bytes, begin some pattern: a bit set indexed by the
    /// byte, and by 256 plus the pair's two bytes as a 16-bit number.
    starts: Box<[u64]>,
    /// An automaton that only matches from where it starts.
    anchored: contiguous::NFA,
}

impl Prefixes {
    fn build(patterns: &[Box<str>]) -> Option<Self> {
        let anchored = contiguous::NFA::builder()
            .match_kind(MatchKind::Standard)
            .build(patterns.iter().map(|p| p.as_bytes()))
            .ok()?;
        let mut starts = vec![0_u64; (256 + 65536) / 64].into_boxed_slice();
        for pattern in patterns {
            let bytes = pattern.as_bytes();
            for bit in [
                bytes.first().map(|&b| usize::from(b)),
                pair(bytes).map(|p| 256 + p),
            ]
            .into_iter()
            .flatten()
            {
                starts[bit / 64] |= 1 << (bit % 64);
            }
        }
        Some(Self { starts, anchored })
    }

    /// Whether some pattern begins with `text`, which must not be empty.
    fn begins(&self, text: &[u8]) -> bool {
        let bit = pair(text).map_or(usize::from(text[0]), |p| 256 + p);
        if self.starts[bit / 64] & 1 << (bit % 64) == 0 {
            return false;
        }
        let Ok(start) = self.anchored.start_state(Anchored::Yes) else {
            return true;
        };
        text.iter()
            .try_fold(start, |state, &byte| {
                let next = self.anchored.next_state(Anchored::Yes, state, byte);
                (!self.anchored.is_dead(next)).then_some(next)
            })
            .is_some()
    }
}

/// The first two bytes of `bytes` as one number, if it has two.
fn pair(bytes: &[u8]) -> Option<usize> {
    match bytes {
        [first, second, ..] => Some(usize::from(*first) << 8 | usize::from(*second)),
        _ => None,
    }
}

/// The two automaton shapes a set may compile to. Both are driven through the same
/// [`Automaton`] trait; the enum exists so that the search is monomorphised instead of
/// paying for dynamic dispatch on every byte.
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

    fn has_prefilter(&self) -> bool {
        match self {
            Self::Dfa(a) => a.prefilter().is_some(),
            Self::Nfa(a) => a.prefilter().is_some(),
        }
    }

    fn any(&self, hay: &[u8]) -> bool {
        match self {
            Self::Dfa(a) => any(a, hay),
            Self::Nfa(a) => any(a, hay),
        }
    }

    fn overlapping(&self, hay: &[u8], span: Range<usize>, found: &mut Vec<Range<usize>>) {
        match self {
            Self::Dfa(a) => overlapping(a, hay, span, found),
            Self::Nfa(a) => overlapping(a, hay, span, found),
        }
    }
}

fn any<A: Automaton>(automaton: &A, hay: &[u8]) -> bool {
    automaton
        .try_find(&Input::new(hay))
        .expect("unanchored searches are supported: the automaton was built for them")
        .is_some()
}

fn overlapping<A: Automaton>(
    automaton: &A,
    hay: &[u8],
    span: Range<usize>,
    found: &mut Vec<Range<usize>>,
) {
    let input = Input::new(hay).span(span);
    let mut state = OverlappingState::start();
    loop {
        automaton
            .try_find_overlapping(&input, &mut state)
            .expect("unanchored overlapping searches are supported: Standard semantics");
        let Some(hit) = state.get_match() else {
            break;
        };
        push(found, hit.range());
    }
}

/// Packed searchers over groups of at most [`GROUP_SIZE`] patterns, or none if there would
/// be more than [`MAX_GROUPS`] or the processor lacks the vector instructions they need.
///
/// Without a prefilter, the automaton reads one byte at a time; with many random-looking
/// secrets none of its prefilters applies. Teddy compares a few bytes of every pattern
/// against 16 or 32 text bytes at once and beats it several times over, but slows down as
/// its groups fill up, so the patterns are split into balanced groups, each of which reads
/// the whole text.
fn packed_groups(patterns: &[String]) -> Vec<packed::Searcher> {
    let count = patterns.len().div_ceil(GROUP_SIZE);
    if count > MAX_GROUPS {
        return Vec::new();
    }
    let size = patterns.len().div_ceil(count.max(1));
    patterns
        .chunks(size.max(1))
        .map(|group| {
            packed::Config::new()
                .match_kind(packed::MatchKind::LeftmostFirst)
                .builder()
                .extend(group)
                .build()
        })
        .collect::<Option<Vec<_>>>()
        .unwrap_or_default()
}

/// Total pattern bytes up to which the set compiles to a DFA.
const DFA_BUDGET: usize = 64 * 1024;

/// Most patterns in one packed group; Teddy slows down with many more.
const GROUP_SIZE: usize = 50;

/// Most packed groups: past this, the groups together read the text more slowly than the
/// automaton alone.
const MAX_GROUPS: usize = 6;

/// Whether the text being scanned is whole, or may continue (a stream).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// The text is complete.
    Final,
    /// More text may follow.
    Open,
}

/// What a scan found.
#[derive(Debug)]
pub(crate) struct Found {
    /// The ranges to replace: sorted, disjoint, not touching, each made of whole escape
    /// sequences.
    pub(crate) ranges: Vec<Range<usize>>,
    /// For an open text, the point before which the text's fate is settled: no occurrence
    /// that needs more input can begin earlier, and no escape is cut there. For a final text,
    /// its length.
    pub(crate) settled: usize,
}

/// One search over the matchers of a set.
#[derive(Clone, Copy)]
pub(crate) struct Scan<'a> {
    first: &'a Matcher,
    second: Option<&'a Matcher>,
    max_len: usize,
}

impl<'a> Scan<'a> {
    pub(crate) fn new(first: &'a Matcher, second: Option<&'a Matcher>) -> Self {
        let max_len = first.max_len.max(second.map_or(0, |m| m.max_len));
        Self {
            first,
            second,
            max_len,
        }
    }

    /// The longest secret, in bytes.
    pub(crate) fn max_len(&self) -> usize {
        self.max_len
    }

    fn matchers(&self) -> impl Iterator<Item = &'a Matcher> {
        std::iter::once(self.first).chain(self.second)
    }

    /// Whether any view of `text` contains a secret. Stops at the first one.
    pub(crate) fn contains(&self, text: &str) -> bool {
        if self.matchers().any(|m| m.any(text.as_bytes())) {
            return true;
        }
        let (mut views, mut json) = (Views::default(), Views::default());
        Windows::new(text, self.max_len).any(|window| {
            views.decode(text, window.clone(), Mode::SEARCH);
            if self.any_view(&views) {
                return true;
            }
            // A secret that holds `%` followed by hex digits is spelled out only where JSON
            // escapes are decoded and percent-encoding is not.
            json.decode(text, window, Mode::SEARCH.json_only());
            self.any_view(&json)
        })
    }

    /// `text` with every secret, in every view, replaced by the marker.
    pub(crate) fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let found = self.find(text, None, End::Final);
        if found.ranges.is_empty() {
            Cow::Borrowed(text)
        } else {
            Cow::Owned(splice(text, &found.ranges))
        }
    }

    /// Every range to replace in `text`, whose first `covered` bytes (if given) are known
    /// to be replaced already.
    ///
    /// The plain text is searched whole; the decoded views only in the windows around
    /// introducers, and there first without tracking where each byte came from, since a
    /// window rarely holds a secret. Only a window with a hit, or one at the end of an open
    /// text, is decoded again with tracking to map what it holds back to the text.
    pub(crate) fn find(&self, text: &str, covered: Option<usize>, end: End) -> Found {
        let bytes = text.as_bytes();
        let mut found: Vec<Range<usize>> = covered.map(|len| 0..len).into_iter().collect();
        let mut settled = text.len();
        for matcher in self.matchers() {
            matcher.each(bytes, &mut found);
            if end == End::Open
                && let Some(at) = matcher.partial(bytes)
            {
                settled = settled.min(at);
            }
        }
        let windows: Vec<Range<usize>> = Windows::new(text, self.max_len).collect();
        let (mut views, mut json) = (Views::default(), Views::default());
        let mut hits = Vec::new();
        for window in &windows {
            let open = end == End::Open && window.end == text.len();
            if !open {
                views.decode(text, window.clone(), Mode::SEARCH);
                if !self.any_view(&views) {
                    // The JSON-only reading: where percent-decoding would consume a secret's
                    // own `%XX`.
                    json.decode(text, window.clone(), Mode::SEARCH.json_only());
                    if !self.any_view(&json) {
                        continue;
                    }
                }
            }
            let mode = Mode::tracked(open);
            views.decode(text, window.clone(), mode);
            json.decode(text, window.clone(), mode.json_only());
            for (view, decided) in views.searchable().chain(json.searchable()) {
                for matcher in self.matchers() {
                    hits.clear();
                    matcher.each(decided, &mut hits);
                    for hit in hits.drain(..) {
                        push(&mut found, view.source(hit));
                    }
                    if open && let Some(at) = matcher.partial(decided) {
                        settled = settled.min(view.source_start(at));
                    }
                }
            }
            if open {
                for frontier in [views.frontier(), json.frontier()].into_iter().flatten() {
                    settled = settled.min(frontier);
                }
                // More input can only begin a match at a unit, and the text held back is
                // decoded afresh from the settled point, so it must be a cut.
                if settled >= window.start {
                    let cuts = views.cuts(&json);
                    if let Some(&cut) = cuts[..cuts.partition_point(|&c| c <= settled)].last() {
                        settled = cut;
                    }
                }
            }
        }
        merge(&mut found);
        self.widen(text, &windows, end, &mut found, [&mut views, &mut json]);
        merge(&mut found);
        Found {
            ranges: found,
            settled: text.floor_char_boundary(settled),
        }
    }

    /// Whether any searchable view in `views` contains a secret.
    fn any_view(&self, views: &Views) -> bool {
        views
            .searchable()
            .any(|(_, bytes)| self.matchers().any(|m| m.any(bytes)))
    }

    /// Grows each (sorted, disjoint) range to begin and end at cuts: points that split no
    /// escape sequence, at either level, whether all escapes are read or JSON's alone.
    ///
    /// A plain-view match may begin or end inside an escape sequence (the secret `\nabc…` in
    /// the text `\\nabc…`), and replacing half an escape would corrupt the JSON string it
    /// sits in. Ranges only need to grow inside windows: no unit crosses a window's edge.
    fn widen(
        &self,
        text: &str,
        windows: &[Range<usize>],
        end: End,
        found: &mut [Range<usize>],
        [views, json]: [&mut Views; 2],
    ) {
        for window in windows {
            let first = found.partition_point(|r| r.end <= window.start);
            if found.get(first).is_none_or(|r| r.start >= window.end) {
                continue;
            }
            let mode = Mode::tracked(end == End::Open && window.end == text.len());
            views.decode(text, window.clone(), mode);
            json.decode(text, window.clone(), mode.json_only());
            let cuts = views.cuts(json);
            // Past the last cut, the end of an open text is undecided: leave it alone.
            let decided = window.start..=cuts.last().copied().unwrap_or(window.start);
            for range in found[first..]
                .iter_mut()
                .take_while(|r| r.start < window.end)
            {
                if decided.contains(&range.start) {
                    let before = cuts.partition_point(|&c| c <= range.start);
                    range.start = cuts[before.saturating_sub(1)];
                }
                if decided.contains(&range.end) {
                    range.end = cuts[cuts.partition_point(|&c| c < range.end)];
                }
            }
        }
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
    ranges.dedup_by(|next, kept| {
        let joins = next.start <= kept.end;
        if joins {
            kept.end = kept.end.max(next.end);
        }
        joins
    });
}

/// `text` with each (sorted, disjoint) range replaced by the marker.
pub(crate) fn splice(text: &str, ranges: &[Range<usize>]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for range in ranges {
        // The ranges are built from whole characters; rounding outward only guards against
        // a future bug turning into a panic on someone's chat message.
        let start = text.floor_char_boundary(range.start).max(copied);
        let end = text.ceil_char_boundary(range.end).max(start);
        out.push_str(&text[copied..start]);
        out.push_str(REDACTED);
        copied = end;
    }
    out.push_str(&text[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{Matcher, merge, packed_groups};
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
        // Replacing only the second occurrence would leave `[redacted]abcdefgh` or
        // `abcdefgh[redacted]`, which contain the secret again; the edge-free part of each
        // secret is searched too, so one pass covers both copies.
        check(&["ed]abcdefgh"], "xed]abcdefghabcdefgh", "x[redacted]");
        check(&["abcdefgh[re"], "abcdefghabcdefgh[re", "[redacted]");
        check(&["ed]abcdefgh"], "abcdefgh", "[redacted]");
        // A value made mostly of marker pieces is too short once they are cut off.
        check(&["ed]abcdef"], "xed]abcdefabcdef", "xed]abcdefabcdef");
    }

    #[test]
    fn marker_fed_runs_take_one_pass() {
        // Every copy holds the edge-free part, so a long run goes in one pass, as one
        // marker, instead of one round per copy.
        check(
            &["edacted]xyzxyzxy"],
            &format!("edacted]{}tail", "xyzxyzxy".repeat(5000)),
            "[redacted]tail",
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
    fn percent_encoded_secret_passes_through() {
        // Regression: a secret copied into a URL query was not found.
        check(
            &["tok/abc+def=="],
            "GET /v1?key=tok%2Fabc%2Bdef%3D%3D&x=1",
            "GET /v1?key=[redacted]&x=1",
        );
        check(
            &["tok/abc+def=="],
            "?key=tok%2fabc%2bdef%3d%3d",
            "?key=[redacted]",
        );
        // Every character encoded, or only some, in either case.
        check(
            &["secret-value"],
            "%73%65%63%72%65%74%2D%76%61%6C%75%65",
            "[redacted]",
        );
        check(&["secret-value"], "s%65cret-valu%65!", "[redacted]!");
        check(&["pässwörd-ü"], "p%C3%A4ssw%c3%b6rd-%C3%BC", "[redacted]");
        // Inside JSON, mixed with JSON escapes, and encoded twice.
        check(
            &["tok/abc\"n1234"],
            r#"{"url":"https:\/\/x?k=tok%2Fabc\"n1234"}"#,
            r#"{"url":"https:\/\/x?k=[redacted]"}"#,
        );
        check(
            &["tok/abc+def=="],
            "x=tok%252Fabc%252Bdef%253D%253D",
            "x=[redacted]",
        );
        check(
            &["tok/abc+def=="],
            r"x=tok\u00252Fabc+def==",
            "x=[redacted]",
        );
        // Not an escape: a lone or short percent sign stays literal.
        check(&["100%abcdef"], "is 100%abcdef", "is [redacted]");
        check(&["abcdefgh"], "50% of abcdefg%", "50% of abcdefg%");
    }

    #[test]
    fn escapes_far_apart_in_long_text() {
        let filler = "lorem ipsum ".repeat(200);
        let input = format!(r"{filler}\n{filler}se\u0063ret-value{filler}\t");
        let expected = format!(r"{filler}\n{filler}[redacted]{filler}\t");
        check(&["secret-value"], &input, &expected);
    }

    /// Patterns over a three-letter alphabet, so that random text holds many occurrences,
    /// many of them overlapping.
    fn pattern() -> impl Strategy<Value = String> {
        proptest::collection::vec(proptest::sample::select(vec!['a', 'b', 'c']), 8..12)
            .prop_map(String::from_iter)
    }

    proptest! {
        /// Packed groups are only a faster way to find candidates: whatever patterns the
        /// automaton finds on its own, the groups lead it to the same ones.
        #[test]
        fn packed_groups_find_what_the_automaton_finds(
            patterns in proptest::collection::btree_set(pattern(), 1..160),
            text in proptest::collection::vec(proptest::sample::select(vec!['a', 'b', 'c', ' ']), 0..600),
        ) {
            let mut matcher = Matcher::build(patterns.iter().cloned().collect()).unwrap();
            matcher.groups = packed_groups(&patterns.iter().cloned().collect::<Vec<_>>());
            let text: String = text.into_iter().collect();
            let mut alone = Vec::new();
            matcher.engine.overlapping(text.as_bytes(), 0..text.len(), &mut alone);
            merge(&mut alone);
            let mut grouped = Vec::new();
            matcher.each(text.as_bytes(), &mut grouped);
            merge(&mut grouped);
            prop_assert_eq!(&grouped, &alone);
            prop_assert_eq!(matcher.any(text.as_bytes()), !alone.is_empty());
        }
    }
}
