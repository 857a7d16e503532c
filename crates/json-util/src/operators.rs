//! The 28 operators themselves. Each takes its already shape-checked input and the call's
//! validated optional fields and plans a result: a fixed value, one of several candidates
//! (`random`) or a permutation (`shuffle`).

use crate::collection::{
    IntegerRange, exact_order, jvm_trim, leaves, select, sort_order, sum_of, unique_indices,
    utf16_cmp,
};
use crate::error::{Error, Result};
use crate::limits::Limits;
use crate::number::{Integer, Number};
use crate::value::{Object, Value};

/// The validated optional fields of one call.
#[derive(Debug, Default)]
pub(crate) struct Options {
    pub(crate) count: Option<usize>,
    pub(crate) separator: Option<String>,
    pub(crate) query: Option<String>,
    pub(crate) path: Option<Vec<Segment>>,
}

/// One step of a `get` path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Segment {
    Key(String),
    Index(usize),
}

/// What a call will return, known before any randomness is drawn.
#[derive(Debug)]
pub(crate) enum Plan {
    /// This exact value.
    Fixed(Value),
    /// One of these members, chosen at call time; null when there are none.
    OneOf(Vec<Value>),
    /// These members in an order chosen at call time.
    Permute(Vec<Value>),
}

/// The input of `count`.
#[derive(Debug)]
pub(crate) enum Countable {
    Array(Vec<Value>),
    Object(Object),
    Text(String),
}

/// The validated input of `range`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RangeSpec {
    pub(crate) start: i64,
    pub(crate) end: i64,
    pub(crate) step: i64,
}

pub(crate) fn random(items: Vec<Value>, _: &Options) -> Result<Plan> {
    Ok(Plan::OneOf(items))
}

pub(crate) fn head(items: Vec<Value>, _: &Options) -> Result<Plan> {
    Ok(Plan::Fixed(items.into_iter().next().unwrap_or(Value::Null)))
}

pub(crate) fn tail(mut items: Vec<Value>, _: &Options) -> Result<Plan> {
    Ok(Plan::Fixed(items.pop().unwrap_or(Value::Null)))
}

pub(crate) fn take(mut items: Vec<Value>, options: &Options) -> Result<Plan> {
    items.truncate(options.count.ok_or(Error::MissingField)?);
    Ok(array(items))
}

pub(crate) fn drop(mut items: Vec<Value>, options: &Options) -> Result<Plan> {
    let count = options.count.ok_or(Error::MissingField)?.min(items.len());
    items.drain(..count);
    Ok(array(items))
}

pub(crate) fn rest(mut items: Vec<Value>, _: &Options) -> Result<Plan> {
    if !items.is_empty() {
        items.remove(0);
    }
    Ok(array(items))
}

pub(crate) fn droplast(mut items: Vec<Value>, _: &Options) -> Result<Plan> {
    items.pop();
    Ok(array(items))
}

pub(crate) fn join(items: Vec<String>, options: &Options) -> Result<Plan> {
    let separator = options.separator.as_deref().unwrap_or("");
    Ok(text(items.join(separator)))
}

pub(crate) fn split(input: String, options: &Options) -> Result<Plan> {
    let separator = options.separator.as_deref().ok_or(Error::MissingField)?;
    if separator.is_empty() {
        return Err(Error::FieldOutOfRange);
    }
    strings(input.split(separator))
}

pub(crate) fn trim(input: String, _: &Options) -> Result<Plan> {
    Ok(text(jvm_trim(&input).to_owned()))
}

pub(crate) fn words(input: String, _: &Options) -> Result<Plan> {
    // The separators are the JVM's `\s`: space, tab, line feed, vertical tab, form feed and
    // carriage return. Trimming first means no run of them can produce an empty word.
    strings(
        jvm_trim(&input)
            .split([' ', '\t', '\n', '\u{b}', '\u{c}', '\r'])
            .filter(|word| !word.is_empty()),
    )
}

pub(crate) fn unwords(items: Vec<String>, _: &Options) -> Result<Plan> {
    Ok(text(items.join(" ")))
}

