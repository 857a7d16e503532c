//! The decoded views of a text that the scanner searches besides the text itself: the text
//! with its escapes (JSON and percent-encoding) decoded once, and decoded twice. A stretch of
//! text is decoded in bulk into a buffer; on request every decoded byte also records where
//! in the original text its unit began, so that a match in a view maps back to the bytes to
//! replace.

use std::ops::Range;

use memchr::{memchr, memchr2};

/// How far past its last introducer a decoded unit can reach in the original text: a
/// surrogate pair `\uD83D\uDE00` reaches 11 bytes past its second backslash, and the second
/// decoding can add an escape written out plainly after a decoded backslash, as in
/// `\u005cuDE00`. The bound is rounded up generously; a larger value only widens windows.
pub(crate) const ESCAPE_REACH: usize = 24;

/// The most original-text bytes one byte of the twice-decoded view can come from: an ASCII
/// character written as `\u0041` at the inner level, each of whose six characters is in
/// turn written as a six-byte `\u00XX` at the outer level.
pub(crate) const MAX_SPREAD: usize = 36;

/// The longest stretch of original text that one twice-decoded unit can cover: a surrogate
/// pair, twelve characters, each written as a six-byte `\u00XX`.
pub(crate) const MAX_UNIT: usize = 72;

/// One decoded view of a stretch of text.
///
/// A *unit* is what one step of decoding produces: a byte written as itself (each byte of
/// a multi-byte character is its own unit), or the character or byte an escape sequence
/// stands for. Units tile the stretch they come from without gaps, so a unit ends where the
/// next one begins.
#[derive(Debug, Default)]
pub(crate) struct View {
    bytes: Vec<u8>,
    /// With tracking, one entry per byte plus a last one: where in the original text the
    /// unit of each byte begins, and where the stretch ends.
    starts: Vec<usize>,
    /// Indices of the `"` bytes that an escape produced. The next level of decoding needs
    /// them to tell an escaped inner quote from an outer string's delimiter.
    quoted: Vec<usize>,
    /// The first escape the input ended too early to decide: its index in the input and
    /// how many bytes were decoded before it. Decoding reads it as literal text, which is
    /// final for a whole text but not for one that may continue.
    pending: Option<(usize, usize)>,
    /// Whether the view holds an introducer, so that decoding it again can change it.
    introducers: bool,
}

impl View {
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The bytes that more input cannot change: those before a pending escape.
    pub(crate) fn decided(&self) -> &[u8] {
        &self.bytes[..self
            .pending
            .map_or(self.bytes.len(), |(_, decoded)| decoded)]
    }

    /// Where in the original text the unit of byte `index` begins (tracked views only);
    /// `index` may be the length, for the end of the stretch.
    pub(crate) fn source_start(&self, index: usize) -> usize {
        self.starts[index]
    }

    /// The original-text range of the view bytes `range` (tracked views only), from the
    /// start of the unit of its first byte to the end of the unit of its last.
    pub(crate) fn source(&self, range: Range<usize>) -> Range<usize> {
        let start = self.starts[range.start];
        let last = self.starts[range.end.saturating_sub(1).max(range.start)];
        let end = self.starts[range.end..]
            .iter()
            .copied()
            .find(|&s| s > last)
            .unwrap_or(last);
        start..end
    }

    /// The original-text offsets where its units begin (tracked views only), and the end
    /// of the stretch, in order.
    fn boundaries(&self) -> impl Iterator<Item = usize> + '_ {
        let mut previous = None;
        self.starts.iter().copied().filter(move |&start| {
            let new = previous != Some(start);
            previous = Some(start);
            new
        })
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.starts.clear();
        self.quoted.clear();
        self.pending = None;
        self.introducers = false;
    }
}

/// Which escapes a decoding reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Escapes {
    /// JSON escapes and percent-encoding, at every level: what the search reads.
    All,
    /// JSON escapes only: the structure a JSON reader sees, which replacements must respect
    /// to keep JSON valid.
    Json,
}

