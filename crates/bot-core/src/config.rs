//! Configuration owned by the command layer: admins, the Cloudflare intent router used by
//! `clef`/`clairic`, and the xAI and Imgflip media credentials.

use std::path::PathBuf;

use serde::Deserialize;
use yetibot_redaction::Secret;
use yetibot_tool_policy::ToolsetKind;

use crate::error::Error;

/// Default for `:min-probability`.
pub const DEFAULT_MIN_PROBABILITY: f64 = 0.95;
/// The lowest accepted `:min-probability`.
pub const MIN_MIN_PROBABILITY: f64 = 0.9;

/// `:yetibot :admin`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct AdminConfig {
    /// Platform user IDs allowed to run admin commands such as `ai default`.
    pub users: Option<Vec<String>>,
}

/// `:yetibot :xai`: the key behind `gi` images and the fallback Grok provider.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct XaiConfig {
    /// The xAI API key.
    pub key: Option<Secret>,
}

/// `:yetibot :release-info`: where `release_info`'s `latest` view reads the project's
/// published release notes.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ReleaseInfoConfig {
    /// An `http`/`https` URL serving `{"notes": [{"date", "title", "notes"}]}`.
    pub feed_url: Option<String>,
}

/// The published release feed, when one is configured.
///
/// # Errors
///
/// An unusable `:feed-url` (not absolute `http`/`https`, credentials, a fragment), with the
/// path relative to the `:release-info` map and a reason that never quotes the URL.
pub fn release_feed(
    config: &ReleaseInfoConfig,
) -> Result<Option<crate::natives::ReleaseFeed>, Vec<Error>> {
    config
        .feed_url
        .as_deref()
        .map(|url| {
            crate::natives::ReleaseFeed::new(url)
                .map_err(|reason| vec![Error::config("feed-url", reason)])
        })
        .transpose()
}

/// `:yetibot :imgflip`: the account behind `meme`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ImgflipConfig {
    /// Imgflip user name.
    pub username: Option<String>,
    /// Imgflip password.
    pub password: Option<Secret>,
}

/// `:yetibot :ai :intent-router`, exactly as configured.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct IntentRouterConfig {
    /// Whether explicit change requests become automatic draft PRs.
    pub enabled: Option<bool>,
    /// Cloudflare account ID: 32 hexadecimal characters.
    pub account_id: Option<String>,
    /// Absolute path of the Workers AI token file, read per request.
    pub key_file: Option<String>,
    /// Optional AI Gateway ID.
    pub gateway_id: Option<String>,
    /// The `github-pr` toolset whose policy governs automatic PRs.
    pub github_toolset: Option<String>,
    /// Probability both change scores must reach (0.9–1.0, default 0.95).
    pub min_probability: Option<f64>,
}

/// A validated intent-router configuration.
#[derive(Clone, PartialEq)]
pub struct IntentRouter {
    /// Whether automatic draft PRs are on.
    pub enabled: bool,
    /// Cloudflare account ID.
    pub account_id: String,
    /// Token file path (private: never printed).
    pub key_file: PathBuf,
    /// AI Gateway ID.
    pub gateway_id: Option<String>,
    /// The governing `github-pr` toolset.
    pub github_toolset: Option<String>,
    /// Threshold for both change scores.
    pub min_probability: f64,
}

impl std::fmt::Debug for IntentRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntentRouter")
            .field("enabled", &self.enabled)
            .field("account_id", &"[redacted]")
            .field("key_file", &"[redacted]")
            .field("gateway_id", &self.gateway_id)
            .field("github_toolset", &self.github_toolset)
            .field("min_probability", &self.min_probability)
            .finish()
    }
}

