//! The values a pipeline carries from stage to stage: what a stage shows, the structured
//! data behind it, and where in that data the records paired with its rows are.
//!
//! Both the shown value and the data are `yetibot-json-util` [`Value`]s, so numbers keep
//! their exact form between a command and the `util` tool. Text is a string, a collection is
//! an array, a map is an object.

use std::borrow::Cow;
use std::sync::Arc;

use yetibot_json_util::{Integer, Object, Value};

pub use crate::limits::{MAX_ROWS, MAX_VALUE_BYTES};

/// How a value was produced, when the command that produced it says so (a model's answer
/// does): the line its reply is captioned with, the cost label, and details for scripts. It
/// holds nothing that is unsafe to show under the answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplyMeta {
    /// The one-line caption shown under the answer (`model · 1.2 s · 2 tools · cost n/a`).
    pub caption: String,
    /// What producing the value cost, as a label (`API $0.0048`, `cost n/a`), when it may
    /// have cost anything.
    pub cost: Option<String>,
    /// The details as one JSON object (`yetibot run --json` prints it as `meta`).
    pub details: serde_json::Value,
}

/// The state one stage hands the next.
#[derive(Debug, Clone, PartialEq)]
pub struct Piped {
    /// What the stage shows.
    pub value: Value,
    /// The structured data behind it, if a command produced any.
    pub data: Option<Value>,
    /// Where in `data` the array of records paired with the rows of `value` is (`Some(vec![])`
    /// when the data itself is that array), if anywhere. The records are not copied out.
    pub records_at: Option<Vec<PathStep>>,
    /// How the value was produced, when the stage that produced it said so (a model's
    /// answer): what its reply is captioned with. Any later stage clears it.
    pub meta: Option<Arc<ReplyMeta>>,
    /// Warnings about the value that are not part of it (a provider whose models could not
    /// be listed): later stages keep them, and the reply shows them beside the value, so that
    /// `ai models | count` counts models, not warnings. At most [`MAX_NOTES`].
    pub notes: Vec<String>,
}

/// The most notes one pipeline carries; later ones are dropped.
pub const MAX_NOTES: usize = 16;

/// `notes` followed by those of `more` not already there, at most [`MAX_NOTES`] in all.
pub(crate) fn add_notes(notes: &mut Vec<String>, more: Vec<String>) {
    for note in more {
        if notes.len() >= MAX_NOTES {
            break;
        }
        if !notes.contains(&note) {
            notes.push(note);
        }
    }
}

impl Piped {
    /// A state whose data is `records`, paired row for row with `value`.
    #[must_use]
    pub fn with_records(value: Value, records: Option<Vec<Value>>) -> Self {
        let records_at = records.as_ref().map(|_| Vec::new());
        Self {
            value,
            data: records.map(Value::Array),
            records_at,
            meta: None,
            notes: Vec::new(),
        }
    }

    /// The records paired with the rows of the value, when the data has them.
    #[must_use]
    pub fn records(&self) -> Option<&[Value]> {
        let path = self.records_at.as_deref()?;
        get_in(self.data.as_ref()?, path)?.as_array()
    }
}

impl Default for Piped {
    /// The start of a pipeline: empty text, no data.
    fn default() -> Self {
        Self {
            value: Value::String(String::new()),
            data: None,
            records_at: None,
            meta: None,
            notes: Vec::new(),
        }
    }
}

