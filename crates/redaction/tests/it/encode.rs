//! Writes text as JSON string content, choosing per character how to spell it, so the tests
//! can produce every mix of plain and escaped characters.

use proptest::prelude::*;

/// How one character is written.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Spelling {
    /// As itself, where JSON allows that; otherwise as `Short`.
    Raw,
    /// With its two-character escape if it has one; otherwise as `Unicode`.
    Short,
    /// As `\uXXXX` (two of them for characters beyond U+FFFF), hex in the given case.
    Unicode { upper: bool },
}

pub(crate) fn spelling() -> impl Strategy<Value = Spelling> {
    prop_oneof![
        Just(Spelling::Raw),
        Just(Spelling::Short),
        any::<bool>().prop_map(|upper| Spelling::Unicode { upper }),
    ]
}

/// Characters that stress the decoder: quotes, backslashes, control characters, characters
/// beyond U+FFFF, and anything else.
pub(crate) fn tricky_char() -> impl Strategy<Value = char> {
    prop_oneof![
        4 => proptest::char::range('a', 'z'),
        1 => Just('"'),
        1 => Just('\\'),
        1 => Just('/'),
        1 => Just('u'),
        1 => proptest::char::range('\0', '\u{1f}'),
        1 => proptest::char::range('\u{10000}', '\u{10ffff}'),
        2 => any::<char>(),
    ]
}

/// Writes `text` as JSON string content, taking one spelling per character from
/// `spellings` (cycling when it is shorter than the text).
pub(crate) fn encode(text: &str, spellings: &[Spelling]) -> String {
    let mut out = String::new();
    for (index, ch) in text.chars().enumerate() {
        let spelling = spellings
            .get(index % spellings.len().max(1))
            .copied()
            .unwrap_or(Spelling::Raw);
        write_char(&mut out, ch, spelling);
    }
    out
}

/// Reference decoder: serde_json reading `content` as the inside of a JSON string.
pub(crate) fn decode(content: &str) -> Option<String> {
    serde_json::from_str(&format!("\"{content}\"")).ok()
}

fn write_char(out: &mut String, ch: char, spelling: Spelling) {
    let short = match ch {
        '"' => Some(r#"\""#),
        '\\' => Some(r"\\"),
        '/' => Some(r"\/"),
        '\u{8}' => Some(r"\b"),
        '\u{c}' => Some(r"\f"),
        '\n' => Some(r"\n"),
        '\r' => Some(r"\r"),
        '\t' => Some(r"\t"),
        _ => None,
    };
    let raw_allowed = ch != '"' && ch != '\\' && ch >= ' ';
    match (spelling, short) {
        (Spelling::Raw, _) if raw_allowed => out.push(ch),
        (Spelling::Raw | Spelling::Short, Some(short)) => out.push_str(short),
        (Spelling::Unicode { .. }, _) | (Spelling::Raw | Spelling::Short, None) => {
            let upper = match spelling {
                Spelling::Unicode { upper } => upper,
                Spelling::Raw | Spelling::Short => upper_default(ch),
            };
            let mut units = [0; 2];
            for unit in ch.encode_utf16(&mut units) {
                if upper {
                    out.push_str(&format!("\\u{unit:04X}"));
                } else {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
}

/// Picks a hex case for characters that fall back to `\u` without asking for it, so both
/// cases still appear.
fn upper_default(ch: char) -> bool {
    u32::from(ch) % 2 == 0
}
