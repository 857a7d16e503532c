//! Command-line access to one provider: list models, or ask one question and print every
//! event as a JSON line. Exit 0 on success, 1 on a provider error, 2 on a usage error.
//!
//! ```text
//! ai-cli models --url URL [--listing standard|cloudflare|zen] [--key-file PATH]
//! ai-cli ask --url URL --api chat-completions|responses --model ID [--key-file PATH]
//!        [--stream] [--tool-probe] PROMPT
//! ```
//!
//! The key comes only from `--key-file` or the `AI_CLI_KEY` environment variable.

use std::io::Write;
use std::process::ExitCode;

use serde_json::{Value, json};
use yetibot_ai_providers::{
    Client, ClientOptions, ModelListing, PROBE_TOOL, Provider, ProviderConfig, ProviderSet,
    TurnEvent, TurnRequest, Usage, probe_tool,
};

const USAGE: &str = "usage:
  ai-cli models --url URL [--listing standard|cloudflare|zen] [--key-file PATH]
  ai-cli ask --url URL --api chat-completions|responses --model ID [--key-file PATH] [--stream] [--tool-probe] PROMPT";

#[derive(Debug, Default)]
struct Args {
    command: String,
    url: Option<String>,
    listing: Option<String>,
    key_file: Option<String>,
    api: Option<String>,
    model: Option<String>,
    stream: bool,
    tool_probe: bool,
    prompt: Vec<String>,
}

/// Credentials for panic reports, set once they are known.
static PANIC_SECRETS: std::sync::OnceLock<yetibot_redaction::Secrets> = std::sync::OnceLock::new();

fn main() -> ExitCode {
    yetibot_redaction::install_panic_hook(&PANIC_SECRETS);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args = match parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(problem) => return usage_error(&problem),
    };
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return usage_error("cannot start the async runtime");
    };
    runtime.block_on(run(args))
}

async fn run(args: Args) -> ExitCode {
    let provider = match build_provider(&args) {
        Ok(provider) => provider,
        Err(problem) => return usage_error(&problem),
    };
    let client = match Client::new(ClientOptions::default()) {
        Ok(client) => client,
        Err(error) => return provider_error(&error),
    };
    // The key, read from a key file if that is where it lives, for panic reports.
    if let Ok(secrets) = client.request_secrets(&provider).await {
        let _ = PANIC_SECRETS.set(secrets);
    }
    let mut out = std::io::stdout().lock();
    match args.command.as_str() {
        "models" => match client.list_models(&provider).await {
            Ok(list) => {
                for id in list.ids() {
                    let _ = writeln!(out, "{id}");
                }
                ExitCode::SUCCESS
            }
            Err(error) => provider_error(&error),
        },
        _ => {
            let mut request = TurnRequest::prompt(args.prompt.join(" "));
            request.stream = args.stream;
            if args.tool_probe {
                request.tools = vec![probe_tool()];
                request.tools_enabled = true;
            }
            let mut print = |event: TurnEvent| {
                let _ = writeln!(std::io::stdout().lock(), "{}", event_json(&event));
            };
            match client.turn(&provider, &request, &mut print).await {
                Ok(turn) => {
                    let calls: Vec<Value> = turn
                        .calls
                        .iter()
                        .map(|c| json!({"id": c.id, "name": c.function_name, "arguments": c.arguments}))
                        .collect();
                    let mut last = json!({
                        "answer": turn.text,
                        "tool_calls": calls,
                        "finish_reason": turn.finish_reason,
                        "usage": turn.usage.as_ref().map(usage_json),
                    });
                    if args.tool_probe {
                        last["tool_call"] =
                            json!(turn.calls.iter().any(|c| c.function_name == PROBE_TOOL));
                    }
                    let _ = writeln!(out, "{last}");
                    ExitCode::SUCCESS
                }
                Err(error) => provider_error(&error),
            }
        }
    }
}

