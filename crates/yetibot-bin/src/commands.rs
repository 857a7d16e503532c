//! Wires the command language: the interpreter with its built-in commands and the AI
//! commands, aliases and chat history in the configured store (PostgreSQL, or the SQLite
//! file by default), and randomness seeded by the process.

use std::hash::BuildHasher;
use std::sync::Arc;
use yetibot_chat_adapters::web::published::Published;

use yetibot_ai_commands::AiServices;
use yetibot_ai_providers::{Client, ClientOptions};
use yetibot_command::{Interpreter, builtins};
use yetibot_discovery_cache::DiscoveryCache;
use yetibot_history::{HistoryOptions, Notify, Writer};
use yetibot_json_util::SplitMix64;
use yetibot_mcp_host::{Host, HostOptions};

use crate::config::Config;

/// Why the commands could not be wired. Neither variant names a credential.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The history store could not be opened.
    #[error("cannot open the history store: {0}")]
    Store(#[from] yetibot_history_store::Error),
    /// The provider client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
    /// The MCP host could not be built.
    #[error("cannot set up MCP: {0}")]
    Mcp(#[from] yetibot_mcp_host::Error),
}

/// The AI commands' services from the configuration: the provider client and MCP host
/// (both redacting every configured credential), the toolsets, the process's monotonic
/// clock, and `discovery` when background model discovery fills one.
///
/// # Errors
///
/// [`WireError::Client`] or [`WireError::Mcp`] when the HTTP client or the MCP host cannot
/// be built.
pub fn ai_services(
    config: &Config,
    discovery: Option<DiscoveryCache>,
) -> Result<AiServices, WireError> {
    let client = provider_client(config, ClientOptions::default())?;
    let host = mcp_host(config)?;
    let services = AiServices::new(
        client,
        config.providers.clone(),
        host,
        config.policy.clone(),
        Arc::new(tokio::time::Instant::now),
    )
    .with_app_version(env!("CARGO_PKG_VERSION"))
    .with_github_api_url(config.github_api_url.clone())
    .with_audit(Arc::new(|event: &yetibot_ai_commands::AuditEvent| {
        // The workflow's audit trail: IDs, steps, SHAs, branches and URLs, never file
        // contents, prompts or credentials.
        tracing::info!(
            target: crate::logging::AUDIT_TARGET,
            proposal = %event.proposal,
            step = event.step.as_str(),
            repository = %event.repository,
            requester = %event.requester,
            detail = %event.detail,
            "ai-proposal"
        );
    }));
    let services = match discovery {
        Some(cache) => services.with_discovery(cache),
        None => services,
    };
    let services = match &config.release_feed {
        Some(feed) => services.with_release_feed(feed.clone()),
        None => services,
    };
    // clef and clairic run on the intent router's account whether or not routing is on; the
    // image loader is built only for them.
    let services = match &config.intent_router {
        Some(router) => {
            let images =
                yetibot_image_fetch::Fetcher::new(yetibot_image_fetch::FetchOptions::default())
                    .map_err(|error| WireError::Client(error.to_string()))?;
            services
                .with_decisions(router.account())
                .with_intent_routing(router)
                .with_images(images)
        }
        None => services,
    };
    let services = match &config.imgflip {
        Some(account) => services.with_imgflip(account.clone()),
        None => services,
    };
    let services = match &config.wise {
        Some(account) => services.with_wise(account.clone()),
        None => services,
    };
    // `grok` without a provider named grok uses the xAI key's Grok provider.
    let grok_configured = config
        .providers
        .get(yetibot_ai_commands::GROK_PROVIDER)
        .is_some();
    let services = match &config.xai {
        Some(account) => services.with_image_generation(account.clone()),
        None => services,
    };
    Ok(match &config.xai {
        Some(account) if !grok_configured => {
            let provider = yetibot_ai_commands::xai_provider(
                account.key(),
                Some(account.api_url()),
            )
            .map_err(|problems| {
                let reasons: Vec<String> = problems.iter().map(ToString::to_string).collect();
                WireError::Client(reasons.join("; "))
            })?;
            services.with_grok_fallback(provider)
        }
        _ => services,
    })
}

/// Model discovery on demand, for a one-shot command (`yetibot run`): a cache of the
/// configured providers' catalogs and the reader that fills it when `--model` alone must be
/// routed, under the same rules as background discovery (every catalog complete and fresh).
/// `None` with one provider or none, where `--model` needs no catalog.
///
/// # Errors
///
/// [`WireError::Client`] when the HTTP client cannot be built.
pub fn on_demand_discovery(
    config: &Config,
) -> Result<Option<(DiscoveryCache, yetibot_ai_commands::Discover)>, WireError> {
    if config.providers.providers().len() < 2 {
        return Ok(None);
    }
    let cache = DiscoveryCache::new(yetibot_discovery_cache::Bounds::default());
    if cache
        .configure(&crate::discovery::listings(&config.providers))
        .is_err()
    {
        // More providers than the bounds allow: routing says so itself.
        return Ok(None);
    }
    let lister = crate::discovery::ProviderLister::new(
        provider_client(config, ClientOptions::default())?,
        config.providers.clone(),
    );
    let refresher = Arc::new(yetibot_discovery_cache::Refresher::new(
        cache.clone(),
        lister,
    ));
    let discover: yetibot_ai_commands::Discover = Arc::new(move || {
        let refresher = Arc::clone(&refresher);
        Box::pin(async move { refresher.refresh_due().await })
    });
    Ok(Some((cache, discover)))
}

/// The provider client with these options, redacting every configured credential from what
/// it passes on. Every entry point that talks to providers builds it here, so that none
/// forgets the redaction set.
///
/// # Errors
///
/// [`WireError::Client`] when the HTTPS client cannot be built.
pub fn provider_client(config: &Config, options: ClientOptions) -> Result<Client, WireError> {
    Ok(Client::new(options)
        .map_err(|error| WireError::Client(error.user_message()))?
        .with_secrets(config.secrets.clone()))
}

/// The MCP host for the configured servers: local servers get only the standard variables
/// of this process and their own `:env`, and every configured credential is redacted from
/// what servers return. Every entry point that opens MCP sessions builds it here.
///
/// # Errors
///
/// [`WireError::Mcp`] when the redaction set cannot be built.
pub fn mcp_host(config: &Config) -> Result<Host, WireError> {
    // MCP's HTTP client needs the process-wide rustls provider; the provider client
    // brings its own. Installing it twice is harmless.
    let _ = rustls::crypto::ring::default_provider().install_default();
    Ok(Host::new(
        config.servers.clone(),
        HostOptions::new()
            .with_standard_env(crate::config::environment::standard_variable)
            .with_secrets(config.secrets.clone()),
    )?)
}

/// The interpreter every entry point shares, and the history writer that must run for its
/// recordings to reach the store (`None` when history is disabled).
pub struct Wiring {
    /// The interpreter: `yetibot run` today, the adapters later.
    pub interpreter: Interpreter,
    /// Drains the history queue into the store; run it and keep its handle until
    /// shutdown. Dropping the interpreter lets it finish.
    pub writer: Option<Writer>,
    /// The history store, for reading it back (the console's earlier conversation); `None`
    /// when history is off.
    pub history: Option<std::sync::Arc<dyn yetibot_history::HistoryStore>>,
}

impl std::fmt::Debug for Wiring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wiring")
            .field("writer", &self.writer.is_some())
            .field("history", &self.history.is_some())
            .finish_non_exhaustive()
    }
}

