//! The prices a model listing advertises for each model, read exactly, and the rule that
//! decides whether a model is verified free.
//!
//! # Where the shape comes from
//!
//! OpenCode's own console code serves its OpenAI-style models list as bare records
//! (`{"id", "object", "created", "owned_by"}`, in `anomalyco/opencode`,
//! `packages/console/app/src/routes/zen/v1/models.ts`): that endpoint advertises no prices.
//! The pricing shape OpenCode's clients read for Zen models is models.dev's `cost` object
//! (`packages/opencode/src/provider/models.ts` in the same repository): dollars per million
//! tokens as JSON numbers, `input` and `output` always, `cache_read` and `cache_write` when
//! the model has them, and a `context_over_200k` tier holding the same fields. OpenCode's
//! console keeps its internal prices under the names `cacheRead`, `cacheWrite5m` and
//! `cacheWrite1h`, which are read as cache prices too.
//!
//! A listing record that carries such a `cost` object gets a [`Pricing`]; one without it
//! has none, and is never free. So a catalog that advertises no prices (as OpenCode's
//! models endpoint did when this was written) yields no free model at all: selection fails
//! closed rather than guessing from a model's name.
//!
//! # Exactness
//!
//! Prices are read from the number's own text into an [`Amount`], not through a float, so a
//! tiny positive price can never round to zero. That text comes from serde_json's
//! `RawValue`, which is why this crate enables its `raw_value` feature (it adds the type and
//! changes nothing else; `arbitrary_precision`, the other way to keep a number's text,
//! would change every `serde_json::Value` in the build). A value that is not a non-negative JSON
//! number (a string, `null`, a negative number, one with more significant digits than an
//! amount holds) is [`Price::Unreadable`], which is never zero. Missing stays apart from
//! zero: [`Price::Missing`].

use serde::Deserialize;
use serde::de::{Deserializer as _, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use yetibot_conversation::Amount;

/// The most fields of one `cost` object that are read; more make the model's pricing
/// unknown.
pub const MAX_PRICE_FIELDS: usize = 16;
/// The most unknown cost field names kept for display (every one still counts).
pub const MAX_UNKNOWN_NAMES: usize = 8;
/// The longest unknown cost field name kept for display, in bytes.
pub const MAX_UNKNOWN_NAME_BYTES: usize = 64;

/// One advertised price, in dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Price {
    /// The catalog does not state this price.
    Missing,
    /// The price, exactly as the catalog wrote it.
    Exact(Amount),
    /// The catalog states something that is not a non-negative number.
    Unreadable,
}

impl Price {
    /// The amount, when the price is stated exactly.
    #[must_use]
    pub fn amount(&self) -> Option<Amount> {
        match self {
            Self::Exact(amount) => Some(*amount),
            Self::Missing | Self::Unreadable => None,
        }
    }

    /// Whether the price is stated and exactly zero.
    #[must_use]
    pub fn is_zero(&self) -> bool {
        self.amount().is_some_and(|a| a.is_zero())
    }
}

/// What a listing record advertises a model costs (see the module docs for the shape).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pricing {
    /// The input (prompt) price.
    pub input: Price,
    /// The output (completion) price.
    pub output: Price,
    /// Every advertised cache price, by its catalog name (`cache_read`, `cache_write`, ...),
    /// in catalog order.
    pub cache: Vec<(String, Price)>,
    /// Price tiers that apply past a context size (`context_over_200k`), by name.
    pub tiers: Vec<(String, Pricing)>,
    /// Names of cost fields this crate does not understand (at most
    /// [`MAX_UNKNOWN_NAMES`], each cut to [`MAX_UNKNOWN_NAME_BYTES`] and reduced to
    /// letters, digits, `_`, `-` and `.`). Any unknown field makes the model ineligible.
    pub unknown: Vec<String>,
    /// Whether there were more unknown fields than [`Pricing::unknown`] holds, or more
    /// fields than [`MAX_PRICE_FIELDS`].
    pub unknown_truncated: bool,
}

