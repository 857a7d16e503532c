//! Token usage and cost of a model turn, with "not reported" kept apart from zero.

/// Token usage of a turn. Every field keeps "not reported" apart from zero: a provider
/// that omits a count has not said it was free, and cost labels must never invent a zero.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Usage {
    /// Input (prompt) tokens, `None` when not reported.
    pub input_tokens: Option<u64>,
    /// Output (completion) tokens, `None` when not reported.
    pub output_tokens: Option<u64>,
    /// The provider-reported cost, in the provider's unit, `None` when not reported.
    pub cost: Option<f64>,
}
