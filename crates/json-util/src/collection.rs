//! The collection operations the `util` tool shares with other callers (the command
//! language's collection commands), so that both always give the same answer.
//!
//! Orderings and filters return *indices* rather than rearranged values: a caller that keeps
//! other data paired with each member (records behind displayed rows) applies the same
//! indices to both. [`select`] applies them to owned values without cloning.

use std::cmp::Ordering;

use bigdecimal::BigDecimal;

use crate::error::{Error, Result};
use crate::number::{self, Number};
use crate::random::{RandomSource, pick};
use crate::value::Value;

/// Compares two strings as the JVM's `String.compareTo` does: by UTF-16 code units.
///
/// This equals Rust's `str` order except that characters above U+FFFF sort before
/// U+E000..=U+FFFF, because their surrogates do.
///
/// ```
/// use std::cmp::Ordering;
/// assert_eq!(yetibot_json_util::collection::utf16_cmp("😀", "｡"), Ordering::Less);
/// assert_eq!(yetibot_json_util::collection::utf16_cmp("10", "9"), Ordering::Less);
/// ```
#[must_use]
pub fn utf16_cmp(a: &str, b: &str) -> Ordering {
    crate::order::utf16_cmp(a, b)
}

/// The order that sorts `texts` ascending by [`utf16_cmp`], as `sort` does: `order[k]` is
/// the index of the text that goes to position `k`. The sort is stable, so equal texts keep
/// their input order. `O(n log n)` comparisons.
///
/// ```
/// let order = yetibot_json_util::collection::sort_order(&["9", "100", "10"]);
/// assert_eq!(order, [2, 1, 0]);
/// ```
#[must_use]
pub fn sort_order<S: AsRef<str>>(texts: &[S]) -> Vec<usize> {
    let mut keyed: Vec<(&str, usize)> = texts.iter().map(AsRef::as_ref).zip(0..).collect();
    keyed.sort_by(|(a, _), (b, _)| utf16_cmp(a, b));
    keyed.into_iter().map(|(_, index)| index).collect()
}

/// The order that sorts `numbers` ascending by exact value across integers and decimals,
/// as `sortnum` does. The sort is stable: `1` and `1.0` keep their input order.
///
/// # Errors
///
/// [`Error::NotNumericArray`] when a member is not a number.
///
/// ```
/// # fn main() -> yetibot_json_util::Result<()> {
/// use yetibot_json_util::Value;
/// use yetibot_json_util::collection::numeric_order;
/// let numbers = Value::parse("[3, 0.5, 1.0, 1, -2]")?;
/// let order = numeric_order(numbers.as_array().unwrap_or_default())?;
/// assert_eq!(order, [4, 1, 2, 3, 0]);
/// # Ok(())
/// # }
/// ```
pub fn numeric_order(numbers: &[Value]) -> Result<Vec<usize>> {
    exact_order(
        numbers,
        |value| match value {
            Value::Integer(n) => n.to_i64(),
            _ => None,
        },
        |value| match value {
            Value::Integer(n) => Ok(n.to_bigdecimal()),
            Value::Decimal(d) => Ok(d.to_bigdecimal()),
            _ => Err(Error::NotNumericArray),
        },
    )
}

/// The stable ascending order of `items` by exact numeric value: by `small` when every
/// member has a small key, else by `exact` keys built once per member rather than once per
/// comparison.
pub(crate) fn exact_order<T>(
    items: &[T],
    small: impl Fn(&T) -> Option<i64>,
    exact: impl Fn(&T) -> Result<BigDecimal>,
) -> Result<Vec<usize>> {
    let keyed: Option<Vec<(i64, usize)>> = items
        .iter()
        .zip(0..)
        .map(|(item, index)| small(item).map(|key| (key, index)))
        .collect();
    if let Some(mut keyed) = keyed {
        keyed.sort_by_key(|&(key, _)| key);
        return Ok(keyed.into_iter().map(|(_, index)| index).collect());
    }
    let mut keyed = items
        .iter()
        .zip(0..)
        .map(|(item, index)| exact(item).map(|key| (key, index)))
        .collect::<Result<Vec<(BigDecimal, usize)>>>()?;
    keyed.sort_by(|(a, _), (b, _)| a.cmp(b));
    Ok(keyed.into_iter().map(|(_, index)| index).collect())
}

