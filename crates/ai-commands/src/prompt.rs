//! One AI prompt, start to answer: options, budget and piped data are read and checked
//! before anything else; then the route, the toolset's access rules, the provider's
//! credential, tool discovery, the tool loop and the answer with its metadata.

use yetibot_ai_providers::{Ending, Provider};
use yetibot_conversation::{Conversation, Message, ToolDefinition, ToolId};
use yetibot_mcp_host::Session;
use yetibot_tool_policy::{
    CallBudget, Catalog, LoopFailure, LoopSettings, RequestContext, Selection, check_tool_calling,
};

use crate::cost::{CostSource, CostTally};
use crate::flags::{self, Command};
use crate::free;
use crate::github::route;
use crate::meta::{AnswerMeta, UsageSum};
use crate::natives::{self, ToolContext};
use crate::offer::open_servers;
use crate::pinned::Pinned;
use crate::piped::Snapshot;
use crate::proposals::StagingSlot;
use crate::request::{
    PIPE_ONLY_PROMPT, RUNNER_INSTRUCTIONS, Static, cost_source, provenance, read_static,
    with_ending,
};
use crate::router::Router;
use crate::services::AiServices;
use crate::turn::ProviderTurn;
use yetibot_command::Call;
use yetibot_command::Outcome;

/// The longest chat message a failed tool loop's summary takes.
const FAILURE_SUMMARY_CHARS: usize = 1800;

/// Runs one prompt, in four steps: everything static is read and checked
/// ([`read_static`]), the request is planned (its route, the toolset's access, the cost
/// source: [`plan`]), its context is gathered (the credential, piped data, the thread, the
/// tools and their MCP session: [`gather`]), and the tool loop runs to the shaped answer
/// ([`answer`]). `typed` is the command's arguments as typed (piped text removed); `pinned`
/// is the provider the command always uses.
pub(crate) async fn run(
    services: &AiServices,
    call: &Call<'_>,
    typed: &str,
    command: Command,
    pinned: Option<&Pinned>,
) -> Outcome {
    let started = (services.clock)();
    let Static {
        options,
        budget,
        snapshot,
    } = match read_static(services, call, typed, command) {
        Ok(checked) => checked,
        Err(outcome) => return outcome,
    };
    if options.prompt.trim().is_empty() && snapshot.is_none() {
        return Outcome::error(
            "ask something: `ai <prompt>`, or pipe data into `ai` (see `help ai`)",
        );
    }
    let mut plan = match plan(
        services,
        call,
        &options,
        command,
        pinned,
        snapshot.is_some(),
    )
    .await
    {
        Ok(plan) => plan,
        Err(outcome) => return outcome,
    };
    // Finishes the message's code-work receipt however this request ends.
    let receipt = plan.receipt.take();
    let staging = match &plan.automatic {
        Some(work) => StagingSlot::automatic(work.staging.clone()),
        None => StagingSlot::default(),
    };
    let gathered = match gather(services, call, &plan, snapshot.as_ref(), command).await {
        Ok(gathered) => gathered,
        Err(outcome) => {
            if let Some(receipt) = receipt {
                let text = route::complete(services, None, false).await;
                receipt.finish(&text);
                return with_paragraph(outcome, &text);
            }
            return outcome;
        }
    };
    let Gathered {
        secrets,
        data_message,
        thread,
        stored_key,
        natives,
        session,
        mcp_tools,
    } = gathered;
    let outcome = answer(
        services,
        call,
        Request {
            options_prompt: &options.prompt,
            data_message,
            provider: plan.provider,
            model: &plan.route.model,
            context: &plan.context,
            selection: plan.selection,
            budget,
            natives,
            mcp_tools,
            session: session.as_ref(),
            secrets: &secrets,
            started,
            no_thread: options.no_thread,
            live: pinned.is_some_and(|pinned| pinned.interim_replies),
            tools_on: plan.tools_on,
            thread,
            stored_key,
            cost: plan.cost,
            staging: &staging,
        },
    )
    .await;
    if let Some(session) = session {
        session.close().await;
    }
    let mut outcome = outcome;
    if let Some(receipt) = receipt {
        let answered = matches!(outcome, Outcome::Answer { .. });
        let text = route::complete(services, staging.staged(), answered).await;
        receipt.finish(&text);
        outcome = with_paragraph(outcome, &text);
    }
    match plan.note {
        Some(note) => outcome.with_notes(vec![note]),
        None => outcome,
    }
}

