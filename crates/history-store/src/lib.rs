#![doc = include_str!("../README.md")]

mod config;
mod error;
pub mod limits;
mod open;
mod postgres;
mod schema;
mod sqlite;

pub use config::{
    Backend, DEFAULT_SQLITE_PATH, DEFAULT_TABLE_PREFIX, DbConfig, HistoryConfig, SqliteConfig,
    TableConfig, TablePrefix,
};
pub use error::{Error, Result};
pub use open::{Stores, open};
pub use postgres::{PostgresOptions, PostgresStore};
pub use schema::SCHEMA_VERSION;
pub use sqlite::{SqliteOptions, SqliteStore};
