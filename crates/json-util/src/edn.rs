//! EDN read as plain data and converted to a JSON value tree: a configuration file, or a
//! schema typed into chat (`clef --questions '{:x {:type :noul ...}}'`).
//!
//! Only data is accepted: maps, vectors, lists, sets, keywords, strings, characters, numbers,
//! booleans and nil, with comments and `#_` discard forms skipped. Symbols, tagged literals
//! (`#inst`, reader tags) and ratios are rejected, so nothing read here can ever be evaluated
//! or resolved. Keywords become strings without the colon (`:key-file` is `"key-file"`).
//!
//! ```
//! let value = yetibot_json_util::edn::parse(r#"{:x {:type :noul :instructions "Bad?"}}"#)?;
//! assert_eq!(value["x"]["type"], "noul");
//! # Ok::<(), yetibot_json_util::edn::EdnError>(())
//! ```

use clojure_reader::edn::{self, Edn};
use serde_json::{Map, Number, Value};

/// Where an [`EdnError`] is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A syntax error at this line and column (1-based), when the reader knows them.
    Text {
        /// The line.
        line: Option<usize>,
        /// The column.
        column: Option<usize>,
    },
    /// A form that is not plain data, at this dotted path of the tree (`a.b[2]`), empty for
    /// the root.
    Path(String),
}

/// Why some text is not plain EDN data. Its message never quotes the text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {reason}", self.at())]
pub struct EdnError {
    /// Where.
    pub location: Location,
    /// What is wrong.
    pub reason: &'static str,
}

impl EdnError {
    fn at_path(path: &str, reason: &'static str) -> Self {
        Self {
            location: Location::Path(path.to_owned()),
            reason,
        }
    }

    fn whole(reason: &'static str) -> Self {
        Self {
            location: Location::Text {
                line: None,
                column: None,
            },
            reason,
        }
    }

    /// The location in words: `line 1, column 5`, a path, `(root)` or `(text)`.
    #[must_use]
    pub fn at(&self) -> String {
        match &self.location {
            Location::Text {
                line: Some(line),
                column: Some(column),
            } => format!("line {line}, column {column}"),
            Location::Text { .. } => "(text)".to_owned(),
            Location::Path(path) if path.is_empty() => "(root)".to_owned(),
            Location::Path(path) => path.clone(),
        }
    }
}

/// Nesting deeper than this is refused before conversion recurses further.
const MAX_DEPTH: usize = 64;

/// Parses exactly one EDN form and converts it. Keywords become strings without the leading
/// colon (`:key-file` → `"key-file"`, `:a/b` → `"a/b"`). Cost is linear in the text: nesting
/// is bounded (64 levels) before the reader runs.
///
/// # Errors
///
/// An [`EdnError`] with the line and column of a syntax error, or the path of a form that is
/// not plain data.
pub fn parse(text: &str) -> Result<Value, EdnError> {
    // The reader recurses per nesting level, so bound the depth before it runs.
    if nesting_depth(text) > MAX_DEPTH {
        return Err(EdnError::whole("is nested too deeply"));
    }
    let (form, rest) = edn::read(text).map_err(|e| syntax_problem(&e))?;
    if let Err(e) = edn::read(rest) {
        if !matches!(e.code, clojure_reader::error::Code::UnexpectedEOF) {
            return Err(syntax_problem(&e));
        }
    } else {
        return Err(EdnError::whole(
            "contains more than one top-level form; wrap them in one map or vector",
        ));
    }
    let mut path = String::new();
    convert(&form, &mut path, 0)
}

fn syntax_problem(e: &clojure_reader::error::Error) -> EdnError {
    let reason = match e.code {
        clojure_reader::error::Code::HashMapDuplicateKey => "a map has the same key twice",
        clojure_reader::error::Code::SetDuplicateKey => "a set has the same element twice",
        clojure_reader::error::Code::UnexpectedEOF => {
            "the text ends inside a form (unclosed bracket or string?)"
        }
        clojure_reader::error::Code::UnmatchedDelimiter(_) => "unmatched closing bracket",
        clojure_reader::error::Code::InvalidEscape => "invalid escape in a string",
        clojure_reader::error::Code::InvalidNumber
        | clojure_reader::error::Code::InvalidRadix(_) => "invalid number",
        clojure_reader::error::Code::InvalidKeyword => "invalid keyword",
        clojure_reader::error::Code::InvalidTag => "invalid tag",
        _ => "is not valid EDN",
    };
    EdnError {
        location: Location::Text {
            line: e.line,
            column: e.column,
        },
        reason,
    }
}

