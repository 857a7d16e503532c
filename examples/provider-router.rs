//! Embeds yetibot-ai-providers with two providers: lists every provider's models, then streams one
//! answer from the default provider. Both providers are local fixture servers, so the
//! example runs anywhere without keys or network.
//!
//! ```text
//! cargo run -p examples --example provider-router
//! ```

use std::io::{self, Write};
use std::process::ExitCode;

use provider_fixture::{Fixture, Reply};
use yetibot_ai_providers::{
    Client, ClientOptions, ProviderConfig, ProviderSet, TurnEvent, TurnRequest,
};

/// Credentials for panic reports, set once they are known.
static PANIC_SECRETS: std::sync::OnceLock<yetibot_redaction::Secrets> = std::sync::OnceLock::new();

fn main() -> ExitCode {
    yetibot_redaction::install_panic_hook(&PANIC_SECRETS);
    // This example's only credentials are the fixture's made-up keys.
    let _ = PANIC_SECRETS.set(yetibot_redaction::Secrets::empty());
    let _ = rustls::crypto::ring::default_provider().install_default();
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return ExitCode::FAILURE;
    };
    match runtime.block_on(run()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(problem) => {
            // Nothing better to do than exit with the code if stderr is gone too.
            let _ = writeln!(io::stderr().lock(), "provider-router: {problem}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let (chat, search) = start_fixtures().await?;
    let configs = [
        ProviderConfig {
            name: Some("local".into()),
            url: Some(chat.url("/v1")),
            model: Some("llama3.2".into()),
            ..ProviderConfig::default()
        },
        ProviderConfig {
            name: Some("grok".into()),
            url: Some(search.url("/v1")),
            key: Some("example-key".into()),
            model: Some("grok-4.7".into()),
            api: Some("responses".into()),
            native_tools: Some(vec!["web_search".into()]),
            ..ProviderConfig::default()
        },
    ];
    let providers = ProviderSet::from_config(Some("grok"), &configs)
        .map_err(|problems| format!("{} configuration problems", problems.len()))?;
    let client = Client::new(ClientOptions::default())?;
    let mut out = io::stdout().lock();

    // One result per provider: a failure in one never hides the others.
    for (name, result) in client.list_all(&providers).await {
        match result {
            Ok(list) => writeln!(out, "{name}: {}", list.ids().collect::<Vec<_>>().join(", "))?,
            Err(error) => writeln!(out, "{name}: {}", error.user_message())?,
        }
    }

    let provider = providers.default_provider().ok_or("no default provider")?;
    let mut request = TurnRequest::prompt("What happened today?");
    request.tools_enabled = true;
    let mut printed = Vec::new();
    let turn = client
        .turn(provider, &request, &mut |event| match event {
            TurnEvent::TextDelta(text) => printed.push(text),
            TurnEvent::NativeSearch { kind, status } => {
                printed.push(format!("[{kind}: {status}] "))
            }
            _ => {}
        })
        .await?;
    writeln!(out, "streamed: {}", printed.concat())?;
    if let Some(usage) = turn.usage {
        // A count the provider did not report is shown as such, never as zero.
        let count = |n: Option<u64>| n.map_or_else(|| "not reported".to_owned(), |n| n.to_string());
        writeln!(
            out,
            "usage: {} in, {} out",
            count(usage.input_tokens),
            count(usage.output_tokens)
        )?;
    }
    Ok(())
}

/// Two scripted providers: a Chat Completions server and a Responses server.
async fn start_fixtures() -> std::io::Result<(Fixture, Fixture)> {
    let chat = Fixture::start().await?;
    chat.route(
        "/v1/models",
        Reply::json(r#"{"data":[{"id":"llama3.2","context_length":131072},{"id":"qwen3"}]}"#),
    );
    let search = Fixture::start().await?;
    search.route("/v1/models", Reply::json(r#"{"data":[{"id":"grok-4.7"}]}"#));
    search.route(
        "/v1/responses",
        Reply::sse_events([
            r#"{"type":"response.output_item.added","item":{"type":"web_search_call","status":"in_progress"}}"#,
            r#"{"type":"response.output_item.done","item":{"type":"web_search_call","status":"completed"}}"#,
            r#"{"type":"response.output_text.delta","delta":"Nothing much, "}"#,
            r#"{"type":"response.output_text.delta","delta":"according to the search."}"#,
            r#"{"type":"response.completed","response":{"status":"completed","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Nothing much, according to the search."}]}],"usage":{"input_tokens":9,"output_tokens":7}}}"#,
        ]),
    );
    Ok((chat, search))
}
