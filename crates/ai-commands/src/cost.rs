//! The cost label of an AI reply: what the parent provider's turns of one request cost, from
//! the usage each turn reported, and the list prices it may be estimated from.
//!
//! The label follows what the provider can be trusted to say, and nothing else:
//! - OpenCode Zen reports the dollars it charged to the account's credits; their sum over
//!   every turn is an API cost. Zen reports zero for requests it did not charge to credits
//!   (its free tier, a subscription, the account's own upstream key), so a zero is no cost at
//!   all: it says "free" only for a model whose zero prices were freshly verified.
//! - xAI reports billed ticks (10^10 to the dollar), server-side searches included; they are
//!   summed as integers over every turn and divided once.
//! - Workers AI is estimated from reported token counts at list prices when the rate table
//!   has the model; otherwise its reported neurons, otherwise its token counts, are shown.
//! - Anything missing, malformed or mixed (one turn reported, another not; a different unit)
//!   is `cost n/a`, never an invented zero.
//!
//! Money is summed exactly (decimal, not floating point), so labels show no float noise.
//!
//! # The rate table
//!
//! The list prices live in one data file, `rates.json`, beside this module:
//!
//! ```text
//! {"models": [{
//!   "provider": "workers-ai",                    // "workers-ai" or "xai"
//!   "model": "@cf/google/gemma-4-26b-a4b-it",    // the exact model ID
//!   "checked": "2026-11-01",                     // when the prices were last checked
//!   "source": "https://...",                     // where they were read
//!   "usd_per_million_tokens": {"input": "0.10", "output": "0.30",
//!                              "cached_input": "0.05"},        // optional
//!   "prompt_tiers": [{"above_prompt_tokens": 200000,           // optional
//!                     "usd_per_million_tokens": {"input": "...", "output": "..."}}]
//! }]}
//! ```
//!
//! Prices are decimal strings, so they stay exact. A tier applies to a turn whose prompt
//! (input tokens, cached ones included) is larger than its threshold; the largest such tier
//! wins. When the applicable prices have a `cached_input` rate, a turn must report its cached
//! input count to be estimated. The table is read once; a table that does not parse is an
//! empty table (no estimates), and the crate's tests fail on it.

use std::fmt;
use std::sync::OnceLock;

use bigdecimal::num_bigint::BigInt;
use bigdecimal::{BigDecimal, RoundingMode, Zero};
use serde::Deserialize;
use yetibot_conversation::{Amount, USD_TICKS_PER_DOLLAR, Usage};

/// The built-in rate table's text.
pub const RATES_JSON: &str = include_str!("rates.json");

/// What the parent provider of a request is, which decides how its usage is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CostSource {
    /// OpenCode Zen, whose reported dollars are the credits it charged.
    Zen {
        /// The model was chosen automatically after its advertised input, output and cache
        /// prices were all verified to be zero, for this request.
        verified_free: bool,
    },
    /// xAI, which reports billed ticks.
    Xai,
    /// Cloudflare Workers AI, estimated at list prices or shown in neurons or tokens.
    WorkersAi,
    /// Any other provider: no applicable accounting.
    Other,
}

/// The sum over the parent turns of one request, turned into a label at the end.
#[derive(Debug)]
pub struct CostTally {
    source: CostSource,
    rates: &'static RateTable,
    turns: u64,
    dollars: Sum<BigDecimal>,
    ticks: Sum<u128>,
    neurons: Sum<BigDecimal>,
    input_tokens: Sum<u64>,
    output_tokens: Sum<u64>,
    estimate: Sum<BigDecimal>,
}

impl CostTally {
    /// A tally for a request to `source`, priced from the built-in rate table.
    #[must_use]
    pub fn new(source: CostSource) -> Self {
        Self::with_rates(source, RateTable::builtin())
    }

