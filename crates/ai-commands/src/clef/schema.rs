//! The typed schemas Clef and Clairic take: Clef's questions and Clairic's fields, checked
//! against their bounds before anything is fetched or sent, and the four quick Clairic
//! presets built locally.
//!
//! A schema arrives as JSON: from an EDN argument of the standalone commands (read as data by
//! `yetibot_json_util::edn`, keywords as strings) or from a native tool call. The commands
//! leave type-specific options to Cloudflare; the native tools accept only the bounded
//! subset their published schema describes ([`Strictness::Tool`]).

use serde_json::{Map, Value, json};

use crate::args::is_iso_date;

/// Most questions or fields in one request.
pub(crate) const MAX_ENTRIES: usize = 64;
/// Longest question ID, in characters.
pub(crate) const MAX_QUESTION_ID_CHARS: usize = 100;
/// Longest field ID, in characters.
pub(crate) const MAX_FIELD_ID_CHARS: usize = 64;
/// Fewest and most options of a choice question.
pub(crate) const CHOICE_OPTIONS: std::ops::RangeInclusive<usize> = 2..=255;
/// Fewest and most levels of a score question.
pub(crate) const SCORE_LEVELS: std::ops::RangeInclusive<usize> = 2..=10;
/// Longest instruction or description a native tool call may give, in characters.
pub(crate) const MAX_TOOL_TEXT_CHARS: usize = 2_000;
/// The most decimals a native `number` field may ask for.
pub(crate) const MAX_DECIMALS: u64 = 6;

/// Clairic's field types.
pub(crate) const FIELD_TYPES: [&str; 9] = [
    "text", "number", "date", "time", "datetime", "duration", "list", "estimate", "forecast",
];
/// The item types of a `list` field.
pub(crate) const LIST_ITEM_TYPES: [&str; 3] = ["text", "number", "date"];
/// The units of a native `duration` field.
pub(crate) const DURATION_UNITS: [&str; 7] = [
    "seconds", "minutes", "hours", "days", "weeks", "months", "years",
];

/// How strictly a schema is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Strictness {
    /// The standalone commands: the documented structure and bounds are checked, other
    /// options are Cloudflare's to judge.
    Command,
    /// The native tools: only the bounded subset of their schema, plain bounded strings.
    Tool,
}

/// Clef's questions, checked. The map is what the request carries.
///
/// # Errors
///
/// What is wrong, naming the question, never quoting its text.
pub(crate) fn questions(
    value: &Value,
    strictness: Strictness,
) -> Result<Map<String, Value>, String> {
    let Value::Object(map) = value else {
        return Err("the questions must be a map of question IDs to questions".to_owned());
    };
    count(map.len(), "question")?;
    let mut out = Map::new();
    for (id, question) in map {
        if id.is_empty()
            || id.chars().count() > MAX_QUESTION_ID_CHARS
            || !id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
        {
            return Err(format!(
                "question ID {} must be 1 to {MAX_QUESTION_ID_CHARS} letters, digits, '_', '.' or '-'",
                shown(id)
            ));
        }
        out.insert(id.clone(), question_entry(id, question, strictness)?);
    }
    Ok(out)
}

