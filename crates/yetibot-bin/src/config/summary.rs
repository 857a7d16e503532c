//! Renders a validated configuration for `yetibot check-config` and the start-up log, with
//! every credential shown as `[redacted]` and no key-file path, header or env value.

use std::fmt::Write as _;

use yetibot_ai_providers::{ToolChoiceMode, WireApi};
use yetibot_mcp_host::Transport;
use yetibot_redaction::REDACTED;
use yetibot_tool_policy::limits::FALLBACK_TOOL_CALLS;

use super::{Config, DEFAULT_PATH, Source};

/// The summary text, one item per line.
#[must_use]
pub fn summary(config: &Config) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail, so the results are ignored.
    let _ = write_summary(config, &mut out);
    out
}

fn write_summary(config: &Config, out: &mut String) -> std::fmt::Result {
    match &config.source {
        Source::File(path) => writeln!(out, "configuration: {}", path.display())?,
        Source::Defaults => writeln!(
            out,
            "configuration: no file ({DEFAULT_PATH} not found); built-in defaults and the environment"
        )?,
    }

    let providers = config.providers.providers();
    if providers.is_empty() {
        writeln!(
            out,
            "AI providers: none configured (AI commands will explain how to add one)"
        )?;
    } else {
        let default = config
            .providers
            .default_provider()
            .map_or("-", |p| p.name());
        writeln!(
            out,
            "AI providers ({}, default {default}):",
            providers.len()
        )?;
        for p in providers {
            let api = match p.api() {
                WireApi::ChatCompletions => "chat-completions".to_owned(),
                WireApi::Responses => format!(
                    "responses (max-turns {}{})",
                    p.max_turns(),
                    if p.native_tools().is_empty() {
                        String::new()
                    } else {
                        format!(", native tools {}", p.native_tools().join(" "))
                    }
                ),
            };
            let tools = match (p.tool_calling(), p.tool_choice()) {
                (false, _) => "off",
                (true, ToolChoiceMode::Standard) => "on",
                (true, ToolChoiceMode::Omit) => "on, tool_choice omitted",
            };
            writeln!(
                out,
                "  - {} {} api {api}; model {}; auth {}; tool calling {tools}{}",
                p.name(),
                p.base_url(),
                p.model().unwrap_or("(per prompt)"),
                p.credential().describe(),
                p.gateway_id()
                    .map(|g| format!("; gateway {g}"))
                    .unwrap_or_default(),
            )?;
        }
    }

    let servers = config.servers.servers();
    let ceiling = config.policy.max_tool_calls().map_or_else(
        || format!("not set (fallback {FALLBACK_TOOL_CALLS})"),
        |n| n.to_string(),
    );
    writeln!(
        out,
        "MCP servers ({}; timeout {} ms; tool-call ceiling {ceiling}):",
        servers.len(),
        config.servers.timeout().as_millis()
    )?;
    for s in servers {
        let tools = s
            .tools()
            .map_or("server catalog".to_owned(), |t| t.join(" "));
        match s.transport() {
            Transport::Http { url, headers } => writeln!(
                out,
                "  - {} http {url}; headers {}; tools {tools}",
                s.name(),
                names(headers.iter().map(|(k, _)| k.as_str()))
            )?,
            Transport::Stdio { command, args, env } => writeln!(
                out,
                "  - {} stdio {command} ({} args); env {}; tools {tools}",
                s.name(),
                args.len(),
                names(env.iter().map(|(k, _)| k.as_str()))
            )?,
        }
    }

    let toolsets = config.policy.toolsets();
    if toolsets.is_empty() {
        writeln!(
            out,
            "Toolsets: none (every server is available to everyone who can run ai)"
        )?;
    } else {
        let default = config
            .policy
            .default_toolset()
            .map_or("-", |t| t.name.as_str());
        writeln!(out, "Toolsets ({}, default {default}):", toolsets.len())?;
        for t in toolsets {
            let servers: Vec<&str> = t.servers.iter().map(|s| s.name.as_str()).collect();
            let native = match &t.native_tools {
                None => "defaults for its kind".to_owned(),
                Some(list) if list.is_empty() => "disabled".to_owned(),
                Some(list) => list.join(" "),
            };
            writeln!(
                out,
                "  - {} ({}): servers {}; native tools {native}; {} user(s), {} adapter(s), {} provider(s)",
                t.name,
                t.kind.as_str(),
                if servers.is_empty() {
                    "none".to_owned()
                } else {
                    servers.join(" ")
                },
                t.users.len(),
                t.adapters.len(),
                t.providers.len(),
            )?;
        }
    }

    match &config.intent_router {
        None => writeln!(out, "Intent router: not configured")?,
        Some(r) => writeln!(
            out,
            "Intent router: {} (clef and clairic use its account); account {REDACTED}; key file {REDACTED}; min probability {}{}{}",
            if r.enabled { "enabled" } else { "disabled" },
            r.min_probability,
            r.github_toolset
                .as_deref()
                .map(|t| format!("; toolset {t}"))
                .unwrap_or_default(),
            if r.api_url == yetibot_ai_providers::DEFAULT_WORKERS_API_URL {
                String::new()
            } else {
                format!("; API {}", r.api_url)
            },
        )?,
    }
    if config.github_api_url != yetibot_ai_commands::DEFAULT_GITHUB_API_URL {
        writeln!(out, "GitHub REST API: {}", config.github_api_url)?;
    }
    writeln!(out, "Admin users: {}", config.admin_users.len())?;
    writeln!(
        out,
        "Commands: prefix {:?}, embedded commands {}; local operator {}",
        config.settings.prefix,
        if config.settings.embedded_commands {
            "on"
        } else {
            "off"
        },
        config.local.user_id
    )?;
    match &config.xai {
        Some(account) => {
            let api = if account.api_url() == yetibot_ai_commands::XAI_BASE_URL {
                String::new()
            } else {
                format!("; API {}", account.api_url())
            };
            writeln!(
                out,
                "xAI key: {REDACTED}{api} (gi images; grok without a grok provider)"
            )?;
        }
        None => writeln!(out, "xAI key: not configured")?,
    }
    match &config.images {
        Some(images) => writeln!(
            out,
            "Published images: {} served from {} (at most {} images, {} MiB)",
            images.public_url,
            images.listen,
            images.max_count,
            images.max_bytes / (1024 * 1024)
        )?,
        None => writeln!(
            out,
            "Published images: off (generated images are uploaded to the chat only)"
        )?,
    }
    match &config.wise {
        Some(wise) => {
            let (balances, chats) = wise.scope();
            let api = if wise.api_url() == yetibot_ai_commands::DEFAULT_WISE_API_URL {
                String::new()
            } else {
                format!("; API {}", wise.api_url())
            };
            writeln!(
                out,
                "Wise: read-only, {balances} balance(s) in {chats} allowed chat(s), token file {REDACTED}{api}"
            )?;
        }
        None => writeln!(out, "Wise: not configured")?,
    }
    match &config.imgflip {
        Some(account) => {
            let api = if account.api_url() == yetibot_ai_commands::DEFAULT_IMGFLIP_API_URL {
                String::new()
            } else {
                format!("; API {}", account.api_url())
            };
            writeln!(
                out,
                "Imgflip: user {}, password {REDACTED}{api} (the meme command and tool)",
                account.username()
            )?;
        }
        None => writeln!(out, "Imgflip: not configured")?,
    }
    writeln!(
        out,
        "History store: {}; chat history {}",
        config.store.describe(),
        if config.history_enabled {
            "recorded"
        } else {
            "disabled"
        }
    )?;
    match &config.web {
        Some(addr) => writeln!(
            out,
            "Web console: http://{addr}/ (the access token is printed when the bot starts)"
        )?,
        None => writeln!(out, "Web console: off")?,
    }
    if config.adapters.slack.is_empty() && config.adapters.discord.is_empty() {
        writeln!(out, "Chat adapters: none besides the web console")?;
    } else {
        writeln!(out, "Chat adapters:")?;
        for slack in &config.adapters.slack {
            writeln!(
                out,
                "  - {} slack (Socket Mode) api {}; bot token {REDACTED}, app token {REDACTED}",
                slack.connection, slack.api_url
            )?;
        }
        for discord in &config.adapters.discord {
            let shards = match discord.shards {
                Some((first, last, total)) => format!("shards {first}-{last} of {total}"),
                None => "Discord's recommended shards".to_owned(),
            };
            writeln!(
                out,
                "  - {} discord (gateway {}, REST {}), {shards}; bot token {REDACTED}",
                discord.connection,
                discord.gateway_url.as_deref().unwrap_or("Discord's"),
                discord
                    .http_proxy
                    .as_deref()
                    .map_or_else(|| "direct".to_owned(), |p| format!("through proxy {p}")),
            )?;
        }
    }
    writeln!(
        out,
        "Release notes: bundled{}",
        if config.release_feed.is_some() {
            " and a published feed (release_info view latest)"
        } else {
            ""
        }
    )?;
    writeln!(
        out,
        "Logs: level {} on standard error (RUST_LOG, when set, decides instead)",
        config.log_level.as_str()
    )?;
    writeln!(
        out,
        "Redaction: {} configured credential value(s)",
        config.secrets.len()
    )?;
    for note in &config.notes {
        writeln!(out, "note: {note}")?;
    }
    Ok(())
}

/// Names with their values hidden: `Authorization=[redacted] X-Other=[redacted]`.
fn names<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let parts: Vec<String> = names.map(|n| format!("{n}={REDACTED}")).collect();
    if parts.is_empty() {
        "none".to_owned()
    } else {
        parts.join(" ")
    }
}
