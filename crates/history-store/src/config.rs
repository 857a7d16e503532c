//! The `:yetibot :db` configuration section and the backend it selects: PostgreSQL when a
//! URL is given (Yetibot's own setting), otherwise an SQLite file, so that a fresh machine
//! needs no database server.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::Deserialize;
use yetibot_redaction::{REDACTED, Secret};

use crate::error::Error;

/// The table prefix when none is configured, as upstream Yetibot has it.
pub const DEFAULT_TABLE_PREFIX: &str = "yetibot_";
/// The SQLite file when no PostgreSQL URL is configured, relative to the working directory.
pub const DEFAULT_SQLITE_PATH: &str = "data/yetibot.db";
/// The longest table prefix, in characters (table names stay within PostgreSQL's 63).
pub const MAX_TABLE_PREFIX_CHARS: usize = 40;

/// `:yetibot :db` as written: `{:url "postgresql://..." :table {:prefix "yetibot_"}
/// :sqlite {:path "data/yetibot.db"}}`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "kebab-case", deny_unknown_fields)]
pub struct DbConfig {
    /// A PostgreSQL connection URL (`postgresql://user:password@host:5432/yetibot`); a
    /// credential. Without it the SQLite file is used.
    pub url: Option<Secret>,
    /// Table naming.
    pub table: Option<TableConfig>,
    /// The SQLite file.
    pub sqlite: Option<SqliteConfig>,
}

/// `:yetibot :db :table`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "kebab-case", deny_unknown_fields)]
pub struct TableConfig {
    /// The prefix of every table name (default `yetibot_`).
    pub prefix: Option<String>,
}

/// `:yetibot :db :sqlite`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "kebab-case", deny_unknown_fields)]
pub struct SqliteConfig {
    /// The database file (default `data/yetibot.db`); its folder is created when missing.
    pub path: Option<String>,
}

/// `:yetibot :history`: whether chat history is kept at all.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "kebab-case", deny_unknown_fields)]
pub struct HistoryConfig {
    /// `true` stops recording messages and replies, and every history read (the `history`
    /// command and the history tools), as upstream's `:history :disabled` does.
    pub disabled: Option<bool>,
}

/// The prefix of the table names: lower-case ASCII letters, digits and underscores, not
/// starting with a digit, at most [`MAX_TABLE_PREFIX_CHARS`]; possibly empty. Names are
/// written unquoted, as upstream Yetibot writes them, so they mean the same tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TablePrefix(String);

impl TablePrefix {
    /// The prefix, if it is a valid one.
    ///
    /// # Errors
    ///
    /// Why it is not, in words that never repeat it.
    pub fn new(prefix: &str) -> Result<Self, &'static str> {
        let valid = prefix.len() <= MAX_TABLE_PREFIX_CHARS
            && !prefix.starts_with(|c: char| c.is_ascii_digit())
            && prefix
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if valid {
            Ok(Self(prefix.to_owned()))
        } else {
            Err(
                "must be at most 40 lower-case letters, digits and underscores, not starting with a digit",
            )
        }
    }

    /// The prefix.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The full name of table `name`.
    pub(crate) fn table(&self, name: &str) -> String {
        format!("{}{name}", self.0)
    }
}

impl Default for TablePrefix {
    fn default() -> Self {
        Self(DEFAULT_TABLE_PREFIX.to_owned())
    }
}

impl fmt::Display for TablePrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where history and aliases live.
#[derive(Clone, PartialEq, Eq)]
pub enum Backend {
    /// A PostgreSQL database: an existing Yetibot database is read and written unchanged.
    Postgres {
        /// The connection URL (a credential).
        url: Secret,
        /// The table prefix.
        prefix: TablePrefix,
    },
    /// An SQLite file.
    Sqlite {
        /// The file.
        path: PathBuf,
        /// The table prefix.
        prefix: TablePrefix,
    },
}

impl Backend {
    /// The backend `config` selects: PostgreSQL when it has a URL, else SQLite at its path
    /// (default [`DEFAULT_SQLITE_PATH`]).
    ///
    /// # Errors
    ///
    /// Every problem, each with its path relative to the `:db` section: a URL that is not a
    /// PostgreSQL URL or asks for TLS, a bad prefix, a blank SQLite path. No message
    /// repeats the URL.
    pub fn from_config(config: &DbConfig) -> Result<Self, Vec<Error>> {
        let mut problems = Vec::new();
        let prefix = match config.table.as_ref().and_then(|t| t.prefix.as_deref()) {
            None => Some(TablePrefix::default()),
            Some(prefix) => TablePrefix::new(prefix)
                .map_err(|reason| problems.push(Error::config("table.prefix", reason)))
                .ok(),
        };
        let backend = match &config.url {
            Some(url) => postgres_config(url.expose())
                .map_err(|reason| problems.push(Error::config("url", reason)))
                .ok()
                .map(|_| url.clone()),
            None => None,
        };
        let path = config.sqlite.as_ref().and_then(|s| s.path.as_deref());
        if path.is_some_and(|p| p.trim().is_empty()) {
            problems.push(Error::config("sqlite.path", "must not be blank"));
        }
        let Some(prefix) = prefix else {
            return Err(problems);
        };
        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(match backend {
            Some(url) => Self::Postgres { url, prefix },
            None => Self::Sqlite {
                path: PathBuf::from(path.unwrap_or(DEFAULT_SQLITE_PATH)),
                prefix,
            },
        })
    }

