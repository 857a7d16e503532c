//! A scripted model and a scripted executor: deterministic peers for the loop.

use std::collections::VecDeque;

use serde_json::json;
use yetibot_tool_policy::{
    AccessState, Arguments, BudgetGuidance, CallBudget, Catalog, Conversation, Execution,
    KnownNames, LoopFailure, LoopSettings, ModelResponse, ModelTurn, PolicyConfig, Progress,
    Provenance, RequestContext, Selection, ToolCall, ToolDefinition, ToolExecutor, ToolId,
    ToolPolicy,
};

/// The model's error in tests.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("the provider is unreachable")]
pub(crate) struct Unreachable;

/// What one scripted turn returns.
#[derive(Debug, Clone)]
pub(crate) enum Turn {
    Respond(ModelResponse),
    Fail,
}

/// Replays responses in order; answers "done" once the script runs out.
#[derive(Default)]
pub(crate) struct ScriptedModel {
    pub(crate) script: VecDeque<Turn>,
    /// Per turn: the function names offered and the guidance given.
    pub(crate) seen: Vec<(Vec<String>, Option<BudgetGuidance>)>,
}

impl ScriptedModel {
    pub(crate) fn new(turns: Vec<Turn>) -> Self {
        Self {
            script: turns.into(),
            seen: Vec::new(),
        }
    }
}

impl ModelTurn for ScriptedModel {
    type Error = Unreachable;

    async fn turn(
        &mut self,
        _conversation: &Conversation,
        tools: &[ToolDefinition],
        guidance: Option<BudgetGuidance>,
    ) -> Result<ModelResponse, Unreachable> {
        self.seen.push((
            tools.iter().map(|t| t.function_name().to_owned()).collect(),
            guidance,
        ));
        match self.script.pop_front() {
            Some(Turn::Respond(response)) => Ok(response),
            Some(Turn::Fail) => Err(Unreachable),
            None => Ok(ModelResponse {
                text: "done".into(),
                ..ModelResponse::default()
            }),
        }
    }
}

/// Executes by a rule per tool name; records every execution.
pub(crate) struct ScriptedExecutor {
    /// Outcome per call ID; `Success("ok:<id>")` when absent.
    pub(crate) outcomes: Vec<(String, Execution)>,
    /// Tools whose static check fails.
    pub(crate) invalid: Vec<String>,
    /// Tools refused at execution time.
    pub(crate) forbidden: Vec<String>,
    /// (call ID, tool, raw arguments) of every execution, in order.
    pub(crate) executed: Vec<(String, ToolId, String)>,
    /// Runs after each execution with its call ID and `forbidden`: a change to shared state
    /// between one execution and the next.
    pub(crate) after: Option<AfterHook>,
}

/// See [`ScriptedExecutor::after`].
pub(crate) type AfterHook = Box<dyn FnMut(&str, &mut Vec<String>) + Send>;

impl ScriptedExecutor {
    pub(crate) fn new() -> Self {
        Self {
            outcomes: Vec::new(),
            invalid: Vec::new(),
            forbidden: Vec::new(),
            executed: Vec::new(),
            after: None,
        }
    }

    pub(crate) fn after(
        mut self,
        hook: impl FnMut(&str, &mut Vec<String>) + Send + 'static,
    ) -> Self {
        self.after = Some(Box::new(hook));
        self
    }

    pub(crate) fn with(mut self, call_id: &str, execution: Execution) -> Self {
        self.outcomes.push((call_id.to_owned(), execution));
        self
    }
}

impl ToolExecutor for ScriptedExecutor {
    fn check(&self, tool: &ToolId, _arguments: &Arguments) -> bool {
        !self.invalid.iter().any(|t| t == tool.name())
    }

    fn authorize(&self, tool: &ToolId) -> bool {
        !self.forbidden.iter().any(|t| t == tool.name())
    }

    async fn execute(&mut self, call_id: &str, tool: &ToolId, arguments: &Arguments) -> Execution {
        self.executed
            .push((call_id.to_owned(), tool.clone(), arguments.raw().to_owned()));
        if let Some(hook) = &mut self.after {
            hook(call_id, &mut self.forbidden);
        }
        self.outcomes
            .iter()
            .find(|(id, _)| id == call_id)
            .map_or_else(
                || Execution::Success(format!("ok:{call_id}")),
                |(_, e)| e.clone(),
            )
    }
}

