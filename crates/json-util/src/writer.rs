//! Compact JSON serialization: strings escaped as `serde_json` escapes them, numbers written
//! exactly so that reading the text back gives the same value.

use std::fmt::Write as _;

use crate::value::Value;

/// Appends the compact JSON text of `value` to `out`.
pub(crate) fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Integer(n) => match n.to_i64() {
            Some(small) => write_i64(out, small),
            None => {
                // Writing into a String cannot fail.
                let _ = write!(out, "{n}");
            }
        },
        Value::Decimal(d) => d.write_to(out),
        Value::String(text) => write_str(out, text),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(object) => {
            out.push('{');
            for (i, (key, item)) in object.entries().iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str(out, key);
                out.push(':');
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

/// Appends the decimal digits of `value`, without going through the formatting machinery,
/// which dominates the cost of writing arrays of small numbers.
fn write_i64(out: &mut String, value: i64) {
    let mut buffer = [0u8; 20];
    let mut at = buffer.len();
    let mut rest = value.unsigned_abs();
    loop {
        at -= 1;
        buffer[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if value < 0 {
        out.push('-');
    }
    for &digit in &buffer[at..] {
        out.push(char::from(digit));
    }
}

/// Appends `text` as a JSON string literal.
///
/// Only `"`, `\` and control characters are escaped; everything else, including non-ASCII
/// text, is written as UTF-8. This matches `serde_json`, so the two produce identical text.
pub(crate) fn write_str(out: &mut String, text: &str) {
    out.push('"');
    let bytes = text.as_bytes();
    // Most strings need no escape at all: find that out eight bytes at a time first.
    if !bytes.chunks(8).any(needs_escape) {
        out.push_str(text);
        out.push('"');
        return;
    }
    let mut start = 0;
    for (i, &byte) in bytes.iter().enumerate() {
        let escape: &str = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0x00..=0x1f => "",
            _ => continue,
        };
        // Every byte matched above is ASCII, so `i` is a character boundary.
        out.push_str(&text[start..i]);
        if escape.is_empty() {
            let _ = write!(out, "\\u{byte:04x}");
        } else {
            out.push_str(escape);
        }
        start = i + 1;
    }
    out.push_str(&text[start..]);
    out.push('"');
}

/// Whether any byte of `chunk` (at most eight bytes) must be escaped.
fn needs_escape(chunk: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // Padding with a harmless byte keeps a short final chunk on the word path.
    let mut word = [b' '; 8];
    word[..chunk.len()].copy_from_slice(chunk);
    let word = u64::from_le_bytes(word);
    let quote = word ^ (ONES * u64::from(b'"'));
    let backslash = word ^ (ONES * u64::from(b'\\'));
    let special = (quote.wrapping_sub(ONES) & !quote)
        | (backslash.wrapping_sub(ONES) & !backslash)
        | (word.wrapping_sub(ONES * 0x20) & !word);
    special & HIGH != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `text` as a string literal and compares with `expected` and with serde_json.
    fn check(text: &str, expected: &str) {
        let mut out = String::new();
        write_str(&mut out, text);
        assert_eq!(out, expected);
        assert_eq!(out, serde_json::to_string(text).unwrap());
    }

    #[test]
    fn escapes_like_serde_json() {
        check("plain", r#""plain""#);
        check("a\"b\\c", r#""a\"b\\c""#);
        check("\n\r\t\u{8}\u{c}", r#""\n\r\t\b\f""#);
        check("\u{0}\u{1f}\u{7f}", "\"\\u0000\\u001f\u{7f}\"");
        check("é😀/", "\"é😀/\"");
        check("", r#""""#);
    }

    #[test]
    fn integers_are_written_exactly() {
        for n in [0, 7, -7, 10, 1_234_567_890, i64::MAX, i64::MIN] {
            let mut out = String::new();
            write_i64(&mut out, n);
            assert_eq!(out, n.to_string());
        }
    }

    #[test]
    fn escapes_in_every_position_of_a_word() {
        // The word-at-a-time test must spot a special byte wherever it sits.
        for special in ['\u{1}', '"', '\\', '\n'] {
            for at in 0..17 {
                let mut text = "x".repeat(17);
                text.replace_range(at..=at, &special.to_string());
                check(&text, &serde_json::to_string(&text).unwrap());
            }
        }
    }

    #[test]
    fn values_are_compact() {
        let value =
            Value::parse(r#" { "a" : [ 1 , 2.50 , null , true , false , { } , [ ] ] } "#).unwrap();
        assert_eq!(value.to_json(), r#"{"a":[1,2.50,null,true,false,{},[]]}"#);
    }
}