/// `outcome` with `text` as a paragraph of its own after its text.
fn with_paragraph(outcome: Outcome, text: &str) -> Outcome {
    match outcome {
        Outcome::Answer {
            value: yetibot_json_util::Value::String(answer),
            meta,
        } => Outcome::Answer {
            value: yetibot_json_util::Value::String(format!("{answer}\n\n{text}")),
            meta,
        },
        Outcome::Error(message) => Outcome::Error(format!("{message}\n{text}")),
        Outcome::FailedWithData { message, data } => Outcome::FailedWithData {
            message: format!("{message}\n{text}"),
            data,
        },
        other => other,
    }
}

/// Where a prompt goes and what it may do there, decided before any credential is read.
pub(crate) struct Plan<'s> {
    /// The toolset the request runs under.
    selection: Selection<'s>,
    /// The provider and model.
    route: yetibot_ai_providers::Route,
    /// The routed provider.
    provider: &'s Provider,
    /// Who asks, of which provider and model: what the toolset's rules are checked against.
    context: RequestContext,
    /// Whether the request allows tools at all.
    tools_on: bool,
    /// How its usage is read for the cost label.
    cost: CostSource,
    /// Automatic code work, when intent routing chose it.
    automatic: Option<route::CodeWork>,
    /// Its message's receipt, finished however the request ends.
    receipt: Option<crate::github::guard::Receipt<'s>>,
    /// What routing has to tell the requester beside the answer.
    note: Option<String>,
}

/// Plans a prompt: the toolset, the route (a provider that stands in for a pinned one, the
/// router, or Zen's verified-free choice), the provider's tool calling when a toolset is
/// named, the toolset's access rules for the caller and route, and the cost source (a Zen
/// runtime default is used only while it is still free).
///
/// # Errors
///
/// The outcome to stop with; nothing has been sent and no credential read.
async fn plan<'s>(
    services: &'s AiServices,
    call: &Call<'_>,
    options: &flags::Options,
    command: Command,
    pinned: Option<&Pinned>,
    piped: bool,
) -> Result<Plan<'s>, Outcome> {
    let selection = Selection::choose(&services.policy, options.toolset.as_deref())
        .map_err(|error| Outcome::error(error.to_string()))?;
    let (route, chosen_free) = route(services, call, options, pinned, &selection).await?;
    let Some(provider) = services.provider(&route.provider) else {
        return Err(Outcome::error(format!(
            "no provider is named {}; `ai providers` lists them",
            route.provider
        )));
    };
    let context = RequestContext {
        provenance: provenance(call.runner.caller()),
        provider: route.provider.clone(),
        model: route.model.clone(),
    };
    let tools_on = !options.no_tools && command != Command::TextOnly;
    if tools_on {
        // A provider with tool calling off refuses a tool-enabled request before anything
        // is discovered or sent, rather than quietly answering without the tools.
        check_tool_calling(provider.tool_calling(), false)
            .map_err(|error| Outcome::error(error.to_string()))?;
    }
    // Intent routing: an eligible request is classified first, and code work runs under the
    // routing toolset (whose rules the request already passed).
    let mut selection = selection;
    let mut automatic = None;
    let mut receipt = None;
    let mut note = None;
    let eligible = pinned
        .is_none()
        .then(|| route::eligible(services, call, options, command, piped, &context))
        .flatten();
    if let Some(routing) = eligible {
        match route::route(services, call, routing, &options.prompt).await {
            route::Routed::Normal { note: said } => note = said,
            route::Routed::Reply(outcome) => return Err(outcome),
            route::Routed::Code(work) => {
                receipt = Some(crate::github::guard::Receipt::new(
                    services,
                    work.key.clone(),
                ));
                selection = Selection::choose(&services.policy, Some(&work.toolset))
                    .map_err(|error| Outcome::error(error.to_string()))?;
                automatic = Some(work);
            }
        }
    }
    selection
        .authorize(&context)
        .map_err(|error| Outcome::error(error.to_string()))?;
    // GitHub identity comes from the platform's own event of a new message: an edit, a
    // reaction or a rerun carries the author's ID but not their fresh intent.
    if selection.toolset().is_some_and(|t| t.kind.is_github()) {
        if !crate::proposals::is_original(call.runner.caller()) {
            return Err(Outcome::error(
                "GitHub toolsets take only a new message typed by an allowed user: an edited message, a reaction or a rerun cannot use them",
            ));
        }
        // Repository contents are private: nothing more of this request reaches the logs.
        yetibot_redaction::private::mark_private();
    }
    // A Zen runtime default is used only while it is still free; its catalog is read only
    // now that the static checks have passed.
    let cost = if chosen_free {
        free::free_cost_source(provider)
    } else {
        let pinned = pinned.map(|pinned| pinned.name);
        match free::recheck_runtime_default(services, options, pinned, &route, provider).await {
            Ok(true) => free::free_cost_source(provider),
            Ok(false) => cost_source(provider),
            Err(message) => return Err(Outcome::error(message)),
        }
    };
    Ok(Plan {
        selection,
        route,
        provider,
        context,
        tools_on,
        cost,
        automatic,
        receipt,
        note,
    })
}