/// What a command returns.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A value only: the previous data and records stay as they were.
    Value(Value),
    /// A newly built value whose rows belong to no record (`list`, `range`, `words`): the
    /// previous data stays, but nothing pairs with the new rows.
    Unpaired(Value),
    /// A value with its data. The records paired with the value's rows are found at
    /// `path` inside the data, or are the data itself when it is an array and no path is
    /// given. `data: None` clears the data.
    Data {
        /// What to show.
        value: Value,
        /// The structured data.
        data: Option<Value>,
        /// Where the records are inside `data`.
        path: Option<Vec<PathStep>>,
    },
    /// A whole pipeline state, as an alias body or a nested run leaves it.
    Piped(Piped),
    /// An answer that says how it was produced (a model's): new text (no data, nothing
    /// paired) and its caption, cost and details.
    Answer {
        /// The answer text.
        value: Value,
        /// How it was produced.
        meta: Box<ReplyMeta>,
    },
    /// The command failed; the pipeline stops with this message.
    Error(String),
    /// A pipeline inside the command (an alias body) failed with this error, already
    /// formatted where it happened; it is passed on unchanged.
    Failed(String),
    /// The command failed with this message, framed like an [`Outcome::Error`], and
    /// structured data about the failure (a tool loop's trace) that the reply carries as its
    /// data.
    FailedWithData {
        /// The chat message.
        message: String,
        /// The structured failure.
        data: Value,
    },
    /// The command also did the work of the first `stages` stages that follow it (it was
    /// offered them as [`Call::following`](crate::Call::following)); those stages are
    /// skipped and `outcome` stands for them all. This is how `history | count` becomes one
    /// database query.
    Consumed {
        /// How many of the offered stages it did (more than were offered counts as all).
        stages: usize,
        /// The result of this stage and the consumed ones together.
        outcome: Box<Outcome>,
    },
    /// `outcome`, with warnings shown beside its value rather than in it (see
    /// [`Piped::notes`]).
    Noted {
        /// The result.
        outcome: Box<Outcome>,
        /// The warnings.
        notes: Vec<String>,
    },
}

impl Outcome {
    /// Plain text.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Value(Value::String(text.into()))
    }

    /// A failure with this message.
    pub fn error(message: impl Into<String>) -> Self {
        Self::Error(message.into())
    }

    /// A collection of strings.
    pub fn lines<I, S>(items: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::Value(Value::Array(
            items.into_iter().map(|s| Value::String(s.into())).collect(),
        ))
    }

    /// This outcome with `notes` shown beside its value; no notes leave it as it is.
    #[must_use]
    pub fn with_notes(self, notes: Vec<String>) -> Self {
        if notes.is_empty() {
            self
        } else {
            Self::Noted {
                outcome: Box::new(self),
                notes,
            }
        }
    }

    /// A value whose records are `records`, row for row.
    pub fn with_records(value: Value, records: Option<Vec<Value>>) -> Self {
        Self::Data {
            value,
            data: records.map(Value::Array),
            path: None,
        }
    }
}

/// One step of a path into data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathStep {
    /// An object key.
    Key(String),
    /// An array index.
    Index(usize),
}

/// The value at `path` inside `data`.
#[must_use]
pub fn get_in<'a>(data: &'a Value, path: &[PathStep]) -> Option<&'a Value> {
    path.iter()
        .try_fold(data, |value, step| match (step, value) {
            (PathStep::Key(key), Value::Object(object)) => object.get(key),
            (PathStep::Index(index), Value::Array(items)) => items.get(*index),
            _ => None,
        })
}

/// A shown value as text: strings as they are, numbers and literals in their JSON form, a
/// collection's items joined by `separator` (nested collections flattened), a map as
/// `key: value` lines.
#[must_use]
pub fn to_text(value: &Value, separator: &str) -> String {
    let mut out = String::new();
    write_text(value, separator, &mut out);
    out
}

fn write_text(value: &Value, separator: &str, out: &mut String) {
    match value {
        Value::String(text) => out.push_str(text),
        Value::Array(items) => {
            let mut first = true;
            for item in flattened(items) {
                if !first {
                    out.push_str(separator);
                }
                first = false;
                write_text(item, separator, out);
            }
        }
        Value::Object(object) => {
            for (i, line) in map_lines(object).into_iter().enumerate() {
                if i > 0 {
                    out.push('\n');
                }
                out.push_str(&line);
            }
        }
        other => out.push_str(&other.to_json()),
    }
}

/// The items of nested arrays in order, arrays themselves left out (json-util's `leaves`,
/// so the commands and the `util` tool flatten alike).
#[must_use]
pub fn flattened(items: &[Value]) -> Vec<&Value> {
    yetibot_json_util::collection::leaves(items)
}

/// A map as `key: value` lines, in the map's order.
#[must_use]
pub fn map_lines(object: &Object) -> Vec<String> {
    object
        .iter()
        .map(|(key, value)| format!("{key}: {}", to_text(value, ", ")))
        .collect()
}