fn question_entry(id: &str, question: &Value, strictness: Strictness) -> Result<Value, String> {
    let Value::Object(spec) = question else {
        return Err(format!(
            "question {id} must be a map with :type and :instructions"
        ));
    };
    let kind = spec.get("type").and_then(Value::as_str).unwrap_or_default();
    if !matches!(kind, "noul" | "choice" | "score") {
        return Err(format!("question {id} needs :type noul, choice or score"));
    }
    for key in spec.keys() {
        if !matches!(key.as_str(), "type" | "instructions" | "criteria") {
            return Err(format!(
                "question {id} has the unknown key {}; a question has :type, :instructions and :criteria",
                shown(key)
            ));
        }
    }
    let instructions = spec.get("instructions").unwrap_or(&Value::Null);
    if !filled(instructions) {
        return Err(format!("question {id} needs non-empty :instructions"));
    }
    if strictness == Strictness::Tool {
        plain_text(instructions, &format!("question {id}'s instructions"))?;
    }
    let criteria = spec.get("criteria");
    match (kind, criteria) {
        ("noul", None) => {}
        ("noul", Some(Value::Object(sides))) => {
            if let Some(other) = sides
                .keys()
                .find(|k| !matches!(k.as_str(), "true" | "false"))
            {
                return Err(format!(
                    "question {id}'s criteria may describe only true and false, not {}",
                    shown(other)
                ));
            }
            if strictness == Strictness::Tool {
                for side in sides.values() {
                    plain_text(side, &format!("question {id}'s criteria"))?;
                }
            }
        }
        ("noul", Some(_)) => {
            return Err(format!(
                "question {id}'s criteria must map true and false to descriptions"
            ));
        }
        ("choice", Some(Value::Object(options))) => {
            if !CHOICE_OPTIONS.contains(&options.len()) {
                return Err(format!(
                    "question {id} must offer {} to {} options, not {}",
                    CHOICE_OPTIONS.start(),
                    CHOICE_OPTIONS.end(),
                    options.len()
                ));
            }
            if options.keys().any(String::is_empty) {
                return Err(format!("question {id} has an option with an empty ID"));
            }
            if strictness == Strictness::Tool {
                for description in options.values() {
                    plain_text(description, &format!("question {id}'s option descriptions"))?;
                }
            }
        }
        ("choice", _) => {
            return Err(format!(
                "question {id} (choice) needs :criteria mapping option IDs to descriptions"
            ));
        }
        ("score", Some(Value::Array(levels))) => {
            if !SCORE_LEVELS.contains(&levels.len()) {
                return Err(format!(
                    "question {id} must have {} to {} ordered levels, not {}",
                    SCORE_LEVELS.start(),
                    SCORE_LEVELS.end(),
                    levels.len()
                ));
            }
            if strictness == Strictness::Tool {
                for level in levels {
                    plain_text(level, &format!("question {id}'s levels"))?;
                }
            }
        }
        _ => {
            return Err(format!(
                "question {id} (score) needs :criteria, a vector of level descriptions, lowest first"
            ));
        }
    }
    Ok(question.clone())
}

/// Clairic's fields, checked and written in full (`:amount :number` becomes
/// `{"type": "number"}`).
///
/// # Errors
///
/// What is wrong, naming the field, never quoting its text.
pub(crate) fn fields(value: &Value, strictness: Strictness) -> Result<Map<String, Value>, String> {
    let Value::Object(map) = value else {
        return Err("the fields must be a map of field IDs to types or specifications".to_owned());
    };
    count(map.len(), "field")?;
    let mut out = Map::new();
    for (id, field) in map {
        let mut chars = id.chars();
        let first_ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        if !first_ok
            || id.chars().count() > MAX_FIELD_ID_CHARS
            || !chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
        {
            return Err(format!(
                "field ID {} must start with a letter or '_' and have at most {MAX_FIELD_ID_CHARS} letters, digits, '_', '.' or '-'",
                shown(id)
            ));
        }
        out.insert(id.clone(), field_entry(id, field, strictness)?);
    }
    Ok(out)
}

fn field_entry(id: &str, field: &Value, strictness: Strictness) -> Result<Value, String> {
    let spec = match field {
        Value::String(kind) if strictness == Strictness::Command => {
            let mut spec = Map::new();
            spec.insert("type".to_owned(), Value::String(kind.clone()));
            spec
        }
        Value::Object(spec) => spec.clone(),
        _ => {
            return Err(format!(
                "field {id} must be a type (:number) or a specification map"
            ));
        }
    };
    let kind = spec.get("type").and_then(Value::as_str).unwrap_or_default();
    if !FIELD_TYPES.contains(&kind) {
        return Err(format!(
            "field {id} needs a type: one of {}",
            FIELD_TYPES.join(", ")
        ));
    }
    if kind == "list" {
        let items = spec
            .get("items")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !LIST_ITEM_TYPES.contains(&items) {
            return Err(format!(
                "field {id} (list) needs :items text, number or date"
            ));
        }
    }
    if matches!(kind, "estimate" | "forecast")
        && (!spec.contains_key("min") || !spec.contains_key("max"))
    {
        return Err(format!("field {id} ({kind}) needs :min and :max"));
    }
    if strictness == Strictness::Tool {
        tool_field_options(id, kind, &spec)?;
    }
    Ok(Value::Object(spec))
}