fn convert(form: &Edn<'_>, path: &mut String, depth: usize) -> Result<Value, EdnError> {
    if depth > MAX_DEPTH {
        return Err(EdnError::at_path(path, "is nested too deeply"));
    }
    Ok(match form {
        Edn::Map(map) => {
            let mut out = Map::new();
            for (key, value) in map {
                let key = match key {
                    Edn::Key(k) | Edn::Str(k) => k.to_string(),
                    _ => {
                        return Err(EdnError::at_path(
                            path,
                            "has a map key that is not a keyword or a string",
                        ));
                    }
                };
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(&key);
                if out.contains_key(&key) {
                    return Err(EdnError::at_path(
                        path,
                        "is given twice (as a keyword and as a string)",
                    ));
                }
                let value = convert(value, path, depth + 1)?;
                path.truncate(len);
                out.insert(key, value);
            }
            Value::Object(out)
        }
        Edn::Vector(items) | Edn::List(items) => {
            Value::Array(convert_items(items.iter(), path, depth)?)
        }
        Edn::Set(items) => Value::Array(convert_items(items.iter(), path, depth)?),
        Edn::Key(k) | Edn::Str(k) => Value::String(k.to_string()),
        Edn::Char(c) => Value::String(c.to_string()),
        Edn::Int(i) => Value::Number(Number::from(*i)),
        Edn::Double(d) => Number::from_f64(d.into_inner())
            .map(Value::Number)
            .ok_or_else(|| EdnError::at_path(path, "must be a finite number"))?,
        Edn::Bool(b) => Value::Bool(*b),
        Edn::Nil => Value::Null,
        Edn::Symbol(_) => {
            return Err(EdnError::at_path(
                path,
                "is a symbol; write text as a \"string\" (symbols are never resolved)",
            ));
        }
        Edn::Tagged(..) => {
            return Err(EdnError::at_path(
                path,
                "is a tagged literal; EDN here is plain data and tags are never evaluated",
            ));
        }
        _ => {
            return Err(EdnError::at_path(
                path,
                "is a ratio or arbitrary-precision number, which is not accepted here",
            ));
        }
    })
}

fn convert_items<'a, 'e: 'a>(
    items: impl Iterator<Item = &'a Edn<'e>>,
    path: &mut String,
    depth: usize,
) -> Result<Vec<Value>, EdnError> {
    let mut out = Vec::new();
    for (i, item) in items.enumerate() {
        let len = path.len();
        path.push_str(&format!("[{i}]"));
        out.push(convert(item, path, depth + 1)?);
        path.truncate(len);
    }
    Ok(out)
}

/// The deepest bracket nesting in `text`, skipping strings, comments and character literals.
fn nesting_depth(text: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
            }
            ';' => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            '\\' => {
                chars.next();
            }
            '(' | '[' | '{' => {
                depth += 1;
                max = max.max(depth);
            }
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(text: &str, expect: Value) {
        assert_eq!(parse(text).unwrap(), expect, "{text}");
    }

    fn check_err(text: &str, expect: &str) {
        let err = parse(text).unwrap_err().to_string();
        assert!(err.contains(expect), "{text}: {err}");
    }

    #[test]
    fn data_forms_convert() {
        check(
            r#"{:yetibot {:ai {:key-file "/x" :n 6 :f 0.5 :on true :off false :none nil
                              :v [1 "a" :kw] :l (1 2) :s #{:b} :c \x :ns/k "v"}}}"#,
            json!({"yetibot": {"ai": {"key-file": "/x", "n": 6, "f": 0.5, "on": true, "off": false,
                   "none": null, "v": [1, "a", "kw"], "l": [1, 2], "s": ["b"], "c": "x", "ns/k": "v"}}}),
        );
    }

    #[test]
    fn comments_and_discards_are_skipped() {
        check(
            "; leading comment\n{:a 1 ; trailing\n #_ :b #_ 2 :c #_{:x 1} 3}\n;; end",
            json!({"a": 1, "c": 3}),
        );
    }

    #[test]
    fn string_keys_stay_strings() {
        check(
            r#"{:headers {"Authorization" "Bearer x"}}"#,
            json!({"headers": {"Authorization": "Bearer x"}}),
        );
    }

    #[test]
    fn code_is_refused() {
        check_err("{:a (System/exit 1)}", "a[0]: is a symbol");
        check_err("{:a #inst \"2020-01-01\"}", "a: is a tagged literal");
        check_err("{:a #=(+ 1 2)}", "");
        check_err("{:a 1/2}", "a: is a ratio");
    }

    #[test]
    fn syntax_errors_name_the_position_and_not_the_content() {
        check_err("{:a \"secret-value", "line 1");
        let err = parse("{:a \"secret-value").unwrap_err().to_string();
        assert!(!err.contains("secret-value"));
        check_err("{:a 1 :a 2}", "same key twice");
        check_err("{:a 1} {:b 2}", "more than one top-level form");
        check_err("{:a 1}}", "");
        check_err("{:a 1 \"a\" 2}", "a: is given twice");
        check_err("{1 2}", "not a keyword or a string");
    }

    #[test]
    fn deep_nesting_is_refused() {
        let text = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        check_err(&text, "nested too deeply");
        check(
            r#"{:a "[[[[" :b \[ :c ; [[[[
                 1}"#,
            json!({"a": "[[[[", "b": "[", "c": 1}),
        );
    }

    proptest::proptest! {
        /// Any text, including typed chat arguments, parses or is refused without a panic.
        #[test]
        fn any_text_is_parsed_or_refused(text in "[{}\\[\\]()#:\"\\\\;a-z0-9 .\n/_-]{0,200}") {
            let _ = parse(&text);
        }
    }
}