/// Opens the configured store (creating or migrating its tables) and builds the
/// interpreter over it, with the AI commands over `ai`. `notify` receives the history
/// recorder's outage reports.
///
/// # Errors
///
/// The store's error when it cannot be opened; it names no credential.
pub async fn wire(
    config: &Config,
    ai: AiServices,
    notify: Notify,
    published: Option<Published>,
) -> Result<Wiring, yetibot_history_store::Error> {
    let stores = yetibot_history_store::open(&config.store).await?;
    let mut registry = builtins();
    for spec in yetibot_ai_commands::commands(Arc::new(ai)) {
        registry.add(spec);
    }
    let interpreter = Interpreter::new(
        registry,
        stores.aliases,
        Box::new(SplitMix64::new(seed())),
        config.settings.clone(),
    )
    // Whatever a command prints (`!echo` of a configured key included) is redacted.
    .with_secrets(config.secrets.clone());
    let interpreter = match published {
        Some(store) => interpreter.with_publisher(Arc::new(PublishImages(store))),
        None => interpreter,
    };
    if !config.history_enabled {
        return Ok(Wiring {
            interpreter,
            writer: None,
            history: None,
        });
    }
    let store = Arc::clone(&stores.history);
    let (history, writer) =
        yetibot_history::history(stores.history, HistoryOptions::default(), notify);
    Ok(Wiring {
        interpreter: interpreter.with_history(history),
        writer: Some(writer),
        history: Some(store),
    })
}