/// The indices of the members `unique` keeps: the first occurrence of each value under the
/// structural equality of [`Value`] (`1` and `1.0` differ, `1.0` and `1.00` do not, objects
/// ignore key order), ascending.
///
/// Each member is reduced once to a canonical key and the keys are sorted, so the cost is
/// `O(n log n)` comparisons however many members there are.
///
/// ```
/// # fn main() -> yetibot_json_util::Result<()> {
/// use yetibot_json_util::Value;
/// use yetibot_json_util::collection::unique_indices;
/// let items = Value::parse(r#"["a", 1, "a", 1.0, 1.00, {"x":1,"y":2}, {"y":2,"x":1}]"#)?;
/// assert_eq!(unique_indices(items.as_array().unwrap_or_default()), [0, 1, 3, 5]);
/// # Ok(())
/// # }
/// ```
#[must_use]
pub fn unique_indices(items: &[Value]) -> Vec<usize> {
    let mut keyed: Vec<(String, usize)> = items
        .iter()
        .zip(0..)
        .map(|(item, index)| {
            let mut key = String::new();
            write_canonical(item, &mut key);
            (key, index)
        })
        .collect();
    // Within a group of equal keys the smallest index comes first.
    keyed.sort_unstable();
    let mut keep = Vec::new();
    let mut previous: Option<&str> = None;
    for (key, index) in &keyed {
        if previous != Some(key.as_str()) {
            keep.push(*index);
            previous = Some(key);
        }
    }
    keep.sort_unstable();
    keep
}

/// A uniformly random order of `len` members, drawn from `random` as `shuffle` draws it
/// (Fisher–Yates, one draw per member after the first).
#[must_use]
pub fn shuffle_order(len: usize, random: &mut dyn RandomSource) -> Vec<usize> {
    let mut order: Vec<usize> = (0..len).collect();
    for i in (1..len).rev() {
        let j = pick(random, i + 1);
        order.swap(i, j);
    }
    order
}

/// A uniformly random index below `len`, drawn from `random` as `random` draws it; `None`
/// when `len` is zero (no draw is made).
#[must_use]
pub fn random_index(len: usize, random: &mut dyn RandomSource) -> Option<usize> {
    (len > 0).then(|| pick(random, len))
}

/// The members of `items` at `indices`, in that order, moved rather than cloned. An index
/// past the end, or one already taken, is skipped.
///
/// ```
/// let picked = yetibot_json_util::collection::select(vec!["a", "b", "c"], &[2, 0, 2, 9]);
/// assert_eq!(picked, ["c", "a"]);
/// ```
#[must_use]
pub fn select<T>(items: Vec<T>, indices: &[usize]) -> Vec<T> {
    let mut slots: Vec<Option<T>> = items.into_iter().map(Some).collect();
    indices
        .iter()
        .filter_map(|&index| slots.get_mut(index).and_then(Option::take))
        .collect()
}

/// The members of `items` with nested arrays flattened at every depth, in order, as
/// `flatten` gives them: arrays themselves are left out, objects and scalars are kept whole.
/// Uses no stack per level of nesting.
#[must_use]
pub fn leaves(items: &[Value]) -> Vec<&Value> {
    let mut out = Vec::with_capacity(items.len());
    let mut stack: Vec<std::slice::Iter<'_, Value>> = vec![items.iter()];
    while let Some(top) = stack.last_mut() {
        match top.next() {
            Some(Value::Array(inner)) => stack.push(inner.iter()),
            Some(item) => out.push(item),
            None => {
                stack.pop();
            }
        }
    }
    out
}

