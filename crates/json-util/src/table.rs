//! The operator table: for each of the 28 operators its name, summary, the optional fields
//! it accepts with their bounds, and the input shape it needs. The argument validator, the
//! input extraction and the generated JSON schema all read this one definition, so they
//! cannot disagree.

use crate::error::{Error, Result};
use crate::limits::{
    MAX_COUNT, MAX_PATH_INDEX, MAX_PATH_SEGMENTS, MAX_RANGE_MAGNITUDE, MAX_TEXT_FIELD_CHARS,
};
use crate::number::Number;
use crate::operation::Operation;
use crate::operators::{self, Countable, Options, Plan, RangeSpec};
use crate::value::{Object, Value};

/// Everything the tool knows about one operator.
#[derive(Debug)]
pub struct OperationSpec {
    pub(crate) operation: Operation,
    name: &'static str,
    summary: &'static str,
    fields: &'static [FieldRule],
    runner: Runner,
}

impl OperationSpec {
    /// Every operator's entry, in the order of [`Operation::ALL`].
    #[must_use]
    pub fn all() -> &'static [OperationSpec] {
        &OPERATIONS
    }

    /// The operator this entry describes.
    #[must_use]
    pub fn operation(&self) -> Operation {
        self.operation
    }

    /// The operator's name in tool arguments.
    #[must_use]
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// One sentence on what the operator returns.
    #[must_use]
    pub fn summary(&self) -> &'static str {
        self.summary
    }

    /// The optional fields the operator accepts (required ones are marked); any other
    /// optional field is rejected.
    #[must_use]
    pub fn fields(&self) -> &'static [FieldRule] {
        self.fields
    }

    /// The rule for `field` on this operator, if it accepts the field.
    #[must_use]
    pub fn rule(&self, field: Field) -> Option<&'static FieldRule> {
        self.fields.iter().find(|rule| rule.field == field)
    }

    /// The shape `input_json` must have.
    #[must_use]
    pub fn input(&self) -> InputShape {
        match self.runner {
            Runner::Any(_) => InputShape::Any,
            Runner::Array(_) => InputShape::Array,
            Runner::Strings(_) => InputShape::StringArray,
            Runner::Numbers(_) => InputShape::NumericArray,
            Runner::Text(_) => InputShape::String,
            Runner::Object(_) => InputShape::Object,
            Runner::Countable(_) => InputShape::Countable,
            Runner::Range(_) => InputShape::Range,
        }
    }

    /// Checks the input's shape and plans the result.
    pub(crate) fn plan(&self, input: Value, options: &Options) -> Result<Plan> {
        match self.runner {
            Runner::Any(run) => run(input, options),
            Runner::Array(run) => run(into_array(input)?, options),
            Runner::Strings(run) => run(into_strings(input)?, options),
            Runner::Numbers(run) => run(into_numbers(input)?, options),
            Runner::Text(run) => run(into_text(input)?, options),
            Runner::Object(run) => run(into_object(input)?, options),
            Runner::Countable(run) => run(into_countable(input)?, options),
            Runner::Range(run) => run(into_range(input)?, options),
        }
    }
}

/// The JSON shape an operator needs as `input_json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputShape {
    /// Any JSON value.
    Any,
    /// An array with members of any type.
    Array,
    /// An array whose members are all strings.
    StringArray,
    /// An array whose members are all numbers.
    NumericArray,
    /// A string.
    String,
    /// An object.
    Object,
    /// An array, an object or a string.
    Countable,
    /// `[start, end]` or `[start, end, step]`, integers from -1,000,000 through 1,000,000.
    Range,
}

impl InputShape {
    /// A short phrase naming the shape, used in the schema's descriptions.
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            Self::Any => "any JSON value",
            Self::Array => "an array",
            Self::StringArray => "an array of strings",
            Self::NumericArray => "an array of numbers",
            Self::String => "a string",
            Self::Object => "an object",
            Self::Countable => "an array, an object or a string",
            Self::Range => "[start, end] or [start, end, step] integers",
        }
    }
}

/// An optional argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    /// `count`: how many members `take` keeps or `drop` removes.
    Count,
    /// `separator`: the literal text `join` puts between strings or `split` cuts at.
    Separator,
    /// `query`: the literal text `grep` looks for.
    Query,
    /// `path`: the keys and indexes `get` follows.
    Path,
}

impl Field {
    /// Every optional field, in schema order.
    pub const ALL: [Self; 4] = [Self::Count, Self::Separator, Self::Query, Self::Path];

