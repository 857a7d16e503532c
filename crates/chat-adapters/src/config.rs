//! The configuration of the chat platform connections (`:yetibot :adapters`), as upstream
//! Yetibot writes it: a map from a free-form connection name to one platform's settings.
//!
//! The name is the connection: history stores it as the adapter key (`:myteam` for
//! `:adapters {:myteam {...}}`), so renaming an entry starts a new history. The raw entry
//! keeps every field optional and the platform type as a string, and [`adapters`] checks
//! them all at once, reporting each problem with its path and a reason that never quotes
//! the value (a token must not reach an error message). This module needs no feature: the
//! binary validates a configuration whatever adapters it was built with.

use std::collections::BTreeMap;

use serde::Deserialize;
use yetibot_redaction::Secret;

/// The Slack Web API used when an entry names none.
pub const DEFAULT_SLACK_API_URL: &str = "https://slack.com/api";

/// The platform types an entry may name.
pub const SUPPORTED_TYPES: [&str; 2] = ["slack", "discord"];

/// The longest connection name.
pub const MAX_NAME_LEN: usize = 64;

/// One raw entry of `:yetibot :adapters`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct AdapterConfig {
    /// The platform: `slack` or `discord`.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// The bot token (Slack: `xoxb-...`).
    pub token: Option<Secret>,
    /// Slack's app-level token with `connections:write` (`xapp-...`), which opens Socket
    /// Mode connections.
    pub app_token: Option<Secret>,
    /// The Slack Web API base URL, for government and enterprise hosts (default
    /// [`DEFAULT_SLACK_API_URL`]).
    pub api_url: Option<String>,
    /// Discord: a twilight-http-proxy compatible proxy, `host:port` over plain HTTP, which
    /// holds the one REST rate limiter for every process that uses it.
    pub http_proxy: Option<String>,
    /// Discord: the gateway URL (`wss://…`, or `ws://…` on a loopback host), for a
    /// gateway proxy.
    pub gateway_url: Option<String>,
    /// Discord: the shards this process runs, to split one bot over several processes.
    pub shards: Option<ShardsConfig>,
}

/// `:shards {:first 0 :last 7 :total 16}` of a Discord entry.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ShardsConfig {
    /// The first shard this process runs.
    pub first: Option<i64>,
    /// The last shard this process runs (inclusive).
    pub last: Option<i64>,
    /// The shard count of the whole bot, the same in every process.
    pub total: Option<i64>,
}

/// `:yetibot :adapters`: entries by connection name.
pub type AdaptersConfig = BTreeMap<String, AdapterConfig>;

/// One validated Slack connection.
#[derive(Debug, Clone)]
pub struct SlackSettings {
    /// The connection name (the entry's key), which history stores as `:name`.
    pub connection: String,
    /// The bot token, for the Web API.
    pub bot_token: Secret,
    /// The app-level token, for Socket Mode.
    pub app_token: Secret,
    /// The Web API base URL, without a trailing slash.
    pub api_url: String,
}

/// The validated connections.
#[derive(Debug, Clone, Default)]
pub struct Adapters {
    /// Slack connections, by name.
    pub slack: Vec<SlackSettings>,
    /// Discord connections, by name.
    pub discord: Vec<DiscordSettings>,
}

/// One validated Discord connection.
#[derive(Debug, Clone)]
pub struct DiscordSettings {
    /// The connection name, which history stores as `:name`.
    pub connection: String,
    /// The bot token (without the `Bot ` prefix).
    pub token: Secret,
    /// The REST proxy, `host:port`.
    pub http_proxy: Option<String>,
    /// The gateway URL.
    pub gateway_url: Option<String>,
    /// `(first, last, total)` shards this process runs; `None` runs Discord's recommended
    /// count, all of it.
    pub shards: Option<(u32, u32, u32)>,
}

impl Adapters {
    /// Every configured token, for the redaction set.
    pub fn credentials(&self) -> impl Iterator<Item = &Secret> {
        self.slack
            .iter()
            .flat_map(|s| [&s.bot_token, &s.app_token])
            .chain(self.discord.iter().map(|d| &d.token))
    }
}

/// A problem with one entry: its path relative to `:adapters` and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct AdapterConfigError {
    /// `myteam.token`, or the entry's name for the entry itself.
    pub path: String,
    /// What is wrong; never the value.
    pub reason: &'static str,
}

