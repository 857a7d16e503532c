//! The record every AI answer carries: which provider and model answered, how long it took,
//! how many host tools ran, the usage reported and the cost label.

use std::time::Duration;

use serde_json::json;
use yetibot_conversation::Usage;

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
    /// Usage summed over every parent turn, a field kept only when every turn reported it.
    pub usage: Option<Usage>,
    /// The cost label: what is known about the cost, never an invented zero.
    pub cost: String,
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
    /// (`input_tokens`, `output_tokens`, `cost`, each `null` when not reported) and `cost`
    /// (the label).
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        let usage = self.usage.map(|u| {
            json!({
                "input_tokens": u.input_tokens,
                "output_tokens": u.output_tokens,
                "cost": u.cost,
            })
        });
        json!({
            "provider": self.provider,
            "model": self.model,
            "duration_ms": u64::try_from(self.duration.as_millis()).unwrap_or(u64::MAX),
            "tool_calls": self.tool_calls,
            "usage": usage,
            "cost": self.cost,
        })
    }
}

/// Sums the usage of a request's parent turns. A count is kept only while every turn
/// reported it: one silent turn makes the total unknown, not smaller.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct UsageSum {
    turns: u32,
    input: Option<u64>,
    output: Option<u64>,
    cost: Option<f64>,
    input_known: bool,
    output_known: bool,
    cost_known: bool,
}

impl UsageSum {
    /// Adds one turn's usage (`None`: the turn reported nothing).
    pub(crate) fn add(&mut self, usage: Option<&Usage>) {
        let first = self.turns == 0;
        self.turns += 1;
        let usage = usage.copied().unwrap_or_default();
        let (input, known) = add_count(self.input, usage.input_tokens, first, self.input_known);
        self.input = input;
        self.input_known = known;
        let (output, known) = add_count(self.output, usage.output_tokens, first, self.output_known);
        self.output = output;
        self.output_known = known;
        self.cost_known = (first || self.cost_known) && usage.cost.is_some();
        self.cost = if self.cost_known {
            Some(self.cost.unwrap_or(0.0) + usage.cost.unwrap_or(0.0))
        } else {
            None
        };
    }

    /// The total, `None` before any turn or when no field is known for every turn.
    pub(crate) fn total(&self) -> Option<Usage> {
        let usage = Usage {
            input_tokens: self.input,
            output_tokens: self.output,
            cost: self.cost,
        };
        (usage != Usage::default()).then_some(usage)
    }
}

fn add_count(
    total: Option<u64>,
    turn: Option<u64>,
    first: bool,
    known: bool,
) -> (Option<u64>, bool) {
    match turn {
        Some(n) if first || known => (Some(total.unwrap_or(0).saturating_add(n)), true),
        _ => (None, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: Option<u64>, output: Option<u64>) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            cost: None,
        }
    }

    #[test]
    fn one_silent_turn_makes_a_total_unknown_rather_than_smaller() {
        let mut sum = UsageSum::default();
        assert_eq!(sum.total(), None);
        sum.add(Some(&usage(Some(10), Some(2))));
        sum.add(Some(&usage(Some(5), Some(3))));
        assert_eq!(sum.total(), Some(usage(Some(15), Some(5))));
        sum.add(Some(&usage(Some(1), None)));
        assert_eq!(sum.total(), Some(usage(Some(16), None)));
        sum.add(None);
        assert_eq!(sum.total(), None);
        sum.add(Some(&usage(Some(1), Some(1))));
        assert_eq!(sum.total(), None, "an unknown stays unknown");
    }

    #[test]
    fn the_caption_names_model_time_tools_and_cost() {
        let meta = AnswerMeta {
            provider: "local".into(),
            model: "llama3.2".into(),
            duration: Duration::from_millis(1234),
            tool_calls: 2,
            usage: None,
            cost: "cost n/a".into(),
        };
        assert_eq!(meta.caption(), "llama3.2 · 1.2 s · 2 tools · cost n/a");
        assert_eq!(meta.to_json()["duration_ms"], 1234);
        assert_eq!(meta.to_json()["usage"], serde_json::Value::Null);
    }
}
