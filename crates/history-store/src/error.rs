//! The error type of the yetibot-history-store crate. No message carries a connection
//! string, a password or a database's own error text.

/// Everything that can go wrong opening a store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A configuration value is invalid. `path` is relative to the `:db` section
    /// (`table.prefix`); `reason` never contains the value.
    #[error("{path}: {reason}")]
    InvalidConfig {
        /// Where the problem is, relative to the `:db` section.
        path: String,
        /// What is wrong, in words that are safe to print.
        reason: String,
    },
    /// The database could not be reached or refused the connection.
    #[error("cannot connect to the database: {reason}")]
    Connect {
        /// Why, in words that are safe to print.
        reason: String,
    },
    /// The database's schema was written by a newer build; it is left alone.
    #[error(
        "the database schema is version {found}, newer than the version {known} this build knows; upgrade yetibot"
    )]
    NewerSchema {
        /// The version recorded in the database.
        found: i64,
        /// The newest version this build knows.
        known: i64,
    },
    /// Creating or migrating the tables failed.
    #[error("cannot prepare the database tables: {reason}")]
    Migration {
        /// Why, in words that are safe to print.
        reason: String,
    },
    /// The SQLite file could not be opened.
    #[error("cannot open the SQLite database: {reason}")]
    Sqlite {
        /// Why, in words that are safe to print.
        reason: String,
    },
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

    pub(crate) fn config(path: &str, reason: impl Into<String>) -> Self {
        Self::InvalidConfig {
            path: path.to_owned(),
            reason: reason.into(),
        }
    }
}

/// A `Result` whose error is this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