impl Pricing {
    /// Pricing with nothing advertised: both base prices missing.
    fn empty() -> Self {
        Self {
            input: Price::Missing,
            output: Price::Missing,
            cache: Vec::new(),
            tiers: Vec::new(),
            unknown: Vec::new(),
            unknown_truncated: false,
        }
    }

    /// Pricing that could not be read at all: both base prices unreadable.
    fn unreadable() -> Self {
        Self {
            input: Price::Unreadable,
            output: Price::Unreadable,
            ..Self::empty()
        }
    }

    /// Whether every advertised price dimension is known and exactly zero: input and output
    /// stated as zero, every cache price zero, every tier free by the same rule, and no
    /// unknown cost field.
    #[must_use]
    pub fn is_free(&self) -> bool {
        self.input.is_zero()
            && self.output.is_zero()
            && self.cache.iter().all(|(_, price)| price.is_zero())
            && self.tiers.iter().all(|(_, tier)| tier.is_free())
            && self.unknown.is_empty()
            && !self.unknown_truncated
    }

    fn note_unknown(&mut self, name: &str) {
        if self.unknown.len() >= MAX_UNKNOWN_NAMES {
            self.unknown_truncated = true;
            return;
        }
        let mut clean: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                    c
                } else {
                    '?'
                }
            })
            .collect();
        clean.truncate(MAX_UNKNOWN_NAME_BYTES);
        if clean.is_empty() {
            clean.push('?');
        }
        self.unknown.push(clean);
    }
}

/// The base price fields.
const INPUT: &str = "input";
const OUTPUT: &str = "output";
/// Cache price fields: models.dev's names, then OpenCode's console names.
const CACHE_FIELDS: &[&str] = &[
    "cache_read",
    "cache_write",
    "cacheRead",
    "cacheWrite5m",
    "cacheWrite1h",
];
/// Tier fields: a nested cost object that applies past a context size.
const TIER_FIELDS: &[&str] = &["context_over_200k"];

/// The records of a listing body's `data` list, in order and unparsed, so that each one's
/// prices can be read from its own text. `None` when the body is not an object with one
/// `data` list.
pub(crate) fn records(body: &[u8]) -> Option<Vec<&RawValue>> {
    #[derive(Deserialize)]
    struct Listing<'a> {
        #[serde(borrow)]
        data: Vec<&'a RawValue>,
    }
    let listing: Listing<'_> = serde_json::from_slice(body).ok()?;
    Some(listing.data)
}

/// The pricing of one listing record: its `cost` field, if it has one that is not `null`.
pub(crate) fn of_record(record: &RawValue) -> Option<Pricing> {
    let fields = Fields::of(record, Some("cost"))?;
    let mut costs = fields.entries.iter();
    let cost = costs.next()?;
    if costs.next().is_some() {
        // Two `cost` fields leave no way to tell which one is meant.
        return Some(Pricing::unreadable());
    }
    if cost.1.get() == "null" {
        return None;
    }
    Some(of_cost(cost.1, 0))
}

/// Reads one `cost` object (`depth` 0) or one tier inside it (`depth` 1).
fn of_cost(cost: &RawValue, depth: usize) -> Pricing {
    let Some(fields) = Fields::of(cost, None) else {
        return Pricing::unreadable();
    };
    let mut pricing = Pricing::empty();
    pricing.unknown_truncated = fields.more;
    for (index, (name, value)) in fields.entries.iter().enumerate() {
        let repeated = fields.entries[..index].iter().any(|(n, _)| n == name)
            || fields.entries[index + 1..].iter().any(|(n, _)| n == name);
        let price = || {
            if repeated {
                Price::Unreadable
            } else {
                price(value)
            }
        };
        match name.as_str() {
            INPUT => pricing.input = price(),
            OUTPUT => pricing.output = price(),
            cache if CACHE_FIELDS.contains(&cache) => pricing.cache.push((name.clone(), price())),
            tier if depth == 0 && TIER_FIELDS.contains(&tier) => {
                let tier_pricing = if repeated {
                    Pricing::unreadable()
                } else {
                    of_cost(value, depth + 1)
                };
                pricing.tiers.push((name.clone(), tier_pricing));
            }
            other => pricing.note_unknown(other),
        }
    }
    pricing
}

