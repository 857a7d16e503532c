//! Token usage and cost of a model turn, with "not reported" kept apart from zero, and the
//! exact decimal amounts that cost and neuron counts are written in.

use std::fmt;

/// Usage of one model turn as its provider reported it. Every field keeps "not reported"
/// (`None`) apart from zero: a provider that omits a count has not said it was free, and a
/// cost label must never invent a zero. A value the provider sent in a malformed shape
/// (negative, fractional where a count belongs, not a number) is "not reported" for that
/// field alone; the other fields still count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Usage {
    /// Input (prompt) tokens.
    pub input_tokens: Option<u64>,
    /// The part of [`input_tokens`](Self::input_tokens) served from the provider's prompt
    /// cache. It is included in the input count, not added to it.
    pub cached_input_tokens: Option<u64>,
    /// Output (completion) tokens, reasoning included.
    pub output_tokens: Option<u64>,
    /// A cost the provider reported in US dollars, as OpenCode Zen does for requests paid
    /// from its credits. Other providers use a field of the same name for other units, so
    /// the amount is only meaningful to a caller that knows the provider reports dollars.
    pub cost_usd: Option<Amount>,
    /// xAI's billed cost in ticks: [`USD_TICKS_PER_DOLLAR`] ticks make one US dollar. The
    /// integer form is kept so that totals over many turns add up exactly.
    pub cost_usd_ticks: Option<u64>,
    /// Workers AI neurons this turn used, when Cloudflare reported them.
    pub neurons: Option<Amount>,
    /// Web searches xAI ran on its own servers during this turn.
    pub web_search_calls: Option<u64>,
    /// X searches xAI ran on its own servers during this turn.
    pub x_search_calls: Option<u64>,
}

/// How many of xAI's cost ticks make one US dollar (10^10).
pub const USD_TICKS_PER_DOLLAR: u64 = 10_000_000_000;

/// An exact, non-negative decimal number: `units × 10^-scale`.
///
/// Costs and neuron counts arrive as decimal text; keeping the digits exactly (rather than a
/// binary float) lets totals add up without rounding noise. Values are normalized (no
/// trailing zeros in `units`), so equal numbers compare equal whatever text they came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Amount {
    units: u64,
    scale: u16,
}

impl Amount {
    /// The largest scale an amount can have: the smallest positive amount is 10^-400.
    /// Every finite `f64` fits, so a JSON number is never lost for being small.
    pub const MAX_SCALE: u16 = 400;

    /// Zero.
    pub const ZERO: Self = Self { units: 0, scale: 0 };

    /// The amount `units × 10^-scale`, or `None` when `scale` exceeds [`MAX_SCALE`].
    ///
    /// [`MAX_SCALE`]: Self::MAX_SCALE
    #[must_use]
    pub fn new(units: u64, scale: u16) -> Option<Self> {
        (scale <= Self::MAX_SCALE).then(|| Self::normalized(units, scale))
    }

    /// Reads a non-negative decimal written the way JSON writes numbers: digits, an optional
    /// fraction and an optional exponent (`0.0038`, `0.00380000`, `3.8e-3`, `12`). Anything
    /// else is `None`: a sign, blanks, `NaN`, `inf`, an empty part, a value with more
    /// significant digits than a `u64` holds, or one beyond [`MAX_SCALE`]. Runs in time
    /// linear in the text.
    ///
    /// [`MAX_SCALE`]: Self::MAX_SCALE
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        let bytes = text.as_bytes();
        let (mantissa, exponent) = match bytes.iter().position(|b| matches!(b, b'e' | b'E')) {
            Some(at) => (bytes.get(..at)?, Some(bytes.get(at + 1..)?)),
            None => (bytes, None),
        };
        let (whole, fraction) = match mantissa.iter().position(|&b| b == b'.') {
            Some(at) => (mantissa.get(..at)?, Some(mantissa.get(at + 1..)?)),
            None => (mantissa, None),
        };
        let all_digits = |part: &[u8]| !part.is_empty() && part.iter().all(u8::is_ascii_digit);
        if !all_digits(whole) || fraction.is_some_and(|f| !all_digits(f)) {
            return None;
        }
        let fraction = fraction.unwrap_or_default();
        let exponent = match exponent {
            Some(text) => parse_exponent(text)?,
            None => 0,
        };
        // The significant digits: no leading zeros, no trailing zeros (those only move the
        // decimal point).
        let digits = whole.iter().chain(fraction).copied();
        let leading = digits.clone().take_while(|&d| d == b'0').count();
        let total = whole.len() + fraction.len();
        let trailing = digits
            .clone()
            .rev()
            .take_while(|&d| d == b'0')
            .count()
            .min(total - leading);
        let mut units: u64 = 0;
        for digit in digits.skip(leading).take(total - leading - trailing) {
            units = units
                .checked_mul(10)?
                .checked_add(u64::from(digit - b'0'))?;
        }
        if units == 0 {
            return Some(Self::ZERO);
        }
        // value = units × 10^(trailing - fraction.len() + exponent)
        let power = i64::try_from(trailing).ok()? - i64::try_from(fraction.len()).ok()? + exponent;
        if power >= 0 {
            let factor = 10u64.checked_pow(u32::try_from(power).ok()?)?;
            return Some(Self {
                units: units.checked_mul(factor)?,
                scale: 0,
            });
        }
        let scale = u16::try_from(-power).ok()?;
        Self::new(units, scale)
    }

    /// The digits of the amount: it is `units × 10^-scale`.
    #[must_use]
    pub fn units(&self) -> u64 {
        self.units
    }

    /// How many places the decimal point sits left of the last digit of
    /// [`units`](Self::units).
    #[must_use]
    pub fn scale(&self) -> u16 {
        self.scale
    }

    /// Whether the amount is zero.
    #[must_use]
    pub fn is_zero(&self) -> bool {
        self.units == 0
    }

    fn normalized(mut units: u64, mut scale: u16) -> Self {
        if units == 0 {
            return Self::ZERO;
        }
        while scale > 0 && units.is_multiple_of(10) {
            units /= 10;
            scale -= 1;
        }
        Self { units, scale }
    }
}

