//! Writes text as JSON string content, choosing per character how to spell it, so the tests
//! can produce every mix of plain and escaped characters.

use proptest::prelude::*;
use yetibot_redaction::Secrets;

/// How one character is written.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Spelling {
    /// As itself, where JSON allows that; otherwise as `Short`.
    Raw,
    /// With its two-character escape if it has one; otherwise as `Unicode`.
    Short,
    /// As `\uXXXX` (two of them for characters beyond U+FFFF), hex in the given case.
    Unicode { upper: bool },
    /// Each UTF-8 byte percent-encoded as `%XX`, hex in the given case. A JSON string
    /// holds these as plain characters.
    Percent { upper: bool },
}

pub(crate) fn spelling() -> impl Strategy<Value = Spelling> {
    prop_oneof![
        Just(Spelling::Raw),
        Just(Spelling::Short),
        any::<bool>().prop_map(|upper| Spelling::Unicode { upper }),
    ]
}

/// Any spelling, percent-encoding included.
pub(crate) fn any_spelling() -> impl Strategy<Value = Spelling> {
    prop_oneof![
        3 => spelling(),
        1 => any::<bool>().prop_map(|upper| Spelling::Percent { upper }),
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

/// A secret built from [`tricky_char`]s that a set keeps (not too short once any edge that
/// could join a marker is cut off).
pub(crate) fn secret() -> impl Strategy<Value = String> {
    proptest::collection::vec(tricky_char(), 8..20)
        .prop_map(String::from_iter)
        .prop_filter("the set must keep the secret", |s| {
            Secrets::new([s]).is_ok_and(|set| !set.is_empty())
        })
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
    if let Spelling::Percent { upper } = spelling {
        percent(out, ch, upper);
        return;
    }
    match (spelling, short) {
        (Spelling::Raw, _) if raw_allowed => out.push(ch),
        (Spelling::Raw | Spelling::Short, Some(short)) => out.push_str(short),
        (Spelling::Unicode { .. } | Spelling::Percent { .. }, _)
        | (Spelling::Raw | Spelling::Short, None) => {
            let upper = match spelling {
                Spelling::Unicode { upper } | Spelling::Percent { upper } => upper,
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

/// Writes `ch` percent-encoded, one `%XX` per UTF-8 byte.
pub(crate) fn percent(out: &mut String, ch: char, upper: bool) {
    let mut bytes = [0; 4];
    for byte in ch.encode_utf8(&mut bytes).bytes() {
        if upper {
            out.push_str(&format!("%{byte:02X}"));
        } else {
            out.push_str(&format!("%{byte:02x}"));
        }
    }
}

/// Reference percent-decoder: every `%XX` becomes its byte, everything else stays, and the
/// result is read as lossy UTF-8.
pub(crate) fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match (
            bytes[at],
            bytes.get(at + 1).copied().and_then(hex),
            bytes.get(at + 2).copied().and_then(hex),
        ) {
            (b'%', Some(high), Some(low)) => {
                out.push((high * 16 + low) as u8);
                at += 3;
            }
            (byte, _, _) => {
                out.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
