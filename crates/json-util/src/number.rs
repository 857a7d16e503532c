//! Exact JSON numbers: integers of any size and bounded decimals, with their bounds, their
//! text form, their equality and their ordering.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt;
use std::sync::OnceLock;

use bigdecimal::BigDecimal;
use bigdecimal::num_bigint::BigInt;
use bigdecimal::{Signed, ToPrimitive, Zero};

use crate::error::{Error, Result};
use crate::limits::{
    MAX_DECIMAL_PRECISION, MAX_DECIMAL_SCALE, MAX_NUMBER_CHARS, MIN_DECIMAL_SCALE,
};

/// An exact integer of any size: a JSON number written without a fraction or exponent.
///
/// Integers and [`Decimal`]s are different categories: `1` and `1.0` are never equal.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Integer(Repr);

/// Small integers are plain `i64`s. Larger ones keep their canonical decimal text (an
/// optional minus and digits without leading zeros): reading and writing them is then a
/// copy, and only arithmetic pays for a conversion to `BigInt`. `Big` never holds a value
/// that fits `i64`, so each value has one representation and the derived equality is exact.
#[derive(Clone, PartialEq, Eq, Hash)]
enum Repr {
    Small(i64),
    Big(Box<str>),
}

impl Integer {
    /// The value as an `i64`, if it fits.
    #[must_use]
    pub fn to_i64(&self) -> Option<i64> {
        match &self.0 {
            Repr::Small(n) => Some(*n),
            Repr::Big(_) => None,
        }
    }

    /// Whether the value is negative.
    #[must_use]
    pub fn is_negative(&self) -> bool {
        match &self.0 {
            Repr::Small(n) => *n < 0,
            Repr::Big(text) => text.starts_with('-'),
        }
    }

    /// The integer whose magnitude has the decimal digits `high` followed by `low`.
    ///
    /// The caller passes ASCII digits only; leading zeros are allowed and skipped.
    pub(crate) fn from_digits(negative: bool, high: &[u8], low: &[u8]) -> Self {
        let (high, low) = match high.iter().position(|&d| d != b'0') {
            Some(first) => (high.get(first..).unwrap_or_default(), low),
            None => {
                let first = low.iter().position(|&d| d != b'0').unwrap_or(low.len());
                (&[][..], low.get(first..).unwrap_or_default())
            }
        };
        let significant = high.len() + low.len();
        if significant <= 18 {
            // Eighteen digits always fit an i64, so the common case never touches the heap.
            let magnitude = high
                .iter()
                .chain(low)
                .fold(0i64, |acc, &d| acc * 10 + i64::from(d - b'0'));
            return Self(Repr::Small(if negative { -magnitude } else { magnitude }));
        }
        // Exact capacity, so turning the text into a boxed str does not reallocate.
        let mut text = Vec::with_capacity(significant + usize::from(negative));
        if negative {
            text.push(b'-');
        }
        text.extend_from_slice(high);
        text.extend_from_slice(low);
        // ASCII digits are always UTF-8; the empty fallback is unreachable.
        let text = String::from_utf8(text).unwrap_or_default();
        if significant >= 20 {
            // Twenty digits are beyond i64 in either direction; skip the narrowing attempt.
            return Self(Repr::Big(text.into_boxed_str()));
        }
        Self::from_canonical(text)
    }

    /// Wraps canonical text, narrowing it to `Small` when it fits.
    fn from_canonical(text: String) -> Self {
        match text.parse::<i64>() {
            Ok(n) => Self(Repr::Small(n)),
            Err(_) => Self(Repr::Big(text.into_boxed_str())),
        }
    }

    pub(crate) fn from_bigint(value: &BigInt) -> Self {
        match value.to_i64() {
            Some(n) => Self(Repr::Small(n)),
            None => Self(Repr::Big(value.to_string().into_boxed_str())),
        }
    }

    /// The exact value as a decimal of scale zero.
    pub(crate) fn to_bigdecimal(&self) -> BigDecimal {
        BigDecimal::new(self.to_bigint(), 0)
    }

    pub(crate) fn to_bigint(&self) -> BigInt {
        match &self.0 {
            Repr::Small(n) => BigInt::from(*n),
            // Canonical text always parses; zero is the unreachable fallback.
            Repr::Big(text) => BigInt::parse_bytes(text.as_bytes(), 10).unwrap_or_default(),
        }
    }