    /// A tally priced from `rates` instead of the built-in table.
    #[must_use]
    pub fn with_rates(source: CostSource, rates: &'static RateTable) -> Self {
        Self {
            source,
            rates,
            turns: 0,
            dollars: Sum::default(),
            ticks: Sum::default(),
            neurons: Sum::default(),
            input_tokens: Sum::default(),
            output_tokens: Sum::default(),
            estimate: Sum::default(),
        }
    }

    /// Adds one parent model turn: every one must be added, including a turn without usage,
    /// which leaves any reported or estimated total incomplete (`cost n/a`; only a freshly
    /// verified free Zen model keeps its verified zero).
    pub fn add_turn(&mut self, model: &str, usage: Option<&Usage>) {
        self.turns = self.turns.saturating_add(1);
        let usage = usage.copied().unwrap_or_default();
        if let Some(cost) = usage.cost_usd {
            self.dollars.add_decimal(&decimal(cost));
        }
        if let Some(ticks) = usage.cost_usd_ticks {
            self.ticks.add_count(u128::from(ticks));
        }
        if let Some(neurons) = usage.neurons {
            self.neurons.add_decimal(&decimal(neurons));
        }
        if let (Some(input), Some(output)) = (usage.input_tokens, usage.output_tokens) {
            self.input_tokens.add_count(input);
            self.output_tokens.add_count(output);
        }
        let priced = match self.source {
            CostSource::Xai => Some(RateProvider::Xai),
            CostSource::WorkersAi => Some(RateProvider::WorkersAi),
            CostSource::Zen { .. } | CostSource::Other => None,
        };
        if let Some(estimate) = priced
            .and_then(|provider| self.rates.get(provider, model))
            .and_then(|rates| rates.estimate(&usage))
        {
            self.estimate.add_decimal(&estimate);
        }
    }

    /// The label for everything added so far.
    #[must_use]
    pub fn label(&self) -> CostLabel {
        let turns = self.turns;
        if turns == 0 {
            return CostLabel::NotAvailable;
        }
        match self.source {
            CostSource::Zen { verified_free } => {
                let charged = self.dollars.total > BigDecimal::zero();
                if charged && self.dollars.covers(turns) {
                    CostLabel::ApiReported(Dollars(self.dollars.total.clone()))
                } else if verified_free && !charged {
                    CostLabel::VerifiedFree
                } else {
                    CostLabel::NotAvailable
                }
            }
            CostSource::Xai => {
                if self.ticks.covers(turns) {
                    let dollars = BigDecimal::new(BigInt::from(self.ticks.total), TICK_PLACES);
                    CostLabel::ApiReported(Dollars(dollars))
                } else if self.ticks.turns == 0 && self.estimate.covers(turns) {
                    CostLabel::TokensEstimate(Dollars(self.estimate.total.clone()))
                } else {
                    CostLabel::NotAvailable
                }
            }
            CostSource::WorkersAi => {
                if self.estimate.covers(turns) {
                    CostLabel::TokensEstimate(Dollars(self.estimate.total.clone()))
                } else if self.neurons.covers(turns) {
                    CostLabel::Neurons(Neurons(self.neurons.total.clone()))
                } else if self.input_tokens.covers(turns) && self.output_tokens.covers(turns) {
                    CostLabel::Tokens {
                        input: self.input_tokens.total,
                        output: self.output_tokens.total,
                    }
                } else {
                    CostLabel::NotAvailable
                }
            }
            CostSource::Other => CostLabel::NotAvailable,
        }
    }
}

/// The public-safe cost label of a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CostLabel {
    /// The cost the provider reported for the parent turns: `API $0.0038`.
    ApiReported(Dollars),
    /// An estimate from reported token counts at list prices: `tokens est. $0.0020`.
    TokensEstimate(Dollars),
    /// Live Grok's estimate from visible text alone: `text est. $0.0020`.
    TextEstimate(Dollars),
    /// An automatically chosen Zen model whose prices were freshly verified to be zero:
    /// `API est. $0.0000`.
    VerifiedFree,
    /// Workers AI neurons the turns reported: `2.78 neurons`.
    Neurons(Neurons),
    /// Reported token counts, when nothing prices them: `18 input / 96 output tokens`.
    Tokens {
        /// Input tokens over every turn.
        input: u64,
        /// Output tokens over every turn.
        output: u64,
    },
    /// No reliable accounting applies: `cost n/a`.
    NotAvailable,
}

