//! Reading a reply's usage object into [`Usage`], for Chat Completions and Responses alike.
//!
//! The fields read, and where each comes from:
//! - tokens: `prompt_tokens` / `completion_tokens` (Chat Completions) or `input_tokens` /
//!   `output_tokens` (Responses); cached input from `prompt_tokens_details.cached_tokens` or
//!   `input_tokens_details.cached_tokens`.
//! - dollars: `usage.cost`, or the `cost` OpenCode Zen's gateway puts beside `usage` at the
//!   top of the reply (a decimal string such as `"0.00380000"`); a number or a decimal string.
//! - xAI: `usage.cost_in_usd_ticks` (an integer, 10^10 per dollar) and
//!   `usage.server_side_tool_usage_details.web_search_calls` / `x_search_calls`.
//! - Workers AI: `usage.neurons`.
//!
//! Each field stands alone: a malformed value (negative, fractional where a count belongs,
//! text that is not a decimal) makes that field "not reported" and leaves the others alone.

use serde_json::Value;
use yetibot_conversation::{Amount, Usage};

/// The usage a reply body carries: its `usage` object, with the top-level `cost` when the
/// object has none of its own. `None` when the body reports neither.
pub(crate) fn of_body(body: &Value) -> Option<Usage> {
    read(body.get("usage"), body.get("cost"))
}

/// Reads a `usage` object (when it is one) and a `cost` found outside it. `None` when
/// neither is there; a usage object with no known field still yields an all-`None` usage,
/// which says "the provider answered with usage" without inventing any number.
pub(crate) fn read(usage: Option<&Value>, outer_cost: Option<&Value>) -> Option<Usage> {
    let usage = usage.filter(|u| u.is_object());
    let outer_cost = outer_cost.filter(|c| !c.is_null());
    if usage.is_none() && outer_cost.is_none() {
        return None;
    }
    let field = |path: &[&str]| {
        let mut value = usage?;
        for key in path {
            value = value.get(*key)?;
        }
        Some(value)
    };
    let count = |paths: &[&[&str]]| paths.iter().find_map(|p| field(p)?.as_u64());
    let inner_cost = field(&["cost"]).filter(|c| !c.is_null());
    let cost_usd = match (inner_cost, outer_cost) {
        (Some(inner), Some(outer)) => {
            // Two costs that disagree leave no way to tell which one was charged.
            let (inner, outer) = (dollars(inner), dollars(outer));
            if inner == outer { inner } else { None }
        }
        (Some(one), None) | (None, Some(one)) => dollars(one),
        (None, None) => None,
    };
    Some(Usage {
        input_tokens: count(&[&["prompt_tokens"], &["input_tokens"]]),
        cached_input_tokens: count(&[
            &["prompt_tokens_details", "cached_tokens"],
            &["input_tokens_details", "cached_tokens"],
        ]),
        output_tokens: count(&[&["completion_tokens"], &["output_tokens"]]),
        cost_usd,
        cost_usd_ticks: count(&[&["cost_in_usd_ticks"]]),
        neurons: field(&["neurons"]).and_then(number),
        web_search_calls: count(&[&["server_side_tool_usage_details", "web_search_calls"]]),
        x_search_calls: count(&[&["server_side_tool_usage_details", "x_search_calls"]]),
    })
}

/// Adds a `cost` that arrived in a later stream chunk than the usage object.
pub(crate) fn with_outer_cost(usage: Option<Usage>, cost: &Value) -> Option<Usage> {
    match usage {
        None => read(None, Some(cost)),
        Some(mut usage) => {
            let cost = dollars(cost);
            usage.cost_usd = match (usage.cost_usd, cost) {
                (Some(a), Some(b)) if a != b => None,
                (a, b) => a.or(b),
            };
            Some(usage)
        }
    }
}

/// A dollar amount written as a JSON number or as a decimal string.
fn dollars(value: &Value) -> Option<Amount> {
    match value {
        Value::String(text) => Amount::parse(text),
        other => number(other),
    }
}

