//! The tool loop: model turn, whole-batch preflight, execution within budget, next turn.
//!
//! It is generic over two traits so that it knows no provider and no MCP: [`ModelTurn`]
//! sends the conversation and the offered tools to a model and returns its completed
//! response; [`ToolExecutor`] validates arguments offline and executes calls.

use std::future::Future;

use yetibot_conversation::limits::MAX_RESULT_CHARS;
use yetibot_conversation::{Conversation, Message, ModelResponse, ToolDefinition, ToolId};
use yetibot_redaction::Secrets;

use crate::access::{RequestContext, Selection};
use crate::arguments::Arguments;
use crate::budget::CallBudget;
use crate::catalog::Catalog;
use crate::ledger::{Ledger, Outcome, Progress};
use crate::preflight::preflight;
use crate::trace::{FailureTrace, Privacy, Reason, bound_result};

/// Budget figures a turn is told about, so the model can plan within them. This is advice;
/// preflight enforces the budget regardless.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetGuidance {
    /// Calls allowed in total.
    pub total: u8,
    /// Calls made so far.
    pub used: u8,
    /// Calls left for the next batch and any after it.
    pub remaining: u8,
}

/// One model request per call: the conversation so far, the tools offered (empty on a final
/// turn) and budget guidance when tools are offered.
pub trait ModelTurn {
    /// Why a turn failed. Its `Display` must be safe to show (no body, headers or keys).
    type Error: std::error::Error + Send;

    /// Sends one turn and waits for the completed response.
    fn turn(
        &mut self,
        conversation: &Conversation,
        tools: &[ToolDefinition],
        guidance: Option<BudgetGuidance>,
    ) -> impl Future<Output = Result<ModelResponse, Self::Error>> + Send;
}

/// What an execution produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Execution {
    /// A confirmed result.
    Success(String),
    /// A confirmed tool error.
    ToolError(String),
    /// Sent, but the result is unknown. Never retried.
    Unknown,
}

/// Validates and executes calls of the tools it provides.
pub trait ToolExecutor {
    /// Offline checks of one call's arguments. No I/O: it runs for the whole batch before any
    /// call executes.
    fn check(&self, tool: &ToolId, arguments: &Arguments) -> bool;

    /// Tool-specific authorization just before execution (admin status, chat allowlists).
    fn authorize(&self, tool: &ToolId) -> bool;

    /// Executes one call. `call_id` is the provider's ID for it, for correlation only. Send
    /// the tool [`Arguments::raw`], the model's own text.
    fn execute(
        &mut self,
        call_id: &str,
        tool: &ToolId,
        arguments: &Arguments,
    ) -> impl Future<Output = Execution> + Send;
}

/// The caller's live view of what access decisions depend on. The loop asks it again just
/// before every execution, so that a change made while the model was thinking (the runtime
/// default reset, the selection re-pinned, a shared policy swapped) refuses the call instead
/// of running it on the facts the catalog was built from.
///
/// Any `Fn() -> RequestContext + Sync` closure is one, typically reading shared state.
pub trait AccessState: Sync {
    /// The request's context as it stands now.
    fn current(&self) -> RequestContext;
}

impl<F> AccessState for F
where
    F: Fn() -> RequestContext + Sync,
{
    fn current(&self) -> RequestContext {
        self()
    }
}

/// Everything the loop needs besides the two traits.
#[derive(Clone, Copy)]
pub struct LoopSettings<'a> {
    /// The policy-filtered tools of this request.
    pub catalog: &'a Catalog,
    /// The request's budget.
    pub budget: CallBudget,
    /// The toolset scope, rechecked before each execution.
    pub selection: Selection<'a>,
    /// Where the request's current context is read for those rechecks.
    pub access: &'a dyn AccessState,
    /// Configured credentials, removed from results and traces.
    pub secrets: &'a Secrets,
    /// The user's prompt, kept out of traces.
    pub prompt: &'a str,
}

impl std::fmt::Debug for LoopSettings<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The prompt is left out: Debug output ends up in logs.
        f.debug_struct("LoopSettings")
            .field("catalog", self.catalog)
            .field("budget", &self.budget)
            .field("selection", &self.selection)
            .field("secrets", self.secrets)
            .finish_non_exhaustive()
    }
}

/// A finished loop.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The model's final text.
    pub text: String,
    /// Every call made.
    pub ledger: Ledger,
    /// The budget as spent.
    pub budget: CallBudget,
}

