//! `data`: the structured data behind the previous stage: as it is, pretty-printed, or
//! the part a JSON path selects.
//!
//! The JSON path subset: `$` is the data; `.name` or `['name']` (also `["name"]`) a member;
//! `[n]` or `.[n]` an array item (negative `n` counts from the end); `*` (as `.*` or `[*]`)
//! every member or item; `..name` every member called `name` at any depth. A path with `*`
//! or `..` gives the list of what it found; otherwise the one value, or an error when
//! nothing is there. What it found is shown as rows (an array's items, or the one value),
//! each paired with its value as the row's record.

use yetibot_json_util::Value;

use crate::registry::{Call, Category, CommandSpec, Plain};
use crate::value::Outcome;

const NO_DATA: &str = "There is no `data` from the previous command 🤔";

/// The most values one path may select, so that `..` over large data stays bounded.
const MAX_SELECTED: usize = 10_000;

pub(crate) fn commands() -> Vec<CommandSpec> {
    vec![
        CommandSpec::new("data", &[Category::UTIL])
            .route(
                Some(r"^\s*show\b"),
                "data show # pretty-print the previous command's data",
                Plain(show),
            )
            .route(
                Some(r"^\s*(\$\S*)"),
                "data <path> # the part of the previous command's data at a JSON path such as $.items[0].name",
                Plain(extract),
            )
            .route(None, "data # the previous command's data", Plain(raw)),
    ]
}

fn raw(call: &Call<'_>) -> Outcome {
    match call.data {
        Some(data) => Outcome::Data {
            value: data.clone(),
            data: Some(data.clone()),
            path: None,
        },
        None => Outcome::text(NO_DATA),
    }
}

fn show(call: &Call<'_>) -> Outcome {
    match call.data {
        Some(data) => Outcome::Data {
            value: Value::String(pretty(data)),
            data: Some(data.clone()),
            path: None,
        },
        None => Outcome::text(NO_DATA),
    }
}

fn extract(call: &Call<'_>) -> Outcome {
    let Some(data) = call.data else {
        return Outcome::error(NO_DATA);
    };
    let path = match Path::parse(call.group(1)) {
        Ok(path) => path,
        Err(reason) => return Outcome::error(format!("cannot read the JSON path: {reason}")),
    };
    match path.select(data) {
        // Nothing to make rows of: the empty array, as JSON.
        Ok(Value::Array(items)) if items.is_empty() => Outcome::Data {
            value: Value::String("[]".to_owned()),
            data: Some(Value::Array(items)),
            path: None,
        },
        Ok(found) => {
            // A path selects nodes, shown one row per node (an array, one row per item) and
            // paired with it as the row's record. Being rows, the selection is not appended
            // to a later text stage, where `$(data)` reads it instead:
            // `list a, b | data $.[1] | echo got $(data)` answers `got b`.
            let rows = match &found {
                Value::Array(items) => items.iter().map(row).collect(),
                single => vec![row(single)],
            };
            Outcome::Data {
                value: Value::Array(rows),
                data: Some(found),
                path: None,
            }
        }
        Err(reason) => Outcome::error(reason),
    }
}

/// One selected node as a row: a string as it is, anything else as indented JSON.
fn row(node: &Value) -> Value {
    match node {
        Value::String(text) => Value::String(text.clone()),
        other => Value::String(pretty(other)),
    }
}

