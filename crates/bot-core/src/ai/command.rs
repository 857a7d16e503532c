//! The `ai` command: its listings (`providers`, `models`, `servers`, `tools`, `toolsets`),
//! the runtime default (`default`) and prompts.

use std::sync::Arc;

use crate::ai::flags::Command;
use crate::ai::services::{AiServices, GROK_PROVIDER};
use crate::ai::{cf, listing, prompt, zen};
use crate::registry::{BoxFuture, Call, Category, CommandSpec, Handler};
use crate::value::Outcome;

/// The AI commands (`ai`, `grok`, `cf`, `zen`) over these services, to add to the interpreter's registry.
#[must_use]
pub fn commands(services: Arc<AiServices>) -> Vec<CommandSpec> {
    let cf = cf::spec(Arc::clone(&services));
    let zen = zen::spec(Arc::clone(&services));
    let ai = Ai { services };
    let spec = CommandSpec::new("ai", &[Category::Ai])
        .route(
            Some("^providers$"),
            "ai providers # list the configured AI providers",
            ai.clone(),
        )
        .route(
            Some(r"^models(\s+\S+)?$"),
            "ai models [<provider>] # list every provider's models, or one provider's",
            ai.clone(),
        )
        .route(
            Some("^servers$"),
            "ai servers # list the configured MCP servers",
            ai.clone(),
        )
        .route(
            Some(r"^tools(\s.*)?$"),
            "ai tools [<server> | <server/tool> | <tool>] # list the tools a prompt may use, or one tool's help",
            ai.clone(),
        )
        .route(
            Some("^toolsets$"),
            "ai toolsets # list the named toolsets",
            ai.clone(),
        )
        .route(
            Some(r"^default(\s.*)?$"),
            "ai default [<provider> <model> | reset] # show, set or reset the runtime AI default (admins set it)",
            ai.clone(),
        )
        .route(
            None,
            "ai [--provider <name>] [--model <id>] [--toolset <name>] [--no-tools] [--max-tool-calls <n>] [--] <prompt> # ask a model",
            ai.clone(),
        );
    let grok = CommandSpec::new("grok", &[Category::Ai]).route(
        None,
        "grok [--model <id>] [--toolset <name>] [--no-tools] [--no-thread] [--max-tool-calls <n>] [--] <prompt> # ask Grok, with web and X search",
        Grok(ai),
    );
    vec![spec, grok, cf, zen]
}

/// The `grok` handler: prompts pinned to the provider named `grok` (or the xAI key's).
struct Grok(Ai);

impl Handler for Grok {
    fn run<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let typed = call.typed_args();
            prompt::run(
                &self.0.services,
                &call,
                typed,
                Command::Grok,
                Some(GROK_PROVIDER),
            )
            .await
        })
    }
}

/// The `ai` handler. Every route runs it: it reads the arguments the caller typed (without
/// piped text) itself, so that piped text never selects a sub-command.
#[derive(Clone)]
struct Ai {
    services: Arc<AiServices>,
}

impl Handler for Ai {
    fn run<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let services = self.services.as_ref();
            let typed = call.typed_args();
            let (word, rest) = match typed.split_once(char::is_whitespace) {
                Some((word, rest)) => (word, rest.trim()),
                None => (typed, ""),
            };
            match (word, rest) {
                ("providers", "") => listing::providers(services),
                ("models", rest) if !rest.contains(char::is_whitespace) => {
                    listing::models(services, (!rest.is_empty()).then_some(rest)).await
                }
                ("servers", "") => listing::servers(services),
                ("toolsets", "") => listing::toolsets(services),
                ("tools", selector) => listing::tools(services, &call, selector).await,
                ("default", rest) => listing::default(services, &call, rest).await,
                _ => prompt::run(services, &call, typed, Command::Ai, None).await,
            }
        })
    }
}
