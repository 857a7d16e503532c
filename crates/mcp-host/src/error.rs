//! The error type of the yetibot-mcp-host crate.
//!
//! Messages are safe to show: they name servers and tools from the configuration, never a
//! header or env value, a URL, an argument, or anything a server sent.

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A configuration value is invalid. `path` is relative to the `:mcp` map
    /// (`servers[0].url`); `reason` never contains the value.
    #[error("{path}: {reason}")]
    InvalidConfig {
        /// Where the problem is, relative to the `:mcp` map.
        path: String,
        /// What is wrong, in words that are safe to print.
        reason: String,
    },
    /// A request selected a server name that is not configured.
    #[error("MCP server {server:?} is not configured")]
    UnknownServer {
        /// The selected name.
        server: String,
    },
    /// A server could not be reached, started or initialized, or its discovery failed.
    #[error("MCP server {server:?} is unavailable: {reason}")]
    Unavailable {
        /// The server's configured name.
        server: String,
        /// A fixed description of what failed, never server output.
        reason: &'static str,
    },
    /// An allowlisted or narrowed tool is not in the server's `tools/list` catalog, or a
    /// narrowed tool is outside the server's `:tools` allowlist.
    #[error("MCP server {server:?} does not offer the configured tool {tool:?}")]
    MissingTool {
        /// The server's configured name.
        server: String,
        /// The configured tool name that is missing (escaped if it breaks the naming rule).
        tool: String,
    },
    /// An allowlisted or narrowed tool is listed but cannot be offered.
    #[error(
        "MCP server {server:?} lists the configured tool {tool:?}, but it cannot be offered: {reason}"
    )]
    RefusedTool {
        /// The server's configured name.
        server: String,
        /// The configured tool name.
        tool: String,
        /// Why, from [`DropReason::as_str`](crate::DropReason::as_str).
        reason: &'static str,
    },
    /// A call named a tool that is not in this session's catalog; nothing was sent.
    #[error("tool {id:?} is not in this request's tool catalog")]
    UnknownTool {
        /// The qualified ID as given (sanitized, redacted, cut to 200 characters).
        id: String,
    },
    /// A call's argument string is too long or not a JSON object; nothing was sent.
    #[error("tool arguments {reason}")]
    InvalidArguments {
        /// What is wrong with them.
        reason: &'static str,
    },
    /// A listing lookup matched no tool.
    #[error("no tool matches {selector:?}")]
    NoSuchTool {
        /// The selector, sanitized, whitespace-collapsed and truncated.
        selector: String,
    },
    /// A bare tool name matched tools on several servers.
    #[error("tool name {name:?} is ambiguous; use one of: {}", candidates.join(", "))]
    AmbiguousTool {
        /// The bare name.
        name: String,
        /// The qualified IDs it matches.
        candidates: Vec<String>,
    },
    /// Remote servers need a process-wide rustls crypto provider, and none is installed.
    #[error(
        "no rustls crypto provider is installed; call rustls::crypto::ring::default_provider().install_default() once at start-up"
    )]
    NoCryptoProvider,
    /// The redaction set could not be built.
    #[error("could not build the redaction set")]
    Redaction(#[source] yetibot_redaction::Error),
}

impl Error {
    /// For [`Error::InvalidConfig`], its relative path and reason; `None` otherwise.
    #[must_use]
    pub fn config_problem(&self) -> Option<(&str, &str)> {
        match self {
            Self::InvalidConfig { path, reason } => Some((path, reason)),
            _ => None,
        }
    }

    /// Whether the error happened before anything was sent to a server for a call, so the
    /// caller knows the call certainly did not run. Every call error is of this kind: a call
    /// that was sent but not confirmed is reported as [`CallOutcome::Unknown`] instead.
    ///
    /// [`CallOutcome::Unknown`]: crate::CallOutcome::Unknown
    #[must_use]
    pub fn is_rejected_before_send(&self) -> bool {
        matches!(
            self,
            Self::UnknownTool { .. } | Self::InvalidArguments { .. }
        )
    }

    /// The server this error is about, when there is one.
    #[must_use]
    pub fn server(&self) -> Option<&str> {
        match self {
            Self::UnknownServer { server }
            | Self::Unavailable { server, .. }
            | Self::MissingTool { server, .. }
            | Self::RefusedTool { server, .. } => Some(server),
            _ => None,
        }
    }

    pub(crate) fn config(path: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::InvalidConfig {
            path: path.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn unavailable(server: &str, reason: &'static str) -> Self {
        Self::Unavailable {
            server: server.to_owned(),
            reason,
        }
    }
}

/// A `Result` whose error is this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