/// Indented JSON, two spaces per level.
pub(crate) fn pretty(value: &Value) -> String {
    let compact = value.to_json();
    let Ok(parsed) = serde_json::from_str::<serde_json::Value>(&compact) else {
        return compact;
    };
    // serde_json does not keep every number exactly (1.50 reads back as 1.5), so the
    // compact form is kept whenever re-reading changed anything.
    let reprinted = serde_json::to_string(&parsed).unwrap_or_default();
    if reprinted == compact {
        serde_json::to_string_pretty(&parsed).unwrap_or(compact)
    } else {
        compact
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Index(i64),
    All,
    Deep(String),
}

#[derive(Debug, Clone, PartialEq)]
struct Path {
    steps: Vec<Step>,
}

impl Path {
    fn parse(text: &str) -> Result<Self, String> {
        let rest = text
            .strip_prefix('$')
            .ok_or_else(|| "a path starts with $".to_owned())?;
        let chars: Vec<char> = rest.chars().collect();
        let mut steps = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            match chars[i] {
                '.' if chars.get(i + 1) == Some(&'.') => {
                    let (name, next) = name_at(&chars, i + 2);
                    if name.is_empty() {
                        return Err("`..` needs a member name".to_owned());
                    }
                    steps.push(Step::Deep(name));
                    i = next;
                }
                '.' if chars.get(i + 1) == Some(&'[') => i += 1,
                '.' if chars.get(i + 1) == Some(&'*') => {
                    steps.push(Step::All);
                    i += 2;
                }
                '.' => {
                    let (name, next) = name_at(&chars, i + 1);
                    if name.is_empty() {
                        return Err(format!("a member name is missing at character {}", i + 2));
                    }
                    steps.push(Step::Key(name));
                    i = next;
                }
                '[' => {
                    let close = chars[i..]
                        .iter()
                        .position(|c| *c == ']')
                        .map(|p| p + i)
                        .ok_or_else(|| "a `[` is never closed".to_owned())?;
                    let inside: String = chars[i + 1..close].iter().collect();
                    let inside = inside.trim();
                    let step = if inside == "*" {
                        Step::All
                    } else if let Some(name) = quoted(inside) {
                        Step::Key(name.to_owned())
                    } else {
                        Step::Index(
                            inside
                                .parse()
                                .map_err(|_| format!("`[{inside}]` is not an index"))?,
                        )
                    };
                    steps.push(step);
                    i = close + 1;
                }
                other => return Err(format!("unexpected `{other}` in the path")),
            }
        }
        Ok(Self { steps })
    }

    fn select(&self, data: &Value) -> Result<Value, String> {
        let many = self
            .steps
            .iter()
            .any(|s| matches!(s, Step::All | Step::Deep(_)));
        let mut current: Vec<&Value> = vec![data];
        for step in &self.steps {
            let mut next = Vec::new();
            for value in current {
                match step {
                    Step::Key(key) => next.extend(value.as_object().and_then(|o| o.get(key))),
                    Step::Index(index) => {
                        if let Some(items) = value.as_array() {
                            let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
                            let at = if *index < 0 { len + index } else { *index };
                            next.extend(usize::try_from(at).ok().and_then(|at| items.get(at)));
                        }
                    }
                    Step::All => match value {
                        Value::Array(items) => next.extend(items.iter()),
                        Value::Object(object) => next.extend(object.iter().map(|(_, v)| v)),
                        _ => {}
                    },
                    Step::Deep(key) => deep(value, key, &mut next),
                }
                if next.len() > MAX_SELECTED {
                    return Err(format!("the path selects more than {MAX_SELECTED} values"));
                }
            }
            current = next;
        }
        if many {
            return Ok(Value::Array(current.into_iter().cloned().collect()));
        }
        current
            .into_iter()
            .next()
            .cloned()
            .ok_or_else(|| "nothing is at that path".to_owned())
    }
}

/// Every value under a member named `key`, at any depth, in document order.
fn deep<'a>(value: &'a Value, key: &str, out: &mut Vec<&'a Value>) {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        if out.len() > MAX_SELECTED {
            return;
        }
        match value {
            Value::Object(object) => {
                let entries: Vec<(&str, &Value)> = object.iter().collect();
                // A match is kept when its object is visited; objects are visited depth
                // first in document order, and an object has at most one such member.
                for (k, v) in entries.iter().rev() {
                    stack.push(v);
                    if *k == key {
                        out.push(v);
                    }
                }
            }
            Value::Array(items) => stack.extend(items.iter().rev()),
            _ => {}
        }
    }
}

/// A member name: the characters up to the next `.` or `[`.
fn name_at(chars: &[char], from: usize) -> (String, usize) {
    let end = chars[from.min(chars.len())..]
        .iter()
        .position(|c| *c == '.' || *c == '[')
        .map_or(chars.len(), |p| p + from);
    (chars[from.min(end)..end].iter().collect(), end)
}

fn quoted(text: &str) -> Option<&str> {
    ['\'', '"']
        .into_iter()
        .find_map(|q| text.strip_prefix(q)?.strip_suffix(q))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(text: &str) -> Value {
        Value::parse(text).expect("json")
    }

    fn select(path: &str, data: &str) -> Result<String, String> {
        Path::parse(path)?.select(&json(data)).map(|v| v.to_json())
    }

    #[test]
    fn path_forms() {
        let data = r#"{"items":[{"name":"a","tags":["x"]},{"name":"b"}],"total":2}"#;
        assert_eq!(select("$.total", data), Ok("2".into()));
        assert_eq!(select("$.items[1].name", data), Ok(r#""b""#.into()));
        assert_eq!(select("$.items.[0].name", data), Ok(r#""a""#.into()));
        assert_eq!(select("$['items'][-1]", data), Ok(r#"{"name":"b"}"#.into()));
        assert_eq!(select("$.items[*].name", data), Ok(r#"["a","b"]"#.into()));
        assert_eq!(select("$..name", data), Ok(r#"["a","b"]"#.into()));
        assert_eq!(select("$", data).map(|s| s.len()), Ok(data.len()));
        assert_eq!(select("$.[1]", r#"["a","b"]"#), Ok(r#""b""#.into()));
        assert!(select("$.missing", data).is_err());
        assert!(select("items", data).is_err());
        assert!(select("$.items[", data).is_err());
        assert!(select("$.items[x]", data).is_err());
    }
}