/// How to decode a stretch.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mode {
    escapes: Escapes,
    /// Whether every byte records its source unit.
    track: bool,
    /// Whether the text may continue past the stretch: an escape cut off by its end is then
    /// left undecided, the second decoding stops before it and [`Views::frontier`] reports
    /// it.
    open: bool,
}

impl Mode {
    /// A quick decoding to search: all escapes, nothing tracked, the text complete.
    pub(crate) const SEARCH: Self = Self {
        escapes: Escapes::All,
        track: false,
        open: false,
    };

    /// All escapes, tracking each byte's source, for a text that may continue (`open`) or
    /// not.
    pub(crate) fn tracked(open: bool) -> Self {
        Self {
            escapes: Escapes::All,
            track: true,
            open,
        }
    }

    /// The same decoding, reading JSON escapes only.
    pub(crate) fn json_only(self) -> Self {
        Self {
            escapes: Escapes::Json,
            ..self
        }
    }
}

/// A stretch of text decoded once and, where that can change anything, twice; when all
/// escapes are read, the second decoding is also done reading JSON's alone (percent-encoded
/// JSON whose string holds a secret with its own `%XX`).
#[derive(Debug, Default)]
pub(crate) struct Views {
    once: View,
    twice: View,
    /// Whether `twice` holds the second decoding; otherwise it equals `once`.
    has_twice: bool,
    /// The second decoding reading JSON escapes only, over a first that read all of them.
    twice_json: View,
    /// Whether `twice_json` holds it.
    has_twice_json: bool,
    /// Whether the stretch reaches the end of a text that may continue.
    open: bool,
}

impl Views {
    /// Decodes `text[window]`, which must begin and end at points no escape spans.
    pub(crate) fn decode(&mut self, text: &str, window: Range<usize>, mode: Mode) {
        let input = &text.as_bytes()[window.clone()];
        let once = Positions::Offset(window.start);
        decode(input, once, None, mode, &mut self.once);
        self.open = mode.open;
        self.has_twice = self.once.introducers;
        if self.has_twice {
            decode_again(&self.once, mode, &mut self.twice);
        }
        self.has_twice_json =
            self.has_twice && mode.escapes == Escapes::All && self.once.bytes.contains(&b'\\');
        if self.has_twice_json {
            decode_again(&self.once, mode.json_only(), &mut self.twice_json);
        }
    }

    /// The views to search, each limited to its decided bytes when the text may continue.
    pub(crate) fn searchable(&self) -> impl Iterator<Item = (&View, &[u8])> {
        let views = [
            Some(&self.once),
            self.has_twice.then_some(&self.twice),
            self.has_twice_json.then_some(&self.twice_json),
        ];
        views.into_iter().flatten().map(|view| {
            let bytes = if self.open {
                view.decided()
            } else {
                view.bytes()
            };
            (view, bytes)
        })
    }

    /// The first original-text offset whose decoding more input could still change (tracked
    /// and open views only).
    pub(crate) fn frontier(&self) -> Option<usize> {
        let once = self
            .once
            .pending
            .map(|(_, decoded)| self.once.starts[decoded]);
        let twice = self
            .has_twice
            .then_some(self.twice.pending)
            .flatten()
            .map(|(input, _)| self.once.starts[input]);
        let twice_json = self
            .has_twice_json
            .then_some(self.twice_json.pending)
            .flatten()
            .map(|(input, _)| self.once.starts[input]);
        once.into_iter().chain(twice).chain(twice_json).min()
    }