impl CostLabel {
    /// Live Grok's estimate from the built-in rate table: see [`RateTable::text_estimate`].
    #[must_use]
    pub fn text_estimate(model: &str, text: &VisibleText<'_>) -> Self {
        RateTable::builtin().text_estimate(model, text)
    }
}

impl fmt::Display for CostLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ApiReported(dollars) => write!(f, "API {dollars}"),
            Self::TokensEstimate(dollars) => write!(f, "tokens est. {dollars}"),
            Self::TextEstimate(dollars) => write!(f, "text est. {dollars}"),
            Self::VerifiedFree => f.write_str("API est. $0.0000"),
            Self::Neurons(neurons) => write!(f, "{neurons} neurons"),
            Self::Tokens { input, output } => write!(f, "{input} input / {output} output tokens"),
            Self::NotAvailable => f.write_str("cost n/a"),
        }
    }
}

/// An exact, non-negative amount of US dollars. Shown to four places (half up), and as
/// `<$0.0001` when positive but below that.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dollars(BigDecimal);

impl Dollars {
    /// The exact amount as decimal text, every digit kept: `0.0356075001`.
    #[must_use]
    pub fn exact(&self) -> String {
        plain(&self.0)
    }
}

impl fmt::Display for Dollars {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match rounded(&self.0, 4) {
            Some(text) => write!(f, "${text}"),
            None => f.write_str("<$0.0001"),
        }
    }
}

/// An exact, non-negative count of Workers AI neurons. Shown to two places (half up), and
/// as `<0.01` when positive but below that.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Neurons(BigDecimal);

impl Neurons {
    /// The exact count as decimal text.
    #[must_use]
    pub fn exact(&self) -> String {
        plain(&self.0)
    }
}

impl fmt::Display for Neurons {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match rounded(&self.0, 2) {
            Some(text) => f.write_str(&text),
            None => f.write_str("<0.01"),
        }
    }
}

/// What live Grok's text estimate is computed from: only text the user can see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VisibleText<'a> {
    /// The original visible context the request was made from.
    pub context: &'a str,
    /// Each answer delivered to the chat.
    pub answers: &'a [&'a str],
    /// The context held something that is not visible text (images, files, opaque
    /// items): the estimate cannot stand for it.
    pub opaque_context: bool,
}

/// The providers the rate table can price.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RateProvider {
    /// xAI (`"xai"`).
    Xai,
    /// Cloudflare Workers AI (`"workers-ai"`).
    WorkersAi,
}

/// List prices per model, read from data (see the module documentation for the format).
#[derive(Debug, Clone, Default)]
pub struct RateTable {
    models: Vec<ModelRates>,
}

