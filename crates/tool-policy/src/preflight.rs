//! Whole-batch preflight: every call a model returned in one response is checked before any
//! of them runs, and one bad call refuses the whole batch.

use std::collections::HashSet;

use yetibot_conversation::limits::MAX_ARGUMENT_CHARS;
use yetibot_conversation::{ToolCall, ToolId};

use crate::arguments::Arguments;
use crate::budget::CallBudget;
use crate::catalog::Catalog;
use crate::ledger::Ledger;
use crate::trace::Reason;

/// A call that passed preflight.
#[derive(Debug, Clone, PartialEq)]
pub struct PreparedCall {
    /// Position in its batch.
    pub index: usize,
    /// The tool it names.
    pub tool: ToolId,
    /// Its arguments: the model's text, read strictly.
    pub arguments: Arguments,
}

/// Why a batch was refused, and which call caused it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    /// What failed.
    pub reason: Reason,
    /// The first offending call's position in the batch (the batch length for a budget
    /// overshoot, which no single call causes).
    pub index: usize,
}

/// Checks a whole batch against the request's catalog, ledger and budget.
///
/// Arguments longer than [`MAX_ARGUMENT_CHARS`] characters are refused before they are read.
/// Arguments are read with `yetibot-json-util`'s strict reader: anything but one JSON object,
/// and any key given twice, is refused as invalid. A call repeats an action when the same
/// tool already ran, or appears earlier in the batch, with the same data (see
/// [`Arguments::same_action`]: key order, escapes and the spelling of equal numbers do not
/// count). `static_check` is the tool's own offline validation (argument types, fields,
/// bounds, credentials); it must not perform I/O.
///
/// # Errors
///
/// The first problem found, as a [`Refusal`]; then no call of the batch may run.
pub fn preflight(
    batch: &[ToolCall],
    catalog: &Catalog,
    ledger: &Ledger,
    budget: &CallBudget,
    static_check: &dyn Fn(&ToolId, &Arguments) -> bool,
) -> Result<Vec<PreparedCall>, Refusal> {
    let mut ids = HashSet::new();
    let mut actions = HashSet::new();
    let mut prepared = Vec::with_capacity(batch.len());
    for (index, call) in batch.iter().enumerate() {
        let refuse = |reason| Refusal { reason, index };
        let Some(tool) = catalog.resolve(&call.function_name) else {
            return Err(refuse(Reason::UnknownTool));
        };
        if call.id.is_empty() || !ids.insert(call.id.as_str()) || ledger.has_call_id(&call.id) {
            return Err(refuse(Reason::DuplicateCallId));
        }
        if call.arguments.chars().count() > MAX_ARGUMENT_CHARS {
            return Err(refuse(Reason::ArgumentsTooLong));
        }
        let arguments =
            Arguments::parse(&call.arguments).ok_or_else(|| refuse(Reason::InvalidArguments))?;
        if !static_check(tool.id(), &arguments) {
            return Err(refuse(Reason::InvalidArguments));
        }
        if ledger.has_action(tool.id(), &arguments)
            || !actions.insert((tool.id().clone(), arguments.action().clone()))
        {
            return Err(refuse(Reason::RepeatedAction));
        }
        prepared.push(PreparedCall {
            index,
            tool: tool.id().clone(),
            arguments,
        });
    }
    if batch.len() > usize::from(budget.remaining()) {
        return Err(Refusal {
            reason: Reason::OverBudget,
            index: batch.len(),
        });
    }
    Ok(prepared)
}
