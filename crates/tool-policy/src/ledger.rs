//! The record of every tool call of one request: ordinals, tools, outcomes and privacy-safe
//! argument views, plus the sanitized progress snapshot built from it.

use std::collections::HashSet;

use serde_json::Value;
use yetibot_conversation::ToolId;

use crate::arguments::{ActionKey, Arguments};
use crate::budget::CallBudget;

/// What happened to one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The tool confirmed a result.
    Success,
    /// The tool confirmed an error (`isError`).
    ToolError,
    /// The call was sent but its result is unknown (timeout, disconnect, malformed reply).
    Unconfirmed,
    /// Preflight refused the call's batch; it was never attempted.
    Refused,
    /// An earlier call of its batch had an unknown outcome; it was never attempted.
    Skipped,
}

impl Outcome {
    /// The trace's spelling.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::ToolError => "tool_error",
            Self::Unconfirmed => "attempted_unconfirmed",
            Self::Refused => "refused",
            Self::Skipped => "skipped",
        }
    }

    /// Whether the call was sent (and so spent budget).
    #[must_use]
    pub fn was_attempted(self) -> bool {
        matches!(self, Self::Success | Self::ToolError | Self::Unconfirmed)
    }
}

/// One recorded call.
#[derive(Debug, Clone, PartialEq)]
pub struct LedgerEntry {
    /// `#1`, `#2`, … in the order the model asked for the calls.
    pub ordinal: u32,
    /// The tool, when the model named an offered one; `None` withholds an invented name.
    pub tool: Option<ToolId>,
    /// What happened.
    pub outcome: Outcome,
    /// The privacy-safe view of the arguments (see [`crate::trace`]).
    pub arguments: Value,
}

/// Every call of one request, with the IDs and actions already seen.
#[derive(Debug, Clone, Default)]
pub struct Ledger {
    entries: Vec<LedgerEntry>,
    call_ids: HashSet<String>,
    actions: HashSet<(ToolId, ActionKey)>,
}

impl Ledger {
    /// The recorded calls in order.
    #[must_use]
    pub fn entries(&self) -> &[LedgerEntry] {
        &self.entries
    }

    /// Whether a call ID was already used in this request.
    #[must_use]
    pub fn has_call_id(&self, id: &str) -> bool {
        self.call_ids.contains(id)
    }

    /// Whether this tool was already attempted with the same action's arguments in this
    /// request (see [`Arguments::same_action`]).
    #[must_use]
    pub fn has_action(&self, tool: &ToolId, arguments: &Arguments) -> bool {
        self.actions
            .contains(&(tool.clone(), arguments.action().clone()))
    }

    /// Records a call. Call IDs are remembered whatever the outcome, so a refused batch's IDs
    /// cannot be replayed; actions only once attempted.
    pub(crate) fn record(
        &mut self,
        call_id: &str,
        tool: Option<ToolId>,
        action: Option<&Arguments>,
        outcome: Outcome,
        arguments: Value,
    ) -> u32 {
        let ordinal = u32::try_from(self.entries.len() + 1).unwrap_or(u32::MAX);
        self.call_ids.insert(call_id.to_owned());
        if let (Some(tool), Some(action)) = (&tool, action)
            && outcome.was_attempted()
        {
            self.actions.insert((tool.clone(), action.action().clone()));
        }
        self.entries.push(LedgerEntry {
            ordinal,
            tool,
            outcome,
            arguments,
        });
        ordinal
    }

    /// The sanitized snapshot for live status: tool IDs, outcomes and the budget only.
    #[must_use]
    pub fn progress(&self, budget: &CallBudget) -> Progress {
        Progress {
            total: budget.total(),
            used: budget.used(),
            remaining: budget.remaining(),
            calls: self
                .entries
                .iter()
                .map(|e| ProgressCall {
                    ordinal: e.ordinal,
                    tool: e.tool.as_ref().map(ToString::to_string),
                    outcome: e.outcome,
                })
                .collect(),
        }
    }
}

/// Live status of a tool loop. It holds no arguments, results, prompts or reasoning, so it is
/// safe to show while the request runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// Budget total.
    pub total: u8,
    /// Calls attempted.
    pub used: u8,
    /// Calls left.
    pub remaining: u8,
    /// Calls so far, in order.
    pub calls: Vec<ProgressCall>,
}

/// One call in a [`Progress`] snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgressCall {
    /// Its ordinal.
    pub ordinal: u32,
    /// `server/name`, or `None` when withheld.
    pub tool: Option<String>,
    /// What happened.
    pub outcome: Outcome,
}