impl RateTable {
    /// The built-in table, parsed from [`RATES_JSON`] on first use. A table that does not
    /// parse is empty, so nothing is estimated from it; the crate's tests make sure it parses.
    #[must_use]
    pub fn builtin() -> &'static Self {
        static BUILTIN: OnceLock<RateTable> = OnceLock::new();
        BUILTIN.get_or_init(|| parse_or_empty(RATES_JSON))
    }

    /// Reads a rate table.
    ///
    /// # Errors
    ///
    /// [`RateTableError`] when the text is not a table of the documented shape, a price is
    /// not a non-negative decimal, a date is not `YYYY-MM-DD`, a source is not an `https`
    /// address, tiers do not rise, or a model is listed twice.
    pub fn parse(json: &str) -> Result<Self, RateTableError> {
        let file: RateFile =
            serde_json::from_str(json).map_err(|error| RateTableError::Shape(Box::new(error)))?;
        let mut models: Vec<ModelRates> = Vec::with_capacity(file.models.len());
        for entry in file.models {
            let model = ModelRates::from_entry(entry)?;
            if models
                .iter()
                .any(|m| m.provider == model.provider && m.model == model.model)
            {
                return Err(RateTableError::Duplicate { model: model.model });
            }
            models.push(model);
        }
        Ok(Self { models })
    }

    /// The prices of `model` at `provider`, if the table has them.
    #[must_use]
    pub fn get(&self, provider: RateProvider, model: &str) -> Option<&ModelRates> {
        self.models
            .iter()
            .find(|m| m.provider == provider && m.model == model)
    }

    /// Every model the table prices.
    pub fn models(&self) -> impl Iterator<Item = &ModelRates> {
        self.models.iter()
    }

    /// Live Grok's text estimate: UTF-8 bytes divided by four (rounded up) stand for the
    /// tokens of the visible context (priced as uncached input, which also picks the prompt
    /// tier) and of each delivered answer (priced as output), at this table's xAI prices for
    /// `model`. Hidden instructions, intervening turns, reasoning, images, searches, tool fees
    /// and child inference are not in it. `cost n/a` when the context was not all visible
    /// text or the table does not price the model.
    #[must_use]
    pub fn text_estimate(&self, model: &str, text: &VisibleText<'_>) -> CostLabel {
        if text.opaque_context {
            return CostLabel::NotAvailable;
        }
        let Some(rates) = self.get(RateProvider::Xai, model) else {
            return CostLabel::NotAvailable;
        };
        let tokens = |s: &str| u64::try_from(s.len().div_ceil(4)).unwrap_or(u64::MAX);
        let input = tokens(text.context);
        let output = text
            .answers
            .iter()
            .fold(0u64, |sum, answer| sum.saturating_add(tokens(answer)));
        let prices = rates.prices_for_prompt(input);
        CostLabel::TextEstimate(Dollars(prices.price(input, 0, output)))
    }
}

/// The list prices of one model.
#[derive(Debug, Clone)]
pub struct ModelRates {
    provider: RateProvider,
    model: String,
    checked: String,
    source: String,
    base: Prices,
    tiers: Vec<Tier>,
}

impl ModelRates {
    /// The provider the prices are for.
    #[must_use]
    pub fn provider(&self) -> RateProvider {
        self.provider
    }

    /// The exact model ID.
    #[must_use]
    pub fn model(&self) -> &str {
        &self.model
    }

    /// When the prices were last checked, `YYYY-MM-DD`.
    #[must_use]
    pub fn checked(&self) -> &str {
        &self.checked
    }

    /// Where the prices were read.
    #[must_use]
    pub fn source(&self) -> &str {
        &self.source
    }

    /// What one turn's reported usage costs at these prices; `None` when the turn lacks a
    /// count the prices need or reports more cached tokens than input tokens.
    fn estimate(&self, usage: &Usage) -> Option<BigDecimal> {
        let input = usage.input_tokens?;
        let output = usage.output_tokens?;
        let prices = self.prices_for_prompt(input);
        let cached = match prices.cached_input {
            Some(_) => usage.cached_input_tokens?,
            None => 0,
        };
        let uncached = input.checked_sub(cached)?;
        Some(prices.price(uncached, cached, output))
    }

    fn prices_for_prompt(&self, prompt_tokens: u64) -> &Prices {
        self.tiers
            .iter()
            .rev()
            .find(|tier| prompt_tokens > tier.above_prompt_tokens)
            .map_or(&self.base, |tier| &tier.prices)
    }