    /// The table prefix.
    #[must_use]
    pub fn prefix(&self) -> &TablePrefix {
        match self {
            Self::Postgres { prefix, .. } | Self::Sqlite { prefix, .. } => prefix,
        }
    }

    /// The credentials to redact from text: the URL and the password inside it.
    #[must_use]
    pub fn credentials(&self) -> Vec<Secret> {
        let Self::Postgres { url, .. } = self else {
            return Vec::new();
        };
        let mut secrets = vec![url.clone()];
        if let Some(password) = postgres_config(url.expose())
            .ok()
            .and_then(|c| c.get_password().map(<[u8]>::to_vec))
            .and_then(|p| String::from_utf8(p).ok())
        {
            secrets.push(Secret::new(password));
        }
        secrets
    }

    /// One line for the configuration summary, the URL redacted.
    #[must_use]
    pub fn describe(&self) -> String {
        match self {
            Self::Postgres { prefix, .. } => {
                format!("PostgreSQL {REDACTED}, table prefix \"{prefix}\"")
            }
            Self::Sqlite { path, prefix } => {
                format!("SQLite {}, table prefix \"{prefix}\"", path.display())
            }
        }
    }
}

impl fmt::Debug for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

/// The client configuration of a PostgreSQL URL. Upstream's JDBC spelling
/// (`jdbc:postgresql://...`) is accepted too.
pub(crate) fn postgres_config(url: &str) -> Result<tokio_postgres::Config, &'static str> {
    let url = url.strip_prefix("jdbc:").unwrap_or(url);
    if !(url.starts_with("postgresql://") || url.starts_with("postgres://")) {
        return Err("must be a postgresql:// or postgres:// URL");
    }
    let config = tokio_postgres::Config::from_str(url)
        .map_err(|_| "is not a valid PostgreSQL connection URL")?;
    if config.get_hosts().is_empty() {
        return Err("names no host");
    }
    if config.get_ssl_mode() == tokio_postgres::config::SslMode::Require {
        return Err(
            "asks for TLS (sslmode=require), which this build does not support yet; connect through a local socket or a TLS tunnel",
        );
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backend(
        url: Option<&str>,
        prefix: Option<&str>,
        path: Option<&str>,
    ) -> Result<Backend, Vec<String>> {
        let config = DbConfig {
            url: url.map(Secret::new),
            table: prefix.map(|p| TableConfig {
                prefix: Some(p.to_owned()),
            }),
            sqlite: path.map(|p| SqliteConfig {
                path: Some(p.to_owned()),
            }),
        };
        Backend::from_config(&config)
            .map_err(|errors| errors.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn nothing_configured_is_the_sqlite_default() {
        assert_eq!(
            backend(None, None, None),
            Ok(Backend::Sqlite {
                path: PathBuf::from("data/yetibot.db"),
                prefix: TablePrefix::default()
            })
        );
        assert_eq!(
            backend(None, None, None).map(|b| b.describe()),
            Ok("SQLite data/yetibot.db, table prefix \"yetibot_\"".to_owned())
        );
    }

    #[test]
    fn a_url_selects_postgres_and_is_never_shown() {
        let url = "postgresql://bot:hunter2-long-password@db.example:5432/yetibot";
        let chosen = backend(Some(url), Some("yb_"), Some("ignored.db")).expect("valid");
        assert!(matches!(chosen, Backend::Postgres { .. }));
        let shown = format!("{chosen:?} {}", chosen.describe());
        assert!(
            !shown.contains("hunter2") && !shown.contains("db.example"),
            "{shown}"
        );
        let credentials: Vec<String> = chosen
            .credentials()
            .iter()
            .map(|s| s.expose().to_owned())
            .collect();
        assert_eq!(credentials, [url, "hunter2-long-password"]);
        assert!(backend(Some(&format!("jdbc:{url}")), None, None).is_ok());
    }

    #[test]
    fn bad_values_are_reported_without_repeating_them() {
        let secret = "mysql://root:s3cret-value@host/db";
        let problems = backend(Some(secret), Some("Bad-Prefix"), Some("  ")).expect_err("invalid");
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(
            problems
                .iter()
                .all(|p| !p.contains("s3cret") && !p.contains("Bad-Prefix"))
        );
        assert!(problems[0].starts_with("table.prefix: "));
        assert!(problems[1].starts_with("url: must be a postgresql://"));
        assert_eq!(problems[2], "sqlite.path: must not be blank");
        let tls = backend(Some("postgresql://h/db?sslmode=require"), None, None).expect_err("tls");
        assert!(tls[0].contains("TLS"), "{tls:?}");
        assert!(backend(Some("postgresql://"), None, None).is_err());
    }

    #[test]
    fn prefixes_are_unquoted_identifier_starts() {
        for good in ["", "yetibot_", "a1_", "_x"] {
            assert!(TablePrefix::new(good).is_ok(), "{good}");
        }
        for bad in ["Yetibot_", "1x", "a-b", "a b", "a;drop", &"a".repeat(41)] {
            assert!(TablePrefix::new(bad).is_err(), "{bad}");
        }
    }
}
