//! The decoded views of a text that the scanner searches: the text itself, the text with its
//! JSON escapes decoded once, and decoded twice. Every decoded character remembers the bytes
//! of the original text it came from, so a match in any view maps back to a range to replace.

use std::ops::{ControlFlow, Range};

/// A piece of a view: the UTF-8 bytes it contributes, together with the range of
/// original-text bytes that produced them.
///
/// A byte written as itself is its own unit, covering just that byte; that includes each
/// byte of a multi-byte character, which keeps the common path free of UTF-8 decoding.
/// A decoded escape is one unit holding its character's bytes and covering the whole
/// sequence; after the second decoding it covers every sequence that contributed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Unit {
    /// The contributed bytes in the low four bytes (little-endian) and their count in the
    /// fifth. One word rather than an array and a length, so that a unit is written and read
    /// whole: the hot loop hands units along through memory, and a read that spans several
    /// smaller writes stalls the processor.
    packed: u64,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

impl Unit {
    fn raw(byte: u8, at: usize) -> Self {
        Self {
            packed: u64::from(byte) | 1 << 32,
            start: at,
            end: at + 1,
        }
    }

    fn decoded(ch: char, start: usize, end: usize) -> Self {
        let mut bytes = [0; 4];
        let len = ch.encode_utf8(&mut bytes).len() as u64;
        Self {
            packed: u64::from(u32::from_le_bytes(bytes)) | len << 32,
            start,
            end,
        }
    }

    /// The bytes this unit contributes to its view.
    pub(crate) fn bytes(&self) -> impl Iterator<Item = u8> {
        (self.packed as u32)
            .to_le_bytes()
            .into_iter()
            .take(self.len())
    }

    /// Whether the unit stands for more original text than it contributes, that is, it
    /// came from an escape sequence.
    pub(crate) fn is_escape(&self) -> bool {
        self.end - self.start > self.len()
    }

    pub(crate) fn is_backslash(&self) -> bool {
        self.ascii() == Some(b'\\')
    }

    fn len(&self) -> usize {
        (self.packed >> 32) as usize
    }

    /// The ASCII character this unit is, if it is one.
    fn ascii(&self) -> Option<u8> {
        let first = self.packed as u8;
        (self.len() == 1 && first.is_ascii()).then_some(first)
    }
}

/// Which view of the text to produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Level {
    /// JSON escapes decoded once.
    Once,
    /// JSON escapes decoded twice.
    Twice,
}

/// Passes the units of one decoded view of `text[window]` to `emit`, in order, stopping
/// early if `emit` breaks.
pub(crate) fn visit<E>(
    level: Level,
    text: &str,
    window: Range<usize>,
    emit: &mut E,
) -> ControlFlow<()>
where
    E: FnMut(Unit) -> ControlFlow<()>,
{
    match level {
        Level::Once => decode_once(text, window, emit),
        Level::Twice => {
            let mut inner = Unescape::new(Quotes::EscapedOnly);
            decode_once(text, window, &mut |unit| inner.push(unit, emit))?;
            inner.finish(emit)
        }
    }
}

/// The stretches of a text whose decoded views can differ from the text itself.
///
/// Decoding only changes characters at and right after a backslash, so a match that the
/// plain search cannot see must include a backslash in its source range. Such a match starts
/// at most `max_len - 1` bytes before its first backslash (everything before it is plain
/// text, one byte per byte) and ends at most [`ESCAPE_REACH`] plus `max_len - 1` bytes after
/// its last one. Each window therefore reaches that far around every backslash, and windows
/// closer together than that are joined, so that no escape sequence and no match is ever
/// cut in two. Text far from any backslash is searched once, in the plain view only, which
/// keeps the cost of the decoded views proportional to how much escaping the text contains.
#[derive(Debug)]
pub(crate) struct Windows<'t> {
    text: &'t str,
    at: usize,
    before: usize,
    after: usize,
}

impl<'t> Windows<'t> {
    pub(crate) fn new(text: &'t str, max_len: usize) -> Self {
        Self {
            text,
            at: 0,
            before: max_len,
            after: max_len + ESCAPE_REACH,
        }
    }
}