    fn from_entry(entry: ModelEntry) -> Result<Self, RateTableError> {
        let model = entry.model;
        if model.trim().is_empty() {
            return Err(RateTableError::BlankModel);
        }
        if !is_date(&entry.checked) {
            return Err(RateTableError::Date { model });
        }
        if !entry.source.starts_with("https://") || entry.source.len() <= "https://".len() {
            return Err(RateTableError::Source { model });
        }
        let Some(base) = Prices::from_entry(&entry.usd_per_million_tokens) else {
            return Err(RateTableError::Price { model });
        };
        let mut tiers: Vec<Tier> = Vec::with_capacity(entry.prompt_tiers.len());
        for tier in &entry.prompt_tiers {
            let Some(prices) = Prices::from_entry(&tier.usd_per_million_tokens) else {
                return Err(RateTableError::Price { model });
            };
            let rises =
                tiers.last().map_or(0, |t| t.above_prompt_tokens) < tier.above_prompt_tokens;
            if !rises {
                return Err(RateTableError::Tiers { model });
            }
            tiers.push(Tier {
                above_prompt_tokens: tier.above_prompt_tokens,
                prices,
            });
        }
        Ok(Self {
            provider: entry.provider,
            model,
            checked: entry.checked,
            source: entry.source,
            base,
            tiers,
        })
    }
}

/// Why a rate table was refused. Messages name the model, never a price.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RateTableError {
    /// The text is not JSON of the documented shape (an unknown or missing field included).
    #[error("the rate table is not JSON of the expected shape")]
    Shape(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// An entry has an empty model ID.
    #[error("a rate table entry has an empty model ID")]
    BlankModel,
    /// A price is not a non-negative decimal string.
    #[error("a price of {model} is not a non-negative decimal")]
    Price {
        /// The model ID.
        model: String,
    },
    /// The check date is not `YYYY-MM-DD`.
    #[error("the check date of {model} is not YYYY-MM-DD")]
    Date {
        /// The model ID.
        model: String,
    },
    /// The source is not an `https` address.
    #[error("the price source of {model} is not an https address")]
    Source {
        /// The model ID.
        model: String,
    },
    /// Prompt tiers are not listed with strictly rising positive thresholds.
    #[error("the prompt tiers of {model} do not rise")]
    Tiers {
        /// The model ID.
        model: String,
    },
    /// The same provider and model are listed twice.
    #[error("{model} is listed twice")]
    Duplicate {
        /// The model ID.
        model: String,
    },
}

/// Ticks are 10^-10 dollars: the exponent that turns a tick count into dollars.
const TICK_PLACES: i64 = 10;
const _: () = assert!(USD_TICKS_PER_DOLLAR == 10_000_000_000);

/// A running total with how many turns contributed to it.
#[derive(Debug, Default)]
struct Sum<T> {
    turns: u64,
    total: T,
    overflowed: bool,
}

impl<T> Sum<T> {
    /// Whether every one of `turns` turns contributed and the total is exact.
    fn covers(&self, turns: u64) -> bool {
        self.turns == turns && !self.overflowed
    }
}

impl Sum<BigDecimal> {
    fn add_decimal(&mut self, value: &BigDecimal) {
        self.total += value;
        self.turns = self.turns.saturating_add(1);
    }
}

impl<T: Copy + Checked> Sum<T> {
    fn add_count(&mut self, value: T) {
        match self.total.checked(value) {
            Some(total) => self.total = total,
            None => self.overflowed = true,
        }
        self.turns = self.turns.saturating_add(1);
    }
}

trait Checked: Sized {
    fn checked(self, other: Self) -> Option<Self>;
}

impl Checked for u64 {
    fn checked(self, other: Self) -> Option<Self> {
        self.checked_add(other)
    }
}

impl Checked for u128 {
    fn checked(self, other: Self) -> Option<Self> {
        self.checked_add(other)
    }
}

/// Dollars per million tokens.
#[derive(Debug, Clone)]
struct Prices {
    input: BigDecimal,
    cached_input: Option<BigDecimal>,
    output: BigDecimal,
}