/// A seed for `random` and `shuffle`: the standard library's per-process random hash keys,
/// which it draws from the operating system.
fn seed() -> u64 {
    std::collections::hash_map::RandomState::new().hash_one(std::process::id())
}

/// Publishes the images commands attach to their replies in the store behind `:yetibot
/// :images :public-url`.
struct PublishImages(Published);

impl yetibot_command::Publish for PublishImages {
    fn publish(&self, file: &yetibot_command::ReplyFile) -> Option<String> {
        self.0.publish(file.media_type(), Arc::clone(file.bytes()))
    }
}

/// What became of a reply's files in a one-shot run: a line for each, and whether every
/// file asked to be saved was.
#[derive(Debug, Default)]
pub struct SavedFiles {
    /// One line per file: where it was saved, or that it was not.
    pub lines: Vec<String>,
    /// False when a file could not be saved.
    pub ok: bool,
}

/// Saves `files` into the existing directory `dir` under their names (a file already there
/// is replaced), or, without a directory, lists them. Names were checked when the files
/// were made (ASCII letters, digits, `.`, `-`, `_`; no leading dot), so none leaves `dir`.
#[must_use]
pub fn save_files(
    files: &[yetibot_command::ReplyFile],
    dir: Option<&std::path::Path>,
) -> SavedFiles {
    let mut saved = SavedFiles {
        lines: Vec::new(),
        ok: true,
    };
    for file in files {
        let what = format!(
            "{} ({}, {} bytes)",
            file.name(),
            file.media_type(),
            file.bytes().len()
        );
        match dir {
            None => saved
                .lines
                .push(format!("file: {what}; pass --files-dir DIR to save it")),
            Some(dir) => {
                let path = dir.join(file.name());
                match std::fs::write(&path, &**file.bytes()) {
                    Ok(()) => saved
                        .lines
                        .push(format!("file: {what} saved to {}", path.display())),
                    Err(error) => {
                        saved.ok = false;
                        saved.lines.push(format!(
                            "file: {what} could not be saved in the directory given ({})",
                            error.kind()
                        ));
                    }
                }
            }
        }
    }
    saved
}

/// A reply as one JSON object for scripts: `{"value": ..., "data": ..., "error": ...}`,
/// where `value` and `data` are the JSON of the shown value and the data (numbers exactly as
/// the commands produced them; `null` when absent) and `error` the chat text of the error;
/// `notes` (only when there are any) lists the warnings shown beside the value, `files`
/// (likewise) the name, media type and size of each file the reply carries; a model's
/// answer adds `meta` (provider, model, duration, tool calls, usage, cost label).
#[must_use]
pub fn reply_json(reply: &yetibot_command::Reply) -> String {
    let value = if reply.error.is_some() {
        "null".to_owned()
    } else {
        reply.value.to_json()
    };
    let data = reply
        .data
        .as_ref()
        .map_or_else(|| "null".to_owned(), yetibot_json_util::Value::to_json);
    let error = reply.error.as_deref().map_or_else(
        || "null".to_owned(),
        |e| serde_json::Value::String(e.to_owned()).to_string(),
    );
    // Notes and files only when there are some, so that the common shape stays as it was.
    let mut notes = if reply.notes.is_empty() {
        String::new()
    } else {
        format!(r#","notes":{}"#, serde_json::json!(reply.notes))
    };
    if !reply.files.is_empty() {
        let files: Vec<serde_json::Value> = reply
            .files
            .iter()
            .map(|file| {
                serde_json::json!({
                    "name": file.name(),
                    "media_type": file.media_type(),
                    "bytes": file.bytes().len(),
                })
            })
            .collect();
        notes.push_str(&format!(r#","files":{}"#, serde_json::Value::Array(files)));
    }
    match &reply.meta {
        Some(meta) => format!(
            r#"{{"value":{value},"data":{data},"error":{error}{notes},"meta":{}}}"#,
            meta.details
        ),
        None => format!(r#"{{"value":{value},"data":{data},"error":{error}{notes}}}"#),
    }
}
