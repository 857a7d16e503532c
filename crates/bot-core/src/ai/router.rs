//! The tool loop's executor: `yetibot/...` tools run here, every other tool goes to the
//! request's MCP session. Arguments reach each tool as the model's own text.

use yetibot_conversation::ToolId;
use yetibot_json_util::RandomSource;
use yetibot_mcp_host::{CallOutcome, Session};
use yetibot_redaction::Secrets;
use yetibot_tool_policy::{Arguments, Execution, ToolExecutor};

use crate::ai::delegate;
use crate::interpreter::Runner;
use crate::natives;

/// Routes one request's tool calls.
pub(crate) struct Router<'a> {
    pub(crate) runner: Runner<'a>,
    pub(crate) session: Option<&'a Session>,
    pub(crate) secrets: &'a Secrets,
    /// What the `ai` delegation tool checks its calls against.
    pub(crate) delegate: delegate::Scope<'a>,
}

/// The interpreter's random source, for `util`'s `random` and `shuffle`.
struct RunnerRandom<'a>(Runner<'a>);

impl RandomSource for RunnerRandom<'_> {
    fn index_below(&mut self, bound: usize) -> usize {
        self.0.random_index(bound)
    }
}

impl Router<'_> {
    async fn native(&self, name: &str, arguments: &str) -> Execution {
        let result = match name {
            "help" => {
                natives::help_tool(self.runner.registry(), arguments).map_err(|e| e.to_string())
            }
            "history" | "history_count" => match self.runner.history() {
                None => Err("history is disabled on this bot".to_owned()),
                Some(store) => {
                    let caller = self.runner.caller();
                    if name == "history" {
                        natives::history_tool(store, caller, arguments).await
                    } else {
                        natives::history_count_tool(store, caller, arguments).await
                    }
                    .map_err(|e| e.to_string())
                }
            },
            "release_info" => self.release_info(arguments).await,
            "util" => {
                let call = yetibot_json_util::Call::new(arguments);
                let reply =
                    yetibot_json_util::execute(&call, &mut RunnerRandom(self.runner), self.secrets);
                if reply.is_error() {
                    Err(reply.into_json())
                } else {
                    Ok(reply.into_json())
                }
            }
            "react" => return self.react(arguments).await,
            "ai" | "cf" => {
                let Some(tool) = delegate::Tool::of(name) else {
                    return Execution::ToolError("this tool is not available".to_owned());
                };
                return delegate::execute(&self.delegate, arguments, tool).await;
            }
            _ => Err("this tool is not available".to_owned()),
        };
        match result {
            Ok(text) => Execution::Success(text),
            Err(text) => Execution::ToolError(text),
        }
    }
}

impl Router<'_> {
    /// `release_info`: the bundled notes, or with `view: "latest"` the configured feed,
    /// fetched without credentials under the client's bounds.
    async fn release_info(&self, arguments: &str) -> Result<String, String> {
        let services = self.delegate.services;
        let request = natives::read_release(arguments).map_err(|e| e.to_string())?;
        if request.view == natives::ReleaseView::Bundled {
            return natives::release_info_tool(services.app_version(), arguments)
                .map_err(|e| e.to_string());
        }
        let Some(feed) = &services.release_feed else {
            return Err(natives::ReleaseToolError::NoFeed.to_string());
        };
        let body = services
            .client
            .fetch_document("the release feed", feed.url(), natives::MAX_FEED_BYTES)
            .await
            .map_err(|error| {
                use yetibot_ai_providers::Category;
                let reason = match error.category() {
                    Category::Timeout => "it timed out",
                    Category::Unreachable => "its host is unreachable",
                    Category::Redirect => "it answered with a redirect, which is not followed",
                    Category::TooLarge => "it is larger than 256 KiB",
                    Category::HttpStatus | Category::AccessDenied | Category::RateLimited => {
                        "it answered with an error status"
                    }
                    _ => "the request failed",
                };
                natives::ReleaseToolError::FeedUnavailable(reason).to_string()
            })?;
        natives::release_latest_tool(services.app_version(), arguments, &body)
            .map_err(|e| e.to_string())
    }
}

impl Router<'_> {
    /// `react`: through the request's platform, in its own channel or thread only. An
    /// unconfirmed reaction is an unknown outcome, never retried.
    async fn react(&self, arguments: &str) -> Execution {
        let reaction = match natives::react::read(arguments) {
            Ok(reaction) => reaction,
            Err(reason) => return Execution::ToolError(format!("invalid arguments: {reason}")),
        };
        let Some(platform) = self.runner.caller().platform.as_ref() else {
            return Execution::ToolError(
                "this request has no chat platform to react on".to_owned(),
            );
        };
        match platform
            .react(&reaction.emoji, reaction.message_id.as_deref())
            .await
        {
            Ok(()) => Execution::Success(
                serde_json::json!({"reacted": true, "emoji": reaction.emoji}).to_string(),
            ),
            Err(yetibot_chat_adapters::SendError::Unconfirmed(_)) => Execution::Unknown,
            Err(error) => Execution::ToolError(error.to_string()),
        }
    }
}

impl ToolExecutor for Router<'_> {
    fn check(&self, tool: &ToolId, arguments: &Arguments) -> bool {
        let raw = arguments.raw();
        if tool.is_native() {
            return match tool.name() {
                "help" => natives::help_arguments_ok(raw),
                "history" => natives::history_arguments_ok(raw),
                "history_count" => natives::history_count_arguments_ok(raw),
                "release_info" => natives::release_arguments_ok(raw),
                "react" => natives::react::read(raw).is_ok(),
                "util" => {
                    yetibot_json_util::preflight(&[yetibot_json_util::Call::new(raw)], self.secrets)
                        .is_ok()
                }
                name @ ("ai" | "cf") => delegate::Tool::of(name)
                    .is_some_and(|tool| delegate::check(&self.delegate, raw, tool)),
                _ => false,
            };
        }
        // MCP arguments are the server's to judge; preflight has already required one
        // strict JSON object within the size bound.
        self.session
            .is_some_and(|session| session.catalog().get(tool).is_some())
    }

    fn authorize(&self, _tool: &ToolId) -> bool {
        // No tool offered here has conditions beyond the toolset's, which the loop rechecks.
        true
    }

    async fn execute(&mut self, _call_id: &str, tool: &ToolId, arguments: &Arguments) -> Execution {
        if tool.is_native() {
            return self.native(tool.name(), arguments.raw()).await;
        }
        let Some(session) = self.session else {
            return Execution::ToolError("this tool is not available".to_owned());
        };
        match session.call(tool, arguments.raw()).await {
            Ok(CallOutcome::Success(output)) => {
                Execution::Success(output.untrusted_text().to_owned())
            }
            Ok(CallOutcome::ToolError(output)) => {
                Execution::ToolError(output.untrusted_text().to_owned())
            }
            Ok(CallOutcome::Unknown(_)) => Execution::Unknown,
            // Refused before anything was sent.
            Err(error) => Execution::ToolError(error.to_string()),
        }
    }
}
