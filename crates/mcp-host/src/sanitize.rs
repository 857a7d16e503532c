//! The one sanitizer for server text shown to people: chat rows, listings, help, errors.
//!
//! Text given to a model is never passed through it; only its display copies are.

use yetibot_redaction::Secrets;

use crate::limits::cut_text;

/// A copy of `text` that is safe to show in a chat message, a terminal or a log line:
///
/// - ANSI/VT escape sequences (CSI such as colour codes, OSC such as window titles and
///   hyperlinks, DCS/SOS/PM/APC strings, and two- and three-character escapes) are removed
///   whole, in their 7-bit (`ESC [`) and 8-bit (`U+009B`) forms, so no parameter bytes are
///   left behind;
/// - every other control character (C0, DEL, C1) is removed, except that line breaks
///   (`\n`, `\r\n`, `\r`, `U+0085`, `U+2028`, `U+2029`) become `\n` and a tab becomes a space;
/// - invisible format characters are removed: zero-width spaces and joiners, word joiners,
///   the byte-order mark, soft hyphens, bidirectional embeddings, overrides, isolates and
///   marks, interlinear annotation marks and tag characters (Unicode category `Cf`).
///
/// Everything else, including non-Latin scripts and emoji, is kept. Cost is linear in the
/// length of `text`. Callers that need one line (rows, error messages) still collapse the
/// remaining `\n`s.
#[must_use]
pub fn sanitize_display(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => skip_escape(&mut chars),
            '\u{9b}' => skip_csi(&mut chars),
            '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            '\r' => {
                chars.next_if_eq(&'\n');
                out.push('\n');
            }
            '\n' | '\u{85}' | '\u{2028}' | '\u{2029}' => out.push('\n'),
            '\t' => out.push(' '),
            c if c.is_control() || is_invisible_format(c) => {}
            c => out.push(c),
        }
    }
    out
}

