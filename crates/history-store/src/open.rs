//! Opening the configured backend as the two stores the command layer uses.

use std::sync::Arc;

use yetibot_history::{AliasStore, HistoryStore};

use crate::config::Backend;
use crate::error::Result;
use crate::postgres::{PostgresOptions, PostgresStore};
use crate::sqlite::{SqliteOptions, SqliteStore};

/// One database seen as the history store and the alias store.
#[derive(Clone)]
pub struct Stores {
    /// Chat history.
    pub history: Arc<dyn HistoryStore>,
    /// User-defined commands.
    pub aliases: Arc<dyn AliasStore>,
}

impl std::fmt::Debug for Stores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stores").finish_non_exhaustive()
    }
}

/// Opens `backend` with the default limits (2-second statements and reads, 2-second
/// connects, 3-second operations), creating or migrating its tables.
///
/// # Errors
///
/// As [`PostgresStore::open`] and [`SqliteStore::open`].
pub async fn open(backend: &Backend) -> Result<Stores> {
    match backend {
        Backend::Postgres { url, prefix } => {
            let store =
                Arc::new(PostgresStore::open(url, prefix, PostgresOptions::default()).await?);
            Ok(Stores {
                history: Arc::clone(&store) as Arc<dyn HistoryStore>,
                aliases: store,
            })
        }
        Backend::Sqlite { path, prefix } => {
            let store = Arc::new(SqliteStore::open(path, prefix, SqliteOptions::default()).await?);
            Ok(Stores {
                history: Arc::clone(&store) as Arc<dyn HistoryStore>,
                aliases: store,
            })
        }
    }
}