pub(crate) fn flatten(items: Vec<Value>, _: &Options) -> Result<Plan> {
    let flat = leaves(&items);
    if flat.len() > Limits::TOOL.max_entries {
        return Err(Error::ResultTooManyEntries);
    }
    Ok(array(flat.into_iter().cloned().collect()))
}

pub(crate) fn letters(input: String, _: &Options) -> Result<Plan> {
    strings(input.chars())
}

pub(crate) fn unletters(items: Vec<String>, _: &Options) -> Result<Plan> {
    Ok(text(items.concat()))
}

pub(crate) fn unique(items: Vec<Value>, _: &Options) -> Result<Plan> {
    let keep = unique_indices(&items);
    Ok(array(select(items, &keep)))
}

pub(crate) fn list(value: Value, _: &Options) -> Result<Plan> {
    Ok(array(vec![value]))
}

pub(crate) fn count(input: Countable, _: &Options) -> Result<Plan> {
    let count = match input {
        Countable::Array(items) => items.len(),
        Countable::Object(object) => object.len(),
        Countable::Text(text) => text.chars().count(),
    };
    Ok(integer(count))
}

pub(crate) fn sum(numbers: Vec<Number>, _: &Options) -> Result<Plan> {
    Ok(Plan::Fixed(sum_of(&numbers)?))
}

pub(crate) fn shuffle(items: Vec<Value>, _: &Options) -> Result<Plan> {
    Ok(Plan::Permute(items))
}

pub(crate) fn sort(items: Vec<String>, _: &Options) -> Result<Plan> {
    let order = sort_order(&items);
    Ok(array(
        select(items, &order)
            .into_iter()
            .map(Value::String)
            .collect(),
    ))
}

pub(crate) fn sortnum(numbers: Vec<Number>, _: &Options) -> Result<Plan> {
    // The same order as `numeric_order`, on numbers already known to be numbers.
    let order = exact_order(
        &numbers,
        |n| match n {
            Number::Integer(i) => i.to_i64(),
            Number::Decimal(_) => None,
        },
        |n| Ok(n.exact_key()),
    )?;
    Ok(array(
        select(numbers, &order)
            .into_iter()
            .map(number_value)
            .collect(),
    ))
}

pub(crate) fn grep(items: Vec<String>, options: &Options) -> Result<Plan> {
    let query = options.query.as_deref().ok_or(Error::MissingField)?;
    Ok(array(
        items
            .into_iter()
            .filter(|item| item.contains(query))
            .map(Value::String)
            .collect(),
    ))
}

pub(crate) fn reverse(mut items: Vec<Value>, _: &Options) -> Result<Plan> {
    items.reverse();
    Ok(array(items))
}

pub(crate) fn range(spec: RangeSpec, _: &Options) -> Result<Plan> {
    let RangeSpec { start, end, step } = spec;
    let members = IntegerRange::new(start, end, step)?;
    if members.remaining() > Limits::TOOL.max_entries as u64 {
        return Err(Error::RangeTooLong);
    }
    Ok(array(
        members.map(|n| Value::Integer(Integer::from(n))).collect(),
    ))
}

pub(crate) fn keys(object: Object, _: &Options) -> Result<Plan> {
    Ok(array(
        sorted_entries(object)
            .into_iter()
            .map(|(key, _)| Value::String(key))
            .collect(),
    ))
}

pub(crate) fn vals(object: Object, _: &Options) -> Result<Plan> {
    Ok(array(
        sorted_entries(object)
            .into_iter()
            .map(|(_, value)| value)
            .collect(),
    ))
}

pub(crate) fn get(value: Value, options: &Options) -> Result<Plan> {
    let path = options.path.as_deref().ok_or(Error::MissingField)?;
    let mut current = &value;
    for segment in path {
        let next = match (segment, current) {
            (Segment::Key(key), Value::Object(object)) => object.get(key),
            (Segment::Index(index), Value::Array(items)) => items.get(*index),
            _ => None,
        };
        match next {
            Some(found) => current = found,
            None => return Ok(Plan::Fixed(Value::Null)),
        }
    }
    Ok(Plan::Fixed(current.clone()))
}