impl IntentRouter {
    /// Validates `:intent-router`. `toolset_kind` answers the kind of a configured toolset.
    ///
    /// # Errors
    ///
    /// Every problem found, with paths relative to the `:ai` map (`intent-router.account-id`).
    pub fn from_config(
        config: &IntentRouterConfig,
        toolset_kind: &dyn Fn(&str) -> Option<ToolsetKind>,
    ) -> Result<Self, Vec<Error>> {
        let mut problems = Vec::new();
        let mut fail = |field: &str, reason: &str| {
            problems.push(Error::config(format!("intent-router.{field}"), reason));
        };
        let enabled = config.enabled.unwrap_or(false);
        let account_id = config.account_id.clone().unwrap_or_default();
        if config.account_id.is_none() {
            fail("account-id", "is required");
        } else if account_id.len() != 32 || !account_id.bytes().all(|b| b.is_ascii_hexdigit()) {
            fail("account-id", "must be 32 hexadecimal characters");
        }
        let key_file = PathBuf::from(config.key_file.clone().unwrap_or_default());
        if config.key_file.is_none() {
            fail("key-file", "is required");
        } else if !key_file.is_absolute() {
            fail("key-file", "must be an absolute path");
        }
        if let Some(id) = &config.gateway_id {
            let ok = !id.is_empty()
                && id.len() <= 64
                && id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            if !ok {
                fail("gateway-id", "must be 1 to 64 letters, digits, '-' or '_'");
            }
        }
        let min_probability = config.min_probability.unwrap_or(DEFAULT_MIN_PROBABILITY);
        if !(MIN_MIN_PROBABILITY..=1.0).contains(&min_probability) {
            fail("min-probability", "must be a number from 0.9 to 1.0");
        }
        match config.github_toolset.as_deref() {
            None if enabled => fail("github-toolset", "is required when :enabled is true"),
            None => {}
            Some(name) => match toolset_kind(name) {
                None => fail("github-toolset", "does not name a configured toolset"),
                Some(ToolsetKind::GithubPr) => {}
                Some(_) => fail("github-toolset", "must name a github-pr toolset"),
            },
        }
        if problems.is_empty() {
            Ok(Self {
                enabled,
                account_id,
                key_file,
                gateway_id: config.gateway_id.clone(),
                github_toolset: config.github_toolset.clone(),
                min_probability,
            })
        } else {
            Err(problems)
        }
    }
}

/// Validates the admin list.
///
/// # Errors
///
/// Blank or repeated user IDs, with paths relative to the `:admin` map.
pub fn admin_users(config: &AdminConfig) -> Result<Vec<String>, Vec<Error>> {
    let mut problems = Vec::new();
    let mut users: Vec<String> = Vec::new();
    for (i, user) in config.users.iter().flatten().enumerate() {
        if user.trim().is_empty() {
            problems.push(Error::config(format!("users[{i}]"), "must not be blank"));
        } else if users.contains(user) {
            problems.push(Error::config(format!("users[{i}]"), "is listed twice"));
        } else {
            users.push(user.clone());
        }
    }
    if problems.is_empty() {
        Ok(users)
    } else {
        Err(problems)
    }
}

/// The default user ID of the local operator (`yetibot run`, the web console).
pub const DEFAULT_LOCAL_USER_ID: &str = "local";
/// The longest command prefix accepted.
pub const MAX_PREFIX_CHARS: usize = 8;

/// `:yetibot :command`: how commands are recognized in chat.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct CommandConfig {
    /// The command prefix, `!` by default.
    pub prefix: Option<String>,
    /// Whether backtick commands inside ordinary chat run (default true).
    pub embedded: Option<bool>,
}

/// `:yetibot :local`: the operator of this machine, who uses `yetibot run` and the local
/// web console.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct LocalConfig {
    /// The operator's user ID, as listed in `:admin :users` to make them an admin.
    pub user_id: Option<String>,
    /// The operator's display name (default: the user ID).
    pub user_name: Option<String>,
}

/// The interpreter settings from `:command` and the admin list.
///
/// # Errors
///
/// An empty prefix, one with whitespace, or one longer than [`MAX_PREFIX_CHARS`], with paths
/// relative to the `:command` map.
pub fn command_settings(
    config: &CommandConfig,
    admins: Vec<String>,
) -> Result<crate::Settings, Vec<Error>> {
    let prefix = config.prefix.clone().unwrap_or_else(|| "!".to_owned());
    if prefix.is_empty()
        || prefix.chars().count() > MAX_PREFIX_CHARS
        || prefix.chars().any(char::is_whitespace)
    {
        return Err(vec![Error::config(
            "prefix",
            "must be 1 to 8 characters without whitespace",
        )]);
    }
    Ok(crate::Settings {
        prefix,
        embedded_commands: config.embedded.unwrap_or(true),
        admins,
    })
}

/// The local operator as a caller through `adapter` (`Cli` or `Web`): trusted, since only
/// someone at this machine can act as them.
///
/// # Errors
///
/// A blank user ID or name, with paths relative to the `:local` map.
pub fn local_caller(
    config: &LocalConfig,
    adapter: yetibot_conversation::AdapterKind,
) -> Result<crate::Caller, Vec<Error>> {
    let mut problems = Vec::new();
    let user_id = config
        .user_id
        .clone()
        .unwrap_or_else(|| DEFAULT_LOCAL_USER_ID.to_owned());
    if user_id.trim().is_empty() {
        problems.push(Error::config("user-id", "must not be blank"));
    }
    if config
        .user_name
        .as_ref()
        .is_some_and(|n| n.trim().is_empty())
    {
        problems.push(Error::config("user-name", "must not be blank"));
    }
    let user_name = config.user_name.clone().unwrap_or_else(|| user_id.clone());
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(crate::Caller {
        adapter,
        connection: adapter.as_str().to_owned(),
        room: adapter.to_string(),
        user_id,
        user_name,
        trusted: true,
        message_id: None,
        thread: None,
        progress: None,
        platform: None,
    })
}