/// The route of a prompt, and whether its model was chosen as verified free.
async fn route(
    services: &AiServices,
    call: &Call<'_>,
    options: &flags::Options,
    pinned: Option<&Pinned>,
    selection: &Selection<'_>,
) -> Result<(yetibot_ai_providers::Route, bool), Outcome> {
    // A provider that stands in for a name no configured provider has (Grok from the xAI
    // key) is routed here: it is not part of the configured set.
    let stand_in = pinned
        .map(|pinned| pinned.name)
        .or(options.provider.as_deref())
        .filter(|name| services.providers.get(name).is_none())
        .and_then(|name| services.provider(name));
    if let Some(provider) = stand_in {
        return match options.model.as_deref().or(provider.model()) {
            Some(model) => Ok((
                yetibot_ai_providers::Route {
                    provider: provider.name().to_owned(),
                    model: model.to_owned(),
                },
                false,
            )),
            None => Err(Outcome::error(format!(
                "provider {} has no default model; add --model ID",
                provider.name()
            ))),
        };
    }
    // `--model` alone, with catalogs that cannot settle its owner yet: read them now when
    // this program reads them on demand.
    if let (Some(model), None, None) = (
        options.model.as_deref(),
        options.provider.as_deref(),
        pinned,
    ) {
        services.settle_owner(model).await;
    }
    let routed = yetibot_ai_providers::route(
        &services.providers,
        &services.defaults,
        |model| services.owner_of(model),
        yetibot_ai_providers::RouteRequest {
            provider: options.provider.as_deref(),
            pinned: pinned.map(|pinned| pinned.name),
            model: options.model.as_deref(),
        },
    );
    match routed {
        Ok(route) => Ok((route, false)),
        // A Zen provider without a model anywhere: its verified-free choice.
        Err(yetibot_ai_providers::RouteError::NoModel(name))
            if services.providers.get(&name).is_some_and(free::is_zen) =>
        {
            let provenance = provenance(call.runner.caller());
            free::free_route(services, options, selection, &provenance, &name)
                .await
                .map_err(Outcome::error)
        }
        Err(yetibot_ai_providers::RouteError::UnknownProvider(_)) if pinned.is_some() => Err(
            Outcome::error(pinned.map_or_else(String::new, |p| p.missing.to_owned())),
        ),
        // Say which provider's catalog stands in the way, when one does.
        Err(error @ yetibot_ai_providers::RouteError::Uncertain { .. }) => {
            let unsettled = services.unsettled_providers();
            Err(Outcome::error(if unsettled.is_empty() {
                error.to_string()
            } else {
                format!(
                    "{error} (the model catalog of {} could not be read completely)",
                    unsettled.join(", ")
                )
            }))
        }
        Err(error) => Err(Outcome::error(error.to_string())),
    }
}