fn build_provider(args: &Args) -> Result<Provider, String> {
    let url = args.url.clone().ok_or("--url is required")?;
    let key = if args.key_file.is_some() {
        None
    } else {
        key_from_environment()
    };
    let config = ProviderConfig {
        name: Some("cli".into()),
        url: Some(url),
        key: key.map(Into::into),
        key_file: args.key_file.clone(),
        model: args.model.clone(),
        api: args.api.clone(),
        ..ProviderConfig::default()
    };
    let set = ProviderSet::from_config(None, &[config]).map_err(|problems| {
        problems
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    let provider = set.default_provider().ok_or("no provider")?.clone();
    let listing = match args.listing.as_deref() {
        None => return Ok(provider),
        Some("standard") => ModelListing::standard(provider.base_url()),
        Some("cloudflare") => ModelListing::cloudflare(provider.base_url()),
        Some("zen") => ModelListing::zen(provider.base_url()),
        Some(_) => return Err("--listing must be standard, cloudflare or zen".into()),
    };
    let mut capabilities = provider.capabilities().clone();
    capabilities.listing = listing;
    Ok(provider.with_capabilities(capabilities))
}

#[expect(
    clippy::disallowed_methods,
    reason = "the command-line example takes its key from AI_CLI_KEY, as documented"
)]
fn key_from_environment() -> Option<String> {
    std::env::var("AI_CLI_KEY").ok().filter(|k| !k.is_empty())
}

fn parse(mut raw: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut args = Args {
        command: raw.next().ok_or("missing command")?,
        ..Args::default()
    };
    if !matches!(args.command.as_str(), "models" | "ask") {
        return Err("the command must be models or ask".into());
    }
    let mut literal = false;
    while let Some(arg) = raw.next() {
        let mut value = |flag: &str| raw.next().ok_or(format!("{flag} needs a value"));
        match arg.as_str() {
            _ if literal => args.prompt.push(arg),
            "--" => literal = true,
            "--url" => args.url = Some(value("--url")?),
            "--listing" => args.listing = Some(value("--listing")?),
            "--key-file" => args.key_file = Some(value("--key-file")?),
            "--api" => args.api = Some(value("--api")?),
            "--model" => args.model = Some(value("--model")?),
            "--stream" => args.stream = true,
            "--tool-probe" => args.tool_probe = true,
            flag if flag.starts_with("--") => return Err(format!("unknown option {flag}")),
            _ => args.prompt.push(arg),
        }
    }
    match args.command.as_str() {
        "models" if !args.prompt.is_empty() || args.api.is_some() || args.model.is_some() => {
            Err("models takes only --url, --listing and --key-file".into())
        }
        "ask" if args.prompt.is_empty() => Err("ask needs a PROMPT".into()),
        "ask" if args.api.is_none() || args.model.is_none() => {
            Err("ask needs --api and --model".into())
        }
        "ask" if args.listing.is_some() => Err("--listing applies to models only".into()),
        _ => Ok(args),
    }
}

fn event_json(event: &TurnEvent) -> Value {
    match event {
        TurnEvent::TextDelta(text) => json!({"event": "text-delta", "text": text}),
        TurnEvent::MessageCompleted(text) => json!({"event": "message-completed", "text": text}),
        TurnEvent::NativeSearch { kind, status } => {
            json!({"event": "native-search", "kind": kind, "status": status})
        }
        TurnEvent::FunctionCallItem { name } => {
            json!({"event": "function-call-item", "name": name})
        }
        TurnEvent::Usage(u) => {
            let mut value = usage_json(u);
            value["event"] = json!("usage");
            value
        }
        TurnEvent::Completed => json!({"event": "completed"}),
    }
}

/// Every usage field, `null` when not reported; amounts as exact decimal text.
fn usage_json(u: &Usage) -> Value {
    json!({
        "input_tokens": u.input_tokens,
        "cached_input_tokens": u.cached_input_tokens,
        "output_tokens": u.output_tokens,
        "cost_usd": u.cost_usd.map(|c| c.to_string()),
        "cost_usd_ticks": u.cost_usd_ticks,
        "neurons": u.neurons.map(|n| n.to_string()),
        "web_search_calls": u.web_search_calls,
        "x_search_calls": u.x_search_calls,
    })
}

fn usage_error(problem: &str) -> ExitCode {
    let _ = writeln!(std::io::stderr().lock(), "ai-cli: {problem}\n{USAGE}");
    ExitCode::from(2)
}

fn provider_error(error: &yetibot_ai_providers::Error) -> ExitCode {
    let _ = writeln!(
        std::io::stderr().lock(),
        "{}: {}",
        error.category().as_str(),
        error.user_message()
    );
    ExitCode::from(1)
}
