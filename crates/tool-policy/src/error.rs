//! The error type of the yetibot-tool-policy crate.

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A configuration value is invalid. `path` is relative to the `:mcp` map
    /// (`toolsets[0].kind`); `reason` never contains the value.
    #[error("{path}: {reason}")]
    InvalidConfig {
        /// Where the problem is, relative to the `:mcp` map.
        path: String,
        /// What is wrong, in words that are safe to print.
        reason: String,
    },
    /// `--toolset` names no configured toolset.
    #[error("no toolset has that name; `ai toolsets` lists them")]
    UnknownToolset,
    /// An access rule refused the request.
    #[error("{}", .0.user_message())]
    Denied(crate::access::Denial),
    /// A budget flag was refused.
    #[error("{}", .0.user_message())]
    Flag(crate::budget::FlagProblem),
    /// A server's allowlist names a tool the server did not list.
    #[error("MCP server {server} does not offer its configured tool {tool}")]
    MissingTool {
        /// The server.
        server: String,
        /// The missing tool.
        tool: String,
    },
    /// More tools than one request may offer ([`crate::limits::MAX_TOOLS`], native and MCP tools
    /// together, counted after every allowlist has narrowed them).
    #[error(
        "{count} tools selected (native and MCP together), more than the {max} one request may offer; narrow the servers' :tools or the toolset's :native-tools",
        max = yetibot_conversation::limits::MAX_TOOLS
    )]
    TooManyTools {
        /// How many were selected.
        count: usize,
    },
    /// Two tools map to the same function name on the wire.
    #[error("tools {first} and {second} would share one function name; rename or drop one")]
    FunctionNameCollision {
        /// The tool listed first.
        first: String,
        /// The tool that collides with it.
        second: String,
    },
    /// The same tool ID was listed twice.
    #[error("tool {0} is listed twice")]
    DuplicateTool(String),
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

    pub(crate) fn config(path: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::InvalidConfig {
            path: path.into(),
            reason: reason.into(),
        }
    }
}

/// A `Result` whose error is this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
