//! A call's arguments: the model's exact text, read once with `yetibot-json-util`'s strict
//! reader, and the canonical form that decides whether two calls are the same action.
//!
//! Two calls are the same action when their arguments are the same data, whatever the
//! spelling: object keys in any order, strings compared after unescaping, and numbers
//! compared by exact value, so `1`, `1.0`, `1e0` and `10E-1` are one number, and so are `0`
//! and `-0`. Integers and decimals are deliberately not told apart here (unlike
//! `yetibot-json-util`'s own equality, where `1` and `1.0` differ): a tool receives both as
//! the same number, JSON Schema accepts `1.0` where it asks for an integer, and a model that
//! could repeat a paid call by appending `.0` would defeat the check. A key given twice in
//! one object is refused rather than merged, since the tool might read either value.

use serde_json::Map;
use yetibot_conversation::limits::MAX_ARGUMENT_CHARS;
use yetibot_json_util::{Limits, Value};

/// Structural bounds for reading arguments. The text bound comes from the argument length
/// limit (a character is at most four bytes); entries and nodes cannot outgrow the text, so
/// they are bounded by it too. Depth is capped well below `serde_json`'s own limit of 128
/// so that the convenience parse behind [`Arguments::object`] never fails where this
/// reader succeeded, and so that walking a value recursively stays shallow.
const LIMITS: Limits = Limits {
    max_bytes: MAX_ARGUMENT_CHARS * 4,
    max_depth: 64,
    max_entries: MAX_ARGUMENT_CHARS,
    max_nodes: MAX_ARGUMENT_CHARS,
};

/// A tool call's arguments that passed the strict reading: one JSON object, no key given
/// twice, numbers within `yetibot-json-util`'s bounds, depth at most 64.
#[derive(Debug, Clone, PartialEq)]
pub struct Arguments {
    raw: String,
    object: Map<String, serde_json::Value>,
    action: ActionKey,
}

impl Arguments {
    /// Reads a model's argument text. Empty or whitespace-only text, which some providers
    /// send for "no arguments", reads as `{}`.
    ///
    /// Returns `None` when the text is not exactly one strict JSON object within the bounds:
    /// a syntax error, a duplicate key, a number out of range, nesting deeper than 64, or a
    /// value other than an object. The length limit ([`MAX_ARGUMENT_CHARS`]) is preflight's
    /// to check, before this is called.
    #[must_use]
    pub fn parse(raw: &str) -> Option<Self> {
        let raw = if raw.trim().is_empty() { "{}" } else { raw };
        let value = Value::parse_with_limits(raw, &LIMITS).ok()?;
        if !matches!(value, Value::Object(_)) {
            return None;
        }
        let action = ActionKey::of(&value);
        // The strict reader accepted the text, so serde_json reads the same object (its
        // depth limit is higher and it accepts every number the reader does); a failure
        // would only mean refusing the call.
        let object = serde_json::from_str(raw).ok()?;
        Some(Self {
            raw: raw.to_owned(),
            object,
            action,
        })
    }

    /// The arguments exactly as the model wrote them (`{}` for an empty text). Forward this
    /// to the tool: numbers keep their precision and spelling.
    #[must_use]
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// The same arguments read by `serde_json`, for inspection (schema checks, routing).
    /// Numbers beyond `f64` are approximated here; [`Arguments::raw`] is what a tool gets.
    #[must_use]
    pub fn object(&self) -> &Map<String, serde_json::Value> {
        &self.object
    }

    /// Whether these are the same action's arguments as `other`'s: the same data, whatever
    /// the key order, escapes or spelling of equal numbers.
    #[must_use]
    pub fn same_action(&self, other: &Self) -> bool {
        self.action == other.action
    }

    pub(crate) fn action(&self) -> &ActionKey {
        &self.action
    }
}