/// A failed loop: the safe trace, and the model error when a turn failed.
#[derive(Debug)]
pub struct LoopFailure<E> {
    /// The bounded, redacted report.
    pub trace: FailureTrace,
    /// The model's error, for [`Reason::ModelFailed`].
    pub model_error: Option<E>,
}

/// Runs the loop until the model answers without calls.
///
/// Each turn with tools offered carries budget guidance. A batch is preflighted whole and
/// refused whole; an unknown outcome skips the rest of its batch and turns tools off; once
/// tools are off or the budget is spent, the next turn is sent without tool definitions, and
/// no extra closing turn is added. `progress` sees a sanitized snapshot after every change.
///
/// Just before each execution the loop reads [`LoopSettings::access`] again and rechecks the
/// toolset's identity and model rules, the availability of a native tool, the executor's
/// [`ToolExecutor::authorize`] and the remaining budget. A call that fails any of them does
/// not run, nor do the rest of its batch; the loop ends with [`Reason::Unauthorized`] (or
/// [`Reason::OverBudget`]) and a trace that records them as refused.
///
/// # Errors
///
/// A [`LoopFailure`] with the trace of every call so far.
pub async fn run<M, X, P>(
    model: &mut M,
    executor: &mut X,
    conversation: &mut Conversation,
    settings: LoopSettings<'_>,
    mut progress: P,
) -> Result<Answer, LoopFailure<M::Error>>
where
    M: ModelTurn + Send,
    X: ToolExecutor + Send,
    P: FnMut(&Progress) + Send,
{
    let privacy = Privacy::new(settings.secrets, settings.prompt);
    let mut budget = settings.budget;
    let mut ledger = Ledger::default();
    let mut tools_on = !settings.catalog.is_empty();
    loop {
        let offer = tools_on && budget.remaining() > 0;
        let tools = if offer {
            settings.catalog.definitions()
        } else {
            &[]
        };
        let guidance = offer.then(|| BudgetGuidance {
            total: budget.total(),
            used: budget.used(),
            remaining: budget.remaining(),
        });
        let response = match model.turn(conversation, tools, guidance).await {
            Ok(response) => response,
            Err(error) => {
                return Err(LoopFailure {
                    trace: FailureTrace::new(Reason::ModelFailed, &budget, 0, &ledger),
                    model_error: Some(error),
                });
            }
        };
        if response.calls.is_empty() {
            return Ok(Answer {
                text: response.text,
                ledger,
                budget,
            });
        }
        let batch = response.calls.clone();
        let refuse_all = |ledger: &mut Ledger, reason: Reason, budget: &CallBudget| {
            for call in &batch {
                let tool = settings
                    .catalog
                    .resolve(&call.function_name)
                    .map(|t| t.id().clone());
                ledger.record(
                    &call.id,
                    tool,
                    None,
                    Outcome::Refused,
                    privacy.argument_view(&call.arguments),
                );
            }
            FailureTrace::new(reason, budget, batch.len(), ledger)
        };
        if !offer {
            // The final turn offered no tools. Keep a text answer; refuse the calls either way.
            let trace = refuse_all(&mut ledger, Reason::ToolsDisabled, &budget);
            progress(&ledger.progress(&budget));
            if response.text.trim().is_empty() {
                return Err(LoopFailure {
                    trace,
                    model_error: None,
                });
            }
            return Ok(Answer {
                text: response.text,
                ledger,
                budget,
            });
        }
        // The closure borrows the executor; scoped so that no shared borrow is held across
        // an await, which would require the executor to be `Sync` for the future to be `Send`.
        let checked = {
            let check = |tool: &ToolId, arguments: &Arguments| executor.check(tool, arguments);
            preflight(&batch, settings.catalog, &ledger, &budget, &check)
        };
        let prepared = match checked {
            Ok(prepared) => prepared,
            Err(refusal) => {
                let trace = refuse_all(&mut ledger, refusal.reason, &budget);
                progress(&ledger.progress(&budget));
                return Err(LoopFailure {
                    trace,
                    model_error: None,
                });
            }
        };
        conversation.messages.push(response.into());
        let mut stopped = false;
        for call in prepared {
            let raw = &batch[call.index];
            let view = privacy.view_of(call.arguments.object());
            if stopped {
                ledger.record(&raw.id, Some(call.tool), None, Outcome::Skipped, view);
                push_result(
                    conversation,
                    &raw.id,
                    "Skipped: an earlier call's outcome is unknown, so the rest of the batch did not run.",
                    true,
                );
                continue;
            }
            if let Err(reason) = recheck(&settings, executor, &budget, &call.tool) {
                // Nothing ran for this call; later calls of the batch do not run either.
                ledger.record(&raw.id, Some(call.tool), None, Outcome::Refused, view);
                for later in &batch[call.index + 1..] {
                    let tool = settings
                        .catalog
                        .resolve(&later.function_name)
                        .map(|t| t.id().clone());
                    ledger.record(
                        &later.id,
                        tool,
                        None,
                        Outcome::Refused,
                        privacy.argument_view(&later.arguments),
                    );
                }
                progress(&ledger.progress(&budget));
                return Err(LoopFailure {
                    trace: FailureTrace::new(reason, &budget, batch.len(), &ledger),
                    model_error: None,
                });
            }
            budget.spend();
            let execution = executor.execute(&raw.id, &call.tool, &call.arguments).await;
            let (outcome, content, is_error) = match execution {
                Execution::Success(text) => (
                    Outcome::Success,
                    bound_result(settings.secrets, &text, MAX_RESULT_CHARS),
                    false,
                ),
                Execution::ToolError(text) => (
                    Outcome::ToolError,
                    bound_result(settings.secrets, &text, MAX_RESULT_CHARS),
                    true,
                ),
                Execution::Unknown => {
                    stopped = true;
                    tools_on = false;
                    (
                        Outcome::Unconfirmed,
                        "Outcome unknown: the call was sent but not confirmed. It will not be retried, and tools are now off for this request.".to_owned(),
                        true,
                    )
                }
            };
            ledger.record(
                &raw.id,
                Some(call.tool),
                Some(&call.arguments),
                outcome,
                view,
            );
            push_result(conversation, &raw.id, &content, is_error);
            progress(&ledger.progress(&budget));
        }
    }
}