/// The native tools' subset: known options only, each within its bounds.
fn tool_field_options(id: &str, kind: &str, spec: &Map<String, Value>) -> Result<(), String> {
    let allowed: &[&str] = match kind {
        "number" => &["type", "instructions", "unit", "decimals"],
        "duration" => &["type", "instructions", "unit"],
        "list" => &["type", "instructions", "items"],
        "estimate" | "forecast" => &["type", "instructions", "min", "max"],
        _ => &["type", "instructions"],
    };
    if let Some(other) = spec.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(format!(
            "field {id} ({kind}) does not take {}",
            shown(other)
        ));
    }
    if let Some(instructions) = spec.get("instructions") {
        plain_text(instructions, &format!("field {id}'s instructions"))?;
    }
    match kind {
        "number" => {
            if let Some(unit) = spec.get("unit") {
                plain_text(unit, &format!("field {id}'s unit"))?;
            }
            if let Some(decimals) = spec.get("decimals")
                && decimals.as_u64().is_none_or(|d| d > MAX_DECIMALS)
            {
                return Err(format!(
                    "field {id}'s decimals must be a whole number from 0 to {MAX_DECIMALS}"
                ));
            }
        }
        "duration" => {
            if let Some(unit) = spec.get("unit")
                && !unit.as_str().is_some_and(|u| DURATION_UNITS.contains(&u))
            {
                return Err(format!(
                    "field {id}'s unit must be one of {}",
                    DURATION_UNITS.join(", ")
                ));
            }
        }
        "estimate" | "forecast" => bounds_in_order(id, &spec["min"], &spec["max"])?,
        _ => {}
    }
    Ok(())
}

/// An estimate's or forecast's bounds: both numbers or both strict `YYYY-MM-DD` dates, the
/// minimum below the maximum.
fn bounds_in_order(id: &str, min: &Value, max: &Value) -> Result<(), String> {
    let ordered = match (min, max) {
        (Value::Number(a), Value::Number(b)) => match (a.as_f64(), b.as_f64()) {
            (Some(a), Some(b)) => a < b,
            _ => false,
        },
        (Value::String(a), Value::String(b)) if is_iso_date(a) && is_iso_date(b) => a < b,
        _ => {
            return Err(format!(
                "field {id}'s min and max must both be numbers or both dates (YYYY-MM-DD)"
            ));
        }
    };
    if ordered {
        Ok(())
    } else {
        Err(format!("field {id}'s min must be below its max"))
    }
}

fn count(n: usize, what: &str) -> Result<(), String> {
    if (1..=MAX_ENTRIES).contains(&n) {
        Ok(())
    } else {
        Err(format!("give 1 to {MAX_ENTRIES} {what}s, not {n}"))
    }
}

/// Whether an instruction says something: non-blank text, or non-empty structured data.
fn filled(value: &Value) -> bool {
    match value {
        Value::String(text) => !text.trim().is_empty(),
        Value::Array(items) => !items.is_empty(),
        Value::Object(map) => !map.is_empty(),
        _ => false,
    }
}

/// A native tool's text: a non-blank string of at most [`MAX_TOOL_TEXT_CHARS`].
fn plain_text(value: &Value, what: &str) -> Result<(), String> {
    match value.as_str() {
        Some(text) if !text.trim().is_empty() && text.chars().count() <= MAX_TOOL_TEXT_CHARS => {
            Ok(())
        }
        _ => Err(format!(
            "{what} must be non-empty text of at most {MAX_TOOL_TEXT_CHARS} characters"
        )),
    }
}