/// The canonical form of an arguments object, compared for the repeated-action check.
///
/// It is a prefix code, so no two different values share a form: `z` null, `t`/`f`
/// booleans, `n[-]DIGITSeEXP;` a number with its digits stripped of leading and trailing
/// zeros (`n0;` for zero, without a sign), `sLEN:TEXT` a string by its byte length,
/// `[...]` an array, `{...}` an object with keys sorted. Its size is linear in the text's.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ActionKey(String);

impl ActionKey {
    fn of(value: &Value) -> Self {
        let mut out = String::new();
        write_canonical(&mut out, value);
        Self(out)
    }
}

fn write_canonical(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push('z'),
        Value::Bool(true) => out.push('t'),
        Value::Bool(false) => out.push('f'),
        Value::Integer(n) => write_number(out, &n.to_string()),
        Value::Decimal(d) => write_number(out, &d.to_string()),
        Value::String(text) => write_string(out, text),
        Value::Array(items) => {
            out.push('[');
            for item in items {
                write_canonical(out, item);
            }
            out.push(']');
        }
        Value::Object(object) => {
            let mut entries: Vec<(&str, &Value)> = object.iter().collect();
            entries.sort_unstable_by_key(|(key, _)| *key);
            out.push('{');
            for (key, item) in entries {
                write_string(out, key);
                write_canonical(out, item);
            }
            out.push('}');
        }
    }
}

fn write_string(out: &mut String, text: &str) {
    out.push('s');
    out.push_str(&text.len().to_string());
    out.push(':');
    out.push_str(text);
}

