//! Reading and validating one call's arguments object against the operator table: the
//! operation, the `input_json` text and each optional field with its type and bounds.

use yetibot_redaction::Secrets;

use crate::credentials;
use crate::error::{Error, Result};
use crate::limits::{Limits, MAX_ARGUMENT_CHARS};
use crate::operation::Operation;
use crate::operators::{Options, Segment};
use crate::table::{Constraint, Field, FieldRule};
use crate::value::Value;

/// A call whose arguments passed every check, with its input read.
#[derive(Debug)]
pub(crate) struct Request {
    pub(crate) operation: Operation,
    pub(crate) input: Value,
    pub(crate) options: Options,
}

/// Reads, validates and credential-checks the arguments text of one call.
pub(crate) fn read(arguments: &str, secrets: &Secrets) -> Result<Request> {
    if arguments.len() > Limits::ARGUMENTS.max_bytes
        || arguments.chars().count() > MAX_ARGUMENT_CHARS
    {
        return Err(Error::ArgumentsTooLong);
    }
    let parsed = Value::parse_with_limits(arguments, &Limits::ARGUMENTS)
        .map_err(|_| Error::ArgumentsNotObject)?;
    let Value::Object(object) = parsed else {
        return Err(Error::ArgumentsNotObject);
    };
    // The raw text is searched too: it holds `input_json` still escaped once, which catches
    // spellings that decoding the strings would not reveal.
    if secrets.contains_secret(arguments) {
        return Err(Error::SecretInInput);
    }

    let mut operation = None;
    let mut input_json = None;
    let mut given: Vec<(Field, &Value)> = Vec::new();
    for (name, value) in object.iter() {
        match name {
            "operation" => operation = Some(value.as_str().ok_or(Error::FieldType)?),
            "input_json" => input_json = Some(value.as_str().ok_or(Error::FieldType)?),
            other => given.push((Field::from_name(other).ok_or(Error::UnknownField)?, value)),
        }
    }
    let operation = Operation::from_name(operation.ok_or(Error::MissingField)?)?;
    let input_json = input_json.ok_or(Error::MissingField)?;

    let spec = operation.spec();
    let mut options = Options::default();
    for &(field, value) in &given {
        let rule = spec.rule(field).ok_or(Error::FieldNotAllowed)?;
        apply(rule, value, &mut options)?;
    }
    let missing = spec
        .fields()
        .iter()
        .any(|rule| rule.required && !given.iter().any(|(field, _)| *field == rule.field));
    if missing {
        return Err(Error::MissingField);
    }
    credentials::check_options(&options, secrets)?;

    let input = read_input(input_json, secrets)?;
    Ok(Request {
        operation,
        input,
        options,
    })
}

/// Reads `input_json` within the tool bounds and rejects credentials in it.
fn read_input(text: &str, secrets: &Secrets) -> Result<Value> {
    // The byte bound comes first so that no later step ever scans an oversized text.
    if text.len() > Limits::TOOL.max_bytes {
        return Err(Error::TooManyBytes);
    }
    if secrets.contains_secret(text) {
        return Err(Error::SecretInInput);
    }
    let value = Value::parse(text)?;
    credentials::check_value(&value, secrets)?;
    Ok(value)
}

/// Checks one optional field against its rule and stores it.
fn apply(rule: &FieldRule, value: &Value, options: &mut Options) -> Result<()> {
    match (rule.field, rule.constraint) {
        (Field::Count, Constraint::Integer { min, max }) => {
            let Value::Integer(n) = value else {
                return Err(Error::FieldType);
            };
            let n = n
                .to_i64()
                .filter(|n| (min..=max).contains(n))
                .ok_or(Error::FieldOutOfRange)?;
            options.count = Some(usize::try_from(n).map_err(|_| Error::FieldOutOfRange)?);
        }
        (
            Field::Separator,
            Constraint::Text {
                min_chars,
                max_chars,
            },
        ) => {
            options.separator = Some(text(value, min_chars, max_chars)?);
        }
        (
            Field::Query,
            Constraint::Text {
                min_chars,
                max_chars,
            },
        ) => {
            options.query = Some(text(value, min_chars, max_chars)?);
        }
        (
            Field::Path,
            Constraint::Path {
                min_segments,
                max_segments,
                max_key_chars,
                max_index,
            },
        ) => {
            let Value::Array(items) = value else {
                return Err(Error::FieldType);
            };
            if !(min_segments..=max_segments).contains(&items.len()) {
                return Err(Error::FieldOutOfRange);
            }
            let segments = items
                .iter()
                .map(|item| match item {
                    Value::String(_) => text(item, 0, max_key_chars).map(Segment::Key),
                    Value::Integer(n) => n
                        .to_i64()
                        .filter(|n| (0..=max_index).contains(n))
                        .and_then(|n| usize::try_from(n).ok())
                        .map(Segment::Index)
                        .ok_or(Error::FieldOutOfRange),
                    _ => Err(Error::FieldType),
                })
                .collect::<Result<Vec<_>>>()?;
            options.path = Some(segments);
        }
        // The table pairs every field with one constraint type; a unit test keeps it so.
        _ => return Err(Error::FieldType),
    }
    Ok(())
}

