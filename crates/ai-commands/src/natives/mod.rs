//! The native tools this bot offers models, as one table: each entry holds a tool's name,
//! the kind the tool policy's rules read, and, for the tools this build runs, the
//! description and schema a model is offered, its static argument check and its run
//! function. Adding a tool is adding an entry; nothing else names it.

mod help;
mod history;
mod react;
mod release;

pub use help::{HelpToolError, MAX_HELP_CHARS, MAX_HELP_TOPICS, help_tool};
pub use history::{
    DEFAULT_HISTORY_LIMIT, HistoryToolError, MAX_HISTORY_LIMIT, MAX_HISTORY_PAGE_CHARS,
    MAX_HISTORY_QUERY_CHARS, history_count_tool, history_tool,
};
pub use release::{
    MAX_FEED_BYTES, MAX_FEED_NOTE_CHARS, MAX_FEED_NOTES_PER_RELEASE, MAX_FEED_RELEASES,
    MAX_FEED_TITLE_CHARS, MAX_RELEASE_NOTES, RELEASE_NOTES_JSON, ReleaseNote, ReleaseToolError,
    parse_feed, release_info_tool, release_latest_tool, release_notes,
};

use futures_util::future::BoxFuture;
use yetibot_command::{Caller, Runner};
use yetibot_conversation::{AdapterKind, ToolDefinition};
use yetibot_json_util::RandomSource;
use yetibot_redaction::Secrets;
use yetibot_tool_policy::NativeKind::{
    self, Computation, Context, GithubStaging, PlatformAction, Service,
};
use yetibot_tool_policy::{Execution, NativeServices, NativeTool};

use crate::clef::{self, wire::Model};
use crate::delegate;
use crate::gi;
use crate::github;
use crate::meme;
use crate::services::AiServices;
use crate::wise;

/// What a native tool runs with: the interpreter's services for the caller, the request's
/// credentials (everything a tool returns is redacted of them), and what the delegation
/// tools check their calls against.
pub(crate) struct ToolContext<'a> {
    pub(crate) runner: Runner<'a>,
    pub(crate) secrets: &'a Secrets,
    pub(crate) delegate: delegate::Scope<'a>,
    /// The request's MCP session, when it connects servers.
    pub(crate) session: Option<&'a yetibot_mcp_host::Session>,
    /// The proposal this request may stage (one per request), and how.
    pub(crate) staging: &'a crate::proposals::StagingSlot,
}