    /// The decimal digits of the magnitude, without sign or leading zeros.
    fn magnitude_digits(&self) -> Cow<'_, str> {
        match &self.0 {
            Repr::Small(n) => Cow::Owned(n.unsigned_abs().to_string()),
            Repr::Big(text) => Cow::Borrowed(text.trim_start_matches('-')),
        }
    }

    /// How many decimal digits the magnitude has; zero has one.
    fn digit_count(&self) -> u64 {
        match &self.0 {
            Repr::Small(n) => u64::from(n.unsigned_abs().checked_ilog10().unwrap_or(0)) + 1,
            Repr::Big(text) => text.trim_start_matches('-').len() as u64,
        }
    }

    /// Checks the bounds every integer in an input or a result must meet: a token of at most
    /// [`MAX_NUMBER_CHARS`] characters, which also keeps it far inside the double range.
    pub(crate) fn check_bounds(&self) -> std::result::Result<(), NumberFault> {
        let sign = u64::from(self.is_negative());
        if self.digit_count() + sign > MAX_NUMBER_CHARS as u64 {
            return Err(NumberFault::TooLong);
        }
        Ok(())
    }
}

impl From<i64> for Integer {
    fn from(value: i64) -> Self {
        Self(Repr::Small(value))
    }
}

impl Ord for Integer {
    fn cmp(&self, other: &Self) -> Ordering {
        match (&self.0, &other.0) {
            (Repr::Small(a), Repr::Small(b)) => a.cmp(b),
            // A big value lies outside the i64 range, so its sign alone decides.
            (Repr::Big(_), Repr::Small(_)) => {
                if self.is_negative() {
                    Ordering::Less
                } else {
                    Ordering::Greater
                }
            }
            (Repr::Small(_), Repr::Big(_)) => other.cmp(self).reverse(),
            (Repr::Big(a), Repr::Big(b)) => match (self.is_negative(), other.is_negative()) {
                (true, false) => Ordering::Less,
                (false, true) => Ordering::Greater,
                // Canonical digits: a longer magnitude is larger, equal lengths compare
                // digit by digit.
                (false, false) => a.len().cmp(&b.len()).then_with(|| a.cmp(b)),
                (true, true) => b.len().cmp(&a.len()).then_with(|| b.cmp(a)),
            },
        }
    }
}

impl PartialOrd for Integer {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Integer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Small(n) => write!(f, "{n}"),
            Repr::Big(text) => f.write_str(text),
        }
    }
}

impl fmt::Debug for Integer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// An exact decimal: an unscaled integer times ten to the power of minus its scale, as a
/// JSON number with a fraction or an exponent is read.
///
/// Every decimal has at most 128 significant digits, a scale from -308 through 308 and a
/// finite double value. Equality ignores trailing zeros (`1.0 == 1.00`); the text form keeps
/// the scale, so writing and reading a decimal gives back the same unscaled value and scale.
#[derive(Clone)]
pub struct Decimal {
    unscaled: Integer,
    scale: i32,
}

impl Decimal {
    /// The decimal `unscaled × 10^-scale`.
    ///
    /// # Errors
    ///
    /// [`Error::NumberOutOfRange`] if the scale is outside -308..=308, and
    /// [`Error::NonFiniteNumber`] if the value has no finite double representation.
    pub fn new(unscaled: i64, scale: i32) -> Result<Self> {
        Self::from_parts(Integer::from(unscaled), i64::from(scale))
            .map_err(NumberFault::input_error)
    }

    /// The power of ten the unscaled value is divided by.
    #[must_use]
    pub fn scale(&self) -> i32 {
        self.scale
    }

    /// The number of significant digits of the unscaled value (one for zero).
    #[must_use]
    pub fn precision(&self) -> u64 {
        self.unscaled.digit_count()
    }

    /// Builds a decimal, checking precision, scale and double range.
    pub(crate) fn from_parts(
        unscaled: Integer,
        scale: i64,
    ) -> std::result::Result<Self, NumberFault> {
        let precision = unscaled.digit_count();
        if precision > MAX_DECIMAL_PRECISION
            || !(MIN_DECIMAL_SCALE..=MAX_DECIMAL_SCALE).contains(&scale)
        {
            return Err(NumberFault::OutOfRange);
        }
        let scale = i32::try_from(scale).map_err(|_| NumberFault::OutOfRange)?;
        let decimal = Self { unscaled, scale };
        if !decimal.is_finite_double() {
            return Err(NumberFault::NonFinite);
        }
        Ok(decimal)
    }

