//! Privacy-safe views of tool arguments and the bounded failure trace built from the ledger.
//!
//! Privacy wins over fidelity: an argument view keeps only selector keys with short,
//! identifier-like strings (`action`, `operation`, `view`, ...), integer pagination keys
//! (`limit`, `after`, `before_id`, ...) and booleans. Everything else (prompts, queries,
//! inputs, captions, amounts, paths, nested data) is withheld and only counted, and what is
//! kept is checked against the configured credentials and the user's prompt, including
//! their JSON-escaped forms.

use serde_json::{Map, Value, json};
use yetibot_redaction::Secrets;

use crate::budget::CallBudget;
use crate::ledger::{Ledger, LedgerEntry};

/// Rows in a trace at most.
pub const MAX_TRACE_ROWS: usize = 40;
/// A trace's serialized UTF-8 JSON stays below this many bytes.
pub const MAX_TRACE_BYTES: usize = 12 * 1024;
/// One argument view's serialized UTF-8 JSON bytes at most.
pub const MAX_VIEW_BYTES: usize = 768;
/// Keys kept in one argument view at most.
pub const MAX_VIEW_ENTRIES: usize = 16;

/// Keys whose short identifier-like string values are safe to show.
const SELECTOR_KEYS: &[&str] = &[
    "action",
    "operation",
    "view",
    "kind",
    "category",
    "provider",
    "model",
    "server",
    "tool",
    "topic",
    "interface",
    "type",
    "format",
    "sort",
    "order",
    "direction",
    "mode",
];
/// Keys whose integer values are safe to show.
const PAGINATION_KEYS: &[&str] = &[
    "limit",
    "after",
    "before_id",
    "next_after",
    "page",
    "offset",
    "count",
    "start",
    "end",
    "step",
    "max_output_tokens",
    "max_results",
    "num_results",
];
/// Longest selector string kept.
const MAX_SELECTOR_CHARS: usize = 64;

/// What a view must never show besides what its allowlist already excludes.
#[derive(Debug, Clone)]
pub struct Privacy {
    secrets: Secrets,
    prompt: Secrets,
}

impl Privacy {
    /// Hides `secrets` and copies of `prompt` (the user's request text).
    #[must_use]
    pub fn new(secrets: &Secrets, prompt: &str) -> Self {
        // A prompt too short for the redaction set is also too short to be worth hiding.
        let prompt = Secrets::new([prompt]).unwrap_or_default();
        Self {
            secrets: secrets.clone(),
            prompt,
        }
    }

    fn hides(&self, text: &str) -> bool {
        self.secrets.contains_secret(text) || self.prompt.contains_secret(text)
    }

    /// The view of a call's raw argument string: an object with the safe keys, plus
    /// `"withheld": N` for the keys left out. Unparseable arguments show as withheld.
    #[must_use]
    pub fn argument_view(&self, raw: &str) -> Value {
        match serde_json::from_str::<Value>(raw) {
            Ok(Value::Object(map)) => self.view_of(&map),
            _ => json!({ "withheld": "arguments" }),
        }
    }

    /// The view of parsed arguments.
    #[must_use]
    pub fn view_of(&self, arguments: &Map<String, Value>) -> Value {
        let mut out = Map::new();
        let mut withheld = 0usize;
        for (key, value) in arguments {
            let keep = out.len() < MAX_VIEW_ENTRIES
                && !self.hides(key)
                && match value {
                    Value::Bool(_) => true,
                    Value::Number(n) => {
                        PAGINATION_KEYS.contains(&key.as_str()) && (n.is_i64() || n.is_u64())
                    }
                    Value::String(s) => {
                        SELECTOR_KEYS.contains(&key.as_str())
                            && s.chars().count() <= MAX_SELECTOR_CHARS
                            && s.chars()
                                .all(|c| c.is_ascii_alphanumeric() || "_.:/@+-".contains(c))
                            && !self.hides(s)
                    }
                    _ => false,
                };
            if keep {
                out.insert(key.clone(), value.clone());
            } else {
                withheld += 1;
            }
        }
        if withheld > 0 {
            out.insert("withheld".to_owned(), json!(withheld));
        }
        let mut view = Value::Object(out);
        if serialized_len(&view) > MAX_VIEW_BYTES {
            view = json!({ "withheld": arguments.len() });
        }
        view
    }
}