/// The exact sum of `numbers`, as `sum` computes it: an integer when every member is one
/// (`0` for none), else a decimal with the largest scale among the members, never rounded.
///
/// # Errors
///
/// [`Error::NotNumericArray`] when a member is not a number, and
/// [`Error::ResultNumberOutOfRange`] when the sum breaks a number bound (more than 200
/// characters, 128 significant digits, a scale beyond ±308 or no finite double).
///
/// ```
/// # fn main() -> yetibot_json_util::Result<()> {
/// use yetibot_json_util::Value;
/// use yetibot_json_util::collection::exact_sum;
/// let numbers = Value::parse("[0.1, 0.2]")?;
/// assert_eq!(exact_sum(numbers.as_array().unwrap_or_default())?.to_json(), "0.3");
/// # Ok(())
/// # }
/// ```
pub fn exact_sum(numbers: &[Value]) -> Result<Value> {
    let numbers = numbers
        .iter()
        .map(|value| match value {
            Value::Integer(n) => Ok(Number::Integer(n.clone())),
            Value::Decimal(d) => Ok(Number::Decimal(d.clone())),
            _ => Err(Error::NotNumericArray),
        })
        .collect::<Result<Vec<Number>>>()?;
    sum_of(&numbers)
}

/// `text` without leading and trailing characters at or below U+0020, as the JVM's
/// `String.trim` and the `trim` operator remove them. Unicode spaces above U+0020 (such as
/// U+00A0) stay.
#[must_use]
pub fn jvm_trim(text: &str) -> &str {
    text.trim_matches(|c| c <= '\u{20}')
}

/// The integers `start`, `start + step`, … before `end` (never including it), as `range`
/// produces them. The length is known before any member is produced, so a caller can refuse
/// a range that is too long without building it.
///
/// ```
/// # fn main() -> yetibot_json_util::Result<()> {
/// let range = yetibot_json_util::collection::IntegerRange::new(5, 0, -2)?;
/// assert_eq!(range.remaining(), 3);
/// assert_eq!(range.collect::<Vec<i64>>(), [5, 3, 1]);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntegerRange {
    next: i128,
    step: i128,
    remaining: u64,
}

impl IntegerRange {
    /// The range from `start` up to (or, for a negative `step`, down to) `end`, exclusive.
    /// A step pointing away from `end` gives an empty range.
    ///
    /// # Errors
    ///
    /// [`Error::ZeroStep`] when `step` is zero.
    pub fn new(start: i64, end: i64, step: i64) -> Result<Self> {
        if step == 0 {
            return Err(Error::ZeroStep);
        }
        // In i128 no difference of two i64 values can overflow.
        let (first, end, step) = (i128::from(start), i128::from(end), i128::from(step));
        let span = if step > 0 { end - first } else { first - end };
        let remaining = if span > 0 {
            let stride = step.abs();
            // At most 2^64 - 1 members, which fits a u64.
            u64::try_from((span + stride - 1) / stride).unwrap_or(u64::MAX)
        } else {
            0
        };
        Ok(Self {
            next: first,
            step,
            remaining,
        })
    }

    /// How many members are left.
    #[must_use]
    pub fn remaining(&self) -> u64 {
        self.remaining
    }
}

impl Iterator for IntegerRange {
    type Item = i64;

    fn next(&mut self) -> Option<i64> {
        if self.remaining == 0 {
            return None;
        }
        // Every member lies between start and end, so it fits an i64.
        let value = i64::try_from(self.next).ok()?;
        self.remaining -= 1;
        self.next += self.step;
        Some(value)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = usize::try_from(self.remaining).unwrap_or(usize::MAX);
        (left, usize::try_from(self.remaining).ok())
    }
}

/// The sum of numbers already known to be numbers, as a value.
pub(crate) fn sum_of(numbers: &[Number]) -> Result<Value> {
    let total = number::sum(numbers).map_err(|_| Error::ResultNumberOutOfRange)?;
    Ok(match total {
        Number::Integer(n) => Value::Integer(n),
        Number::Decimal(d) => Value::Decimal(d),
    })
}