    /// The points of the decided stretch, in order, that no unit of this decoding and none
    /// of `other`'s (of the same stretch) spans: there a replacement can begin or end without
    /// cutting an escape, and decoding can start afresh. Both must be tracked.
    ///
    /// The twice-decoded units are the coarsest of a decoding, each made of whole escape
    /// sequences at both levels. Decoding all escapes at each level groups bytes differently
    /// from reading JSON alone: in `%5c\\\"`, the first reads a backslash from `%5c\\`
    /// and a quote, JSON alone reads the literal `%5c` and an escaped quote. A point must
    /// be a boundary for both.
    pub(crate) fn cuts(&self, other: &Views) -> Vec<usize> {
        let mut theirs = other.coarsest().boundaries().peekable();
        self.coarsest()
            .boundaries()
            .filter(|&at| {
                while theirs.next_if(|&b| b < at).is_some() {}
                theirs.peek() == Some(&at)
            })
            .collect()
    }

    fn coarsest(&self) -> &View {
        if self.has_twice {
            &self.twice
        } else {
            &self.once
        }
    }
}

/// Decodes the first decoding `once` a second time with `mode` into `out`: up to its
/// decided bytes when the text may continue, each unit mapped back to the original text.
fn decode_again(once: &View, mode: Mode, out: &mut View) {
    let limit = if mode.open {
        once.decided().len()
    } else {
        once.bytes.len()
    };
    decode(
        &once.bytes[..limit],
        Positions::Table(&once.starts),
        Some(&once.quoted),
        mode,
        out,
    );
}

