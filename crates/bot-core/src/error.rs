//! The error type of the yetibot-bot-core crate.

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A configuration value is invalid. `path` is relative to the configuration section
    /// (`intent-router.key-file` under `:ai`); `reason` never contains the value.
    #[error("{path}: {reason}")]
    InvalidConfig {
        /// Where the problem is, relative to the configuration section.
        path: String,
        /// What is wrong, in words that are safe to print.
        reason: String,
    },
}

impl Error {
    /// For [`Error::InvalidConfig`], its relative path and reason; `None` otherwise.
    #[must_use]
    pub fn config_problem(&self) -> Option<(&str, &str)> {
        match self {
            Self::InvalidConfig { path, reason } => Some((path, reason)),
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
