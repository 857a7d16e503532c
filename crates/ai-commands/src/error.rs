//! The error of the AI commands' configuration.

/// A configuration value the AI commands own is invalid. `path` is relative to the
/// configuration section (`intent-router.key-file` under `:ai`); `reason` never contains the
/// value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct ConfigError {
    /// Where the problem is, relative to the configuration section.
    pub path: String,
    /// What is wrong, in words that are safe to print.
    pub reason: String,
}

impl ConfigError {
    pub(crate) fn new(path: impl Into<String>, reason: impl Into<String>) -> Self {
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