impl Iterator for Windows<'_> {
    type Item = Range<usize>;

    fn next(&mut self) -> Option<Range<usize>> {
        let first = self.at + self.text.get(self.at..)?.find('\\')?;
        let bytes = self.text.as_bytes();
        let mut last = first;
        loop {
            let from = last + 1;
            let limit = (last + self.after + self.before).min(bytes.len());
            match bytes[from..limit].iter().position(|&b| b == b'\\') {
                Some(offset) => last = from + offset,
                None => break,
            }
        }
        let start = self
            .text
            .floor_char_boundary(first.saturating_sub(self.before));
        let end = self.text.ceil_char_boundary(last + self.after);
        self.at = end;
        Some(start..end)
    }
}

/// The parts of `window` that must be decoded to see everything within `spots` (sorted and
/// disjoint), each of which can be decoded on its own.
///
/// A part may only begin and end at a *cut*: a point that no escape sequence spans at
/// either level of decoding, so that decoding from there agrees with decoding the whole
/// window. The window's own ends are cuts, and so is any point preceded by
/// [`ESCAPE_REACH`] bytes without a backslash, since no decoded character reaches that far
/// past its last backslash. Parts that would overlap are joined.
pub(crate) fn parts(
    text: &str,
    window: &Range<usize>,
    spots: &[Range<usize>],
) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    let window = window.start..window.end.min(bytes.len());
    let first = spots.partition_point(|s| s.end <= window.start);
    let mut parts: Vec<Range<usize>> = Vec::new();
    for spot in spots[first..].iter().take_while(|s| s.start < window.end) {
        let from = spot.start.max(window.start);
        let to = spot.end.min(window.end);
        match parts.last_mut() {
            Some(last) if from <= last.end => {
                last.end = last.end.max(cut_after(bytes, to, window.end))
            }
            last => {
                let floor = last.map_or(window.start, |l| l.end);
                let start = cut_before(bytes, from, floor);
                parts.push(start..cut_after(bytes, to, window.end));
            }
        }
    }
    parts
}

/// The view with escapes decoded once.
fn decode_once<E>(text: &str, window: Range<usize>, emit: &mut E) -> ControlFlow<()>
where
    E: FnMut(Unit) -> ControlFlow<()>,
{
    let bytes = text.as_bytes();
    let window = window.start.min(bytes.len())..window.end.min(bytes.len());
    let mut outer = Unescape::new(Quotes::Any);
    for (at, &byte) in (window.start..).zip(&bytes[window]) {
        outer.push(Unit::raw(byte, at), emit)?;
    }
    outer.finish(emit)
}

/// The last cut at or before `at`, but not before `floor`, which must be a cut.
fn cut_before(bytes: &[u8], at: usize, floor: usize) -> usize {
    let mut clean = 0;
    let mut index = at;
    while index > floor {
        if clean == ESCAPE_REACH {
            return index + ESCAPE_REACH;
        }
        index -= 1;
        if bytes[index] == b'\\' {
            clean = 0;
        } else {
            clean += 1;
        }
    }
    if clean == ESCAPE_REACH {
        index + ESCAPE_REACH
    } else {
        floor
    }
}

/// The first cut at or after `at`, but not after `ceiling`, which must be a cut.
fn cut_after(bytes: &[u8], at: usize, ceiling: usize) -> usize {
    let back = at.saturating_sub(ESCAPE_REACH);
    let mut clean = bytes[back..at]
        .iter()
        .rev()
        .take_while(|&&b| b != b'\\')
        .count();
    let mut index = at;
    while index < ceiling {
        if clean >= ESCAPE_REACH {
            return index;
        }
        if bytes[index] == b'\\' {
            clean = 0;
        } else {
            clean += 1;
        }
        index += 1;
    }
    ceiling
}

/// Which quotes may follow a backslash to form the escape `\"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Quotes {
    /// Any quote: right for the outermost level of decoding.
    Any,
    /// Only a quote that was itself escaped one level down. In JSON nested inside a JSON
    /// string every inner quote is escaped at the outer level, while an unescaped quote is
    /// the outer string's own delimiter. Refusing to pair a backslash with such a quote keeps
    /// a decoded character from straddling the end of an outer string, which matters because
    /// a replacement must never swallow a string delimiter.
    EscapedOnly,
}