    pub(crate) fn to_bigdecimal(&self) -> BigDecimal {
        BigDecimal::new(self.unscaled.to_bigint(), i64::from(self.scale))
    }

    /// Whether the value rounds to a finite double.
    ///
    /// A decimal below 10^308 in magnitude always does; at 10^309 and above it never does;
    /// in between it is compared exactly with the point where rounding reaches infinity,
    /// 2^1024 − 2^970 (the midpoint between the largest double and 2^1024).
    fn is_finite_double(&self) -> bool {
        let adjusted = self.precision() as i64 - 1 - i64::from(self.scale);
        match adjusted.cmp(&308) {
            Ordering::Less => true,
            Ordering::Greater => false,
            Ordering::Equal => {
                let magnitude = self.unscaled.to_bigint().abs();
                let (left, right) = if self.scale <= 0 {
                    (
                        magnitude * pow10(self.scale.unsigned_abs()),
                        overflow_threshold().clone(),
                    )
                } else {
                    (
                        magnitude,
                        overflow_threshold() * pow10(self.scale.unsigned_abs()),
                    )
                };
                left < right
            }
        }
    }

    /// The value with trailing zeros of the unscaled value removed, for equality.
    fn normalized_small(&self) -> Option<(i64, i32)> {
        let mut unscaled = self.unscaled.to_i64()?;
        let mut scale = self.scale;
        if unscaled == 0 {
            return Some((0, 0));
        }
        while unscaled % 10 == 0 {
            unscaled /= 10;
            scale -= 1;
        }
        Some((unscaled, scale))
    }

    /// Sign, significant digits without trailing zeros, and the matching scale: equal
    /// decimals have equal normalized forms whatever their scale.
    fn normalized(&self) -> (bool, String, i64) {
        let digits = self.unscaled.magnitude_digits();
        let trimmed = digits.trim_end_matches('0');
        if trimmed.is_empty() {
            return (false, String::new(), 0);
        }
        let removed = (digits.len() - trimmed.len()) as i64;
        (
            self.unscaled.is_negative(),
            trimmed.to_owned(),
            i64::from(self.scale) - removed,
        )
    }

    /// Writes the normalized form (sign, significant digits without trailing zeros, and
    /// the matching scale), which two decimals share exactly when they are equal.
    pub(crate) fn write_normalized(&self, out: &mut String) {
        let (negative, digits, scale) = self.normalized();
        if negative {
            out.push('-');
        }
        out.push_str(if digits.is_empty() { "0" } else { &digits });
        out.push('e');
        out.push_str(&scale.to_string());
    }

    /// Writes the exact text form (see the crate documentation).
    pub(crate) fn write_to(&self, out: &mut String) {
        if self.unscaled.is_negative() {
            out.push('-');
        }
        let digits = self.unscaled.magnitude_digits();
        let scale = i64::from(self.scale);
        let adjusted = digits.len() as i64 - 1 - scale;
        if scale > 0 && adjusted >= -6 {
            // Plain notation, as Java's BigDecimal.toString writes it.
            let scale = scale as usize;
            if digits.len() > scale {
                let (int, frac) = digits.split_at(digits.len() - scale);
                out.push_str(int);
                out.push('.');
                out.push_str(frac);
            } else {
                out.push_str("0.");
                out.extend(std::iter::repeat_n('0', scale - digits.len()));
                out.push_str(&digits);
            }
        } else {
            // Scientific notation keeps the exact scale, and unlike a plain integer text it
            // reads back as a decimal even when the scale is zero.
            let (first, rest) = digits.split_at(1);
            out.push_str(first);
            if !rest.is_empty() {
                out.push('.');
                out.push_str(rest);
            }
            out.push('E');
            if adjusted >= 0 {
                out.push('+');
            }
            out.push_str(&adjusted.to_string());
        }
    }
}

impl PartialEq for Decimal {
    fn eq(&self, other: &Self) -> bool {
        match (self.normalized_small(), other.normalized_small()) {
            (Some(a), Some(b)) => a == b,
            _ => self.normalized() == other.normalized(),
        }
    }
}

impl Eq for Decimal {}

impl Ord for Decimal {
    fn cmp(&self, other: &Self) -> Ordering {
        if self.scale == other.scale
            && let (Some(a), Some(b)) = (self.unscaled.to_i64(), other.unscaled.to_i64())
        {
            return a.cmp(&b);
        }
        self.to_bigdecimal().cmp(&other.to_bigdecimal())
    }
}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = String::new();
        self.write_to(&mut text);
        f.write_str(&text)
    }
}

