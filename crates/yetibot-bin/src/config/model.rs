//! Composes the sections owned by each crate into the file's structure and runs each crate's
//! validation, prefixing its relative paths.

use serde::Deserialize;
use serde_json::Value;
use yetibot_ai_commands::{
    ImgflipConfig, IntentRouter, IntentRouterConfig, ReleaseInfoConfig, XaiConfig,
};
use yetibot_ai_providers::{ProviderConfig, ProviderSet};
use yetibot_command::{AdminConfig, CommandConfig, LocalConfig};
use yetibot_history_store::{Backend, DbConfig, HistoryConfig};
use yetibot_mcp_host::{ServerConfig, ServerSet};
use yetibot_redaction::Secrets;
use yetibot_tool_policy::{KnownNames, PolicyConfig, ToolPolicy, ToolsetConfig, ToolsetKind};

use super::{Config, Problem, Source};

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Root {
    yetibot: Yetibot,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Yetibot {
    ai: Ai,
    adapters: yetibot_chat_adapters::config::AdaptersConfig,
    admin: AdminConfig,
    xai: XaiConfig,
    imgflip: ImgflipConfig,
    wise: yetibot_ai_commands::WiseConfig,
    command: CommandConfig,
    local: LocalConfig,
    db: DbConfig,
    history: HistoryConfig,
    #[serde(rename = "release-info")]
    release_info: ReleaseInfoConfig,
    web: yetibot_chat_adapters::web::WebConfig,
    images: yetibot_chat_adapters::web::published::ImagesConfig,
    concurrency: yetibot_conductor::ConcurrencyConfig,
    log: LogConfig,
}

/// `:yetibot :log`: the binary's own section, since logging is set up by the binary.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct LogConfig {
    level: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "kebab-case", deny_unknown_fields)]
struct Ai {
    default_provider: Option<String>,
    providers: Vec<ProviderConfig>,
    mcp: Mcp,
    intent_router: Option<IntentRouterConfig>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "kebab-case", deny_unknown_fields)]
struct Mcp {
    default_toolset: Option<String>,
    max_tool_calls: Option<i64>,
    timeout_ms: Option<i64>,
    github_api_url: Option<String>,
    servers: Vec<ServerConfig>,
    toolsets: Vec<ToolsetConfig>,
}

/// Where the console's access token is kept when `:yetibot :web :token-file` is not set:
/// beside the default history file.
pub(crate) const DEFAULT_TOKEN_FILE: &str = "data/console-token";