/// A string field's value, if its length in characters is within bounds.
fn text(value: &Value, min_chars: usize, max_chars: usize) -> Result<String> {
    let Value::String(text) = value else {
        return Err(Error::FieldType);
    };
    if !(min_chars..=max_chars).contains(&text.chars().count()) {
        return Err(Error::FieldOutOfRange);
    }
    Ok(text.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::OperationSpec;

    /// Reads `arguments` without secrets and compares the outcome with `expected`: the
    /// operation name on success, the error otherwise.
    fn check(arguments: &str, expected: std::result::Result<&str, Error>) {
        let got = read(arguments, &Secrets::empty()).map(|r| r.operation.name());
        assert_eq!(got, expected, "arguments: {arguments}");
    }

    #[test]
    fn every_table_rule_has_a_matching_constraint_type() {
        for spec in OperationSpec::all() {
            for rule in spec.fields() {
                let sample = match rule.constraint {
                    Constraint::Integer { min, .. } => format!("{min}"),
                    Constraint::Text { min_chars, .. } => format!("\"{}\"", "x".repeat(min_chars)),
                    Constraint::Path { .. } => "[0]".to_owned(),
                };
                let mut options = Options::default();
                let value = Value::parse(&sample).unwrap();
                assert_eq!(apply(rule, &value, &mut options), Ok(()), "{}", spec.name());
            }
        }
    }

    #[test]
    fn fields_are_accepted_only_where_listed() {
        check(
            r#"{"operation":"take","input_json":"[]","count":1}"#,
            Ok("take"),
        );
        check(
            r#"{"operation":"head","input_json":"[]","count":1}"#,
            Err(Error::FieldNotAllowed),
        );
        check(
            r#"{"operation":"take","input_json":"[]"}"#,
            Err(Error::MissingField),
        );
        check(
            r#"{"operation":"take","input_json":"[]","limit":1}"#,
            Err(Error::UnknownField),
        );
        check(r#"{"operation":"join","input_json":"[]"}"#, Ok("join"));
        check(
            r#"{"operation":"join","input_json":"[]","separator":""}"#,
            Ok("join"),
        );
        check(
            r#"{"operation":"split","input_json":"\"\"","separator":""}"#,
            Err(Error::FieldOutOfRange),
        );
        check(
            r#"{"operation":"split","input_json":"\"\""}"#,
            Err(Error::MissingField),
        );
        check(
            r#"{"operation":"grep","input_json":"[]","query":"q"}"#,
            Ok("grep"),
        );
        check(
            r#"{"operation":"grep","input_json":"[]","query":""}"#,
            Err(Error::FieldOutOfRange),
        );
        check(
            r#"{"operation":"get","input_json":"{}","path":["a",0,127]}"#,
            Ok("get"),
        );
        check(
            r#"{"operation":"get","input_json":"{}","path":[]}"#,
            Err(Error::FieldOutOfRange),
        );
        check(
            r#"{"operation":"get","input_json":"{}","path":[128]}"#,
            Err(Error::FieldOutOfRange),
        );
        check(
            r#"{"operation":"get","input_json":"{}","path":[-1]}"#,
            Err(Error::FieldOutOfRange),
        );
        check(
            r#"{"operation":"get","input_json":"{}","path":[1.0]}"#,
            Err(Error::FieldType),
        );
        check(
            r#"{"operation":"get","input_json":"{}","path":"a"}"#,
            Err(Error::FieldType),
        );
    }

    #[test]
    fn field_types_and_ranges() {
        check(
            r#"{"operation":"take","input_json":"[]","count":128}"#,
            Ok("take"),
        );
        check(
            r#"{"operation":"take","input_json":"[]","count":129}"#,
            Err(Error::FieldOutOfRange),
        );
        check(
            r#"{"operation":"take","input_json":"[]","count":-1}"#,
            Err(Error::FieldOutOfRange),
        );
        check(
            r#"{"operation":"take","input_json":"[]","count":2.0}"#,
            Err(Error::FieldType),
        );
        check(
            r#"{"operation":"take","input_json":"[]","count":"2"}"#,
            Err(Error::FieldType),
        );
        check(
            r#"{"operation":"take","input_json":"[]","count":null}"#,
            Err(Error::FieldType),
        );
        let sep = |n: usize| {
            format!(
                r#"{{"operation":"join","input_json":"[]","separator":"{}"}}"#,
                "é".repeat(n)
            )
        };
        check(&sep(200), Ok("join"));
        check(&sep(201), Err(Error::FieldOutOfRange));
    }

    #[test]
    fn the_envelope_is_strict() {
        check("[]", Err(Error::ArgumentsNotObject));
        check("{", Err(Error::ArgumentsNotObject));
        check(
            r#"{"operation":"head","operation":"tail","input_json":"[]"}"#,
            Err(Error::ArgumentsNotObject),
        );
        check(r#"{"input_json":"[]"}"#, Err(Error::MissingField));
        check(r#"{"operation":"head"}"#, Err(Error::MissingField));
        check(
            r#"{"operation":"xargs","input_json":"[]"}"#,
            Err(Error::UnknownOperation),
        );
        check(
            r#"{"operation":"Head","input_json":"[]"}"#,
            Err(Error::UnknownOperation),
        );
        check(
            r#"{"operation":1,"input_json":"[]"}"#,
            Err(Error::FieldType),
        );
        check(
            r#"{"operation":"head","input_json":[]}"#,
            Err(Error::FieldType),
        );
        let long = format!(
            r#"{{"operation":"head","input_json":"[]","pad":"{}"}}"#,
            "x".repeat(16_384)
        );
        check(&long, Err(Error::ArgumentsTooLong));
    }
}