/// Decodes JSON escapes in a stream of units pushed into it.
///
/// Recognises `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t` and `\uXXXX` with hex digits in
/// either case, joining a high and a low surrogate escape into one character. Anything else
/// after a backslash (an unknown letter, a short `\u`, a lone surrogate) is not an escape,
/// so the backslash passes through as a literal character and decoding resumes right after
/// it, just as a lenient reader would see the text.
///
/// Units wait in a small buffer only from a backslash until the escape is decided, so the
/// usual unit passes straight through.
#[derive(Debug)]
struct Unescape {
    quotes: Quotes,
    pending: [Unit; PENDING],
    len: usize,
}

impl Unescape {
    fn new(quotes: Quotes) -> Self {
        Self {
            quotes,
            pending: [Unit::raw(0, 0); PENDING],
            len: 0,
        }
    }

    /// Takes the next unit, passing on every unit of the decoded view that is now certain.
    // Inlined so that the common unit travels on to the automaton without a call.
    #[inline(always)]
    fn push<E>(&mut self, unit: Unit, emit: &mut E) -> ControlFlow<()>
    where
        E: FnMut(Unit) -> ControlFlow<()>,
    {
        if self.len == 0 && !unit.is_backslash() {
            return emit(unit);
        }
        self.pending[self.len] = unit;
        self.len += 1;
        self.drain(false, emit)
    }

    /// Ends the stream: a sequence still undecided is incomplete, so it is literal text.
    fn finish<E>(&mut self, emit: &mut E) -> ControlFlow<()>
    where
        E: FnMut(Unit) -> ControlFlow<()>,
    {
        self.drain(true, emit)
    }

    fn drain<E>(&mut self, at_end: bool, emit: &mut E) -> ControlFlow<()>
    where
        E: FnMut(Unit) -> ControlFlow<()>,
    {
        while self.len > 0 {
            let first = self.pending[0];
            let used = if first.is_backslash() {
                match escape(&self.pending[..self.len], self.quotes) {
                    Escape::Incomplete if !at_end => return ControlFlow::Continue(()),
                    Escape::Incomplete | Escape::Invalid => {
                        emit(first)?;
                        1
                    }
                    Escape::Char(ch, used) => {
                        let end = self.pending[used - 1].end;
                        emit(Unit::decoded(ch, first.start, end))?;
                        used
                    }
                }
            } else {
                emit(first)?;
                1
            };
            self.pending.copy_within(used..self.len, 0);
            self.len -= used;
        }
        ControlFlow::Continue(())
    }
}

/// What the units after a backslash amount to.
enum Escape {
    /// This character, made of the first `usize` units.
    Char(char, usize),
    /// Not an escape: the backslash is literal.
    Invalid,
    /// Cannot tell yet; more units are needed.
    Incomplete,
}

/// Reads the escape at the start of `units`, whose first unit is a backslash.
fn escape(units: &[Unit], quotes: Quotes) -> Escape {
    let Some(second) = units.get(1) else {
        return Escape::Incomplete;
    };
    let ch = match second.ascii() {
        Some(b'"') if quotes == Quotes::EscapedOnly && !second.is_escape() => {
            return Escape::Invalid;
        }
        Some(b'"') => '"',
        Some(b'\\') => '\\',
        Some(b'/') => '/',
        Some(b'b') => '\u{8}',
        Some(b'f') => '\u{c}',
        Some(b'n') => '\n',
        Some(b'r') => '\r',
        Some(b't') => '\t',
        Some(b'u') => return unicode(units),
        _ => return Escape::Invalid,
    };
    Escape::Char(ch, 2)
}

fn unicode(units: &[Unit]) -> Escape {
    let first = match hex4(units, 2) {
        Ok(value) => value,
        Err(outcome) => return outcome,
    };
    if !(0xD800..0xDC00).contains(&first) {
        // `from_u32` rejects a lone low surrogate, which then passes through literally.
        return char::from_u32(first).map_or(Escape::Invalid, |ch| Escape::Char(ch, 6));
    }
    for (index, expected) in [(6, b'\\'), (7, b'u')] {
        match units.get(index) {
            None => return Escape::Incomplete,
            Some(unit) if unit.ascii() != Some(expected) => return Escape::Invalid,
            Some(_) => {}
        }
    }
    let second = match hex4(units, 8) {
        Ok(value) => value,
        Err(outcome) => return outcome,
    };
    if !(0xDC00..0xE000).contains(&second) {
        return Escape::Invalid;
    }
    let code = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
    char::from_u32(code).map_or(Escape::Invalid, |ch| Escape::Char(ch, 12))
}

