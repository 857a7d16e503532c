//! Configuration owned by the command language: admins, how commands are recognized in
//! chat, and the local operator of `yetibot run` and the web console.

use serde::Deserialize;

use crate::error::ConfigError as Error;
use crate::limits::MAX_PREFIX_CHARS;

/// `:yetibot :admin`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct AdminConfig {
    /// Platform user IDs allowed to run admin-only commands and actions.
    pub users: Option<Vec<String>>,
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
            problems.push(Error::new(format!("users[{i}]"), "must not be blank"));
        } else if users.contains(user) {
            problems.push(Error::new(format!("users[{i}]"), "is listed twice"));
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
) -> Result<crate::interpreter::Settings, Vec<Error>> {
    let prefix = config.prefix.clone().unwrap_or_else(|| "!".to_owned());
    if prefix.is_empty()
        || prefix.chars().count() > MAX_PREFIX_CHARS
        || prefix.chars().any(char::is_whitespace)
    {
        return Err(vec![Error::new(
            "prefix",
            "must be 1 to 8 characters without whitespace",
        )]);
    }
    Ok(crate::interpreter::Settings {
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
) -> Result<crate::caller::Caller, Vec<Error>> {
    let mut problems = Vec::new();
    let user_id = config
        .user_id
        .clone()
        .unwrap_or_else(|| DEFAULT_LOCAL_USER_ID.to_owned());
    if user_id.trim().is_empty() {
        problems.push(Error::new("user-id", "must not be blank"));
    }
    if config
        .user_name
        .as_ref()
        .is_some_and(|n| n.trim().is_empty())
    {
        problems.push(Error::new("user-name", "must not be blank"));
    }
    let user_name = config.user_name.clone().unwrap_or_else(|| user_id.clone());
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(crate::caller::Caller {
        adapter,
        connection: adapter.as_str().to_owned(),
        room: adapter.to_string(),
        user_id,
        user_name,
        trusted: true,
        message_id: None,
        platform: None,
    })
}