impl fmt::Debug for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A number of either category, for the numeric operators.
#[derive(Debug, Clone)]
pub(crate) enum Number {
    Integer(Integer),
    Decimal(Decimal),
}

impl Number {
    /// The exact value as a key whose order is numeric order across categories.
    pub(crate) fn exact_key(&self) -> BigDecimal {
        self.to_bigdecimal()
    }

    fn to_bigdecimal(&self) -> BigDecimal {
        match self {
            Self::Integer(n) => n.to_bigdecimal(),
            Self::Decimal(d) => d.to_bigdecimal(),
        }
    }
}

/// The exact sum of `numbers`: an integer when every addend is one (zero for none), else a
/// decimal whose scale is the largest addend scale, as Java's `BigDecimal.add` gives.
///
/// # Errors
///
/// [`NumberFault`] when the sum breaks a number bound; no rounding ever happens.
pub(crate) fn sum(numbers: &[Number]) -> std::result::Result<Number, NumberFault> {
    let all_integers = numbers.iter().all(|n| matches!(n, Number::Integer(_)));
    if all_integers {
        let mut small: i128 = 0;
        let mut big = BigInt::zero();
        for number in numbers {
            if let Number::Integer(n) = number {
                match n.to_i64() {
                    // Fewer than 2^64 addends (any slice) of at most 2^63 each cannot overflow an i128.
                    Some(v) => small += i128::from(v),
                    None => big += n.to_bigint(),
                }
            }
        }
        let total = Integer::from_bigint(&(big + BigInt::from(small)));
        total.check_bounds()?;
        return Ok(Number::Integer(total));
    }
    let scale = numbers
        .iter()
        .map(|n| match n {
            Number::Integer(_) => 0,
            Number::Decimal(d) => i64::from(d.scale),
        })
        .max()
        .unwrap_or(0);
    let mut total = BigInt::zero();
    for number in numbers {
        let (unscaled, own_scale) = match number {
            Number::Integer(n) => (n.to_bigint(), 0),
            Number::Decimal(d) => (d.unscaled.to_bigint(), i64::from(d.scale)),
        };
        // Scales are within ±308, so the shift is at most 616 digits.
        let shift = u32::try_from(scale - own_scale).map_err(|_| NumberFault::OutOfRange)?;
        if shift == 0 {
            total += unscaled;
        } else {
            total += unscaled * pow10(shift);
        }
    }
    let decimal = Decimal::from_parts(Integer::from_bigint(&total), scale)?;
    Ok(Number::Decimal(decimal))
}

/// Which number bound a value breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NumberFault {
    /// The text would be longer than [`MAX_NUMBER_CHARS`].
    TooLong,
    /// Precision or scale is out of bounds.
    OutOfRange,
    /// There is no finite double for the value.
    NonFinite,
}

impl NumberFault {
    /// The error for a number read from input.
    pub(crate) fn input_error(self) -> Error {
        match self {
            Self::TooLong => Error::NumberTooLong,
            Self::OutOfRange => Error::NumberOutOfRange,
            Self::NonFinite => Error::NonFiniteNumber,
        }
    }
}

/// Ten to the power `exponent`.
fn pow10(exponent: u32) -> BigInt {
    BigInt::from(10u8).pow(exponent)
}