/// A price from a JSON value's own text: a non-negative JSON number, exactly.
fn price(value: &RawValue) -> Price {
    let text = value.get();
    // A JSON number starts with a digit or `-`; `Amount::parse` refuses the sign, and
    // anything else (strings, `null`, objects) is not a number at all.
    if !text.starts_with(|c: char| c.is_ascii_digit()) {
        return Price::Unreadable;
    }
    Amount::parse(text).map_or(Price::Unreadable, Price::Exact)
}

/// The fields of a JSON object in order, duplicates kept, values left unparsed: every
/// field named `only` when it is given, otherwise at most [`MAX_PRICE_FIELDS`] fields, with
/// `more` set when there were others.
struct Fields<'a> {
    entries: Vec<(String, &'a RawValue)>,
    more: bool,
}

impl<'a> Fields<'a> {
    /// The fields of `value`, or `None` when it is not an object.
    fn of(value: &'a RawValue, only: Option<&str>) -> Option<Self> {
        let mut deserializer = serde_json::Deserializer::from_str(value.get());
        deserializer.deserialize_map(FieldsVisitor { only }).ok()
    }
}

struct FieldsVisitor<'n> {
    only: Option<&'n str>,
}

impl<'de> Visitor<'de> for FieldsVisitor<'_> {
    type Value = Fields<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
        let mut entries = Vec::new();
        let mut more = false;
        while let Some(key) = map.next_key::<String>()? {
            let wanted = match self.only {
                Some(only) => key == only,
                None => entries.len() < MAX_PRICE_FIELDS,
            };
            if wanted {
                let value: &'de RawValue = map.next_value()?;
                entries.push((key, value));
            } else {
                map.next_value::<IgnoredAny>()?;
                more |= self.only.is_none();
            }
        }
        Ok(Fields { entries, more })
    }

    fn visit_seq<S: SeqAccess<'de>>(self, _: S) -> Result<Self::Value, S::Error> {
        Err(serde::de::Error::custom("not an object"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn of_listing(body: &[u8]) -> Option<Vec<Option<Pricing>>> {
        Some(records(body)?.into_iter().map(of_record).collect())
    }

    fn pricing(cost: &str) -> Option<Pricing> {
        let body = format!(r#"{{"data":[{{"id":"m","cost":{cost}}}]}}"#);
        of_listing(body.as_bytes())
            .expect("a listing")
            .into_iter()
            .next()
            .expect("one record")
    }

    fn amount(text: &str) -> Price {
        Price::Exact(Amount::parse(text).expect("a test amount"))
    }

    fn check(cost: &str, free: bool) {
        let pricing = pricing(cost).expect("pricing");
        assert_eq!(pricing.is_free(), free, "{cost}: {pricing:?}");
    }

    #[test]
    fn every_dimension_must_be_a_stated_zero() {
        check(r#"{"input":0,"output":0}"#, true);
        check(
            r#"{"input":0,"output":0,"cache_read":0,"cache_write":0.0}"#,
            true,
        );
        check(
            r#"{"input":0,"output":0,"cache_read":0,"context_over_200k":{"input":0,"output":0}}"#,
            true,
        );
        check(
            r#"{"input":0,"output":0,"cacheRead":0,"cacheWrite5m":0e5}"#,
            true,
        );
        // Paid somewhere.
        check(r#"{"input":0.6,"output":2.2}"#, false);
        check(r#"{"input":0,"output":0,"cache_read":0.1}"#, false);
        check(
            r#"{"input":0,"output":0,"context_over_200k":{"input":1,"output":0}}"#,
            false,
        );
        // Missing base prices.
        check(r#"{"output":0}"#, false);
        check(r#"{}"#, false);
        // Not numbers.
        check(r#"{"input":"0","output":0}"#, false);
        check(r#"{"input":null,"output":0}"#, false);
        check(r#"{"input":-0,"output":0}"#, false);
        check(r#"{"input":0,"output":0,"cache_read":null}"#, false);
        // Unknown dimensions, even at zero.
        check(r#"{"input":0,"output":0,"reasoning":0}"#, false);
        check(
            r#"{"input":0,"output":0,"context_over_200k":{"input":0,"output":0,"threshold":0}}"#,
            false,
        );
        // A tier inside a tier is not understood.
        check(
            r#"{"input":0,"output":0,"context_over_200k":{"input":0,"output":0,"context_over_200k":{"input":0,"output":0}}}"#,
            false,
        );
        // A repeated field is ambiguous.
        check(r#"{"input":0,"input":0,"output":0}"#, false);
        // Not an object.
        check("0", false);
        check("[0,0]", false);
    }

    #[test]
    fn prices_are_exact_and_tiny_prices_are_not_zero() {
        let p = pricing(r#"{"input":1e-330,"output":0.00000000000000000000001,"cache_read":3}"#)
            .expect("pricing");
        assert_eq!(p.input, amount("1e-330"));
        assert_eq!(p.output, amount("1e-23"));
        assert_eq!(p.cache, vec![("cache_read".to_owned(), amount("3"))]);
        assert!(!p.is_free());
        // Beyond what an amount holds: unreadable, not zero.
        let p = pricing(r#"{"input":1e-500,"output":0}"#).expect("pricing");
        assert_eq!(p.input, Price::Unreadable);
        let p = pricing(r#"{"input":123456789012345678901234567890,"output":0}"#).expect("p");
        assert_eq!(p.input, Price::Unreadable);
    }

    #[test]
    fn missing_and_null_cost_mean_no_pricing() {
        let body = br#"{"data":[{"id":"a"},{"id":"b","cost":null},{"id":"c","cost":{"input":0,"output":0}},"x"]}"#;
        let all = of_listing(body).expect("a listing");
        assert_eq!(all.len(), 4);
        assert_eq!(all[0], None);
        assert_eq!(all[1], None);
        assert!(all[2].as_ref().is_some_and(Pricing::is_free));
        assert_eq!(
            all[3], None,
            "a record that is not an object has no pricing"
        );
        let twice = of_listing(
            br#"{"data":[{"cost":{"input":0,"output":0},"cost":{"input":0,"output":0}}]}"#,
        )
        .expect("listing");
        assert!(twice[0].as_ref().is_some_and(|p| !p.is_free()));
        assert_eq!(of_listing(b"[]"), None);
        assert_eq!(of_listing(b"{\"data\":{}}"), None);
    }

    #[test]
    fn unknown_names_are_bounded_and_cleaned() {
        let fields: Vec<String> = (0..20).map(|i| format!(r#""x y{i}":0"#)).collect();
        let p = pricing(&format!("{{{}}}", fields.join(","))).expect("pricing");
        assert_eq!(p.unknown.len(), MAX_UNKNOWN_NAMES);
        assert_eq!(p.unknown[0], "x?y0");
        assert!(p.unknown_truncated);
        assert!(!p.is_free());
        let long = format!(r#"{{"input":0,"output":0,"{}":0}}"#, "z".repeat(300));
        let p = pricing(&long).expect("pricing");
        assert_eq!(p.unknown[0].len(), MAX_UNKNOWN_NAME_BYTES);
    }

    proptest! {
        #[test]
        fn any_body_is_read_without_panicking(body in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = of_listing(&body);
        }

        #[test]
        fn a_price_is_free_only_when_its_text_is_zero(digits in "(0|[1-9][0-9]{0,5})(\\.[0-9]{1,6})?(e-?[0-9]{1,3})?") {
            let p = pricing(&format!(r#"{{"input":{digits},"output":0}}"#)).expect("pricing");
            let zero = digits.split('e').next().unwrap_or_default().chars().all(|c| c == '0' || c == '.');
            prop_assert_eq!(p.is_free(), zero);
        }
    }
}