/// Validates every entry.
///
/// # Errors
///
/// Every problem found: an invalid or reserved name, a missing or unknown `:type`, a
/// missing or malformed token, an API URL that is not HTTPS (plain HTTP only on a loopback
/// host, for tests).
pub fn adapters(config: &AdaptersConfig) -> Result<Adapters, Vec<AdapterConfigError>> {
    let mut problems = Vec::new();
    let mut out = Adapters::default();
    for (name, entry) in config {
        let mut problem = |field: &str, reason: &'static str| {
            problems.push(AdapterConfigError {
                path: if field.is_empty() {
                    name.clone()
                } else {
                    format!("{name}.{field}")
                },
                reason,
            });
        };
        if let Err(reason) = check_name(name) {
            problem("", reason);
        }
        match entry.kind.as_deref().map(str::trim) {
            None => problem("type", "is required: \"slack\" or \"discord\""),
            Some("slack") => {
                for (set, field) in [
                    (entry.http_proxy.is_some(), "http-proxy"),
                    (entry.gateway_url.is_some(), "gateway-url"),
                    (entry.shards.is_some(), "shards"),
                ] {
                    if set {
                        problem(field, "is a Discord setting");
                    }
                }
                let bot_token = token(entry.token.as_ref(), "xoxb-")
                    .map_err(|reason| problem("token", reason))
                    .ok();
                let app_token = token(entry.app_token.as_ref(), "xapp-")
                    .map_err(|reason| problem("app-token", reason))
                    .ok();
                let api_url = api_url(entry.api_url.as_deref())
                    .map_err(|reason| problem("api-url", reason))
                    .ok();
                if let (Some(bot_token), Some(app_token), Some(api_url)) =
                    (bot_token, app_token, api_url)
                {
                    out.slack.push(SlackSettings {
                        connection: name.clone(),
                        bot_token,
                        app_token,
                        api_url,
                    });
                }
            }
            Some("discord") => {
                if entry.app_token.is_some() {
                    problem("app-token", "is a Slack setting");
                }
                if entry.api_url.is_some() {
                    problem("api-url", "is a Slack setting");
                }
                let token = discord_token(entry.token.as_ref())
                    .map_err(|reason| problem("token", reason))
                    .ok();
                let http_proxy = entry
                    .http_proxy
                    .as_deref()
                    .map(http_proxy)
                    .transpose()
                    .map_err(|reason| problem("http-proxy", reason))
                    .ok();
                let gateway_url = entry
                    .gateway_url
                    .as_deref()
                    .map(gateway_url)
                    .transpose()
                    .map_err(|reason| problem("gateway-url", reason))
                    .ok();
                let shards = entry
                    .shards
                    .as_ref()
                    .map(shards)
                    .transpose()
                    .map_err(|reason| problem("shards", reason))
                    .ok();
                if let (Some(token), Some(http_proxy), Some(gateway_url), Some(shards)) =
                    (token, http_proxy, gateway_url, shards)
                {
                    out.discord.push(DiscordSettings {
                        connection: name.clone(),
                        token,
                        http_proxy,
                        gateway_url,
                        shards,
                    });
                }
            }
            Some(_) => problem("type", "must be \"slack\" or \"discord\""),
        }
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(problems)
    }
}

fn check_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() || name.len() > MAX_NAME_LEN {
        return Err("a connection name must have 1 to 64 characters");
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err("a connection name may hold only letters, digits, - and _");
    }
    if name == "web" || name == "cli" {
        return Err("is the name of a local adapter's history; choose another connection name");
    }
    Ok(())
}

fn token(value: Option<&Secret>, prefix: &str) -> Result<Secret, &'static str> {
    let Some(value) = value else {
        return Err("is required");
    };
    let text = value.expose();
    if text.trim().is_empty() {
        return Err("must not be blank");
    }
    if !text.bytes().all(|b| b.is_ascii_graphic()) {
        return Err("must be printable ASCII without whitespace");
    }
    if !text.starts_with(prefix) {
        return Err(if prefix == "xoxb-" {
            "must be a bot token (it starts with xoxb-)"
        } else {
            "must be an app-level token (it starts with xapp-)"
        });
    }
    Ok(value.clone())
}