/// Deserializes the checked tree and validates every section, collecting all problems.
pub(super) fn validate(
    tree: Value,
    source: Source,
    notes: Vec<String>,
) -> Result<Config, Vec<Problem>> {
    // The schema check has already matched every type, so a failure here means the schema
    // and the structs disagree: a bug, reported without serde's message (which may quote a
    // value).
    let root: Root = serde_json::from_value(tree).map_err(|_| {
        vec![Problem::new(
            "(root)",
            "the configuration matches the schema but not the typed settings (a bug in this build)",
        )]
    })?;
    let Yetibot {
        ai,
        adapters,
        admin,
        xai,
        imgflip,
        wise,
        command,
        local,
        db,
        history,
        release_info,
        web,
        images,
        concurrency,
        log,
    } = root.yetibot;
    let mut problems = Vec::new();

    let providers = ProviderSet::from_config(ai.default_provider.as_deref(), &ai.providers)
        .map_err(|errors| problems.extend(errors.iter().map(|e| prefixed("yetibot.ai", e))))
        .ok();

    let servers = ServerSet::from_config(&ai.mcp.servers, ai.mcp.timeout_ms)
        .map_err(|errors| problems.extend(errors.iter().map(|e| prefixed("yetibot.ai.mcp", e))))
        .ok();

    // Toolsets refer to servers and providers by name; compare against what was written
    // so that one invalid server does not also flag every reference to it. The native
    // tools are the AI commands' table, every tool of the specification.
    let natives = yetibot_ai_commands::native_tools();
    let known = KnownNames {
        servers: ai
            .mcp
            .servers
            .iter()
            .filter_map(|s| Some((s.name.as_deref()?, s.tools.as_deref())))
            .collect(),
        providers: ai
            .providers
            .iter()
            .filter_map(|p| p.name.as_deref())
            .collect(),
        with_github_api_token: ai
            .mcp
            .servers
            .iter()
            .filter(|s| s.github_api_token.is_some())
            .filter_map(|s| s.name.as_deref())
            .collect(),
        native_tools: &natives,
    };
    let policy_config = PolicyConfig {
        toolsets: &ai.mcp.toolsets,
        default_toolset: ai.mcp.default_toolset.as_deref(),
        max_tool_calls: ai.mcp.max_tool_calls,
    };
    let policy = ToolPolicy::from_config(&policy_config, &known)
        .map_err(|errors| problems.extend(errors.iter().map(|e| prefixed("yetibot.ai.mcp", e))))
        .ok();

    let toolset_kind = |name: &str| -> Option<ToolsetKind> {
        let raw = ai
            .mcp
            .toolsets
            .iter()
            .find(|t| t.name.as_deref() == Some(name))?;
        Some(
            raw.kind
                .as_deref()
                .and_then(ToolsetKind::parse)
                .unwrap_or(ToolsetKind::Search),
        )
    };
    let intent_router = match &ai.intent_router {
        None => Some(None),
        Some(config) => IntentRouter::from_config(config, &toolset_kind)
            .map(Some)
            .map_err(|errors| problems.extend(errors.iter().map(|e| prefixed("yetibot.ai", e))))
            .ok(),
    };

    let github_api_url = yetibot_ai_commands::github_api_url(ai.mcp.github_api_url.as_deref())
        .map_err(|error| problems.push(prefixed("yetibot.ai.mcp", &error)))
        .ok();

    let admin_users = yetibot_command::admin_users(&admin)
        .map_err(|errors| problems.extend(errors.iter().map(|e| prefixed("yetibot.admin", e))))
        .ok();

    let xai = yetibot_ai_commands::xai_account(&xai)
        .map_err(|errors| problems.extend(errors.iter().map(|e| prefixed("yetibot.xai", e))))
        .ok()
        .flatten();
    let wise = yetibot_ai_commands::wise_account(&wise)
        .map_err(|errors| problems.extend(errors.iter().map(|e| prefixed("yetibot.wise", e))))
        .ok()
        .flatten();
    let imgflip = yetibot_ai_commands::imgflip_account(&imgflip)
        .map_err(|errors| problems.extend(errors.iter().map(|e| prefixed("yetibot.imgflip", e))))
        .ok()
        .flatten();

    let local = yetibot_command::local_caller(&local, yetibot_conversation::AdapterKind::Cli)
        .map_err(|errors| problems.extend(errors.iter().map(|e| prefixed("yetibot.local", e))))
        .ok();
    let settings = admin_users.clone().and_then(|admins| {
        yetibot_command::command_settings(&command, admins)
            .map_err(|errors| {
                problems.extend(errors.iter().map(|e| prefixed("yetibot.command", e)));
            })
            .ok()
    });

    let release_feed = yetibot_ai_commands::release_feed(&release_info)
        .map_err(|errors| {
            problems.extend(errors.iter().map(|e| prefixed("yetibot.release-info", e)));
        })
        .ok()
        .flatten();

    let web_token_file = match web.token_file.as_deref().map(str::trim) {
        None => std::path::PathBuf::from(DEFAULT_TOKEN_FILE),
        Some("") => {
            problems.push(Problem::new("yetibot.web.token-file", "must not be blank"));
            std::path::PathBuf::from(DEFAULT_TOKEN_FILE)
        }
        Some(path) => std::path::PathBuf::from(path),
    };
    let images = yetibot_chat_adapters::web::published::publish_options(&images)
        .map_err(|errors| {
            problems.extend(
                errors
                    .iter()
                    .map(|e| Problem::new(format!("yetibot.images.{}", e.key), e.reason)),
            );
        })
        .ok()
        .flatten();
    let web = yetibot_chat_adapters::web::web_address(&web)
        .map_err(|errors| {
            problems.extend(
                errors
                    .iter()
                    .map(|e| Problem::new(format!("yetibot.web.{}", e.key), e.reason)),
            );
        })
        .ok()
        .flatten();
    let adapters = yetibot_chat_adapters::config::adapters(&adapters)
        .map_err(|errors| {
            problems.extend(
                errors
                    .iter()
                    .map(|e| Problem::new(format!("yetibot.adapters.{}", e.path), e.reason)),
            );
        })
        .ok();
    let log_level = match log.level.as_deref() {
        None => Some(crate::logging::Level::default()),
        Some(text) => crate::logging::Level::parse(text).or_else(|| {
            problems.push(Problem::new(
                "yetibot.log.level",
                "must be one of trace, debug, info, warn, error, off",
            ));
            None
        }),
    };

    let admission = yetibot_conductor::admission_limits(&concurrency)
        .map_err(|errors| {
            problems.extend(errors.iter().map(|e| prefixed("yetibot.concurrency", e)));
        })
        .ok();

    let store = Backend::from_config(&db)
        .map_err(|errors| problems.extend(errors.iter().map(|e| prefixed("yetibot.db", e))))
        .ok();

    let (
        Some(providers),
        Some(servers),
        Some(policy),
        Some(intent_router),
        Some(github_api_url),
        Some(admin_users),
        Some(local),
        Some(settings),
        Some(store),
        Some(log_level),
        Some(adapters),
        Some(admission),
    ) = (
        providers,
        servers,
        policy,
        intent_router,
        github_api_url,
        admin_users,
        local,
        settings,
        store,
        log_level,
        adapters,
        admission,
    )
    else {
        return Err(problems);
    };
    if !problems.is_empty() {
        return Err(problems);
    }
    let secrets = collect_secrets(
        &providers,
        &servers,
        xai.as_ref().map(yetibot_ai_commands::XaiAccount::key),
        imgflip.as_ref(),
        &store,
        &adapters,
    )
    .map_err(|_| {
        vec![Problem::new(
            "yetibot",
            "the configured credentials are too many or too long to build the redaction set",
        )]
    })?;
    let mut notes = notes;
    if secrets.ignored() > 0 {
        notes.push(format!(
            "{} configured credential value(s) are shorter than {} bytes and are not redacted from text",
            secrets.ignored(),
            yetibot_redaction::limits::MIN_SECRET_LEN
        ));
    }
    Ok(Config {
        source,
        providers,
        servers,
        policy,
        intent_router,
        github_api_url,
        admin_users,
        xai,
        imgflip,
        wise,
        settings,
        local,
        store,
        history_enabled: history.disabled != Some(true),
        release_feed,
        images,
        web,
        web_token_file,
        adapters,
        admission,
        log_level,
        secrets,
        notes,
    })
}