/// What a planned prompt carries to the model: the credentials its output is redacted of,
/// the piped data's message, the thread, and the tools it offers with their MCP session.
struct Gathered {
    secrets: yetibot_redaction::Secrets,
    data_message: Option<String>,
    thread: Vec<Message>,
    /// The app-side store's key for this thread, when the provider keeps one.
    stored_key: Option<String>,
    natives: Vec<ToolDefinition>,
    session: Option<Session>,
    mcp_tools: Vec<ToolId>,
}

/// Gathers a planned prompt's context: the provider's credential (resolved only now, so
/// its key joins the set every output of the request is redacted of), the piped data's
/// message, the thread the request came from (text-only commands never carry one; a thread
/// that cannot be read whole stops the request), and the native and MCP tools it offers.
///
/// # Errors
///
/// The outcome to stop with; nothing has been sent to the model.
async fn gather(
    services: &AiServices,
    call: &Call<'_>,
    plan: &Plan<'_>,
    snapshot: Option<&Snapshot>,
    command: Command,
) -> Result<Gathered, Outcome> {
    let provider = plan.provider;
    let secrets = services
        .client
        .request_secrets(provider)
        .await
        .map_err(|error| Outcome::error(error.user_message()))?;
    let data_message = snapshot
        .map(|s| s.data_message(&secrets))
        .transpose()
        .map_err(|error| Outcome::error(error.to_string()))?;
    let caller = call.runner.caller();
    let source = caller
        .platform
        .as_deref()
        .and_then(|platform| platform.thread())
        .filter(|_| command != Command::TextOnly);
    // A provider with `:thread-store` keeps each thread's conversation (tool calls and
    // results included) in the application; without a stored one, or on other providers,
    // the thread's text comes from the platform.
    let stored_key = source
        .filter(|_| provider.thread_store())
        .map(|thread| format!("{}:{}:{}", caller.adapter, caller.room, thread.key()));
    let stored = stored_key
        .as_deref()
        .and_then(|key| services.threads.get(key));
    let thread = match (stored, source) {
        (Some(stored), _) => stored,
        (None, Some(thread)) => thread
            .history()
            .await
            .and_then(|m| crate::thread::turns(&m))
            .map_err(|error| Outcome::error(error.to_string()))?,
        (None, None) => Vec::new(),
    };
    let offer_tools = plan.tools_on && provider.tool_calling();
    let history_on = call.runner.history().is_some();
    let natives: Vec<ToolDefinition> = if offer_tools {
        plan.selection
            .native_tools(
                &plan.context,
                &natives::configured_services(services, call.runner.caller()),
            )
            .into_iter()
            .filter_map(|tool| natives::native(tool.name())?.definition(history_on))
            .collect()
    } else {
        Vec::new()
    };
    let (session, mcp_tools) = if offer_tools {
        match open_servers(services, &plan.selection, natives.len()).await {
            Ok(Some((session, offered))) => (Some(session), offered),
            Ok(None) => (None, Vec::new()),
            Err(message) => return Err(Outcome::error(message)),
        }
    } else {
        (None, Vec::new())
    };
    Ok(Gathered {
        secrets,
        data_message,
        thread,
        stored_key,
        natives,
        session,
        mcp_tools,
    })
}