/// Checks, just before one execution, everything that may have changed since the catalog
/// was built and the batch passed preflight: the toolset's identity and model rules against
/// the caller's current context, a native tool's availability in that context, the tool's
/// own authorization, and the budget.
fn recheck<X: ToolExecutor>(
    settings: &LoopSettings<'_>,
    executor: &X,
    budget: &CallBudget,
    tool: &ToolId,
) -> Result<(), Reason> {
    let now = settings.access.current();
    if settings.selection.authorize(&now).is_err()
        || (tool.is_native() && !settings.selection.allows_native(&now, tool.name()))
        || !executor.authorize(tool)
    {
        return Err(Reason::Unauthorized);
    }
    if budget.remaining() == 0 {
        return Err(Reason::OverBudget);
    }
    Ok(())
}

fn push_result(conversation: &mut Conversation, call_id: &str, content: &str, is_error: bool) {
    conversation.messages.push(Message::ToolResult {
        call_id: call_id.to_owned(),
        content: content.to_owned(),
        is_error,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ToolPolicy;
    use yetibot_conversation::{AdapterKind, Provenance};

    struct Allow(bool);

    impl ToolExecutor for Allow {
        fn check(&self, _: &ToolId, _: &Arguments) -> bool {
            true
        }
        fn authorize(&self, _: &ToolId) -> bool {
            self.0
        }
        async fn execute(&mut self, _: &str, _: &ToolId, _: &Arguments) -> Execution {
            Execution::Success(String::new())
        }
    }

    #[test]
    fn a_spent_budget_refuses_an_execution_that_passed_preflight() {
        let tool = ToolId::new("web", "search");
        let catalog = Catalog::new(vec![ToolDefinition::new(
            tool.clone(),
            "",
            serde_json::json!({"type": "object"}),
        )])
        .unwrap();
        let request = || RequestContext {
            provenance: Provenance::trusted(AdapterKind::Slack, "U1").unwrap(),
            provider: "p".into(),
            model: "m".into(),
        };
        let secrets = Secrets::empty();
        let legacy = ToolPolicy::default();
        let settings = LoopSettings {
            catalog: &catalog,
            budget: CallBudget::with_total(1),
            selection: Selection::choose(&legacy, None).unwrap(),
            access: &request,
            secrets: &secrets,
            prompt: "",
        };
        let mut budget = CallBudget::with_total(1);
        assert_eq!(recheck(&settings, &Allow(true), &budget, &tool), Ok(()));
        assert_eq!(
            recheck(&settings, &Allow(false), &budget, &tool),
            Err(Reason::Unauthorized)
        );
        budget.spend();
        assert_eq!(
            recheck(&settings, &Allow(true), &budget, &tool),
            Err(Reason::OverBudget)
        );
        assert!(format!("{settings:?}").starts_with("LoopSettings"));
    }
}