    /// The field's name in tool arguments.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Count => "count",
            Self::Separator => "separator",
            Self::Query => "query",
            Self::Path => "path",
        }
    }

    /// The field with this exact name.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|field| field.name() == name)
    }

    /// What the field means, for the schema.
    #[must_use]
    pub fn description(self) -> &'static str {
        match self {
            Self::Count => "Number of members for take and drop.",
            Self::Separator => {
                "Literal text between joined strings (join; optional, default empty) or to \
                 split at (split; required, nonempty). Not a regular expression."
            }
            Self::Query => "Literal, case-sensitive text that grep keeps members containing.",
            Self::Path => {
                "Object keys (strings) and array indexes (integers) that get follows from the \
                 root; a missing key, an index past the end or a type mismatch gives null. \
                 Keys naming credential-like fields are refused."
            }
        }
    }
}

/// How one operator accepts one optional field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldRule {
    /// The field.
    pub field: Field,
    /// Whether the operator needs it.
    pub required: bool,
    /// The type and bounds its value must have.
    pub constraint: Constraint,
}

/// The type and bounds of an optional field's value. Lengths count Unicode scalar values,
/// as JSON Schema's `minLength` and `maxLength` do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Constraint {
    /// A JSON integer from `min` through `max`.
    Integer {
        /// Smallest value.
        min: i64,
        /// Largest value.
        max: i64,
    },
    /// A JSON string with a length from `min_chars` through `max_chars`.
    Text {
        /// Fewest characters.
        min_chars: usize,
        /// Most characters.
        max_chars: usize,
    },
    /// A JSON array of `min_segments` through `max_segments` segments, each a string of at
    /// most `max_key_chars` characters or an integer from 0 through `max_index`.
    Path {
        /// Fewest segments.
        min_segments: usize,
        /// Most segments.
        max_segments: usize,
        /// Most characters of a key segment.
        max_key_chars: usize,
        /// Largest index segment.
        max_index: i64,
    },
}

impl Constraint {
    /// The loosest constraint admitting everything either admits, for the schema's shared
    /// property definitions. Constraints of different types keep `self`.
    #[must_use]
    pub fn union(self, other: Self) -> Self {
        match (self, other) {
            (Self::Integer { min: a, max: b }, Self::Integer { min: c, max: d }) => Self::Integer {
                min: a.min(c),
                max: b.max(d),
            },
            (
                Self::Text {
                    min_chars: a,
                    max_chars: b,
                },
                Self::Text {
                    min_chars: c,
                    max_chars: d,
                },
            ) => Self::Text {
                min_chars: a.min(c),
                max_chars: b.max(d),
            },
            _ => self,
        }
    }
}

/// The operator's implementation, typed by the input shape it consumes. The shape an
/// operator reports is derived from this, so the two cannot differ.
enum Runner {
    Any(fn(Value, &Options) -> Result<Plan>),
    Array(fn(Vec<Value>, &Options) -> Result<Plan>),
    Strings(fn(Vec<String>, &Options) -> Result<Plan>),
    Numbers(fn(Vec<Number>, &Options) -> Result<Plan>),
    Text(fn(String, &Options) -> Result<Plan>),
    Object(fn(Object, &Options) -> Result<Plan>),
    Countable(fn(Countable, &Options) -> Result<Plan>),
    Range(fn(RangeSpec, &Options) -> Result<Plan>),
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Runner")
    }
}

const COUNT: FieldRule = FieldRule {
    field: Field::Count,
    required: true,
    constraint: Constraint::Integer {
        min: 0,
        max: MAX_COUNT,
    },
};

const JOIN_SEPARATOR: FieldRule = FieldRule {
    field: Field::Separator,
    required: false,
    constraint: Constraint::Text {
        min_chars: 0,
        max_chars: MAX_TEXT_FIELD_CHARS,
    },
};

const SPLIT_SEPARATOR: FieldRule = FieldRule {
    field: Field::Separator,
    required: true,
    constraint: Constraint::Text {
        min_chars: 1,
        max_chars: MAX_TEXT_FIELD_CHARS,
    },
};

const QUERY: FieldRule = FieldRule {
    field: Field::Query,
    required: true,
    constraint: Constraint::Text {
        min_chars: 1,
        max_chars: MAX_TEXT_FIELD_CHARS,
    },
};

const PATH: FieldRule = FieldRule {
    field: Field::Path,
    required: true,
    constraint: Constraint::Path {
        min_segments: 1,
        max_segments: MAX_PATH_SEGMENTS,
        max_key_chars: MAX_TEXT_FIELD_CHARS,
        max_index: MAX_PATH_INDEX,
    },
};

const fn spec(
    operation: Operation,
    name: &'static str,
    summary: &'static str,
    fields: &'static [FieldRule],
    runner: Runner,
) -> OperationSpec {
    OperationSpec {
        operation,
        name,
        summary,
        fields,
        runner,
    }
}