/// The parts of a prepared request the answer needs.
struct Request<'r> {
    options_prompt: &'r str,
    data_message: Option<String>,
    provider: &'r yetibot_ai_providers::Provider,
    model: &'r str,
    context: &'r RequestContext,
    selection: Selection<'r>,
    budget: CallBudget,
    natives: Vec<ToolDefinition>,
    mcp_tools: Vec<ToolId>,
    session: Option<&'r Session>,
    secrets: &'r yetibot_redaction::Secrets,
    started: tokio::time::Instant,
    no_thread: bool,
    /// Whether completed messages that come with tool calls go to a live adapter at once
    /// (`grok`).
    live: bool,
    tools_on: bool,
    thread: Vec<Message>,
    /// The app-side store's key for this thread, when the provider keeps one.
    stored_key: Option<String>,
    cost: CostSource,
    /// The request's one staging, manual or automatic.
    staging: &'r StagingSlot,
}

/// Builds the catalog and conversation, runs the tool loop and shapes the answer.
async fn answer(services: &AiServices, call: &Call<'_>, mut request: Request<'_>) -> Outcome {
    let mut definitions = std::mem::take(&mut request.natives);
    if let Some(session) = request.session {
        // A tool whose schema broke the bounds has none to offer and is left out.
        definitions.extend(request.mcp_tools.iter().filter_map(|id| {
            let tool = session.catalog().get(id)?;
            Some(ToolDefinition::new(
                id.clone(),
                tool.description(),
                tool.input_schema()?.clone(),
            ))
        }));
    }
    let catalog = match Catalog::new(definitions) {
        Ok(catalog) => catalog,
        Err(error) => return Outcome::error(error.to_string()),
    };
    let mut messages = vec![Message::System(RUNNER_INSTRUCTIONS.to_owned())];
    messages.extend(std::mem::take(&mut request.thread));
    if let Some(data) = request.data_message.take() {
        messages.push(Message::User(data));
    }
    let prompt = if request.options_prompt.trim().is_empty() {
        PIPE_ONLY_PROMPT
    } else {
        request.options_prompt
    };
    messages.push(Message::User(prompt.to_owned()));
    if request.stored_key.is_some() {
        // A stored thread is resent trimmed to the context window: the configured one, else
        // the one the model listing reports; a quarter (at most 8,192 tokens) is left for
        // the answer and the tool definitions.
        let window = match request.provider.context_length() {
            Some(window) => Some(window),
            None => services
                .client
                .context_window(request.provider, request.model)
                .await
                .ok()
                .flatten(),
        };
        if let Some(window) = window {
            let reserve = (window / 4).min(8192);
            messages = crate::thread::trim(messages, window.saturating_sub(reserve));
        }
    }
    let mut conversation = Conversation { messages };
    let mut model = ProviderTurn {
        client: &services.client,
        provider: request.provider,
        model: request.model,
        // Every turn is capped, so runaway text ends at the provider's limit.
        max_output_tokens: Some(request.provider.max_output_tokens()),
        tools_on: request.tools_on,
        catalog_empty: catalog.is_empty(),
        usage: UsageSum::default(),
        cost: CostTally::new(request.cost),
        ending: Ending::Complete,
        live: call
            .runner
            .caller()
            .platform
            .as_deref()
            .filter(|platform| request.live && platform.shows_interim())
            .map(|platform| (platform, request.secrets)),
        live_text: call
            .runner
            .caller()
            .platform
            .as_deref()
            .filter(|platform| call.runner.answers_caller() && platform.shows_live_text())
            .map(|platform| (platform, request.secrets)),
    };
    let mut router = Router {
        natives: ToolContext {
            runner: call.runner,
            secrets: request.secrets,
            delegate: crate::delegate::Scope {
                services,
                selection: request.selection,
                context: request.context,
                // The runtime default is changed only by an admin's own direct request,
                // never by an `ai` that piped data (or anything generated) reaches.
                admin: call.runner.is_admin() && call.runner.is_direct(),
                secrets: request.secrets,
            },
            session: request.session,
            staging: request.staging,
        },
    };
    let context = request.context.clone();
    let access = move || context.clone();
    let settings = LoopSettings {
        catalog: &catalog,
        budget: request.budget,
        selection: request.selection,
        access: &access,
        secrets: request.secrets,
        prompt,
    };
    let platform = call.runner.caller().platform.clone();
    let publish = move |progress: &yetibot_tool_policy::Progress| {
        if let Some(platform) = &platform {
            platform.report(&crate::turn::progress_report(progress));
        }
    };
    let result = yetibot_tool_policy::run(
        &mut model,
        &mut router,
        &mut conversation,
        settings,
        publish,
    )
    .await;
    let ran = Ran {
        usage: model.usage,
        cost: model.cost,
        ending: model.ending,
        conversation,
    };
    shape(services, &request, ran, result)
}