/// A catalog of `web/search`, `web/fetch` and `yetibot/history`.
pub(crate) fn catalog() -> Catalog {
    let spec = |source: &str, name: &str| {
        ToolDefinition::new(
            ToolId::new(source, name),
            format!("{name} tool"),
            json!({"type": "object"}),
        )
    };
    Catalog::new(vec![
        spec("yetibot", "history"),
        spec("web", "search"),
        spec("web", "fetch"),
    ])
    .expect("catalog")
}

pub(crate) fn call(id: &str, function: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        function_name: function.into(),
        arguments: arguments.into(),
    }
}

pub(crate) fn calls(list: &[ToolCall]) -> Turn {
    Turn::Respond(ModelResponse {
        text: String::new(),
        calls: list.to_vec(),
        opaque: Vec::new(),
    })
}

pub(crate) fn answer(text: &str) -> Turn {
    Turn::Respond(ModelResponse {
        text: text.into(),
        ..ModelResponse::default()
    })
}

/// The legacy flat scope (no toolsets) with the specification's native tools registered.
pub(crate) fn legacy_policy() -> ToolPolicy {
    let natives = crate::specified_native_tools();
    let known = KnownNames {
        native_tools: &natives,
        ..KnownNames::default()
    };
    ToolPolicy::from_config(&PolicyConfig::default(), &known).expect("valid policy")
}

pub(crate) fn request() -> RequestContext {
    RequestContext {
        provenance: Provenance::trusted(yetibot_tool_policy::AdapterKind::Slack, "U1")
            .expect("a nonblank ID"),
        provider: "local".into(),
        model: "m".into(),
    }
}

/// Everything one loop run produced.
pub(crate) struct Run {
    pub(crate) result: Result<yetibot_tool_policy::Answer, LoopFailure<Unreachable>>,
    pub(crate) model: ScriptedModel,
    pub(crate) executor: ScriptedExecutor,
    pub(crate) conversation: Conversation,
    pub(crate) progress: Vec<Progress>,
}

pub(crate) fn run_loop(
    turns: Vec<Turn>,
    executor: ScriptedExecutor,
    budget: u8,
    secrets: &yetibot_redaction::Secrets,
    prompt: &str,
) -> Run {
    let catalog = catalog();
    run_with_catalog(&catalog, turns, executor, budget, secrets, prompt)
}

pub(crate) fn run_with_catalog(
    catalog: &Catalog,
    turns: Vec<Turn>,
    executor: ScriptedExecutor,
    budget: u8,
    secrets: &yetibot_redaction::Secrets,
    prompt: &str,
) -> Run {
    let fixed = request();
    let access = move || fixed.clone();
    let legacy = legacy_policy();
    drive(
        LoopSettings {
            catalog,
            budget: CallBudget::with_total(budget),
            selection: Selection::choose(&legacy, None).expect("legacy"),
            access: &access,
            secrets,
            prompt,
        },
        turns,
        executor,
    )
}

/// Runs the standard catalog with a budget of 6 under `selection`, reading the request's
/// context from `access` before each execution.
pub(crate) fn run_scoped(
    selection: Selection<'_>,
    access: &dyn AccessState,
    turns: Vec<Turn>,
    executor: ScriptedExecutor,
) -> Run {
    let catalog = catalog();
    let secrets = yetibot_redaction::Secrets::empty();
    drive(
        LoopSettings {
            catalog: &catalog,
            budget: CallBudget::with_total(6),
            selection,
            access,
            secrets: &secrets,
            prompt: "p",
        },
        turns,
        executor,
    )
}

fn drive(settings: LoopSettings<'_>, turns: Vec<Turn>, mut executor: ScriptedExecutor) -> Run {
    let mut model = ScriptedModel::new(turns);
    let mut conversation = Conversation::default();
    let mut progress = Vec::new();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let future = yetibot_tool_policy::run(
        &mut model,
        &mut executor,
        &mut conversation,
        settings,
        |p: &Progress| progress.push(p.clone()),
    );
    assert_send(&future);
    let result = runtime.block_on(future);
    Run {
        result,
        model,
        executor,
        conversation,
        progress,
    }
}

/// The loop's future can move to another thread (a multi-threaded runtime's task).
fn assert_send<T: Send>(_: &T) {}