fn array(items: Vec<Value>) -> Plan {
    Plan::Fixed(Value::Array(items))
}

fn text(text: String) -> Plan {
    Plan::Fixed(Value::String(text))
}

fn integer(n: usize) -> Plan {
    // Counts are bounded by the input size, far below i64::MAX.
    Plan::Fixed(Value::Integer(Integer::from(
        i64::try_from(n).unwrap_or(i64::MAX),
    )))
}

fn number_value(number: Number) -> Value {
    match number {
        Number::Integer(n) => Value::Integer(n),
        Number::Decimal(d) => Value::Decimal(d),
    }
}

/// An array of the given strings, failing as soon as it would pass the entry bound rather
/// than building an oversized array first.
fn strings(parts: impl Iterator<Item = impl ToString>) -> Result<Plan> {
    let mut out = Vec::new();
    for part in parts {
        if out.len() == Limits::TOOL.max_entries {
            return Err(Error::ResultTooManyEntries);
        }
        out.push(Value::String(part.to_string()));
    }
    Ok(array(out))
}

fn sorted_entries(object: Object) -> Vec<(String, Value)> {
    let mut entries = object.into_entries();
    entries.sort_by(|(a, _), (b, _)| utf16_cmp(a, b));
    entries
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operation::Operation;

    /// Runs `operation` on `input` with `options` and compares the planned value's JSON, or
    /// the error, with `expected`.
    fn check(operation: Operation, input: &str, options: Options, expected: &str) {
        let value = Value::parse(input).unwrap();
        let got = match operation.spec().plan(value, &options) {
            Ok(Plan::Fixed(v)) => v.to_json(),
            Ok(Plan::OneOf(v)) => format!("one of {}", Value::Array(v).to_json()),
            Ok(Plan::Permute(v)) => format!("permutation of {}", Value::Array(v).to_json()),
            Err(e) => format!("error: {e:?}"),
        };
        assert_eq!(got, expected, "{operation} {input}");
    }

    fn none() -> Options {
        Options::default()
    }

    fn count_of(n: usize) -> Options {
        Options {
            count: Some(n),
            ..Options::default()
        }
    }

    #[test]
    fn sequence_operators() {
        use Operation::*;
        check(Head, "[1,2]", none(), "1");
        check(Head, "[]", none(), "null");
        check(Tail, "[1,2]", none(), "2");
        check(Take, "[1,2,3]", count_of(2), "[1,2]");
        check(Take, "[1,2,3]", count_of(9), "[1,2,3]");
        check(Drop, "[1,2,3]", count_of(2), "[3]");
        check(Drop, "[1,2,3]", count_of(9), "[]");
        check(Rest, "[]", none(), "[]");
        check(Droplast, "[1,2]", none(), "[1]");
        check(Reverse, "[1,[2],3]", none(), "[3,[2],1]");
        check(Random, "[1,2]", none(), "one of [1,2]");
        check(Shuffle, "[1,2]", none(), "permutation of [1,2]");
        check(
            Flatten,
            r#"[1,[2,[3,[]]],{"a":[4]}]"#,
            none(),
            r#"[1,2,3,{"a":[4]}]"#,
        );
        check(Unique, "[1,1.0,1.00,1,[1],[1]]", none(), "[1,1.0,[1]]");
    }

    #[test]
    fn text_operators() {
        use Operation::*;
        let sep = |s: &str| Options {
            separator: Some(s.to_owned()),
            ..Options::default()
        };
        check(Join, r#"["a","b"]"#, none(), r#""ab""#);
        check(Join, r#"["a","b"]"#, sep(", "), r#""a, b""#);
        check(Split, r#"",a,,b,""#, sep(","), r#"["","a","","b",""]"#);
        check(Split, r#""a.b""#, sep("."), r#"["a","b"]"#);
        check(Split, r#""""#, sep(","), r#"[""]"#);
        check(Trim, "\" \\u0000\\t x y \\n\"", none(), r#""x y""#);
        check(Trim, r#""\u00a0x""#, none(), "\"\u{a0}x\"");
        check(Words, "\"  a \\t b\\u000bc  \"", none(), r#"["a","b","c"]"#);
        check(Words, r#""   ""#, none(), "[]");
        check(Unwords, r#"["a","b"]"#, none(), r#""a b""#);
        check(Letters, r#""a😀b""#, none(), r#"["a","😀","b"]"#);
        check(Unletters, r#"["ab","c"]"#, none(), r#""abc""#);
        check(
            Letters,
            &format!("\"{}\"", "x".repeat(128)),
            none(),
            &format!("[{}]", vec!["\"x\""; 128].join(",")),
        );
        check(
            Letters,
            &format!("\"{}\"", "x".repeat(129)),
            none(),
            "error: ResultTooManyEntries",
        );
    }

    #[test]
    fn order_and_number_operators() {
        use Operation::*;
        check(
            Sort,
            r#"["b","a","\uff61","\ud83d\ude00"]"#,
            none(),
            r#"["a","b","😀","｡"]"#,
        );
        check(Sortnum, "[3,1.0,1,-2.5,1e1]", none(), "[-2.5,1.0,1,3,1E+1]");
        check(Sum, "[0.1,0.2]", none(), "0.3");
        check(Sum, "[]", none(), "0");
        check(
            Sum,
            "[1e308,1e308]",
            none(),
            "error: ResultNumberOutOfRange",
        );
        check(Count, r#""a😀""#, none(), "2");
        check(Count, r#"{"a":1,"b":2}"#, none(), "2");
        check(Count, "5", none(), "error: NotCountable");
        check(
            Keys,
            r#"{"b":1,"a":2,"😀":3,"｡":4}"#,
            none(),
            r#"["a","b","😀","｡"]"#,
        );
        check(Vals, r#"{"b":1,"a":2}"#, none(), "[2,1]");
        check(List, "null", none(), "[null]");
    }

    #[test]
    fn ranges() {
        use Operation::Range;
        check(Range, "[0,5]", none(), "[0,1,2,3,4]");
        check(Range, "[5,0,-2]", none(), "[5,3,1]");
        check(Range, "[0,5,-1]", none(), "[]");
        check(Range, "[3,3]", none(), "[]");
        check(
            Range,
            "[0,128]",
            none(),
            &format!(
                "[{}]",
                (0..128)
                    .map(|i| i.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        );
        check(Range, "[0,129]", none(), "error: RangeTooLong");
        check(
            Range,
            "[-1000000,1000000,15624]",
            none(),
            "error: RangeTooLong",
        );
        check(Range, "[-1000000,1000000,15625]", none(), &{
            let values: Vec<String> = (0..128)
                .map(|i| (-1_000_000 + i * 15_625).to_string())
                .collect();
            format!("[{}]", values.join(","))
        });
    }

    #[test]
    fn get_follows_paths() {
        let path = |segments: Vec<Segment>| Options {
            path: Some(segments),
            ..Options::default()
        };
        let key = |k: &str| Segment::Key(k.to_owned());
        let input = r#"{"a":[{"b":1},{"c":[true]}]}"#;
        check(
            Operation::Get,
            input,
            path(vec![
                key("a"),
                Segment::Index(1),
                key("c"),
                Segment::Index(0),
            ]),
            "true",
        );
        check(
            Operation::Get,
            input,
            path(vec![key("a")]),
            r#"[{"b":1},{"c":[true]}]"#,
        );
        check(Operation::Get, input, path(vec![key("x")]), "null");
        check(Operation::Get, input, path(vec![Segment::Index(0)]), "null");
        check(
            Operation::Get,
            input,
            path(vec![key("a"), key("0")]),
            "null",
        );
        check(
            Operation::Get,
            input,
            path(vec![key("a"), Segment::Index(5)]),
            "null",
        );
    }
}