/// What the loop leaves besides its result: the usage and cost of its turns and the whole
/// conversation.
struct Ran {
    usage: UsageSum,
    cost: CostTally,
    ending: Ending,
    conversation: Conversation,
}

/// Shapes the loop's end into the command's outcome: the redacted answer with its metadata
/// (and, for a provider that keeps threads, the exchange stored for the thread's next
/// prompt), or the failure's message with its bounded, redacted trace as data.
fn shape(
    services: &AiServices,
    request: &Request<'_>,
    ran: Ran,
    result: Result<yetibot_tool_policy::Answer, LoopFailure<yetibot_ai_providers::Error>>,
) -> Outcome {
    match result {
        Ok(answer) => {
            let text = request.secrets.redact_text(answer.text.trim());
            let mut text = with_ending(text.into_owned(), ran.ending);
            if let Some(id) = request
                .staging
                .staged()
                .filter(|_| request.staging.automatic.is_none())
            {
                // The host's own word on what was staged, whatever the model wrote.
                text.push_str(&format!(
                    "\n\nProposal {id} is staged; nothing has been pushed. Review every page with `ai proposal {id}` (then `ai proposal {id} 2`, ...), then `ai approve {id}` within 10 minutes, or `ai cancel {id}`."
                ));
            }
            let text = std::borrow::Cow::<str>::Owned(text);
            let meta = AnswerMeta {
                provider: request.provider.name().to_owned(),
                model: request.model.to_owned(),
                duration: (services.clock)().duration_since(request.started),
                tool_calls: answer.budget.used(),
                tokens: ran.usage.total(),
                cost: ran.cost.label(),
                no_thread: request.no_thread,
                finish: ran.ending,
            };
            if let Some(key) = &request.stored_key {
                // The next prompt in this thread resends this exchange, tool calls and
                // results included (the host instructions are added anew each time).
                let mut kept: Vec<Message> = ran
                    .conversation
                    .messages
                    .into_iter()
                    .skip_while(|m| matches!(m, Message::System(_)))
                    .collect();
                kept.push(Message::Assistant {
                    text: text.clone().into_owned(),
                    calls: Vec::new(),
                    opaque: Vec::new(),
                });
                services.threads.put(key.clone(), kept);
            }
            Outcome::Answer {
                value: yetibot_json_util::Value::String(text.into_owned()),
                meta: Box::new(meta.into()),
            }
        }
        Err(LoopFailure { trace, model_error }) => {
            // The model's error alone when it failed before any call; the trace whenever
            // calls were made or refused.
            let mut parts = Vec::new();
            if let Some(error) = model_error {
                parts.push(error.user_message());
            }
            if !trace.calls.is_empty() || parts.is_empty() {
                parts.push(trace.chat_summary(FAILURE_SUMMARY_CHARS));
            }
            let message = request.secrets.redact_text(&parts.join("\n")).into_owned();
            // The trace is built redacted and bounded; it is the failure's structured data.
            Outcome::FailedWithData {
                message,
                data: crate::request::to_value(&request.secrets.redact_json(&trace.to_json())),
            }
        }
    }
}