/// Why a tool loop failed. A closed set, so callers and tests can rely on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// A call named a tool that was not offered.
    UnknownTool,
    /// A call's arguments were not one strict JSON object (a key given twice counts) or
    /// failed the tool's static checks.
    InvalidArguments,
    /// A call's arguments exceeded 16,384 characters.
    ArgumentsTooLong,
    /// A call had no ID, or reused one from this batch or request.
    DuplicateCallId,
    /// A call repeated an action already taken in this request.
    RepeatedAction,
    /// The batch asked for more calls than the budget has left.
    OverBudget,
    /// Access was denied when rechecked before execution.
    Unauthorized,
    /// The model asked for tools after tools were turned off and gave no answer.
    ToolsDisabled,
    /// The model request failed.
    ModelFailed,
}

impl Reason {
    /// The trace's spelling.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UnknownTool => "unknown_tool",
            Self::InvalidArguments => "invalid_arguments",
            Self::ArgumentsTooLong => "arguments_too_long",
            Self::DuplicateCallId => "duplicate_call_id",
            Self::RepeatedAction => "repeated_action",
            Self::OverBudget => "over_budget",
            Self::Unauthorized => "unauthorized",
            Self::ToolsDisabled => "tools_disabled",
            Self::ModelFailed => "model_failed",
        }
    }

    /// A short sentence for the chat summary.
    #[must_use]
    pub fn user_message(self) -> &'static str {
        match self {
            Self::UnknownTool => "the model asked for a tool it was not offered",
            Self::InvalidArguments => "the model sent invalid tool arguments",
            Self::ArgumentsTooLong => "the model sent tool arguments over 16,384 characters",
            Self::DuplicateCallId => "the model reused a tool call ID",
            Self::RepeatedAction => "the model repeated a tool call it had already made",
            Self::OverBudget => "the model asked for more tool calls than the budget allows",
            Self::Unauthorized => "access to a tool was denied",
            Self::ToolsDisabled => "the model kept asking for tools after they were turned off",
            Self::ModelFailed => "the model request failed",
        }
    }
}

/// The bounded, redacted report of a failed tool loop.
#[derive(Debug, Clone, PartialEq)]
pub struct FailureTrace {
    /// Why it failed.
    pub reason: Reason,
    /// Budget total.
    pub total: u8,
    /// Calls attempted.
    pub used: u8,
    /// Calls left.
    pub remaining: u8,
    /// Size of the batch that failed, if a batch was involved.
    pub requested: usize,
    /// The calls, in order (at most [`MAX_TRACE_ROWS`]).
    pub calls: Vec<LedgerEntry>,
    /// Calls left out of `calls`.
    pub omitted: usize,
    /// Whether argument views were dropped to fit [`MAX_TRACE_BYTES`].
    pub truncated: bool,
}

impl FailureTrace {
    /// Builds the trace from the ledger, applying every bound.
    #[must_use]
    pub fn new(reason: Reason, budget: &CallBudget, requested: usize, ledger: &Ledger) -> Self {
        let entries = ledger.entries();
        let shown = entries.len().min(MAX_TRACE_ROWS);
        let mut trace = Self {
            reason,
            total: budget.total(),
            used: budget.used(),
            remaining: budget.remaining(),
            requested,
            calls: entries[..shown].to_vec(),
            omitted: entries.len() - shown,
            truncated: false,
        };
        // Drop argument views from the end, then rows, until the JSON fits.
        let mut i = trace.calls.len();
        while serialized_len(&trace.to_json()) >= MAX_TRACE_BYTES {
            if i > 0 {
                i -= 1;
                trace.calls[i].arguments = json!({ "withheld": "trace size" });
                trace.truncated = true;
            } else if trace.calls.pop().is_some() {
                trace.omitted += 1;
                trace.truncated = true;
            } else {
                break;
            }
        }
        trace
    }

