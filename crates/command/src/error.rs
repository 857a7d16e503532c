//! The errors of the command language: a configuration value it owns that is invalid, and
//! a run that stopped.

/// A configuration value of the command layer is invalid (the language's own, or one of a
/// crate that registers commands). `path` is relative to the configuration section
/// (`prefix` under `:command`); `reason` never contains the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct ConfigError {
    /// Where the problem is, relative to the configuration section.
    pub path: String,
    /// What is wrong, in words that are safe to print.
    pub reason: String,
}

impl ConfigError {
    /// The problem `reason` at `path`.
    #[must_use]
    pub fn new(path: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            reason: reason.into(),
        }
    }

    /// Its relative path and reason.
    #[must_use]
    pub fn config_problem(&self) -> Option<(&str, &str)> {
        Some((&self.path, &self.reason))
    }
}

/// A run of commands that stopped with an error: the chat line that says so, formatted
/// where the error happened (`` 💥 Error in `<stage>`: <message> 💥 ``), which a command that
/// ran the stage passes on unchanged or pastes inline.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Stopped(pub(crate) String);

impl Stopped {
    /// The error line.
    #[must_use]
    pub fn message(&self) -> &str {
        &self.0
    }

    /// The error line, owned.
    #[must_use]
    pub fn into_message(self) -> String {
        self.0
    }
}