/// A Discord bot token: printable ASCII without whitespace, without a `Bot ` prefix.
fn discord_token(value: Option<&Secret>) -> Result<Secret, &'static str> {
    let Some(value) = value else {
        return Err("is required");
    };
    let text = value.expose();
    if text.trim().is_empty() {
        return Err("must not be blank");
    }
    if text.starts_with("Bot ") || text.starts_with("bot ") {
        return Err("is the token alone, without the Bot prefix");
    }
    if !text.bytes().all(|b| b.is_ascii_graphic()) || text.len() > 256 {
        return Err("must be printable ASCII without whitespace, at most 256 characters");
    }
    Ok(value.clone())
}

/// A REST proxy address: `host:port`, no scheme or path (it is reached over plain HTTP).
fn http_proxy(value: &str) -> Result<String, &'static str> {
    let value = value.trim();
    let Some((host, port)) = value.rsplit_once(':') else {
        return Err("must be host:port (the proxy is reached over plain HTTP)");
    };
    let port_ok = port.parse::<u16>().is_ok_and(|p| p > 0);
    let host_ok = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '[' | ']' | ':'));
    if value.contains("://") || !port_ok || !host_ok {
        return Err("must be host:port (the proxy is reached over plain HTTP)");
    }
    Ok(value.to_owned())
}

/// A gateway URL: `wss://`, or `ws://` only on a loopback host.
fn gateway_url(value: &str) -> Result<String, &'static str> {
    let value = value.trim();
    let lower = value.to_ascii_lowercase();
    let rest = if let Some(rest) = lower.strip_prefix("wss://") {
        rest
    } else if let Some(rest) = lower.strip_prefix("ws://") {
        let host = rest.split(['/', '?']).next().unwrap_or_default();
        let host = match host.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or_default(),
            None => host.split(':').next().unwrap_or_default(),
        };
        let loopback = host == "localhost"
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback());
        if !loopback {
            return Err("must use wss:// (plain ws:// only for a loopback host)");
        }
        rest
    } else {
        return Err("must be a wss:// URL");
    };
    if rest.is_empty()
        || rest.contains('@')
        || rest.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err("must name a host, without spaces, user name or password");
    }
    Ok(value.to_owned())
}

/// A shard range: all three numbers, `first <= last < total`, and a total Discord allows.
fn shards(config: &ShardsConfig) -> Result<(u32, u32, u32), &'static str> {
    let number = |n: Option<i64>| n.and_then(|n| u32::try_from(n).ok());
    match (
        number(config.first),
        number(config.last),
        number(config.total),
    ) {
        (Some(first), Some(last), Some(total))
            if first <= last && last < total && total <= 65_536 =>
        {
            Ok((first, last, total))
        }
        _ => Err("must give :first, :last and :total with first <= last < total <= 65536"),
    }
}