/// The four hex digits starting at `units[at]`, or why there are none (yet).
fn hex4(units: &[Unit], at: usize) -> Result<u32, Escape> {
    let mut value = 0;
    for index in at..at + 4 {
        let unit = units.get(index).ok_or(Escape::Incomplete)?;
        let digit = unit
            .ascii()
            .and_then(|byte| char::from(byte).to_digit(16))
            .ok_or(Escape::Invalid)?;
        value = value * 16 + digit;
    }
    Ok(value)
}

/// Room for the longest escape, a surrogate pair `\uD83D\uDE00` of 12 units: once that
/// many are buffered the escape is always decided.
const PENDING: usize = 12;

/// How far past its last backslash a decoded character can reach in the original text: a
/// `\uXXXX` escape is 6 bytes and the second decoding can add a trailing `uXXXX` written out
/// plainly. The bound is rounded up generously; a larger value only widens windows.
const ESCAPE_REACH: usize = 24;

#[cfg(test)]
mod tests {
    use proptest::prelude::Strategy;

    use super::*;

    /// Decodes `input` at `level` and compares the view's text and the source ranges of the
    /// units that came from escapes.
    fn check(level: Level, input: &str, text: &str, escapes: &[(usize, usize)]) {
        let mut bytes = Vec::new();
        let mut spans = Vec::new();
        let flow = visit(level, input, 0..input.len(), &mut |unit| {
            bytes.extend(unit.bytes());
            if unit.is_escape() {
                spans.push((unit.start, unit.end));
            }
            ControlFlow::Continue(())
        });
        assert_eq!(flow, ControlFlow::Continue(()));
        assert_eq!(String::from_utf8(bytes).unwrap(), text, "input: {input:?}");
        assert_eq!(spans, escapes, "input: {input:?}");
    }

