//! Properties over random values: exact round trips, bounded results or clean failures for
//! every operator, no panics on any input, and the algebra of the sequence operators.

use proptest::prelude::*;
use serde_json::json;
use yetibot_json_util::{
    Call, Decimal, Error, Field, Limits, Object, Operation, SplitMix64, Value, execute,
};
use yetibot_redaction::Secrets;

use crate::support::arguments;

const PREFIX: &str = r#"{"structuredContent":{"untrusted":true,"result":"#;

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-c]{0,3}",
        "(?s).{0,8}",
        Just("😀\u{FF61}\u{E000}\u{10000}".to_owned()),
        Just("\"\\/\u{0}\u{1f}\u{7f}\n".to_owned()),
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..4).prop_map(|n| Value::Integer(n.into())),
        any::<i64>().prop_map(|n| Value::Integer(n.into())),
        "-?[1-9][0-9]{18,80}".prop_map(|t| Value::parse(&t).expect("a big integer literal")),
        (any::<i64>(), -30i32..40).prop_filter_map("within bounds", |(u, s)| Decimal::new(u, s)
            .ok()
            .map(Value::Decimal)),
        (-3i64..4, 0i32..3).prop_filter_map("within bounds", |(u, s)| Decimal::new(u, s)
            .ok()
            .map(Value::Decimal)),
        "-?[1-9][0-9]{0,120}\\.[0-9]{1,6}(E[+-][1-9][0-9]?)?"
            .prop_map(|t| Value::parse(&t).expect("a long decimal literal")),
        text().prop_map(Value::String),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(3, 48, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((text(), inner), 0..5).prop_map(|entries| {
                let mut object = Object::new();
                for (key, value) in entries {
                    // Later duplicates are skipped: an object never holds a key twice.
                    let _ = object.insert(key, value);
                }
                Value::Object(object)
            }),
        ]
    })
}

fn array() -> impl Strategy<Value = Vec<Value>> {
    prop::collection::vec(value(), 0..10)
}

/// Runs `operation` on `input` through the tool interface and reads the result back.
fn apply(
    operation: Operation,
    input: &Value,
    fields: &[(&str, serde_json::Value)],
) -> Result<Value, Error> {
    let call = Call::new(arguments(operation.name(), &input.to_json(), fields));
    let reply = execute(&call, &mut SplitMix64::new(9), &Secrets::empty());
    if let Some(error) = reply.error() {
        return Err(error);
    }
    let json = reply.as_json();
    let result = json
        .strip_prefix(PREFIX)
        .and_then(|rest| rest.strip_suffix("}}"))
        .expect("a success reply wraps its result");
    Ok(Value::parse(result).expect("a result obeys the input bounds"))
}

