//! The record every AI answer carries: which provider and model answered, how long it took,
//! how many host tools ran, the usage reported and the cost label.

use std::time::Duration;

use serde_json::json;
use yetibot_ai_providers::Ending;
use yetibot_conversation::Usage;

use crate::cost::CostLabel;

/// How an answer was produced. Holds no prompt, tool argument or result, and no credential:
/// it is safe to show under the answer.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerMeta {
    /// The provider's configured name.
    pub provider: String,
    /// The exact model ID.
    pub model: String,
    /// Measured from the request's start to its answer.
    pub duration: Duration,
    /// Host tool calls made (native and MCP), confirmed or not.
    pub tool_calls: u8,
    /// Token and server-side search counts summed over every parent turn, each kept only
    /// when every turn reported it.
    pub tokens: TokenCounts,
    /// The cost label: what is known about the cost, never an invented zero.
    pub cost: CostLabel,
    /// `grok --no-thread`: the adapter answers in the invoking channel instead of opening a
    /// reply thread (inside a thread it stays there either way).
    pub no_thread: bool,
    /// How the answer ended: complete, or cut off and why.
    pub finish: Ending,
}

/// Token counts of a request's parent turns; `None` where a turn did not report one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenCounts {
    /// Input tokens, cached ones included.
    pub input: Option<u64>,
    /// Cached input tokens.
    pub cached_input: Option<u64>,
    /// Output tokens.
    pub output: Option<u64>,
    /// Server-side web searches the provider ran (xAI reports them).
    pub web_searches: Option<u64>,
    /// Server-side X searches the provider ran.
    pub x_searches: Option<u64>,
}

impl AnswerMeta {
    /// The one-line caption: `model · 1.2 s · 2 tools · cost n/a`.
    #[must_use]
    pub fn caption(&self) -> String {
        let tools = match self.tool_calls {
            0 => String::new(),
            1 => " · 1 tool".to_owned(),
            n => format!(" · {n} tools"),
        };
        format!(
            "{} · {:.1} s{tools} · {}",
            self.model,
            self.duration.as_secs_f64(),
            self.cost
        )
    }

    /// The record as JSON: `provider`, `model`, `duration_ms`, `tool_calls`, `usage`
    /// (`input_tokens`, `cached_input_tokens`, `output_tokens`, each `null` when not
    /// reported), `cost` (the label), `no_thread` and `finish` (`stop`, or why the answer was
    /// cut off: `length`, `content_filter`, `incomplete`).
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        let usage = json!({
            "input_tokens": self.tokens.input,
            "cached_input_tokens": self.tokens.cached_input,
            "output_tokens": self.tokens.output,
            "web_search_calls": self.tokens.web_searches,
            "x_search_calls": self.tokens.x_searches,
        });
        json!({
            "provider": self.provider,
            "model": self.model,
            "duration_ms": u64::try_from(self.duration.as_millis()).unwrap_or(u64::MAX),
            "tool_calls": self.tool_calls,
            "usage": usage,
            "cost": self.cost.to_string(),
            "no_thread": self.no_thread,
            "finish": self.finish.as_str(),
        })
    }
}

impl From<AnswerMeta> for yetibot_command::ReplyMeta {
    /// The command layer's view of an answer's record: its caption, its cost label, and the
    /// record as JSON for scripts.
    fn from(meta: AnswerMeta) -> Self {
        Self {
            caption: meta.caption(),
            cost: Some(meta.cost.to_string()),
            details: meta.to_json(),
        }
    }
}

/// Sums the token counts of a request's parent turns. A count is kept only while every
/// turn reported it: one silent turn makes the total unknown, not smaller.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct UsageSum {
    turns: u32,
    counts: TokenCounts,
}

impl UsageSum {
    /// Adds one turn's usage (`None`: the turn reported nothing).
    pub(crate) fn add(&mut self, usage: Option<&Usage>) {
        let first = self.turns == 0;
        self.turns = self.turns.saturating_add(1);
        let usage = usage.copied().unwrap_or_default();
        let add = |total: Option<u64>, turn: Option<u64>| match (first, total, turn) {
            (true, _, Some(n)) => Some(n),
            (false, Some(total), Some(n)) => Some(total.saturating_add(n)),
            _ => None,
        };
        self.counts = TokenCounts {
            input: add(self.counts.input, usage.input_tokens),
            cached_input: add(self.counts.cached_input, usage.cached_input_tokens),
            output: add(self.counts.output, usage.output_tokens),
            web_searches: add(self.counts.web_searches, usage.web_search_calls),
            x_searches: add(self.counts.x_searches, usage.x_search_calls),
        };
    }

    /// The totals (all `None` before any turn).
    pub(crate) fn total(&self) -> TokenCounts {
        self.counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: Option<u64>, output: Option<u64>) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            ..Usage::default()
        }
    }

    fn counts(input: Option<u64>, output: Option<u64>) -> TokenCounts {
        TokenCounts {
            input,
            output,
            ..TokenCounts::default()
        }
    }

    #[test]
    fn one_silent_turn_makes_a_total_unknown_rather_than_smaller() {
        let mut sum = UsageSum::default();
        assert_eq!(sum.total(), TokenCounts::default());
        sum.add(Some(&usage(Some(10), Some(2))));
        sum.add(Some(&usage(Some(5), Some(3))));
        assert_eq!(sum.total(), counts(Some(15), Some(5)));
        sum.add(Some(&usage(Some(1), None)));
        assert_eq!(sum.total(), counts(Some(16), None));
        sum.add(None);
        assert_eq!(sum.total(), TokenCounts::default());
        sum.add(Some(&usage(Some(1), Some(1))));
        assert_eq!(
            sum.total(),
            TokenCounts::default(),
            "an unknown stays unknown"
        );
    }

    #[test]
    fn the_caption_names_model_time_tools_and_cost() {
        let meta = AnswerMeta {
            provider: "local".into(),
            model: "llama3.2".into(),
            duration: Duration::from_millis(1234),
            tool_calls: 2,
            tokens: TokenCounts::default(),
            cost: CostLabel::NotAvailable,
            no_thread: false,
            finish: Ending::Complete,
        };
        assert_eq!(meta.caption(), "llama3.2 · 1.2 s · 2 tools · cost n/a");
        assert_eq!(meta.to_json()["duration_ms"], 1234);
        assert_eq!(
            meta.to_json()["usage"]["input_tokens"],
            serde_json::Value::Null
        );
        assert_eq!(meta.to_json()["cost"], "cost n/a");
    }
}