/// The stretches of a text whose decoded views can differ from the text itself.
///
/// Decoding only changes bytes at and right after an introducer, so a match that the plain
/// search cannot see must include an introducer in its source range. Such a match starts at
/// most `max_len - 1` bytes before its first introducer (everything before it is plain text,
/// one byte per byte) and ends at most [`ESCAPE_REACH`] plus `max_len - 1` bytes after its
/// last one. Each window therefore reaches that far around every introducer, and windows
/// closer together than that are joined, so that no escape sequence and no match is ever
/// cut in two. Text far from any introducer is searched once, in the plain view only, which
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
        let bytes = self.text.as_bytes();
        let first = self.at + memchr2(b'\\', b'%', bytes.get(self.at..)?)?;
        let mut last = first;
        loop {
            let from = last + 1;
            let limit = (last + self.after + self.before).min(bytes.len());
            match memchr2(b'\\', b'%', &bytes[from..limit]) {
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

/// Where in the original text each input byte's unit begins.
#[derive(Clone, Copy, Debug)]
enum Positions<'a> {
    /// The input is original text starting at this offset.
    Offset(usize),
    /// The input is a view; the table is its `starts`.
    Table(&'a [usize]),
}

impl Positions<'_> {
    fn of(self, index: usize) -> usize {
        match self {
            Self::Offset(base) => base + index,
            Self::Table(starts) => starts[index],
        }
    }
}

/// Decodes one level of escapes in `input` into `out`.
///
/// Recognises the JSON escapes `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t` and `\uXXXX`
/// (hex digits in either case, a high and a low surrogate escape joined into one character),
/// and percent-encoded bytes `%XX`. Anything else after an introducer (an unknown letter, a
/// short `\u` or `%`, a lone surrogate) is not an escape: the introducer stays a literal
/// byte and decoding resumes right after it, just as a lenient reader would see the text.
///
/// `quoted` is given when `input` is itself a view: then `\"` is an escape only if its quote
/// came from an escape one level down. In JSON nested inside a JSON string every inner quote
/// is escaped at the outer level, while an unescaped quote is the outer string's own
/// delimiter; refusing to pair a backslash with it keeps a decoded character from
/// straddling the end of an outer string, which matters because a replacement must never
/// swallow a string delimiter.
fn decode(
    input: &[u8],
    positions: Positions<'_>,
    quoted: Option<&[usize]>,
    mode: Mode,
    out: &mut View,
) {
    out.clear();
    let track = mode.track;
    let percent = mode.escapes == Escapes::All;
    let next = |from: usize| {
        if percent {
            memchr2(b'\\', b'%', &input[from..])
        } else {
            memchr(b'\\', &input[from..])
        }
    };
    let mut at = 0;
    let literal = |out: &mut View, range: Range<usize>| {
        out.bytes.extend_from_slice(&input[range.clone()]);
        if track {
            out.starts.extend(range.map(|index| positions.of(index)));
        }
    };
    while let Some(offset) = next(at) {
        let introducer = at + offset;
        literal(out, at..introducer);
        let quote_ok = |index: usize| quoted.is_none_or(|q| q.binary_search(&index).is_ok());
        match escape(input, introducer, quote_ok) {
            Escape::Decoded { bytes, len, used } => {
                let decoded = &bytes[..len];
                if decoded == b"\"" {
                    out.quoted.push(out.bytes.len());
                }
                out.introducers |= decoded == b"\\" || (percent && decoded == b"%");
                out.bytes.extend_from_slice(decoded);
                if track {
                    let start = positions.of(introducer);
                    out.starts.extend(std::iter::repeat_n(start, len));
                }
                at = introducer + used;
            }
            outcome @ (Escape::Invalid | Escape::Incomplete) => {
                if matches!(outcome, Escape::Incomplete) && out.pending.is_none() {
                    out.pending = Some((introducer, out.bytes.len()));
                }
                out.introducers = true;
                literal(out, introducer..introducer + 1);
                at = introducer + 1;
            }
        }
    }
    literal(out, at..input.len());
    if track {
        out.starts.push(positions.of(input.len()));
    }
}

/// What the bytes at an introducer amount to.
enum Escape {
    /// These `len` bytes, made of the first `used` input bytes.
    Decoded {
        bytes: [u8; 4],
        len: usize,
        used: usize,
    },
    /// Not an escape: the introducer is literal.
    Invalid,
    /// Cannot tell: the input ends first.
    Incomplete,
}

impl Escape {
    fn char(ch: char, used: usize) -> Self {
        let mut bytes = [0; 4];
        let len = ch.encode_utf8(&mut bytes).len();
        Self::Decoded { bytes, len, used }
    }
}

/// Reads the escape at `input[at]`, an introducer. `quote_ok` says whether the quote at an
/// index may complete `\"`.
fn escape(input: &[u8], at: usize, quote_ok: impl Fn(usize) -> bool) -> Escape {
    if input[at] == b'%' {
        return match hex(input, at + 1, 2) {
            Ok(byte) => Escape::Decoded {
                bytes: [byte as u8, 0, 0, 0],
                len: 1,
                used: 3,
            },
            Err(outcome) => outcome,
        };
    }
    let Some(&second) = input.get(at + 1) else {
        return Escape::Incomplete;
    };
    let ch = match second {
        b'"' if quote_ok(at + 1) => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => return unicode(input, at),
        _ => return Escape::Invalid,
    };
    Escape::char(ch, 2)
}

/// Reads `\uXXXX` at `input[at]`, joining a surrogate pair.
fn unicode(input: &[u8], at: usize) -> Escape {
    let first = match hex(input, at + 2, 4) {
        Ok(value) => value,
        Err(outcome) => return outcome,
    };
    if !(0xD800..0xDC00).contains(&first) {
        // `from_u32` rejects a lone low surrogate, which then stays literal.
        return char::from_u32(first).map_or(Escape::Invalid, |ch| Escape::char(ch, 6));
    }
    for (offset, expected) in [(6, b'\\'), (7, b'u')] {
        match input.get(at + offset) {
            None => return Escape::Incomplete,
            Some(&byte) if byte != expected => return Escape::Invalid,
            Some(_) => {}
        }
    }
    let second = match hex(input, at + 8, 4) {
        Ok(value) => value,
        Err(outcome) => return outcome,
    };
    if !(0xDC00..0xE000).contains(&second) {
        return Escape::Invalid;
    }
    let code = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
    char::from_u32(code).map_or(Escape::Invalid, |ch| Escape::char(ch, 12))
}

/// The value of the `count` hex digits starting at `input[at]`, or why there is none.
fn hex(input: &[u8], at: usize, count: usize) -> Result<u32, Escape> {
    let mut value = 0;
    for index in at..at + count {
        let &byte = input.get(index).ok_or(Escape::Incomplete)?;
        let digit = char::from(byte).to_digit(16).ok_or(Escape::Invalid)?;
        value = value * 16 + digit;
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes all of `input` (once, or twice when `twice`) with tracking and compares the
    /// view's bytes and the source ranges of the units that came from escapes.
    fn check(twice: bool, input: &str, text: &[u8], escapes: &[(usize, usize)]) {
        let mut views = Views::default();
        views.decode(input, 0..input.len(), Mode::tracked(false));
        let view = if twice && views.has_twice {
            &views.twice
        } else {
            &views.once
        };
        assert_eq!(view.bytes(), text, "input: {input:?}");
        assert_eq!(escape_units(view), escapes, "input: {input:?}");
    }

    /// The source ranges of a tracked view's units that stand for more text than they
    /// contribute.
    fn escape_units(view: &View) -> Vec<(usize, usize)> {
        let mut units = Vec::new();
        let mut index = 0;
        while index < view.bytes().len() {
            let unit = view.source(index..index + 1);
            let len = view.starts[index..view.bytes().len()]
                .iter()
                .take_while(|&&s| s == unit.start)
                .count();
            if unit.len() > len {
                units.push((unit.start, unit.end));
            }
            index += len;
        }
        units
    }

    #[test]
    fn short_escapes_cover_both_bytes() {
        check(false, r#"a\"b"#, b"a\"b", &[(1, 3)]);
        check(false, r"\\\/", b"\\/", &[(0, 2), (2, 4)]);
        check(
            false,
            r"\b\f\n\r\t",
            b"\x08\x0c\n\r\t",
            &[(0, 2), (2, 4), (4, 6), (6, 8), (8, 10)],
        );
    }

    #[test]
    fn unicode_escapes_in_either_case() {
        check(false, r"\u00e9\u00E9", "éé".as_bytes(), &[(0, 6), (6, 12)]);
        check(false, r"\uD83D\uDE00!", "😀!".as_bytes(), &[(0, 12)]);
        check(false, r"\ud83d\ude00", "😀".as_bytes(), &[(0, 12)]);
    }

    #[test]
    fn percent_escapes_in_either_case() {
        check(false, "a%2Fb%2f", b"a/b/", &[(1, 4), (5, 8)]);
        // Each byte of a multi-byte character is its own escape.
        check(false, "%C3%A9", "é".as_bytes(), &[(0, 3), (3, 6)]);
        check(false, "100%", b"100%", &[]);
        check(false, "%zz%4", b"%zz%4", &[]);
        // A percent-encoded byte need not be valid UTF-8 on its own.
        check(false, "%ff", b"\xff", &[(0, 3)]);
    }

    #[test]
    fn plain_text_passes_through() {
        check(false, "plain é 😀", "plain é 😀".as_bytes(), &[]);
        check(true, "plain é 😀", "plain é 😀".as_bytes(), &[]);
    }

    #[test]
    fn invalid_escapes_pass_through() {
        check(false, r"\x", br"\x", &[]);
        check(false, r"\u12", br"\u12", &[]);
        check(false, r"\u12g4\n", b"\\u12g4\n", &[(6, 8)]);
        check(false, r"\uD83Dz", br"\uD83Dz", &[]);
        check(false, r"\uD83D\u0041", br"\uD83DA", &[(6, 12)]);
        check(false, r"\uDE00\u0041", br"\uDE00A", &[(6, 12)]);
        check(
            false,
            r"\uD83D\uD83D\uDE00",
            "\\uD83D😀".as_bytes(),
            &[(6, 18)],
        );
        check(false, "\\", b"\\", &[]);
        check(false, "é\\é", "é\\é".as_bytes(), &[]);
        check(false, r"\\\", br"\\", &[(0, 2)]);
    }

    #[test]
    fn second_decoding_spans_the_whole_source() {
        check(true, r"x\\u0041", b"xA", &[(1, 8)]);
        check(true, r#"\\\"q\\\""#, br#""q""#, &[(0, 4), (5, 9)]);
        check(true, r"\u005c\u0022", b"\"", &[(0, 12)]);
        check(true, r"\\n", b"\n", &[(0, 3)]);
        check(true, r"\\\\n", b"\\n", &[(0, 4)]);
        check(true, r"\\uD83D\\uDE00", "😀".as_bytes(), &[(0, 14)]);
        // Percent-encoding twice, and mixed with JSON escapes.
        check(true, "%252F", b"/", &[(0, 5)]);
        check(true, r"%\u0032F", b"/", &[(0, 8)]);
        check(true, r"%5Cu0041", b"A", &[(0, 8)]);
    }

    #[test]
    fn second_decoding_keeps_outer_string_delimiters() {
        // The outer document `["a\\",1]` holds the string `a\`; its closing quote is not an
        // escaped inner quote.
        check(true, r#"["a\\",1]"#, br#"["a\",1]"#, &[(3, 5)]);
        // A quote that percent-encoding produced is not a delimiter.
        check(true, r"\\%22", b"\"", &[(0, 5)]);
    }

    #[test]
    fn open_views_leave_a_cut_off_escape_undecided() {
        let text = r"abc\n\u00";
        let mut views = Views::default();
        views.decode(text, 0..text.len(), Mode::tracked(true));
        assert_eq!(views.frontier(), Some(5));
        for (_, decided) in views.searchable() {
            assert_eq!(decided, b"abc\n");
        }
        // The second level can be undecided where the first is not.
        let text = r"ab\\";
        views.decode(text, 0..text.len(), Mode::tracked(true));
        assert_eq!(views.frontier(), Some(2));
        // A whole text reads the cut-off escape literally.
        views.decode(r"abc\u00", 0..7, Mode::tracked(false));
        let all: Vec<&[u8]> = views.searchable().map(|(_, bytes)| bytes).collect();
        assert_eq!(all[0], br"abc\u00");
    }

    /// The cuts of all of `text` for both decodings.
    fn cuts(text: &str) -> Vec<usize> {
        let (mut all, mut json) = (Views::default(), Views::default());
        all.decode(text, 0..text.len(), Mode::tracked(false));
        json.decode(text, 0..text.len(), Mode::tracked(false).json_only());
        all.cuts(&json)
    }

    #[test]
    fn cuts_fall_between_whole_escapes() {
        assert_eq!(cuts(r"ab\\u0041cd"), [0, 1, 2, 9, 10, 11]);
        assert_eq!(cuts("a%2Fb"), [0, 1, 4, 5]);
        // All escapes read `%5c\\` as one backslash; JSON alone reads `\\\"` as a backslash
        // and a quote. Neither grouping may be cut.
        assert_eq!(cuts(r#"%5c\\\"a"#), [0, 7, 8]);
    }

    #[test]
    fn windows_surround_introducers() {
        let bounds = |text: &str| -> Vec<(usize, usize)> {
            Windows::new(text, 8).map(|w| (w.start, w.end)).collect()
        };
        let text = format!(
            "{}\\n{}%2F{}",
            "a".repeat(100),
            "b".repeat(10),
            "c".repeat(200)
        );
        assert_eq!(bounds(&text), [(92, 144)]);
        assert_eq!(bounds("no escapes here"), []);
        let far = format!("\\{}%", "a".repeat(100));
        assert_eq!(bounds(&far), [(0, 32), (93, 102)]);
    }
}