/// The table itself, in the order of the `Operation` discriminants. It is a `const` so that
/// [`Operation::ALL`] can be computed from it at compile time, and copied once into a
/// `static` for lookups at run time.
pub(crate) const TABLE: [OperationSpec; 28] = [
    spec(
        Operation::Random,
        "random",
        "One member chosen uniformly at random; null for an empty array.",
        &[],
        Runner::Array(operators::random),
    ),
    spec(
        Operation::Head,
        "head",
        "The first member; null for an empty array.",
        &[],
        Runner::Array(operators::head),
    ),
    spec(
        Operation::Tail,
        "tail",
        "The last member; null for an empty array.",
        &[],
        Runner::Array(operators::tail),
    ),
    spec(
        Operation::Take,
        "take",
        "The first count members, or all of them if there are fewer.",
        &[COUNT],
        Runner::Array(operators::take),
    ),
    spec(
        Operation::Drop,
        "drop",
        "The array without its first count members; empty if there are fewer.",
        &[COUNT],
        Runner::Array(operators::drop),
    ),
    spec(
        Operation::Rest,
        "rest",
        "The array without its first member; an empty array stays empty.",
        &[],
        Runner::Array(operators::rest),
    ),
    spec(
        Operation::Droplast,
        "droplast",
        "The array without its last member; an empty array stays empty.",
        &[],
        Runner::Array(operators::droplast),
    ),
    spec(
        Operation::Join,
        "join",
        "The strings joined with separator (default empty).",
        &[JOIN_SEPARATOR],
        Runner::Strings(operators::join),
    ),
    spec(
        Operation::Split,
        "split",
        "The string cut at every occurrence of the literal separator, keeping empty parts.",
        &[SPLIT_SEPARATOR],
        Runner::Text(operators::split),
    ),
    spec(
        Operation::Trim,
        "trim",
        "The string without leading and trailing characters at or below U+0020.",
        &[],
        Runner::Text(operators::trim),
    ),
    spec(
        Operation::Words,
        "words",
        "The trimmed string split at runs of ASCII whitespace; [] for a blank string.",
        &[],
        Runner::Text(operators::words),
    ),
    spec(
        Operation::Unwords,
        "unwords",
        "The strings joined with single spaces.",
        &[],
        Runner::Strings(operators::unwords),
    ),
    spec(
        Operation::Flatten,
        "flatten",
        "The members of nested arrays at any depth, in order; objects stay whole.",
        &[],
        Runner::Array(operators::flatten),
    ),
    spec(
        Operation::Letters,
        "letters",
        "The string's Unicode code points, each as a one-character string.",
        &[],
        Runner::Text(operators::letters),
    ),
    spec(
        Operation::Unletters,
        "unletters",
        "The strings concatenated.",
        &[],
        Runner::Strings(operators::unletters),
    ),
    spec(
        Operation::Unique,
        "unique",
        "The members without later duplicates, by structural equality (1 and 1.0 differ, \
         1.0 and 1.00 do not).",
        &[],
        Runner::Array(operators::unique),
    ),
    spec(
        Operation::List,
        "list",
        "The value wrapped in a one-member array.",
        &[],
        Runner::Any(operators::list),
    ),
    spec(
        Operation::Count,
        "count",
        "Array length, object key count or string code-point count.",
        &[],
        Runner::Countable(operators::count),
    ),
    spec(
        Operation::Sum,
        "sum",
        "The exact sum (0.1 + 0.2 = 0.3); 0 for an empty array.",
        &[],
        Runner::Numbers(operators::sum),
    ),
    spec(
        Operation::Shuffle,
        "shuffle",
        "The members in a uniformly random order.",
        &[],
        Runner::Array(operators::shuffle),
    ),
    spec(
        Operation::Sort,
        "sort",
        "The strings in ascending JVM order (UTF-16 code units).",
        &[],
        Runner::Strings(operators::sort),
    ),
    spec(
        Operation::Sortnum,
        "sortnum",
        "The numbers in ascending order of exact value; equal values keep their order.",
        &[],
        Runner::Numbers(operators::sortnum),
    ),
    spec(
        Operation::Grep,
        "grep",
        "The strings that contain the literal, case-sensitive query.",
        &[QUERY],
        Runner::Strings(operators::grep),
    ),
    spec(
        Operation::Reverse,
        "reverse",
        "The members in reverse order (for a string, use letters first).",
        &[],
        Runner::Array(operators::reverse),
    ),
    spec(
        Operation::Range,
        "range",
        "Integers from start up to but excluding end by step (default 1); at most 128.",
        &[],
        Runner::Range(operators::range),
    ),
    spec(
        Operation::Keys,
        "keys",
        "The object's keys in ascending JVM order.",
        &[],
        Runner::Object(operators::keys),
    ),
    spec(
        Operation::Vals,
        "vals",
        "The object's values in ascending JVM order of their keys.",
        &[],
        Runner::Object(operators::vals),
    ),
    spec(
        Operation::Get,
        "get",
        "The value at path; null when a step is missing or does not match.",
        &[PATH],
        Runner::Any(operators::get),
    ),
];