/// Writes the value of an exact number text (`-12`, `1.50`, `1.5E+1`, `0E+0`) as
/// `n[-]DIGITSeEXP;` with no leading or trailing zeros in DIGITS, or `n0;` for zero.
fn write_number(out: &mut String, text: &str) {
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exponent) = match unsigned.split_once(['e', 'E']) {
        None => (unsigned, 0),
        Some((mantissa, exponent)) => match exponent.parse::<i64>() {
            Ok(exponent) => (mantissa, exponent),
            // The writer always emits a decimal exponent; if it ever did not, keep the text
            // as it is: a distinct form can only make two calls differ, never merge them.
            Err(_) => {
                out.push_str(text);
                out.push(';');
                return;
            }
        },
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits: String = whole.chars().chain(fraction.chars()).collect();
    let significant = digits.trim_start_matches('0');
    let trimmed = significant.trim_end_matches('0');
    if trimmed.is_empty() {
        out.push_str("n0;");
        return;
    }
    let shift = (significant.len() - trimmed.len()) as i64 - fraction.len() as i64;
    out.push('n');
    if negative {
        out.push('-');
    }
    out.push_str(trimmed);
    out.push('e');
    out.push_str(&(exponent + shift).to_string());
    out.push(';');
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn key(raw: &str) -> String {
        Arguments::parse(raw).expect("valid arguments").action.0
    }

    /// Whether two argument texts are the same action.
    fn check(a: &str, b: &str, same: bool) {
        assert_eq!(
            key(a) == key(b),
            same,
            "{a} vs {b}: {} / {}",
            key(a),
            key(b)
        );
    }

    #[test]
    fn equal_numbers_are_one_action_whatever_their_spelling() {
        for spelling in ["1.0", "1e0", "1E+0", "10E-1", "0.1e1", "1.000", "100e-2"] {
            check(r#"{"n":1}"#, &format!(r#"{{"n":{spelling}}}"#), true);
        }
        for zero in ["-0", "0.0", "-0.0", "0e5", "-0E-3", "0.000"] {
            check(r#"{"n":0}"#, &format!(r#"{{"n":{zero}}}"#), true);
        }
        check(r#"{"n":100}"#, r#"{"n":1e2}"#, true);
        check(r#"{"n":-2.50}"#, r#"{"n":-25e-1}"#, true);
        check(
            r#"{"n":123456789012345678901234567890}"#,
            r#"{"n":1.2345678901234567890123456789e29}"#,
            true,
        );
        // Different values stay different actions.
        check(r#"{"n":1}"#, r#"{"n":-1}"#, false);
        check(r#"{"n":1}"#, r#"{"n":1.5}"#, false);
        check(r#"{"n":1}"#, r#"{"n":10}"#, false);
        check(r#"{"n":1}"#, r#"{"n":"1"}"#, false);
        check(
            r#"{"n":12345678901234567890123456789012}"#,
            r#"{"n":12345678901234567890123456789013}"#,
            false,
        );
    }

    #[test]
    fn key_order_escapes_and_whitespace_do_not_make_a_new_action() {
        check(
            r#"{"a":1,"b":[true,null]}"#,
            r#" { "b" : [ true , null ] , "a" : 1 } "#,
            true,
        );
        check(r#"{"q":"a"}"#, r#"{"q":"\u0061"}"#, true);
        check(r#"{"q":"é"}"#, r#"{"q":"\u00e9"}"#, true);
        check("", "{}", true);
        check("  ", "{}", true);
        // Structure still matters.
        check(r#"{"a":[1,2]}"#, r#"{"a":[2,1]}"#, false);
        check(r#"{"a":{}}"#, r#"{"a":[]}"#, false);
        check(r#"{"a":null}"#, "{}", false);
        check(r#"{"a":"b","c":"d"}"#, r#"{"a":"b\",\"c\":\"d"}"#, false);
        check(r#"{"ab":"c"}"#, r#"{"a":"bc"}"#, false);
    }

    #[test]
    fn duplicate_keys_and_non_objects_are_malformed() {
        for bad in [
            r#"{"q":"a","q":"b"}"#,
            r#"{"q":"a","\u0071":"b"}"#,
            r#"{"o":{"k":1,"k":1}}"#,
            "[1]",
            "null",
            "1",
            "{",
            r#"{"a":1,}"#,
            r#"{"a":1} {"b":2}"#,
            r#"{"a":1e400}"#,
        ] {
            assert!(Arguments::parse(bad).is_none(), "{bad}");
        }
        // The object is at depth 0, so its member plus 63 more arrays reach depth 64.
        let nested =
            |arrays: usize| format!("{{\"a\":{}{}}}", "[".repeat(arrays), "]".repeat(arrays));
        assert!(
            Arguments::parse(&nested(64)).is_some(),
            "depth 64 is accepted"
        );
        assert!(Arguments::parse(&nested(65)).is_none(), "deeper than 64");
    }

    #[test]
    fn the_raw_text_is_kept_exactly() {
        let raw = r#"{ "n": 1.50, "big": 123456789012345678901234567890 }"#;
        let arguments = Arguments::parse(raw).expect("valid");
        assert_eq!(arguments.raw(), raw);
        assert_eq!(arguments.object().len(), 2);
        assert_eq!(Arguments::parse(" ").expect("empty").raw(), "{}");
    }

    proptest! {
        #[test]
        fn a_number_is_one_action_in_every_spelling(
            unscaled in any::<i64>(),
            scale in -20i32..20,
            zeros in 0usize..4,
        ) {
            // unscaled × 10^-scale, written plainly with extra trailing zeros and in
            // scientific notation, is one action; the next integer up is another.
            let scientific = format!("{unscaled}{}e{}", "0".repeat(zeros), -i64::from(scale) - zeros as i64);
            let fraction = if scale > 0 {
                let digits = unscaled.unsigned_abs().to_string();
                let sign = if unscaled < 0 { "-" } else { "" };
                let scale = scale as usize;
                let padded = format!("{digits:0>width$}", width = scale + 1);
                let (whole, frac) = padded.split_at(padded.len() - scale);
                format!("{sign}{whole}.{frac}{}", "0".repeat(zeros))
            } else {
                format!("{unscaled}{}e{}", "", -scale)
            };
            let a = key(&format!(r#"{{"n":{scientific}}}"#));
            let b = key(&format!(r#"{{"n":{fraction}}}"#));
            prop_assert_eq!(&a, &b);
            if let Some(next) = unscaled.checked_add(1) {
                let c = key(&format!(r#"{{"n":{next}e{}}}"#, -scale));
                prop_assert_ne!(a, c);
            }
        }
    }
}