/// Prints the exact decimal, with no exponent: `0.0038`, `2.78`, `12`.
impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let digits = self.units.to_string();
        let scale = usize::from(self.scale);
        if scale == 0 {
            return f.write_str(&digits);
        }
        match digits.len().checked_sub(scale) {
            Some(point) if point > 0 => {
                let (whole, fraction) = digits.split_at(point);
                write!(f, "{whole}.{fraction}")
            }
            _ => write!(f, "0.{digits:0>scale$}"),
        }
    }
}

/// An exponent's digits with an optional sign, bounded well past any representable scale so
/// a long run of digits cannot overflow.
fn parse_exponent(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let significant = digits.iter().skip_while(|&&d| d == b'0');
    let mut value: i64 = 0;
    for &digit in significant {
        value = value * 10 + i64::from(digit - b'0');
        if value > 100_000 {
            return None;
        }
    }
    Some(if negative { -value } else { value })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn check(text: &str, expect: Option<(u64, u16)>) {
        let parsed = Amount::parse(text).map(|a| (a.units(), a.scale()));
        assert_eq!(parsed, expect, "{text:?}");
    }

    #[test]
    fn parses_the_decimal_forms_providers_send() {
        check("0.0038", Some((38, 4)));
        check("0.00380000", Some((38, 4)));
        check("3.8e-3", Some((38, 4)));
        check("3.8E-3", Some((38, 4)));
        check("38e-4", Some((38, 4)));
        check("2.78", Some((278, 2)));
        check("12", Some((12, 0)));
        check("1200", Some((1200, 0)));
        check("1.2e3", Some((1200, 0)));
        check("1e+2", Some((100, 0)));
        check("0", Some((0, 0)));
        check("0.00000000", Some((0, 0)));
        check("0e-999", Some((0, 0)));
        check("007.50", Some((75, 1)));
        check("5e-324", Some((5, 324)));
        check("1e-400", Some((1, 400)));
        check("18446744073709551615", Some((u64::MAX, 0)));
        check(
            "0.000000000000000000000000000000000000000001",
            Some((1, 42)),
        );
    }

    #[test]
    fn refuses_what_is_not_a_non_negative_decimal() {
        for text in [
            "",
            " 1",
            "1 ",
            "-1",
            "-0.5",
            "+1",
            "NaN",
            "nan",
            "inf",
            "Infinity",
            ".5",
            "5.",
            "1e",
            "1e-",
            "e5",
            "1.2.3",
            "1,5",
            "0x10",
            "1_000",
            "١",
            "1e-401",
            "18446744073709551616",
            "1e20",
            "1e100000000000",
            "12345678901234567890123",
        ] {
            check(text, None);
        }
    }

    #[test]
    fn prints_the_exact_decimal() {
        for (text, shown) in [
            ("0.0038", "0.0038"),
            ("2.78", "2.78"),
            ("12", "12"),
            ("1200", "1200"),
            ("0.1", "0.1"),
            ("1.05", "1.05"),
            ("0", "0"),
            ("3.80e-3", "0.0038"),
        ] {
            assert_eq!(
                Amount::parse(text).map(|a| a.to_string()).as_deref(),
                Some(shown)
            );
        }
    }

    #[test]
    fn new_normalizes_and_bounds_the_scale() {
        assert_eq!(Amount::new(3800, 6), Amount::parse("0.0038"));
        assert_eq!(Amount::new(0, 9), Some(Amount::ZERO));
        assert_eq!(Amount::new(1, Amount::MAX_SCALE + 1), None);
        assert!(Amount::ZERO.is_zero());
        assert_eq!(Usage::default().cost_usd, None);
    }

    proptest! {
        #[test]
        fn every_printed_amount_reads_back(units in any::<u64>(), scale in 0u16..=60) {
            let amount = Amount::new(units, scale).expect("in range");
            prop_assert_eq!(Amount::parse(&amount.to_string()), Some(amount));
        }

        #[test]
        fn equal_values_in_other_notations_agree(units in 1u64..1_000_000_000, scale in 0u16..30, pad in 0usize..6) {
            let amount = Amount::new(units, scale).expect("in range");
            let mut text = amount.to_string();
            if !text.contains('.') {
                text.push('.');
                text.push('0');
            }
            text.push_str(&"0".repeat(pad));
            prop_assert_eq!(Amount::parse(&text), Some(amount));
            let exponent_form = format!("{units}e-{scale}");
            prop_assert_eq!(Amount::parse(&exponent_form), Some(amount));
        }

        #[test]
        fn parsing_never_panics(text in ".{0,64}") {
            let _ = Amount::parse(&text);
        }

        #[test]
        fn floats_read_through_their_shortest_text(value in 0.0f64..1.0e6) {
            let amount = Amount::parse(&value.to_string()).expect("a float's text is a decimal");
            let back: f64 = amount.to_string().parse().expect("reads as f64");
            prop_assert_eq!(back, value);
        }
    }
}