/// A non-negative JSON number, exactly as its text reads.
fn number(value: &Value) -> Option<Amount> {
    match value {
        Value::Number(n) => Amount::parse(&n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn amount(text: &str) -> Option<Amount> {
        Some(Amount::parse(text).expect("a test amount"))
    }

    fn check(body: Value, expect: Option<Usage>) {
        assert_eq!(of_body(&body), expect, "{body}");
    }

    #[test]
    fn chat_completions_usage_with_cached_prompt_tokens() {
        check(
            json!({
                "choices": [],
                "usage": {
                    "prompt_tokens": 1234,
                    "completion_tokens": 96,
                    "total_tokens": 1330,
                    "prompt_tokens_details": {"cached_tokens": 1024, "audio_tokens": 0},
                    "completion_tokens_details": {"reasoning_tokens": 40}
                }
            }),
            Some(Usage {
                input_tokens: Some(1234),
                cached_input_tokens: Some(1024),
                output_tokens: Some(96),
                ..Usage::default()
            }),
        );
    }

    #[test]
    fn zen_cost_beside_the_usage_object_as_a_decimal_string() {
        // The shape OpenCode Zen's gateway returns for a request paid from credits: the
        // upstream usage object, and the charged dollars fixed to eight places at the top.
        check(
            json!({
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"},
                    "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 18, "completion_tokens": 96, "total_tokens": 114},
                "cost": "0.00380000"
            }),
            Some(Usage {
                input_tokens: Some(18),
                output_tokens: Some(96),
                cost_usd: amount("0.0038"),
                ..Usage::default()
            }),
        );
    }

    #[test]
    fn zen_cost_inside_the_usage_object() {
        check(
            json!({"usage": {"prompt_tokens": 18, "completion_tokens": 96, "cost": 0.0038}}),
            Some(Usage {
                input_tokens: Some(18),
                output_tokens: Some(96),
                cost_usd: amount("0.0038"),
                ..Usage::default()
            }),
        );
        check(
            json!({"usage": {"cost": "0.0038"}, "cost": "0.00380000"}),
            Some(Usage {
                cost_usd: amount("0.0038"),
                ..Usage::default()
            }),
        );
        // Two different costs for one reply: neither is trusted.
        check(
            json!({"usage": {"cost": "0.0038"}, "cost": "0.0040"}),
            Some(Usage::default()),
        );
        // A cost with no usage object still counts.
        check(
            json!({"cost": "0"}),
            Some(Usage {
                cost_usd: Some(Amount::ZERO),
                ..Usage::default()
            }),
        );
    }

    #[test]
    fn xai_responses_usage_with_ticks_cached_tokens_and_searches() {
        // Recorded from an xAI Responses reply to a Grok X-search request.
        check(
            json!({
                "status": "completed",
                "output": [],
                "usage": {
                    "input_tokens": 9212,
                    "input_tokens_details": {"cached_tokens": 3072},
                    "output_tokens": 3417,
                    "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": 12629,
                    "num_sources_used": 0,
                    "num_server_side_tools_used": 3,
                    "cost_in_usd_ticks": 318_319_000,
                    "server_side_tool_usage_details": {
                        "web_search_calls": 0,
                        "x_search_calls": 3,
                        "code_interpreter_calls": 0,
                        "file_search_calls": 0,
                        "mcp_calls": 0,
                        "document_search_calls": 0,
                        "image_generation_calls": 0
                    },
                    "context_details": {"input_tokens": 7622, "output_tokens": 3219}
                }
            }),
            Some(Usage {
                input_tokens: Some(9212),
                cached_input_tokens: Some(3072),
                output_tokens: Some(3417),
                cost_usd_ticks: Some(318_319_000),
                web_search_calls: Some(0),
                x_search_calls: Some(3),
                ..Usage::default()
            }),
        );
    }

    #[test]
    fn workers_ai_usage_with_neurons() {
        check(
            json!({"usage": {"prompt_tokens": 18, "completion_tokens": 96, "total_tokens": 114,
                "neurons": 2.78}}),
            Some(Usage {
                input_tokens: Some(18),
                output_tokens: Some(96),
                neurons: amount("2.78"),
                ..Usage::default()
            }),
        );
    }

    #[test]
    fn malformed_values_are_not_reported_and_leave_the_rest() {
        check(
            json!({"usage": {
                "prompt_tokens": -1,
                "input_tokens": 12,
                "completion_tokens": 2.5,
                "prompt_tokens_details": {"cached_tokens": "3"},
                "cost_in_usd_ticks": 37_756_000.5,
                "neurons": -2.78,
                "cost": "NaN",
                "server_side_tool_usage_details": {"web_search_calls": -1, "x_search_calls": 1}
            }}),
            Some(Usage {
                input_tokens: Some(12),
                x_search_calls: Some(1),
                ..Usage::default()
            }),
        );
        for cost in [
            json!("-0.01"),
            json!(-0.01),
            json!("0.01 USD"),
            json!(""),
            json!(true),
        ] {
            check(json!({"usage": {}, "cost": cost}), Some(Usage::default()));
        }
        check(
            json!({"usage": {"cost_in_usd_ticks": "37756000"}}),
            Some(Usage::default()),
        );
        check(
            json!({"usage": {"cost_in_usd_ticks": -37_756_000}}),
            Some(Usage::default()),
        );
    }

    #[test]
    fn no_usage_means_none_and_an_empty_object_means_nothing_reported() {
        check(json!({"choices": []}), None);
        check(json!({"usage": null, "cost": null}), None);
        check(json!({"usage": "lots"}), None);
        check(json!({"usage": {}}), Some(Usage::default()));
    }

    #[test]
    fn a_later_cost_joins_the_usage_seen_before() {
        let seen = of_body(&json!({"usage": {"prompt_tokens": 5, "completion_tokens": 1}}));
        let joined = with_outer_cost(seen, &json!("0.00010000")).expect("usage");
        assert_eq!(joined.cost_usd, amount("0.0001"));
        assert_eq!(joined.input_tokens, Some(5));
        let alone = with_outer_cost(None, &json!("0.5")).expect("usage");
        assert_eq!(alone.cost_usd, amount("0.5"));
        let clash = with_outer_cost(Some(joined), &json!("0.2")).expect("usage");
        assert_eq!(clash.cost_usd, None);
    }

    proptest! {
        #[test]
        fn reading_any_usage_shape_never_panics(
            prompt in any::<i64>(),
            cost in any::<f64>(),
            ticks in any::<i64>(),
            text in ".{0,24}",
        ) {
            let cost = serde_json::Number::from_f64(cost).map_or(Value::Null, Value::Number);
            let body = json!({"usage": {"prompt_tokens": prompt, "cost": cost,
                "cost_in_usd_ticks": ticks, "neurons": &text}, "cost": &text});
            let usage = of_body(&body).expect("a usage object");
            prop_assert_eq!(usage.input_tokens, u64::try_from(prompt).ok());
            prop_assert_eq!(usage.cost_usd_ticks, u64::try_from(ticks).ok());
            prop_assert_eq!(usage.neurons, None);
        }

        #[test]
        fn a_reported_decimal_cost_is_kept_exactly(units in any::<u32>(), places in 0u16..12) {
            let expect = Amount::new(u64::from(units), places).expect("in range");
            let body = json!({"usage": {}, "cost": expect.to_string()});
            prop_assert_eq!(of_body(&body).and_then(|u| u.cost_usd), Some(expect));
        }
    }
}