/// A key or ID as an error shows it: quoted, cut at 40 characters, control characters
/// dropped.
fn shown(text: &str) -> String {
    let clean: String = text
        .chars()
        .filter(|c| !c.is_control() && !yetibot_conversation::is_bidi_control(*c))
        .take(40)
        .collect();
    format!("`{clean}`")
}

/// One of the four quick Clairic requests, or the demo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Preset {
    /// `count …` / `how many …`: an integer `count`.
    Count,
    /// `rate …`: a `rating` on a 0–10 grid.
    Rate,
    /// `read …`: `text` extracted from the source.
    Read,
    /// `list …`: `items` extracted from the source.
    List,
}

impl Preset {
    /// The preset a request starts with and the rest of the request; `None` when it starts
    /// with none of the verbs.
    pub(crate) fn parse(request: &str) -> Option<(Self, &str)> {
        let request = request.trim_start();
        let lower = request.to_ascii_lowercase();
        for (verb, preset) in [
            ("how many", Self::Count),
            ("count", Self::Count),
            ("rate", Self::Rate),
            ("read", Self::Read),
            ("list", Self::List),
        ] {
            if let Some(rest) = lower.strip_prefix(verb)
                && (rest.is_empty() || rest.starts_with(char::is_whitespace))
            {
                return Some((preset, request[verb.len()..].trim()));
            }
        }
        None
    }