/// 2^1024 − 2^970: the smallest magnitude that rounds to an infinite double.
fn overflow_threshold() -> &'static BigInt {
    static THRESHOLD: OnceLock<BigInt> = OnceLock::new();
    THRESHOLD.get_or_init(|| (BigInt::from(1u8) << 1024u32) - (BigInt::from(1u8) << 970u32))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Value;

    /// Parses `input` as a number and checks its text form.
    fn check(input: &str, expected: &str) {
        let value = Value::parse(input).unwrap();
        assert_eq!(value.to_json(), expected, "input: {input}");
    }

    fn decimal(text: &str) -> Decimal {
        match Value::parse(text).unwrap() {
            Value::Decimal(d) => d,
            other => panic!("not a decimal: {other:?}"),
        }
    }

    #[test]
    fn text_forms_keep_the_scale() {
        check("0.3", "0.3");
        check("1.50", "1.50");
        check("-0.0", "0.0");
        check("-0", "0");
        check("1e3", "1E+3");
        check("1.5e1", "1.5E+1");
        check("1e0", "1E+0");
        check("0e0", "0E+0");
        check("1e-7", "1E-7");
        check("0.0000001", "1E-7");
        check("0.000001", "0.000001");
        check("123.456e2", "12345.6");
        check("-12e-2", "-0.12");
        check("12345678901234567890123", "12345678901234567890123");
        check("-9223372036854775808", "-9223372036854775808");
        check("-9223372036854775809", "-9223372036854775809");
    }

    #[test]
    fn equality_ignores_trailing_zeros_only_within_decimals() {
        assert_eq!(decimal("1.0"), decimal("1.00"));
        assert_eq!(decimal("1e2"), decimal("100.0"));
        assert_eq!(decimal("0.0"), decimal("0e5"));
        assert_ne!(decimal("1.0"), decimal("1.01"));
        let big = "1.0000000000000000000000000000000000001";
        assert_eq!(decimal(big), decimal(&format!("{big}000")));
        assert_ne!(decimal(big), decimal("1.0"));
        assert_ne!(Value::parse("1").unwrap(), Value::parse("1.0").unwrap());
    }

    #[test]
    fn ordering_is_exact_across_categories() {
        let n = |t: &str| match Value::parse(t).unwrap() {
            Value::Integer(i) => Number::Integer(i),
            Value::Decimal(d) => Number::Decimal(d),
            _ => unreachable!(),
        };
        assert_eq!(
            n("1").exact_key().cmp(&n("1.0").exact_key()),
            Ordering::Equal
        );
        assert_eq!(
            n("1").exact_key().cmp(&n("1.01").exact_key()),
            Ordering::Less
        );
        assert_eq!(
            n("-2.5").exact_key().cmp(&n("-3").exact_key()),
            Ordering::Greater
        );
        assert_eq!(
            n("100000000000000000000")
                .exact_key()
                .cmp(&n("1e20").exact_key()),
            Ordering::Equal
        );
        assert_eq!(
            n("0.1")
                .exact_key()
                .cmp(&n("0.10000000000000000000001").exact_key()),
            Ordering::Less
        );
    }

    #[test]
    fn sums_are_exact() {
        let n = |t: &str| match Value::parse(t).unwrap() {
            Value::Integer(i) => Number::Integer(i),
            Value::Decimal(d) => Number::Decimal(d),
            _ => unreachable!(),
        };
        let text = |numbers: &[&str]| {
            let numbers: Vec<Number> = numbers.iter().map(|t| n(t)).collect();
            match sum(&numbers) {
                Ok(Number::Integer(i)) => i.to_string(),
                Ok(Number::Decimal(d)) => d.to_string(),
                Err(fault) => format!("{fault:?}"),
            }
        };
        assert_eq!(text(&[]), "0");
        assert_eq!(text(&["0.1", "0.2"]), "0.3");
        assert_eq!(text(&["1", "0.5"]), "1.5");
        assert_eq!(text(&["1.5", "1.5"]), "3.0");
        assert_eq!(text(&["1", "2.00"]), "3.00");
        assert_eq!(text(&["9223372036854775807", "1"]), "9223372036854775808");
        assert_eq!(text(&["1e300", "1e-300"]), "OutOfRange");
        assert_eq!(text(&["1e308", "1e308"]), "NonFinite");
    }

    #[test]
    fn finite_double_boundary_is_exact() {
        // The largest double, written exactly, is finite; the rounding midpoint above it is
        // not, and neither is anything at or beyond 2^1024.
        assert!(Value::parse("1.7976931348623157e308").is_ok());
        assert!(Value::parse("1.797693134862315807e308").is_ok());
        assert_eq!(
            Value::parse("1.797693134862315808e308").err(),
            Some(Error::NonFiniteNumber)
        );
        assert_eq!(Value::parse("1.8e308").err(), Some(Error::NonFiniteNumber));
        assert_eq!(Value::parse("-1.8e308").err(), Some(Error::NonFiniteNumber));
        assert!(Value::parse("9.99e307").is_ok());
    }

    #[test]
    fn constructor_checks_bounds() {
        assert_eq!(Decimal::new(15, 1).unwrap().to_string(), "1.5");
        assert_eq!(Decimal::new(1, 309).err(), Some(Error::NumberOutOfRange));
        assert_eq!(Decimal::new(1, -308).unwrap().to_string(), "1E+308");
        assert_eq!(Decimal::new(2, -308).err(), Some(Error::NonFiniteNumber));
        assert_eq!(Decimal::new(15, 1).unwrap().precision(), 2);
    }
}