    #[test]
    fn short_escapes_cover_both_bytes() {
        check(Level::Once, r#"a\"b"#, "a\"b", &[(1, 3)]);
        check(Level::Once, r"\\\/", "\\/", &[(0, 2), (2, 4)]);
        check(
            Level::Once,
            r"\b\f\n\r\t",
            "\u{8}\u{c}\n\r\t",
            &[(0, 2), (2, 4), (4, 6), (6, 8), (8, 10)],
        );
    }

    #[test]
    fn unicode_escapes_in_either_case() {
        check(Level::Once, r"\u00e9\u00E9", "éé", &[(0, 6), (6, 12)]);
        check(Level::Once, r"\uD83D\uDE00!", "😀!", &[(0, 12)]);
        check(Level::Once, r"\ud83d\ude00", "😀", &[(0, 12)]);
    }

    #[test]
    fn plain_text_passes_through() {
        check(Level::Once, "plain é 😀", "plain é 😀", &[]);
        check(Level::Twice, "plain é 😀", "plain é 😀", &[]);
    }

    #[test]
    fn invalid_escapes_pass_through() {
        check(Level::Once, r"\x", r"\x", &[]);
        check(Level::Once, r"\u12", r"\u12", &[]);
        check(Level::Once, r"\u12g4\n", "\\u12g4\n", &[(6, 8)]);
        check(Level::Once, r"\uD83Dz", r"\uD83Dz", &[]);
        check(Level::Once, r"\uD83D\u0041", r"\uD83DA", &[(6, 12)]);
        check(Level::Once, r"\uDE00\u0041", r"\uDE00A", &[(6, 12)]);
        check(Level::Once, r"\uD83D\uD83D\uDE00", r"\uD83D😀", &[(6, 18)]);
        check(Level::Once, "\\", "\\", &[]);
        check(Level::Once, "é\\é", "é\\é", &[]);
        check(Level::Once, r"\\\", r"\\", &[(0, 2)]);
    }

    #[test]
    fn second_decoding_spans_the_whole_source() {
        check(Level::Twice, r"x\\u0041", "xA", &[(1, 8)]);
        check(Level::Twice, r#"\\\"q\\\""#, r#""q""#, &[(0, 4), (5, 9)]);
        check(Level::Twice, r"\u005c\u0022", "\"", &[(0, 12)]);
        check(Level::Twice, r"\\n", "\n", &[(0, 3)]);
        check(Level::Twice, r"\\\\n", "\\n", &[(0, 4)]);
        check(Level::Twice, r"\\uD83D\\uDE00", "😀", &[(0, 14)]);
    }

    #[test]
    fn second_decoding_keeps_outer_string_delimiters() {
        // The outer document `["a\\",1]` holds the string `a\`; its closing quote is not an
        // escaped inner quote.
        check(Level::Twice, r#"["a\\",1]"#, r#"["a\",1]"#, &[(3, 5)]);
    }

    #[test]
    fn windows_surround_backslashes() {
        let bounds = |text: &str| -> Vec<(usize, usize)> {
            Windows::new(text, 8).map(|w| (w.start, w.end)).collect()
        };
        let text = format!(
            "{}\\n{}\\t{}",
            "a".repeat(100),
            "b".repeat(10),
            "c".repeat(200)
        );
        assert_eq!(bounds(&text), [(92, 144)]);
        assert_eq!(bounds("no escapes here"), []);
        let far = format!("\\{}\\", "a".repeat(100));
        assert_eq!(bounds(&far), [(0, 32), (93, 102)]);
    }

    /// Compares the parts of the whole of `text` needed for `spots`, as pairs of bounds.
    fn check_parts(text: &str, spots: &[(usize, usize)], expected: &[(usize, usize)]) {
        let spots: Vec<Range<usize>> = spots.iter().map(|&(start, end)| start..end).collect();
        let got: Vec<(usize, usize)> = parts(text, &(0..text.len()), &spots)
            .into_iter()
            .map(|part| (part.start, part.end))
            .collect();
        assert_eq!(got, expected, "spots: {spots:?}");
    }

    #[test]
    fn parts_start_after_a_clean_stretch() {
        let text = format!(
            "{}\\n{}\\t{}",
            "a".repeat(100),
            "b".repeat(100),
            "c".repeat(100)
        );
        // A cut needs ESCAPE_REACH clean bytes before it: the escape at 100 ends the stretch.
        check_parts(&text, &[(110, 115)], &[(100, 125)]);
        check_parts(&text, &[(195, 205)], &[(195, 227)]);
        check_parts(&text, &[(150, 160)], &[(150, 160)]);
        // Spots whose parts would overlap share one part.
        check_parts(&text, &[(110, 111), (112, 113)], &[(100, 125)]);
        // Backslashes too close together for a cut: the part grows to the text's ends.
        let dense = r"\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n";
        check_parts(dense, &[(10, 12)], &[(0, dense.len())]);
    }

    /// Every unit of `level` for `text[part]`.
    fn units(level: Level, text: &str, part: Range<usize>) -> Vec<Unit> {
        let mut units = Vec::new();
        let _ = visit(level, text, part, &mut |unit| {
            units.push(unit);
            ControlFlow::Continue(())
        });
        units
    }

    fn piece() -> impl Strategy<Value = &'static str> {
        proptest::sample::select(vec![
            "\\",
            "\\\\",
            "u",
            "U",
            "0",
            "0041",
            "005c",
            "D83D",
            "de00",
            "\"",
            "n",
            "é",
            "😀",
            "plain text ",
            "[redacted]",
            "x",
        ])
    }

    proptest::proptest! {
        /// Decoding a part on its own gives exactly the units the whole text has there.
        #[test]
        fn parts_decode_like_the_whole(
            pieces in proptest::collection::vec(piece(), 0..60),
            spot in (0..400_usize, 0..40_usize),
        ) {
            let text = pieces.concat();
            let window = 0..text.len();
            let start = spot.0.min(text.len());
            let spot = start..(start + spot.1).min(text.len());
            for part in parts(&text, &window, std::slice::from_ref(&spot)) {
                proptest::prop_assert!(part.start <= spot.start && spot.end <= part.end);
                for level in [Level::Once, Level::Twice] {
                    let whole: Vec<Unit> = units(level, &text, window.clone())
                        .into_iter()
                        .filter(|u| part.start <= u.start && u.end <= part.end)
                        .collect();
                    proptest::prop_assert_eq!(units(level, &text, part.clone()), whole);
                }
            }
        }
    }
}