fn collect_secrets(
    providers: &ProviderSet,
    servers: &ServerSet,
    xai_key: Option<&yetibot_redaction::Secret>,
    imgflip: Option<&yetibot_ai_commands::ImgflipAccount>,
    store: &Backend,
    adapters: &yetibot_chat_adapters::config::Adapters,
) -> yetibot_redaction::Result<Secrets> {
    let inline_keys = providers
        .providers()
        .iter()
        .filter_map(|p| match p.credential() {
            yetibot_ai_providers::Credential::Inline(key) => Some(key),
            _ => None,
        });
    let server_credentials = servers
        .servers()
        .iter()
        .flat_map(yetibot_mcp_host::Server::credentials);
    let database = store.credentials();
    Secrets::from_secrets(
        inline_keys
            .chain(server_credentials)
            .chain(xai_key)
            .chain(imgflip.map(yetibot_ai_commands::ImgflipAccount::password))
            .chain(&database)
            .chain(adapters.credentials()),
    )
}

/// The crates' errors that can describe a configuration problem by relative path.
trait ConfigProblem: std::fmt::Display {
    fn parts(&self) -> Option<(&str, &str)>;
}

macro_rules! config_problem {
    ($($error:ty),*) => {$(
        impl ConfigProblem for $error {
            fn parts(&self) -> Option<(&str, &str)> {
                self.config_problem()
            }
        }
    )*};
}

config_problem!(
    yetibot_ai_providers::Error,
    yetibot_mcp_host::Error,
    yetibot_tool_policy::Error,
    yetibot_command::ConfigError,
    yetibot_history_store::Error
);

fn prefixed(prefix: &str, error: &impl ConfigProblem) -> Problem {
    match error.parts() {
        Some((path, reason)) => Problem::new(format!("{prefix}.{path}"), reason),
        None => Problem::new(prefix, error.to_string()),
    }
}