fn fields_for(
    operation: Operation,
    n: i64,
    text: &str,
    path: &serde_json::Value,
) -> Vec<(&'static str, serde_json::Value)> {
    operation
        .spec()
        .fields()
        .iter()
        .map(|rule| {
            let value = match rule.field {
                Field::Count => json!(n),
                Field::Separator | Field::Query => json!(text),
                Field::Path => path.clone(),
            };
            (rule.field.name(), value)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn serialization_round_trips_exactly(v in value()) {
        let text = v.to_json();
        let back = Value::parse(&text);
        prop_assert_eq!(back.as_ref(), Ok(&v));
        // Writing again gives the same text: scale and key order survive the trip.
        prop_assert_eq!(back.map(|b| b.to_json()), Ok(text.clone()));
        // The text is standard JSON that another parser accepts.
        prop_assert!(serde_json::from_str::<serde_json::Value>(&text).is_ok());
    }

    #[test]
    fn every_operator_obeys_the_bounds_or_fails(
        v in value(),
        op in 0..Operation::ALL.len(),
        n in -2i64..140,
        text in "[a-c,]{0,3}",
        path in prop::collection::vec(prop_oneof![(0i64..3).prop_map(|i| json!(i)), "[a-c]".prop_map(|k| json!(k))], 0..4),
    ) {
        let operation = Operation::ALL[op];
        let fields = fields_for(operation, n, &text, &json!(path));
        let call = Call::new(arguments(operation.name(), &v.to_json(), &fields));
        let reply = execute(&call, &mut SplitMix64::new(n as u64), &Secrets::empty());
        prop_assert!(reply.as_json().len() <= yetibot_json_util::limits::MAX_REPLY_BYTES);
        let parsed: serde_json::Value = serde_json::from_str(reply.as_json()).expect("replies are JSON");
        if !reply.is_error() {
            let json = reply.as_json();
            let result = json.strip_prefix(PREFIX).and_then(|r| r.strip_suffix("}}")).expect("success shape");
            prop_assert!(Value::parse_with_limits(result, &Limits::TOOL).is_ok());
            prop_assert_eq!(&parsed["structuredContent"]["untrusted"], &json!(true));
        } else {
            prop_assert_eq!(&parsed["isError"], &json!(true));
        }
    }

    #[test]
    fn no_text_makes_the_reader_panic(text in "(?s).{0,64}") {
        let _ = Value::parse(&text);
    }

    #[test]
    fn no_json_like_text_makes_the_reader_panic(text in r#"[\[\]{}",:0-9eE.+\-tfnulrsa\\u ]{0,64}"#) {
        if let Ok(value) = Value::parse(&text) {
            prop_assert_eq!(Value::parse(&value.to_json()), Ok(value));
        }
    }

    #[test]
    fn no_arguments_make_a_call_panic(text in "(?s).{0,80}", op in 0..Operation::ALL.len(), input in r#"[\[\]{}",:0-9.\-a ]{0,40}"#) {
        let secrets = Secrets::new(["abcdefgh-secret"]).expect("one secret compiles");
        let _ = execute(&Call::new(text), &mut SplitMix64::new(1), &secrets);
        let call = Call::new(arguments(Operation::ALL[op].name(), &input, &[]));
        let reply = execute(&call, &mut SplitMix64::new(1), &secrets);
        prop_assert!(reply.as_json().len() <= yetibot_json_util::limits::MAX_REPLY_BYTES);
    }

    #[test]
    fn reverse_twice_is_the_identity(items in array()) {
        let input = Value::Array(items);
        let once = apply(Operation::Reverse, &input, &[]).expect("reverse of a small array");
        let twice = apply(Operation::Reverse, &once, &[]).expect("reverse of a small array");
        prop_assert_eq!(twice.to_json(), input.to_json());
    }

    #[test]
    fn flatten_is_idempotent(items in array()) {
        let input = Value::Array(items);
        if let Ok(once) = apply(Operation::Flatten, &input, &[]) {
            let twice = apply(Operation::Flatten, &once, &[]).expect("a flat array flattens");
            prop_assert_eq!(twice.to_json(), once.to_json());
            prop_assert!(once.as_array().is_some_and(|m| m.iter().all(|x| x.as_array().is_none())));
        }
    }

    #[test]
    fn unique_keeps_first_occurrences_in_order(items in prop::collection::vec(prop_oneof![leaf(), (-2i64..3).prop_map(|n| Value::Integer(n.into()))], 0..12)) {
        let input = Value::Array(items.clone());
        let result = apply(Operation::Unique, &input, &[]).expect("unique of a small array");
        let mut expected: Vec<Value> = Vec::new();
        for item in items {
            if !expected.contains(&item) {
                expected.push(item);
            }
        }
        prop_assert_eq!(result.to_json(), Value::Array(expected).to_json());
    }

    #[test]
    fn take_then_drop_restores_the_input(items in array(), n in 0i64..=12) {
        let input = Value::Array(items);
        let head = apply(Operation::Take, &input, &[("count", json!(n))]).expect("take");
        let tail = apply(Operation::Drop, &input, &[("count", json!(n))]).expect("drop");
        let mut joined: Vec<Value> = head.as_array().expect("an array").to_vec();
        joined.extend_from_slice(tail.as_array().expect("an array"));
        prop_assert_eq!(Value::Array(joined).to_json(), input.to_json());
    }

    #[test]
    fn shuffle_preserves_multiplicity(items in prop::collection::vec(-3i64..4, 0..20), seed in any::<u64>()) {
        let input = Value::Array(items.iter().map(|&n| Value::Integer(n.into())).collect());
        let call = Call::new(arguments("shuffle", &input.to_json(), &[]));
        let reply = execute(&call, &mut SplitMix64::new(seed), &Secrets::empty());
        let result: Vec<i64> = serde_json::from_str::<serde_json::Value>(reply.as_json()).expect("json")
            ["structuredContent"]["result"].as_array().expect("an array").iter()
            .map(|v| v.as_i64().expect("an integer")).collect();
        let (mut a, mut b) = (items, result);
        a.sort_unstable();
        b.sort_unstable();
        prop_assert_eq!(a, b);
    }

    #[test]
    fn sort_matches_utf16_order(items in prop::collection::vec(text(), 0..12)) {
        let input = Value::Array(items.iter().cloned().map(Value::String).collect());
        let result = apply(Operation::Sort, &input, &[]).expect("sort of strings");
        let mut expected = items;
        expected.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
        prop_assert_eq!(result.to_json(), Value::Array(expected.into_iter().map(Value::String).collect()).to_json());
    }
}