/// The previous value as the collection a command receives, if it is one: an array as it
/// is (borrowed, not copied), a map as its `key: value` lines, text with a line break as its
/// lines. `None` for other text and scalars.
#[must_use]
pub fn as_items(value: &Value) -> Option<Cow<'_, [Value]>> {
    match value {
        Value::Array(items) => Some(Cow::Borrowed(items)),
        Value::Object(object) => Some(Cow::Owned(
            map_lines(object).into_iter().map(Value::String).collect(),
        )),
        Value::String(text) if text.contains('\n') => Some(Cow::Owned(
            lines(text)
                .map(|line| Value::String(line.to_owned()))
                .collect(),
        )),
        _ => None,
    }
}

/// The lines of `text` as upstream splits them (the JVM's `split("\n")`): a `\r` stays with
/// its line, and trailing empty lines are dropped (`"a\n\n"` is one line, `"\n"` none).
fn lines(text: &str) -> impl Iterator<Item = &str> {
    let kept = text.trim_end_matches('\n');
    let parts = if kept.is_empty() {
        None
    } else {
        Some(kept.split('\n'))
    };
    parts.into_iter().flatten()
}

/// A count as a JSON integer.
#[must_use]
pub fn count(n: usize) -> Value {
    Value::Integer(Integer::from(i64::try_from(n).unwrap_or(i64::MAX)))
}

/// Why a value is too large to pass on, if it is.
#[must_use]
pub fn oversize(value: &Value) -> Option<&'static str> {
    let rows = match value {
        Value::Array(items) => flattened(items).len(),
        _ => 0,
    };
    if rows > MAX_ROWS {
        return Some("more than 10,000 rows");
    }
    if approximate_bytes(value, MAX_VALUE_BYTES + 1) > MAX_VALUE_BYTES {
        return Some("more than 1 MiB of text");
    }
    None
}

/// The length of a value's JSON text, counting no further than `stop`.
fn approximate_bytes(value: &Value, stop: usize) -> usize {
    let mut total = 0usize;
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        if total > stop {
            break;
        }
        total += match value {
            Value::String(text) => text.len() + 2,
            Value::Array(items) => {
                stack.extend(items.iter());
                items.len() + 1
            }
            Value::Object(object) => {
                for (key, item) in object.iter() {
                    total += key.len() + 4;
                    stack.push(item);
                }
                object.len() + 1
            }
            other => other.to_json().len(),
        };
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Value {
        Value::parse(json).expect("json")
    }

    #[test]
    fn text_forms() {
        assert_eq!(to_text(&parse(r#"["a",["b","c"],1]"#), "\n"), "a\nb\nc\n1");
        assert_eq!(to_text(&parse(r#"{"a":1,"b":"x"}"#), "\n"), "a: 1\nb: x");
        assert_eq!(to_text(&parse("1.50"), "\n"), "1.50");
    }

    #[test]
    fn items_from_text_maps_and_arrays() {
        let items = |json: &str| as_items(&parse(json)).map(Cow::into_owned);
        assert_eq!(
            items(r#""a\nb""#),
            Some(vec![parse(r#""a""#), parse(r#""b""#)])
        );
        assert_eq!(items(r#""a b""#), None);
        // Split as upstream does: trailing empty lines go, a carriage return stays.
        assert_eq!(items(r#""a\n\n""#), Some(vec![parse(r#""a""#)]));
        assert_eq!(items(r#""\n""#), Some(vec![]));
        assert_eq!(
            items(r#""a\r\n\nb""#),
            Some(vec![parse(r#""a\r""#), parse(r#""""#), parse(r#""b""#)])
        );
        assert_eq!(items(r#"{"k":"v"}"#), Some(vec![parse(r#""k: v""#)]));
    }

    #[test]
    fn paths_reach_into_data() {
        let data = parse(r#"{"items":[{"id":1},{"id":2}]}"#);
        let path = [PathStep::Key("items".into()), PathStep::Index(1)];
        assert_eq!(get_in(&data, &path), Some(&parse(r#"{"id":2}"#)));
        assert_eq!(get_in(&data, &[PathStep::Index(0)]), None);
    }

    #[test]
    fn oversized_values_are_caught() {
        let rows = Value::Array(vec![Value::String("x".into()); MAX_ROWS + 1]);
        assert_eq!(oversize(&rows), Some("more than 10,000 rows"));
        let text = Value::String("x".repeat(MAX_VALUE_BYTES));
        assert_eq!(oversize(&text), Some("more than 1 MiB of text"));
        assert_eq!(oversize(&Value::String("ok".into())), None);
    }
}
