//! The generated schema and the validator read the same table: for every operator and
//! every optional field, the schema allows the field exactly when the validator accepts
//! it, and requires it exactly when the validator does.

use serde_json::{Value, json};
use yetibot_json_util::{Call, Error, Field, Operation, execute, tool_schema};
use yetibot_redaction::Secrets;

use crate::support::{Scripted, arguments};

/// A value valid for `field` on any operator that takes it.
fn sample(field: Field) -> Value {
    match field {
        Field::Count => json!(1),
        Field::Separator => json!(","),
        Field::Query => json!("q"),
        Field::Path => json!([0]),
    }
}

/// The `then` clause the schema has for `operation`.
fn clause(schema: &Value, operation: Operation) -> Value {
    schema["allOf"]
        .as_array()
        .and_then(|all| {
            all.iter()
                .find(|e| e["if"]["properties"]["operation"]["const"] == operation.name())
        })
        .map(|e| e["then"].clone())
        .unwrap_or_else(|| panic!("no schema clause for {operation}"))
}

fn run(arguments: String) -> Option<Error> {
    execute(
        &Call::new(arguments),
        &mut Scripted::default(),
        &Secrets::empty(),
    )
    .error()
}

#[test]
fn schema_and_validator_agree_on_every_field() {
    let schema = tool_schema();
    let names: Vec<&str> = schema["properties"]["operation"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(names, Operation::ALL.map(Operation::name));

    for operation in Operation::ALL {
        let then = clause(&schema, operation);
        let allowed = then["propertyNames"]["enum"].as_array().unwrap().clone();
        let required = then["required"].as_array().unwrap().clone();
        // Fill in every field the schema requires, so only the field under test varies.
        let base: Vec<(&str, Value)> = Field::ALL
            .into_iter()
            .filter(|f| required.contains(&json!(f.name())))
            .map(|f| (f.name(), sample(f)))
            .collect();
        let input = if operation == Operation::Range {
            "[0,1]"
        } else {
            "[]"
        };
        let accepted = |error: Option<Error>| {
            !matches!(
                error,
                Some(Error::FieldNotAllowed | Error::MissingField | Error::UnknownField)
            )
        };
        assert!(
            accepted(run(arguments(operation.name(), input, &base))),
            "{operation}: required fields only"
        );
        for field in Field::ALL {
            let in_schema = allowed.contains(&json!(field.name()));
            let mut fields = base.clone();
            if !fields.iter().any(|(n, _)| *n == field.name()) {
                fields.push((field.name(), sample(field)));
            }
            let error = run(arguments(operation.name(), input, &fields));
            assert_eq!(
                accepted(error),
                in_schema,
                "{operation} with {}: {error:?}",
                field.name()
            );
            if required.contains(&json!(field.name())) {
                let without: Vec<_> = base
                    .iter()
                    .filter(|(n, _)| *n != field.name())
                    .cloned()
                    .collect();
                assert_eq!(
                    run(arguments(operation.name(), input, &without)),
                    Some(Error::MissingField)
                );
            }
        }
    }
}

#[test]
fn schema_field_bounds_match_the_validator() {
    let schema = tool_schema();
    let max = schema["properties"]["count"]["maximum"].as_i64().unwrap();
    let take = |n: i64| run(arguments("take", "[]", &[("count", json!(n))]));
    assert_eq!(take(max), None);
    assert_eq!(take(max + 1), Some(Error::FieldOutOfRange));
    let split = clause(&schema, Operation::Split);
    let min = split["properties"]["separator"]["minLength"]
        .as_u64()
        .unwrap() as usize;
    let split_with = |sep: String| run(arguments("split", "\"a\"", &[("separator", json!(sep))]));
    assert_eq!(split_with("x".repeat(min)), None);
    assert_eq!(
        split_with("x".repeat(min - 1)),
        Some(Error::FieldOutOfRange)
    );
    let path = &schema["properties"]["path"];
    let segments = path["maxItems"].as_u64().unwrap() as usize;
    let get = |p: Value| run(arguments("get", "{}", &[("path", p)]));
    assert_eq!(get(json!(vec![0; segments])), None);
    assert_eq!(
        get(json!(vec![0; segments + 1])),
        Some(Error::FieldOutOfRange)
    );
    let index = path["items"]["anyOf"][1]["maximum"].as_i64().unwrap();
    assert_eq!(get(json!([index])), None);
    assert_eq!(get(json!([index + 1])), Some(Error::FieldOutOfRange));
}