    /// The field's ID.
    pub(crate) fn field(&self) -> &'static str {
        match self {
            Self::Count => "count",
            Self::Rate => "rating",
            Self::Read => "text",
            Self::List => "items",
        }
    }

    /// The fields this preset asks for, with `what` (the rest of the request) as the
    /// instructions.
    pub(crate) fn fields(&self, what: &str) -> Map<String, Value> {
        let what = what.trim();
        let spec = match self {
            Self::Count => json!({
                "type": "number",
                "decimals": 0,
                "instructions": format!("Count {what} in the supplied text or images. Answer with a whole number."),
            }),
            Self::Rate => json!({
                "type": "estimate",
                "min": 0,
                "max": 10,
                "instructions": format!("Rate {what} on a scale from 0 to 10, judging the supplied text or images."),
            }),
            Self::Read => json!({
                "type": "text",
                "instructions": format!("Copy {what} exactly as it appears in the supplied source text. Do not invent or describe."),
            }),
            Self::List => json!({
                "type": "list",
                "items": "text",
                "instructions": format!("List {what} exactly as they appear in the supplied source text. Do not invent or describe."),
            }),
        };
        let mut fields = Map::new();
        fields.insert(self.field().to_owned(), spec);
        fields
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(value: Value) -> Result<Map<String, Value>, String> {
        questions(&value, Strictness::Command)
    }

    #[test]
    fn questions_keep_their_bounds() {
        assert!(q(json!({"x": {"type": "noul", "instructions": "Bad?"}})).is_ok());
        assert!(
            q(json!({"team": {"type": "choice", "instructions": "Who?",
            "criteria": {"ops": "Service incidents", "sales": "Purchase questions"}}}))
            .is_ok()
        );
        assert!(
            q(
                json!({"s": {"type": "score", "instructions": {"q": "How bad?"},
            "criteria": ["fine", "bad"]}})
            )
            .is_ok()
        );
        for (bad, says) in [
            (json!({}), "1 to 64 questions"),
            (json!([1]), "must be a map"),
            (
                json!({"a b": {"type": "noul", "instructions": "x"}}),
                "question ID `a b`",
            ),
            (
                json!({"x": {"type": "bool", "instructions": "x"}}),
                "noul, choice or score",
            ),
            (
                json!({"x": {"type": "noul", "instructions": " "}}),
                "non-empty :instructions",
            ),
            (
                json!({"x": {"type": "choice", "instructions": "x", "criteria": {"a": 1}}}),
                "2 to 255 options",
            ),
            (
                json!({"x": {"type": "score", "instructions": "x", "criteria": ["a"]}}),
                "2 to 10 ordered levels",
            ),
            (
                json!({"x": {"type": "score", "instructions": "x"}}),
                "needs :criteria",
            ),
            (
                json!({"x": {"type": "noul", "instructions": "x", "extra": 1}}),
                "unknown key `extra`",
            ),
        ] {
            let error = q(bad.clone()).unwrap_err();
            assert!(error.contains(says), "{bad}: {error}");
        }
        let many: Map<String, Value> = (0..65)
            .map(|i| {
                (
                    format!("q{i}"),
                    json!({"type": "noul", "instructions": "x"}),
                )
            })
            .collect();
        assert!(q(Value::Object(many)).unwrap_err().contains("not 65"));
        let long = "x".repeat(101);
        assert!(q(json!({long: {"type": "noul", "instructions": "x"}})).is_err());
        let options: Map<String, Value> = (0..256).map(|i| (format!("o{i}"), json!("d"))).collect();
        assert!(
            q(json!({"x": {"type": "choice", "instructions": "x", "criteria": options}})).is_err()
        );
    }

    #[test]
    fn tool_questions_take_plain_bounded_text_only() {
        let structured = json!({"x": {"type": "noul", "instructions": {"q": "Bad?"}}});
        assert!(questions(&structured, Strictness::Command).is_ok());
        assert!(questions(&structured, Strictness::Tool).is_err());
        let long = json!({"x": {"type": "noul", "instructions": "x".repeat(2001)}});
        assert!(questions(&long, Strictness::Tool).is_err());
    }

    #[test]
    fn fields_expand_shorthand_and_keep_their_rules() {
        let fields = fields(&json!({"amount": "number"}), Strictness::Command).unwrap();
        assert_eq!(fields["amount"], json!({"type": "number"}));
        let full = json!({"amount": {"type": "number", "unit": "USD", "decimals": 2}});
        assert!(super::fields(&full, Strictness::Tool).is_ok());
        for (bad, says) in [
            (json!({"1x": "number"}), "field ID `1x`"),
            (json!({"x": "boolean"}), "needs a type"),
            (json!({"x": "list"}), "needs :items"),
            (json!({"x": {"type": "list", "items": "date"}}), ""),
            (json!({"x": "estimate"}), "needs :min and :max"),
        ] {
            let result = super::fields(&bad, Strictness::Command);
            if says.is_empty() {
                assert!(result.is_ok(), "{bad}");
            } else {
                assert!(result.unwrap_err().contains(says), "{bad}");
            }
        }
        for bad in [
            json!({"x": "number"}),
            json!({"x": {"type": "number", "decimals": 7}}),
            json!({"x": {"type": "duration", "unit": "fortnights"}}),
            json!({"x": {"type": "estimate", "min": 5, "max": 1}}),
            json!({"x": {"type": "forecast", "min": "2026-01-01", "max": 3}}),
            json!({"x": {"type": "forecast", "min": "2026-02-30", "max": "2026-03-01"}}),
            json!({"x": {"type": "text", "colour": "red"}}),
        ] {
            assert!(super::fields(&bad, Strictness::Tool).is_err(), "{bad}");
        }
        assert!(
            super::fields(
                &json!({"x": {"type": "forecast", "min": "2026-01-01", "max": "2026-12-31"}}),
                Strictness::Tool
            )
            .is_ok()
        );
    }

    #[test]
    fn presets_are_recognised_by_their_verb() {
        assert_eq!(
            Preset::parse("count balloons"),
            Some((Preset::Count, "balloons"))
        );
        assert_eq!(
            Preset::parse("How many cats"),
            Some((Preset::Count, "cats"))
        );
        assert_eq!(
            Preset::parse("rate how absurd"),
            Some((Preset::Rate, "how absurd"))
        );
        assert_eq!(
            Preset::parse("read the callsign"),
            Some((Preset::Read, "the callsign"))
        );
        assert_eq!(
            Preset::parse("list the pilots"),
            Some((Preset::List, "the pilots"))
        );
        assert_eq!(Preset::parse("counting sheep"), None);
        assert_eq!(Preset::parse("what is this"), None);
        let fields = Preset::Rate.fields("it");
        assert_eq!(fields["rating"]["max"], 10);
    }
}