    /// The structured form: `{"isError": true, "tool-trace": {...}}`.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let calls: Vec<Value> = self
            .calls
            .iter()
            .map(|c| {
                json!({
                    "call": format!("#{}", c.ordinal),
                    "tool": c.tool.as_ref().map_or_else(|| Value::String("[withheld]".into()), |t| Value::String(t.to_string())),
                    "outcome": c.outcome.as_str(),
                    "arguments": c.arguments,
                })
            })
            .collect();
        json!({
            "isError": true,
            "tool-trace": {
                "reason": self.reason.as_str(),
                "budget": {
                    "total": self.total,
                    "used": self.used,
                    "remaining": self.remaining,
                    "requested": self.requested,
                },
                "calls": calls,
                "omitted": self.omitted,
                "truncated": self.truncated,
            }
        })
    }

    /// A chat message of at most `max_chars` characters. Rows that do not fit are counted
    /// and referred to the structured data; a shortened report never claims to be complete.
    #[must_use]
    pub fn chat_summary(&self, max_chars: usize) -> String {
        let mut text = format!(
            "Tool calls stopped: {}. Budget {} of {} used, {} left",
            self.reason.user_message(),
            self.used,
            self.total,
            self.remaining
        );
        if self.requested > 0 {
            text.push_str(&format!("; the last batch asked for {}", self.requested));
        }
        text.push('.');
        let mut left_out = self.omitted;
        let mut rows = Vec::new();
        for call in &self.calls {
            rows.push(format!(
                "#{} {}: {}",
                call.ordinal,
                call.tool
                    .as_ref()
                    .map_or_else(|| "[withheld]".to_owned(), ToString::to_string),
                call.outcome.as_str()
            ));
        }
        let notice = |n: usize| {
            format!("\n(Partial list: {n} more call(s) are only in the structured trace.)")
        };
        let mut body = text;
        for (i, row) in rows.iter().enumerate() {
            let remaining_rows = rows.len() - i - 1 + left_out;
            let reserve = if remaining_rows > 0 || self.truncated {
                notice(rows.len() + left_out).chars().count()
            } else {
                0
            };
            if body.chars().count() + 1 + row.chars().count() + reserve > max_chars {
                left_out += rows.len() - i;
                break;
            }
            body.push('\n');
            body.push_str(row);
        }
        if left_out > 0 {
            body.push_str(&notice(left_out));
        } else if self.truncated {
            body.push_str("\n(Shortened: some argument details are only summarized.)");
        }
        if body.chars().count() > max_chars {
            body = body
                .chars()
                .take(max_chars.saturating_sub(1))
                .collect::<String>()
                + "…";
        }
        body
    }
}

/// Redacts a tool result for the model and shortens it to `max_chars` characters.
#[must_use]
pub fn bound_result(secrets: &Secrets, text: &str, max_chars: usize) -> String {
    let redacted = secrets.redact_text(text);
    if redacted.chars().count() <= max_chars {
        return redacted.into_owned();
    }
    let marker = " [truncated]";
    let keep = max_chars.saturating_sub(marker.chars().count());
    let mut out: String = redacted.chars().take(keep).collect();
    // Cutting can split a marker or escape; redact once more so no partial secret remains
    // recognisable, then append the notice.
    if secrets.contains_secret(&out) {
        out = secrets.redact_text(&out).into_owned();
    }
    out.push_str(marker);
    out
}

fn serialized_len(value: &Value) -> usize {
    serde_json::to_string(value).map_or(usize::MAX, |s| s.len())
}