/// Writes a text that two values share exactly when they are equal under [`Value`]'s
/// structural equality. Every part is self-delimiting: strings carry their length, numbers
/// end with `;`, containers have brackets, and a tag letter says which kind follows.
fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push('n'),
        Value::Bool(true) => out.push('t'),
        Value::Bool(false) => out.push('f'),
        Value::Integer(n) => {
            out.push('i');
            out.push_str(&n.to_string());
            out.push(';');
        }
        Value::Decimal(d) => {
            out.push('d');
            d.write_normalized(out);
            out.push(';');
        }
        Value::String(text) => write_text(text, out),
        Value::Array(items) => {
            out.push('[');
            for item in items {
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(object) => {
            // Equality ignores key order, so the key sorts the entries; keys are distinct.
            let mut entries: Vec<(&str, &Value)> = object.iter().collect();
            entries.sort_unstable_by_key(|&(key, _)| key);
            out.push('{');
            for (key, item) in entries {
                write_text(key, out);
                write_canonical(item, out);
            }
            out.push('}');
        }
    }
}

fn write_text(text: &str, out: &mut String) {
    out.push('s');
    out.push_str(&text.len().to_string());
    out.push(':');
    out.push_str(text);
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::random::SplitMix64;

    fn values(json: &str) -> Vec<Value> {
        match Value::parse(json).unwrap() {
            Value::Array(items) => items,
            other => panic!("not an array: {other}"),
        }
    }

    #[test]
    fn sort_order_is_stable_utf16_order() {
        assert_eq!(sort_order(&["b", "a", "b", "A"]), [3, 1, 0, 2]);
        assert_eq!(sort_order(&["\u{FF61}", "\u{1F600}"]), [1, 0]);
        assert_eq!(sort_order::<&str>(&[]), Vec::<usize>::new());
    }

    #[test]
    fn numeric_order_is_exact_and_stable() {
        let numbers = values("[3, 1.0, 1, -2.5, 1e1, 0.1, 0.10]");
        assert_eq!(numeric_order(&numbers).unwrap(), [3, 5, 6, 1, 2, 0, 4]);
        // Values less than one apart are still ordered.
        let close = values("[0.3, 0.2, 0.25]");
        assert_eq!(numeric_order(&close).unwrap(), [1, 2, 0]);
        let big = values("[100000000000000000000, -100000000000000000000, 0]");
        assert_eq!(numeric_order(&big).unwrap(), [1, 2, 0]);
        assert_eq!(
            numeric_order(&values(r#"[1, "2"]"#)),
            Err(Error::NotNumericArray)
        );
    }

    #[test]
    fn unique_keeps_first_occurrences() {
        let items = values(
            r#"[1, 1.0, 1.00, 1, [1], [1], "1", {"a":[1.0],"b":null}, {"b":null,"a":[1.00]}, 0.0, 0, -0.0, 0E+3]"#,
        );
        assert_eq!(unique_indices(&items), [0, 1, 4, 6, 7, 9, 10]);
        // A string cannot be confused with the canonical text of another value.
        let tricky = values(r#"["s1:a", "a", ["a"], "[s1:a]", "i1;", 1]"#);
        assert_eq!(unique_indices(&tricky), [0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn shuffles_and_picks_are_in_range() {
        let mut random = SplitMix64::new(3);
        let mut order = shuffle_order(50, &mut random);
        order.sort_unstable();
        assert_eq!(order, (0..50).collect::<Vec<_>>());
        assert_eq!(shuffle_order(0, &mut random), Vec::<usize>::new());
        assert_eq!(random_index(0, &mut random), None);
        assert!(random_index(7, &mut random).is_some_and(|i| i < 7));
    }

    #[test]
    fn select_moves_each_member_once() {
        assert_eq!(select(vec![1, 2, 3], &[1, 1, 5, 0]), [2, 1]);
        assert_eq!(select(Vec::<u8>::new(), &[0]), Vec::<u8>::new());
    }

    #[test]
    fn leaves_flatten_every_depth() {
        let items = values(r#"[1, [2, [3, []]], {"a": [4]}, [[[]]]]"#);
        let flat: Vec<String> = leaves(&items).iter().map(|v| v.to_json()).collect();
        assert_eq!(flat, ["1", "2", "3", r#"{"a":[4]}"#]);
    }

    #[test]
    fn ranges_know_their_length_first() {
        let range = |a, b, c| IntegerRange::new(a, b, c).map(Iterator::collect::<Vec<i64>>);
        assert_eq!(range(0, 5, 1), Ok(vec![0, 1, 2, 3, 4]));
        assert_eq!(range(0, 6, 4), Ok(vec![0, 4]));
        assert_eq!(range(5, 0, 1), Ok(vec![]));
        assert_eq!(range(0, 1, 0), Err(Error::ZeroStep));
        let huge = IntegerRange::new(i64::MIN, i64::MAX, 1).unwrap();
        assert_eq!(huge.remaining(), u64::MAX);
        let mut edge = IntegerRange::new(i64::MAX - 1, i64::MAX, i64::MAX).unwrap();
        assert_eq!((edge.next(), edge.next()), (Some(i64::MAX - 1), None));
    }

    #[test]
    fn sums_are_exact() {
        assert_eq!(exact_sum(&values("[0.1, 0.2]")).unwrap().to_json(), "0.3");
        assert_eq!(exact_sum(&[]).unwrap().to_json(), "0");
        assert_eq!(exact_sum(&values(r#"["1"]"#)), Err(Error::NotNumericArray));
        assert_eq!(
            exact_sum(&values("[1e308, 1e308]")),
            Err(Error::ResultNumberOutOfRange)
        );
    }

    #[test]
    fn trims_as_the_jvm() {
        assert_eq!(jvm_trim(" \u{0}\tx y\n"), "x y");
        assert_eq!(jvm_trim("\u{a0}x"), "\u{a0}x");
    }

    /// Values with many equal-but-differently-written members: decimals with trailing
    /// zeros, integers next to decimals, objects with permuted keys.
    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-3i64..3).prop_map(|n| Value::Integer(n.into())),
            (-30i64..30, 0i32..3)
                .prop_map(|(n, s)| Value::Decimal(crate::Decimal::new(n, s).unwrap())),
            "[ab]{0,2}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 16, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::vec(("[xy]", inner), 0..3).prop_map(|entries| {
                    let mut object = crate::Object::new();
                    for (key, value) in entries {
                        // A repeated key is simply not added again.
                        let _ = object.insert(key, value);
                    }
                    Value::Object(object)
                }),
            ]
        })
    }

    proptest! {
        #[test]
        fn unique_indices_agree_with_pairwise_equality(items in prop::collection::vec(value(), 0..12)) {
            let mut expected: Vec<usize> = Vec::new();
            for (index, item) in items.iter().enumerate() {
                if !expected.iter().any(|&kept| items[kept] == *item) {
                    expected.push(index);
                }
            }
            prop_assert_eq!(unique_indices(&items), expected);
        }

        #[test]
        fn numeric_order_sorts_stably(numbers in prop::collection::vec((-50i64..50, 0i32..3), 0..20)) {
            let values: Vec<Value> = numbers
                .iter()
                .map(|&(n, s)| if s == 0 { Value::Integer(n.into()) } else { Value::Decimal(crate::Decimal::new(n, s).unwrap()) })
                .collect();
            let order = numeric_order(&values).unwrap();
            let exact = |i: usize| {
                let (n, s) = numbers[i];
                n as f64 / 10f64.powi(s)
            };
            for pair in order.windows(2) {
                let (a, b) = (pair[0], pair[1]);
                prop_assert!(exact(a) < exact(b) || (exact(a) == exact(b) && a < b));
            }
        }
    }
}