impl Prices {
    fn from_entry(entry: &PricesEntry) -> Option<Self> {
        let read = |text: &str| Amount::parse(text).map(decimal);
        Some(Self {
            input: read(&entry.input)?,
            cached_input: match &entry.cached_input {
                Some(text) => Some(read(text)?),
                None => None,
            },
            output: read(&entry.output)?,
        })
    }

    /// The exact price of these token counts.
    fn price(&self, uncached: u64, cached: u64, output: u64) -> BigDecimal {
        let per_million = BigDecimal::new(BigInt::from(1), 6);
        let mut total = BigDecimal::from(uncached) * &self.input;
        if let Some(rate) = &self.cached_input {
            total += BigDecimal::from(cached) * rate;
        }
        total += BigDecimal::from(output) * &self.output;
        total * per_million
    }
}

#[derive(Debug, Clone)]
struct Tier {
    above_prompt_tokens: u64,
    prices: Prices,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RateFile {
    models: Vec<ModelEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelEntry {
    provider: RateProvider,
    model: String,
    checked: String,
    source: String,
    usd_per_million_tokens: PricesEntry,
    #[serde(default)]
    prompt_tiers: Vec<TierEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PricesEntry {
    input: String,
    #[serde(default)]
    cached_input: Option<String>,
    output: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TierEntry {
    above_prompt_tokens: u64,
    usd_per_million_tokens: PricesEntry,
}

/// A table that does not parse becomes an empty one: no estimate is better than a panic in
/// the middle of a reply.
fn parse_or_empty(json: &str) -> RateTable {
    RateTable::parse(json).unwrap_or_default()
}

fn decimal(amount: Amount) -> BigDecimal {
    BigDecimal::new(BigInt::from(amount.units()), i64::from(amount.scale()))
}

/// `value` rounded half up to `places` decimals, or `None` when it is positive but below
/// the smallest step (so it must not be shown as zero).
fn rounded(value: &BigDecimal, places: u8) -> Option<String> {
    let step = BigDecimal::new(BigInt::from(1), i64::from(places));
    if value > &BigDecimal::zero() && value < &step {
        return None;
    }
    let (digits, scale) = value
        .with_scale_round(i64::from(places), RoundingMode::HalfUp)
        .into_bigint_and_exponent();
    Some(with_point(&digits.to_string(), scale))
}

/// Every digit of a non-negative decimal, without an exponent.
fn plain(value: &BigDecimal) -> String {
    let (digits, scale) = value.normalized().into_bigint_and_exponent();
    with_point(&digits.to_string(), scale)
}

/// Places the decimal point `scale` digits from the right of `digits` (a non-negative
/// integer's text), padding with zeros; a negative scale appends zeros.
fn with_point(digits: &str, scale: i64) -> String {
    let Ok(places) = usize::try_from(scale) else {
        let zeros = usize::try_from(scale.unsigned_abs()).unwrap_or(0);
        return format!("{digits}{}", "0".repeat(zeros));
    };
    if places == 0 {
        return digits.to_owned();
    }
    let padded = format!("{digits:0>width$}", width = places + 1);
    let (whole, fraction) = padded.split_at(padded.len() - places);
    format!("{whole}.{fraction}")
}

fn is_date(text: &str) -> bool {
    let bytes = text.as_bytes();
    let number = |range: std::ops::Range<usize>| {
        bytes
            .get(range)
            .filter(|part| part.iter().all(u8::is_ascii_digit))
            .map(|part| part.iter().fold(0u32, |n, d| n * 10 + u32::from(d - b'0')))
    };
    bytes.len() == 10
        && bytes.get(4) == Some(&b'-')
        && bytes.get(7) == Some(&b'-')
        && number(0..4).is_some()
        && number(5..7).is_some_and(|month| (1..=12).contains(&month))
        && number(8..10).is_some_and(|day| (1..=31).contains(&day))
}

#[cfg(test)]
mod tests;