/// [`sanitize_display`] with all whitespace runs, line breaks included, collapsed to one
/// space and the ends trimmed: for text that must stay on one line.
pub(crate) fn one_line(text: &str) -> String {
    sanitize_display(text)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The model's and people's forms of a server text: redacted and cut to `max` characters,
/// and [`sanitize_display`]ed, redacted and cut. Sanitizing comes before redaction so that
/// removing an invisible character or an escape sequence cannot join the halves of a
/// secret. The flag says whether the model's text was cut.
pub(crate) fn bounded_texts(raw: &str, secrets: &Secrets, max: usize) -> (String, String, bool) {
    let (model, cut) = cut_text(&secrets.redact_text(raw), max);
    let (display, _) = cut_text(&secrets.redact_text(&sanitize_display(raw)), max);
    (model, display, cut)
}

type Chars<'a> = std::iter::Peekable<std::str::Chars<'a>>;

/// Skips what follows an `ESC` up to and including the sequence's final character.
fn skip_escape(chars: &mut Chars<'_>) {
    match chars.peek().copied() {
        Some('[') => {
            chars.next();
            skip_csi(chars);
        }
        Some(']' | 'P' | 'X' | '^' | '_') => {
            chars.next();
            skip_string(chars);
        }
        // nF escapes: intermediate bytes, then one final byte.
        Some('\u{20}'..='\u{2f}') => {
            while chars
                .next_if(|c| ('\u{20}'..='\u{2f}').contains(c))
                .is_some()
            {}
            chars.next_if(|c| ('\u{30}'..='\u{7e}').contains(c));
        }
        // Fp, Fe and Fs escapes: one final byte.
        Some('\u{30}'..='\u{7e}') => {
            chars.next();
        }
        // A lone ESC is dropped; what follows is ordinary text.
        _ => {}
    }
}

/// Skips a control sequence's parameter and intermediate bytes and its final byte.
fn skip_csi(chars: &mut Chars<'_>) {
    while chars
        .next_if(|c| ('\u{20}'..='\u{3f}').contains(c))
        .is_some()
    {}
    chars.next_if(|c| ('\u{40}'..='\u{7e}').contains(c));
}

/// Skips a command string (OSC, DCS, SOS, PM, APC) up to its terminator: BEL, `ESC \` or
/// `U+009C`, or the end of the text.
fn skip_string(chars: &mut Chars<'_>) {
    while let Some(c) = chars.next() {
        match c {
            '\u{7}' | '\u{9c}' => return,
            '\u{1b}' => {
                chars.next_if_eq(&'\\');
                return;
            }
            _ => {}
        }
    }
}

/// Unicode format characters (category `Cf`) that render as nothing or reorder text.
fn is_invisible_format(c: char) -> bool {
    matches!(
        c,
        '\u{ad}'
            | '\u{600}'..='\u{605}'
            | '\u{61c}'
            | '\u{6dd}'
            | '\u{70f}'
            | '\u{890}'..='\u{891}'
            | '\u{8e2}'
            | '\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206f}'
            | '\u{feff}'
            | '\u{fff9}'..='\u{fffb}'
            | '\u{110bd}'
            | '\u{110cd}'
            | '\u{13430}'..='\u{1343f}'
            | '\u{1bca0}'..='\u{1bca3}'
            | '\u{1d173}'..='\u{1d17a}'
            | '\u{e0001}'
            | '\u{e0020}'..='\u{e007f}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn check(input: &str, expect: &str) {
        assert_eq!(sanitize_display(input), expect, "{input:?}");
    }

    #[test]
    fn escapes_controls_and_invisible_characters_are_removed() {
        check("\u{1b}[31mred\u{1b}[0m", "red");
        check("\u{1b}[38;2;255;0;0mrgb", "rgb");
        check("\u{9b}1;31mred", "red");
        check("\u{1b}]0;title\u{7}after", "after");
        check(
            "\u{1b}]8;;https://evil\u{1b}\\link\u{1b}]8;;\u{1b}\\",
            "link",
        );
        check("\u{1b}Pdcs payload\u{1b}\\x", "x");
        check("\u{1b}(Bplain", "plain");
        check("\u{1b}7saved\u{1b}8", "saved");
        check("lone\u{1b}", "lone");
        check("a\u{0}b\u{7}c\u{8}d\u{7f}e\u{80}f", "abcdef");
        check("ec\u{200b}ho", "echo");
        check("zw\u{200c}\u{200d}\u{2060}\u{feff}j", "zwj");
        check("abc\u{202e}txt.exe", "abctxt.exe");
        check("\u{2066}iso\u{2069}\u{200e}\u{200f}\u{61c}", "iso");
        check("tag\u{e0041}\u{e007f}s", "tags");
        check("soft\u{ad}hyphen", "softhyphen");
    }

    #[test]
    fn line_breaks_and_tabs_are_normalized_and_text_is_kept() {
        check("a\r\nb\rc\u{2028}d\u{85}e", "a\nb\nc\nd\ne");
        check("col\tumn", "col umn");
        check("Добрый день — 你好 👋 é", "Добрый день — 你好 👋 é");
        check("$(x) `y` | z", "$(x) `y` | z");
        assert_eq!(one_line("  a\n`srv/x` —\tforged  "), "a `srv/x` — forged");
    }

    proptest! {
        #[test]
        fn output_has_no_control_or_format_characters(input in any::<String>()) {
            let out = sanitize_display(&input);
            prop_assert!(out.chars().all(|c| c == '\n' || !(c.is_control() || is_invisible_format(c))));
            prop_assert!(out.len() <= input.len());
            // Sanitizing is idempotent.
            prop_assert_eq!(sanitize_display(&out), out);
        }

        #[test]
        fn printable_ascii_without_escapes_is_unchanged(input in "[ -~]{0,200}") {
            prop_assert_eq!(sanitize_display(&input), input);
        }
    }
}
