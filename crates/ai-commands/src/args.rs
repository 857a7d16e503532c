//! The one strict reader of native tool arguments: a single JSON object (blank text is
//! `{}`), read with `yetibot-json-util`'s bounded reader (no duplicate keys), only the tool's
//! own fields, and `null` the same as leaving a field out. Messages are fixed text that
//! never quote an argument.

use std::ops::RangeInclusive;

use yetibot_json_util::{Object, Value};

/// A tool call's arguments, read strictly.
pub(crate) struct ToolArgs(Object);

impl ToolArgs {
    /// Reads the arguments' text.
    pub(crate) fn parse(text: &str) -> Result<Self, &'static str> {
        let text = if text.trim().is_empty() { "{}" } else { text };
        match Value::parse(text) {
            Ok(Value::Object(object)) => Ok(Self(object)),
            _ => Err("the arguments must be one JSON object"),
        }
    }

    /// Refuses any field outside `allowed`, with `message`.
    pub(crate) fn only(&self, allowed: &[&str], message: &'static str) -> Result<(), &'static str> {
        if self.0.iter().any(|(key, _)| !allowed.contains(&key)) {
            Err(message)
        } else {
            Ok(())
        }
    }

    /// A field's value; `null` counts as absent.
    pub(crate) fn get(&self, key: &str) -> Option<&Value> {
        self.0
            .get(key)
            .filter(|value| !matches!(value, Value::Null))
    }

    /// A text field of `chars` characters (absent is `None`); anything else is `message`.
    pub(crate) fn text(
        &self,
        key: &str,
        chars: RangeInclusive<usize>,
        message: &'static str,
    ) -> Result<Option<String>, &'static str> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) if chars.contains(&s.chars().count()) => Ok(Some(s.clone())),
            Some(_) => Err(message),
        }
    }

    /// An integer field within `range`, `default` when absent; anything else is `message`.
    pub(crate) fn integer(
        &self,
        key: &str,
        range: RangeInclusive<u32>,
        default: u32,
        message: &'static str,
    ) -> Result<u32, &'static str> {
        match self.get(key) {
            None => Ok(default),
            Some(Value::Integer(n)) => n
                .to_i64()
                .and_then(|n| u32::try_from(n).ok())
                .filter(|n| range.contains(n))
                .ok_or(message),
            Some(_) => Err(message),
        }
    }
}

/// Whether `text` is an ISO calendar date, `YYYY-MM-DD`, that exists.
pub(crate) fn is_iso_date(text: &str) -> bool {
    let bytes = text.as_bytes();
    if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
        return false;
    }
    let number = |range: std::ops::Range<usize>| -> Option<u32> {
        let part = text.get(range)?;
        part.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| part.parse().ok())
            .flatten()
    };
    let (Some(year), Some(month), Some(day)) = (number(0..4), number(5..7), number(8..10)) else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// `data` as pipeline data, or `None` when it is more than a pipeline carries.
pub(crate) fn pipeline_data(data: &serde_json::Value) -> Option<Value> {
    let text = data.to_string();
    if text.len() > yetibot_command::limits::MAX_VALUE_BYTES {
        return None;
    }
    let limits = yetibot_json_util::Limits {
        max_bytes: yetibot_command::limits::MAX_VALUE_BYTES,
        max_depth: 64,
        max_entries: yetibot_command::limits::MAX_ROWS * 4,
        max_nodes: 1 << 20,
    };
    Value::parse_with_limits(&text, &limits).ok()
}

/// `text` on one line (control characters and whitespace runs become one space), trimmed
/// and cut to `max` characters.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let mut out = String::new();
    for word in text
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
    {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
        if out.chars().count() >= max {
            break;
        }
    }
    out.chars().take(max).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_one_strict_object_of_known_fields() {
        assert!(ToolArgs::parse("").is_ok());
        assert!(ToolArgs::parse("[1]").is_err());
        assert!(
            ToolArgs::parse(r#"{"a":1,"a":2}"#).is_err(),
            "duplicate keys"
        );
        let args = ToolArgs::parse(r#"{"n":5,"s":"hi","z":null}"#).expect("object");
        assert_eq!(args.only(&["n", "s", "z"], "x"), Ok(()));
        assert_eq!(args.only(&["n"], "only n"), Err("only n"));
        assert!(args.get("z").is_none(), "null is absent");
        assert_eq!(args.integer("n", 1..=20, 7, "bad"), Ok(5));
        assert_eq!(args.integer("missing", 1..=20, 7, "bad"), Ok(7));
        assert_eq!(args.integer("n", 1..=4, 1, "bad"), Err("bad"));
        assert_eq!(args.integer("s", 1..=4, 1, "bad"), Err("bad"));
        assert_eq!(args.text("s", 1..=2, "bad"), Ok(Some("hi".into())));
        assert_eq!(args.text("s", 3..=9, "bad"), Err("bad"));
        assert_eq!(args.text("n", 1..=9, "bad"), Err("bad"));
    }

    proptest::proptest! {
        #[test]
        fn one_line_is_bounded_and_has_no_controls(text in "\\PC{0,400}|[\\s\\S]{0,400}") {
            let line = one_line(&text, 50);
            proptest::prop_assert!(line.chars().count() <= 50);
            proptest::prop_assert!(!line.chars().any(|c| c.is_control() || c == '\n'));
        }
    }
}