/// The API base URL, normalized: lower-case scheme and host, no trailing slash.
fn api_url(value: Option<&str>) -> Result<String, &'static str> {
    let Some(value) = value.map(str::trim) else {
        return Ok(DEFAULT_SLACK_API_URL.to_owned());
    };
    let lower = value.to_ascii_lowercase();
    let (scheme, rest) = if lower.starts_with("https://") {
        ("https", &value["https://".len()..])
    } else if lower.starts_with("http://") {
        ("http", &value["http://".len()..])
    } else {
        return Err("must be an https:// URL");
    };
    if rest.chars().any(|c| c.is_whitespace() || c.is_control()) || rest.contains(['?', '#']) {
        return Err("must be a URL without spaces, query or fragment");
    }
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    if authority.is_empty() || authority.contains('@') {
        return Err("must name a host, without user name or password");
    }
    let authority = authority.to_ascii_lowercase();
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.split(':').next().unwrap_or_default(),
    };
    let loopback = host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if scheme == "http" && !loopback {
        return Err("must use https (plain http only for a loopback host, as in tests)");
    }
    Ok(format!(
        "{scheme}://{authority}{}",
        path.trim_end_matches('/')
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(kind: &str, token: &str, app: &str, url: Option<&str>) -> AdapterConfig {
        AdapterConfig {
            kind: Some(kind.to_owned()),
            token: Some(Secret::new(token)),
            app_token: (!app.is_empty()).then(|| Secret::new(app)),
            api_url: url.map(str::to_owned),
            ..AdapterConfig::default()
        }
    }

    fn check(entries: &[(&str, AdapterConfig)]) -> Result<Adapters, Vec<String>> {
        let config = entries
            .iter()
            .map(|(name, e)| ((*name).to_owned(), e.clone()))
            .collect();
        adapters(&config).map_err(|problems| problems.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn a_slack_entry_is_validated_and_normalized() {
        let ok = check(&[(
            "myteam",
            entry(
                "slack",
                "xoxb-1",
                "xapp-1",
                Some("HTTPS://Slack.Example/api/"),
            ),
        )])
        .expect("valid");
        assert_eq!(ok.slack[0].connection, "myteam");
        assert_eq!(ok.slack[0].api_url, "https://slack.example/api");
        assert_eq!(ok.credentials().count(), 2);
        let default = check(&[("t", entry("slack", "xoxb-1", "xapp-1", None))]).expect("valid");
        assert_eq!(default.slack[0].api_url, DEFAULT_SLACK_API_URL);
        let local = check(&[(
            "t",
            entry("slack", "xoxb-1", "xapp-1", Some("http://127.0.0.1:9/api")),
        )])
        .expect("loopback http");
        assert_eq!(local.slack[0].api_url, "http://127.0.0.1:9/api");
    }

    #[test]
    fn every_problem_is_reported_by_path_without_values() {
        let problems = check(&[
            (
                "my team",
                entry("slack", "xoxp-SECRET", "", Some("http://slack.example/api")),
            ),
            ("web", entry("irc", "SECRET2", "", None)),
            ("d", entry("discord", "t", "xapp-x", None)),
        ])
        .expect_err("invalid");
        assert_eq!(
            problems,
            [
                "d.app-token: is a Slack setting",
                "my team: a connection name may hold only letters, digits, - and _",
                "my team.token: must be a bot token (it starts with xoxb-)",
                "my team.app-token: is required",
                "my team.api-url: must use https (plain http only for a loopback host, as in tests)",
                "web: is the name of a local adapter's history; choose another connection name",
                "web.type: must be \"slack\" or \"discord\"",
            ]
        );
        assert!(problems.iter().all(|p| !p.contains("SECRET")));
        let missing = check(&[("x", AdapterConfig::default())]).expect_err("no type");
        assert_eq!(missing, ["x.type: is required: \"slack\" or \"discord\""]);
    }

    #[test]
    fn a_discord_entry_is_validated() {
        let ok = check(&[("guild", entry("discord", "abc.def", "", None))]).expect("valid");
        assert_eq!(ok.discord[0].connection, "guild");
        assert_eq!(ok.discord[0].shards, None);
        assert_eq!(ok.credentials().count(), 1);
        assert!(ok.slack.is_empty());
        let scaled = AdapterConfig {
            http_proxy: Some("127.0.0.1:3000".into()),
            gateway_url: Some("ws://127.0.0.1:4000".into()),
            shards: Some(ShardsConfig {
                first: Some(0),
                last: Some(7),
                total: Some(16),
            }),
            ..entry("discord", "abc.def", "", None)
        };
        let ok = check(&[("guild", scaled)]).expect("valid");
        assert_eq!(ok.discord[0].shards, Some((0, 7, 16)));
        assert_eq!(ok.discord[0].http_proxy.as_deref(), Some("127.0.0.1:3000"));
        let bad = AdapterConfig {
            http_proxy: Some("http://proxy:3000".into()),
            gateway_url: Some("ws://gateway.example".into()),
            shards: Some(ShardsConfig {
                first: Some(8),
                last: Some(7),
                total: Some(16),
            }),
            ..entry("discord", "Bot SECRET-TOKEN", "", None)
        };
        let problems = check(&[("g", bad)]).expect_err("invalid");
        assert_eq!(
            problems,
            [
                "g.token: is the token alone, without the Bot prefix",
                "g.http-proxy: must be host:port (the proxy is reached over plain HTTP)",
                "g.gateway-url: must use wss:// (plain ws:// only for a loopback host)",
                "g.shards: must give :first, :last and :total with first <= last < total <= 65536",
            ]
        );
        assert!(problems.iter().all(|p| !p.contains("SECRET")));
        let slack_with_shards = AdapterConfig {
            shards: Some(ShardsConfig::default()),
            ..entry("slack", "xoxb-1", "xapp-1", None)
        };
        assert_eq!(
            check(&[("s", slack_with_shards)]).expect_err("invalid"),
            ["s.shards: is a Discord setting"]
        );
    }
}