static OPERATIONS: [OperationSpec; 28] = TABLE;

// The table is indexed by discriminant; this fails the build if an entry is out of place.
const _: () = {
    let mut i = 0;
    while i < TABLE.len() {
        assert!(TABLE[i].operation as usize == i);
        i += 1;
    }
};

/// The table entry for `operation`.
pub(crate) fn spec_of(operation: Operation) -> &'static OperationSpec {
    &OPERATIONS[operation as usize]
}

fn into_array(value: Value) -> Result<Vec<Value>> {
    match value {
        Value::Array(items) => Ok(items),
        _ => Err(Error::NotArray),
    }
}

fn into_strings(value: Value) -> Result<Vec<String>> {
    let Value::Array(items) = value else {
        return Err(Error::NotStringArray);
    };
    items
        .into_iter()
        .map(|item| match item {
            Value::String(text) => Ok(text),
            _ => Err(Error::NotStringArray),
        })
        .collect()
}

fn into_numbers(value: Value) -> Result<Vec<Number>> {
    let Value::Array(items) = value else {
        return Err(Error::NotNumericArray);
    };
    items
        .into_iter()
        .map(|item| match item {
            Value::Integer(n) => Ok(Number::Integer(n)),
            Value::Decimal(d) => Ok(Number::Decimal(d)),
            _ => Err(Error::NotNumericArray),
        })
        .collect()
}

fn into_text(value: Value) -> Result<String> {
    match value {
        Value::String(text) => Ok(text),
        _ => Err(Error::NotString),
    }
}

fn into_object(value: Value) -> Result<Object> {
    match value {
        Value::Object(object) => Ok(object),
        _ => Err(Error::NotObject),
    }
}

fn into_countable(value: Value) -> Result<Countable> {
    match value {
        Value::Array(items) => Ok(Countable::Array(items)),
        Value::Object(object) => Ok(Countable::Object(object)),
        Value::String(text) => Ok(Countable::Text(text)),
        _ => Err(Error::NotCountable),
    }
}

fn into_range(value: Value) -> Result<RangeSpec> {
    let Value::Array(items) = value else {
        return Err(Error::InvalidRange);
    };
    if !(2..=3).contains(&items.len()) {
        return Err(Error::InvalidRange);
    }
    let mut bounds = [0, 0, 1];
    for (slot, item) in bounds.iter_mut().zip(&items) {
        let Value::Integer(n) = item else {
            return Err(Error::InvalidRange);
        };
        *slot = n
            .to_i64()
            .filter(|v| (-MAX_RANGE_MAGNITUDE..=MAX_RANGE_MAGNITUDE).contains(v))
            .ok_or(Error::RangeOutOfBounds)?;
    }
    let [start, end, step] = bounds;
    if step == 0 {
        return Err(Error::ZeroStep);
    }
    Ok(RangeSpec { start, end, step })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_consistent() {
        for (i, spec) in OperationSpec::all().iter().enumerate() {
            assert_eq!(spec.operation() as usize, i);
            assert_eq!(spec_of(spec.operation()).name(), spec.name());
            let mut seen = Vec::new();
            for rule in spec.fields() {
                assert!(
                    !seen.contains(&rule.field),
                    "{}: field listed twice",
                    spec.name()
                );
                seen.push(rule.field);
            }
        }
    }

    /// Extracts a range spec from `input` and compares with `expected`.
    fn check(input: &str, expected: std::result::Result<(i64, i64, i64), Error>) {
        let got = into_range(Value::parse(input).unwrap()).map(|r| (r.start, r.end, r.step));
        assert_eq!(got, expected, "input: {input}");
    }

    #[test]
    fn range_specs() {
        check("[0,5]", Ok((0, 5, 1)));
        check("[5,0,-2]", Ok((5, 0, -2)));
        check(
            "[-1000000,1000000,1000000]",
            Ok((-1_000_000, 1_000_000, 1_000_000)),
        );
        check("[0,1000001]", Err(Error::RangeOutOfBounds));
        check("[-1000001,0]", Err(Error::RangeOutOfBounds));
        check("[0,99999999999999999999999]", Err(Error::RangeOutOfBounds));
        check("[0,5,0]", Err(Error::ZeroStep));
        check("[0]", Err(Error::InvalidRange));
        check("[0,1,1,1]", Err(Error::InvalidRange));
        check("[0,1.0]", Err(Error::InvalidRange));
        check(r#"[0,"5"]"#, Err(Error::InvalidRange));
        check("5", Err(Error::InvalidRange));
    }
}