/// A native tool's static argument check: no I/O, so a whole batch is checked before any
/// call runs.
type Check = fn(&ToolContext<'_>, &str) -> bool;
/// A native tool's run: the model's own argument text in, a closed outcome out.
type Run = for<'c, 'd> fn(&'c ToolContext<'d>, &'c str) -> BoxFuture<'c, Execution>;

/// One native tool.
pub(crate) struct Native {
    /// Its name under the `yetibot` source.
    pub(crate) name: &'static str,
    /// What the tool policy's rules read.
    pub(crate) kind: NativeKind,
    /// What this build runs of it; `None` for a tool of the specification registered with
    /// the policy (so toolsets may name it) but not offered yet.
    pub(crate) offered: Option<Offered>,
}

/// How a tool this build runs is offered and run.
pub(crate) struct Offered {
    /// What a model is told it does.
    description: &'static str,
    /// Its argument schema.
    schema: fn() -> serde_json::Value,
    /// Offered only where the bot keeps chat history.
    needs_history: bool,
    /// For a service tool, whether its service is configured (and, for `wise`, whether
    /// its own policy admits this caller's chat).
    configured: fn(&AiServices, &Caller) -> bool,
    check: Check,
    run: Run,
}

/// Every native tool of the specification, in the order they are offered: the context
/// tools GitHub toolsets may get, the `util` JSON tool, the tools backed by a configured
/// service, and Discord's `react`.
pub(crate) const NATIVES: &[Native] = &[
    Native {
        name: "help",
        kind: Context,
        offered: Some(Offered {
            description: help::DESCRIPTION,
            schema: help::schema,
            needs_history: false,
            configured: always,
            check: |_, arguments| help::help_arguments_ok(arguments),
            run: |tool, arguments| {
                let result = help_tool(tool.runner.registry(), arguments);
                Box::pin(std::future::ready(finished(result)))
            },
        }),
    },
    Native {
        name: "history",
        kind: Context,
        offered: Some(Offered {
            description: history::HISTORY_DESCRIPTION,
            schema: history::history_schema,
            needs_history: true,
            configured: always,
            check: |_, arguments| history::history_arguments_ok(arguments),
            run: |tool, arguments| {
                Box::pin(async move {
                    let Some(store) = tool.runner.history() else {
                        return Execution::ToolError("history is disabled on this bot".to_owned());
                    };
                    finished(history_tool(store, tool.runner.caller(), arguments).await)
                })
            },
        }),
    },
    Native {
        name: "history_count",
        kind: Context,
        offered: Some(Offered {
            description: history::COUNT_DESCRIPTION,
            schema: history::count_schema,
            needs_history: true,
            configured: always,
            check: |_, arguments| history::history_count_arguments_ok(arguments),
            run: |tool, arguments| {
                Box::pin(async move {
                    let Some(store) = tool.runner.history() else {
                        return Execution::ToolError("history is disabled on this bot".to_owned());
                    };
                    finished(history_count_tool(store, tool.runner.caller(), arguments).await)
                })
            },
        }),
    },
    Native {
        name: "release_info",
        kind: Context,
        offered: Some(Offered {
            description: release::DESCRIPTION,
            schema: release::schema,
            needs_history: false,
            configured: always,
            check: |_, arguments| release::release_arguments_ok(arguments),
            run: |tool, arguments| {
                Box::pin(
                    async move { finished(release::run(tool.delegate.services, arguments).await) },
                )
            },
        }),
    },
    Native {
        name: "stage_changes",
        kind: GithubStaging,
        offered: Some(Offered {
            description: github::stage::DESCRIPTION,
            schema: github::stage::schema,
            needs_history: false,
            configured: always,
            check: |tool, arguments| {
                github::stage::arguments_ok(
                    tool.delegate.selection.toolset(),
                    tool.secrets,
                    arguments,
                )
            },
            run: |tool, arguments| {
                let request = github::stage::Request {
                    services: tool.delegate.services,
                    toolset: tool.delegate.selection.toolset(),
                    caller: tool.runner.caller(),
                    provider: &tool.delegate.context.provider,
                    model: &tool.delegate.context.model,
                    secrets: tool.secrets,
                    session: tool.session,
                    staging: tool.staging,
                };
                Box::pin(github::stage::run(request, arguments))
            },
        }),
    },
    Native {
        name: "util",
        kind: Computation,
        offered: Some(Offered {
            description: yetibot_json_util::TOOL_DESCRIPTION,
            schema: yetibot_json_util::tool_schema,
            needs_history: false,
            configured: always,
            check: |tool, arguments| {
                yetibot_json_util::preflight(
                    &[yetibot_json_util::Call::new(arguments)],
                    tool.secrets,
                )
                .is_ok()
            },
            run: |tool, arguments| {
                let call = yetibot_json_util::Call::new(arguments);
                let reply =
                    yetibot_json_util::execute(&call, &mut RunnerRandom(tool.runner), tool.secrets);
                let execution = if reply.is_error() {
                    Execution::ToolError(reply.into_json())
                } else {
                    Execution::Success(reply.into_json())
                };
                Box::pin(std::future::ready(execution))
            },
        }),
    },
    Native {
        name: "meme",
        kind: Service,
        offered: Some(Offered {
            description: meme::tool::DESCRIPTION,
            schema: meme::tool::schema,
            needs_history: false,
            configured: |services, _| services.imgflip.is_some(),
            check: |tool, arguments| meme::tool::read(arguments, tool.secrets).is_ok(),
            run: |tool, arguments| {
                Box::pin(meme::tool::run(
                    tool.delegate.services,
                    arguments,
                    tool.secrets,
                ))
            },
        }),
    },
    Native {
        name: "gi",
        kind: Service,
        offered: Some(Offered {
            description: gi::tool::DESCRIPTION,
            schema: gi::tool::schema,
            needs_history: false,
            configured: |services, _| services.xai.is_some(),
            check: |tool, arguments| gi::tool::read(arguments, tool.secrets).is_ok(),
            run: |tool, arguments| {
                Box::pin(gi::tool::run(
                    tool.delegate.services,
                    tool.runner,
                    arguments,
                    tool.secrets,
                ))
            },
        }),
    },
    Native {
        name: "clef",
        kind: Service,
        offered: Some(Offered {
            description: clef::tool::CLEF_DESCRIPTION,
            schema: clef::tool::clef_schema,
            needs_history: false,
            configured: |services, _| services.workers.is_some(),
            check: |tool, arguments| clef::tool::read(Model::Clef, arguments, tool.secrets).is_ok(),
            run: |tool, arguments| {
                Box::pin(clef::tool::run(
                    tool.delegate.services,
                    tool.runner.caller(),
                    Model::Clef,
                    arguments,
                    tool.secrets,
                ))
            },
        }),
    },
    Native {
        name: "clairic",
        kind: Service,
        offered: Some(Offered {
            description: clef::tool::CLAIRIC_DESCRIPTION,
            schema: clef::tool::clairic_schema,
            needs_history: false,
            configured: |services, _| services.workers.is_some(),
            check: |tool, arguments| {
                clef::tool::read(Model::Clairic, arguments, tool.secrets).is_ok()
            },
            run: |tool, arguments| {
                Box::pin(clef::tool::run(
                    tool.delegate.services,
                    tool.runner.caller(),
                    Model::Clairic,
                    arguments,
                    tool.secrets,
                ))
            },
        }),
    },
    Native {
        name: "ai",
        kind: Service,
        offered: Some(Offered {
            description: delegate::DESCRIPTION,
            schema: delegate::schema,
            needs_history: false,
            configured: |services, _| !services.providers().is_empty(),
            check: |tool, arguments| delegate::check(&tool.delegate, arguments, delegate::Tool::Ai),
            run: |tool, arguments| {
                Box::pin(delegate::execute(
                    &tool.delegate,
                    arguments,
                    delegate::Tool::Ai,
                ))
            },
        }),
    },
    Native {
        name: "cf",
        kind: Service,
        offered: Some(Offered {
            description: delegate::CF_DESCRIPTION,
            schema: delegate::cf_schema,
            needs_history: false,
            configured: |services, _| crate::cf::workers_ai(services).is_some(),
            check: |tool, arguments| delegate::check(&tool.delegate, arguments, delegate::Tool::Cf),
            run: |tool, arguments| {
                Box::pin(delegate::execute(
                    &tool.delegate,
                    arguments,
                    delegate::Tool::Cf,
                ))
            },
        }),
    },
    Native {
        name: "wise",
        kind: Service,
        offered: Some(Offered {
            description: wise::tool::DESCRIPTION,
            schema: wise::tool::schema,
            needs_history: false,
            // Wise's own policy: configured, and this chat allowed, whatever the toolset.
            configured: |services, caller| {
                services
                    .wise
                    .as_ref()
                    .is_some_and(|account| account.allows(caller))
            },
            check: |_, arguments| wise::tool::read(arguments).is_ok(),
            run: |tool, arguments| {
                Box::pin(wise::tool::run(
                    tool.delegate.services,
                    tool.runner.caller(),
                    arguments,
                ))
            },
        }),
    },
    Native {
        name: "react",
        kind: PlatformAction(AdapterKind::Discord),
        offered: Some(Offered {
            description: react::DESCRIPTION,
            schema: react::schema,
            needs_history: false,
            configured: always,
            check: |_, arguments| react::read(arguments).is_ok(),
            run: |tool, arguments| Box::pin(react::run(tool.runner, arguments)),
        }),
    },
];

/// The native tools, as the tool policy registers them (every tool of the specification,
/// so toolsets may name any of them).
#[must_use]
pub fn native_tools() -> Vec<NativeTool> {
    NATIVES
        .iter()
        .map(|native| NativeTool::new(native.name, native.kind))
        .collect()
}

/// The entry of the native tool `name`.
pub(crate) fn native(name: &str) -> Option<&'static Native> {
    NATIVES.iter().find(|native| native.name == name)
}

impl Native {
    /// The definition a model is offered (description and argument schema), when this build
    /// runs the tool and, for a tool over chat history, the bot keeps history.
    pub(crate) fn definition(&self, history_on: bool) -> Option<ToolDefinition> {
        let offered = self.offered.as_ref()?;
        if offered.needs_history && !history_on {
            return None;
        }
        Some(
            NativeTool::new(self.name, self.kind)
                .definition(offered.description, (offered.schema)()),
        )
    }

    /// Whether a call's arguments pass the tool's static rules.
    pub(crate) fn check(&self, tool: &ToolContext<'_>, arguments: &str) -> bool {
        self.offered
            .as_ref()
            .is_some_and(|offered| (offered.check)(tool, arguments))
    }

    /// Whether the tool may still run for this request: its service configured and, for a
    /// tool with its own policy (`wise`), the caller admitted. Asked again right before each
    /// call, whatever the toolset.
    pub(crate) fn admits(&self, tool: &ToolContext<'_>) -> bool {
        self.offered.as_ref().is_some_and(|offered| {
            (offered.configured)(tool.delegate.services, tool.runner.caller())
        })
    }

    /// Runs one call.
    pub(crate) async fn run(&self, tool: &ToolContext<'_>, arguments: &str) -> Execution {
        match &self.offered {
            Some(offered) => (offered.run)(tool, arguments).await,
            None => Execution::ToolError("this tool is not available".to_owned()),
        }
    }
}

/// The service tools whose services `services` has configured for `caller`, for the tool
/// policy.
pub(crate) fn configured_services(services: &AiServices, caller: &Caller) -> NativeServices {
    let configured = NATIVES
        .iter()
        .filter(|native| native.kind == Service)
        .filter(|native| {
            native
                .offered
                .as_ref()
                .is_some_and(|offered| (offered.configured)(services, caller))
        })
        .map(|native| native.name.to_owned())
        .collect();
    NativeServices { configured }
}

/// For tools that need no service.
fn always(_: &AiServices, _: &Caller) -> bool {
    true
}

/// A tool's own result as the loop takes it: its text, or its error's safe message.
fn finished<E: std::fmt::Display>(result: Result<String, E>) -> Execution {
    match result {
        Ok(text) => Execution::Success(text),
        Err(error) => Execution::ToolError(error.to_string()),
    }
}

/// The interpreter's random source, for `util`'s `random` and `shuffle`.
struct RunnerRandom<'a>(Runner<'a>);

impl RandomSource for RunnerRandom<'_> {
    fn index_below(&mut self, bound: usize) -> usize {
        self.0.random_index(bound)
    }
}
