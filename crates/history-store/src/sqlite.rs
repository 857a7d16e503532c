//! The SQLite store: one file, two connections (one writes, one only reads, in WAL mode so
//! reads never wait for writes), every call on tokio's blocking threads, and reads stopped
//! by a progress handler when they run past their time budget.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use regex::RegexBuilder;
use rusqlite::functions::FunctionFlags;
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, Row, TransactionBehavior};
use yetibot_history::limits::MAX_LISTED_ALIASES;
use yetibot_history::{
    Alias, AliasStore, HistoryFilter, HistoryQuery, HistoryRecord, HistoryRow, HistoryScope,
    HistoryStore, RawHistoryRow, StoreError,
};

use crate::config::TablePrefix;
use crate::error::{Error, Result};
use crate::schema::{
    self, AliasSql, Dialect, Param, SCHEMA_VERSION, Statement, Step, Tables, migrations,
};

/// How many SQLite virtual-machine steps pass between two looks at the clock.
const PROGRESS_STEPS: i32 = 1000;
/// The largest compiled regular expression a `history | grep` may use.
const PATTERN_SIZE_LIMIT: usize = 1 << 20;

/// Limits of a [`SqliteStore`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqliteOptions {
    /// A read running longer than this is interrupted (2 s).
    pub read_timeout: Duration,
    /// How long a write waits for another process's lock on the file (5 s).
    pub busy_timeout: Duration,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            read_timeout: Duration::from_secs(2),
            busy_timeout: Duration::from_secs(5),
        }
    }
}

/// History and aliases in an SQLite file.
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    writer: Mutex<Connection>,
    reader: Mutex<Connection>,
    tables: Tables,
    alias_sql: AliasSql,
    options: SqliteOptions,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.inner.path)
            .field("history", &self.inner.tables.history)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (creating it and its folder when missing) the database file at `path`, and
    /// creates or migrates the tables named with `prefix`.
    ///
    /// # Errors
    ///
    /// [`Error::Sqlite`] when the file cannot be opened or created, [`Error::NewerSchema`]
    /// when a newer build has migrated it, [`Error::Migration`] when creating the tables
    /// fails.
    pub async fn open(path: &Path, prefix: &TablePrefix, options: SqliteOptions) -> Result<Self> {
        let path = path.to_owned();
        let tables = Tables::new(prefix);
        tokio::task::spawn_blocking(move || Self::open_blocking(path, tables, options))
            .await
            .map_err(|_| Error::Sqlite {
                reason: "the opening thread failed".to_owned(),
            })?
    }

    fn open_blocking(path: PathBuf, tables: Tables, options: SqliteOptions) -> Result<Self> {
        if let Some(folder) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(folder).map_err(|error| Error::Sqlite {
                reason: format!("cannot create its folder ({})", error.kind()),
            })?;
        }
        let mut writer = connection(&path, &options, false)?;
        migrate(&mut writer, &tables)?;
        let reader = connection(&path, &options, true)?;
        Ok(Self {
            inner: Arc::new(Inner {
                alias_sql: AliasSql::new(Dialect::Sqlite, &tables, MAX_LISTED_ALIASES),
                path,
                writer: Mutex::new(writer),
                reader: Mutex::new(reader),
                tables,
                options,
            }),
        })
    }

    /// Runs `work` on a blocking thread.
    async fn blocking<T, F>(&self, work: F) -> std::result::Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Inner) -> std::result::Result<T, StoreError> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || work(&inner))
            .await
            .map_err(|_| StoreError::Unavailable)?
    }
}

impl Inner {
    fn writer(&self) -> MutexGuard<'_, Connection> {
        self.writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `statement`'s rows on the read-only connection, interrupted past the read timeout.
    fn read<T>(
        &self,
        statement: &Statement,
        map: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
    ) -> std::result::Result<Vec<T>, StoreError> {
        let mut conn = self
            .reader
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let deadline = Instant::now() + self.options.read_timeout;
        conn.progress_handler(PROGRESS_STEPS, Some(move || Instant::now() >= deadline))
            .map_err(|error| store_error(&error))?;
        let result = query(&conn, statement, map);
        let cleared = conn.progress_handler(0, None::<fn() -> bool>);
        let rows = result.map_err(|error| store_error(&error))?;
        cleared.map_err(|error| store_error(&error))?;
        Ok(rows)
    }
}

fn query<T>(
    conn: &Connection,
    statement: &Statement,
    map: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<Vec<T>> {
    let mut prepared = conn.prepare(&statement.sql)?;
    let rows = prepared.query_map(rusqlite::params_from_iter(&statement.params), map)?;
    rows.collect()
}

impl rusqlite::ToSql for Param {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Self::Text(text) => ToSqlOutput::Borrowed(ValueRef::Text(text.as_bytes())),
            Self::Int(n) => ToSqlOutput::from(*n),
            Self::Bool(b) => ToSqlOutput::from(*b),
        })
    }
}

/// A connection to `path` with WAL, the busy timeout and the matching functions; the
/// reader refuses every write.
fn connection(path: &Path, options: &SqliteOptions, read_only: bool) -> Result<Connection> {
    let failed = |what: &str| {
        let what = what.to_owned();
        move |error: rusqlite::Error| Error::Sqlite {
            reason: format!("{what} ({})", sqlite_code(&error)),
        }
    };
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(failed("cannot open the file"))?;
    conn.busy_timeout(options.busy_timeout)
        .map_err(failed("cannot configure it"))?;
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(failed("cannot switch it to WAL mode"))?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(failed("cannot configure it"))?;
    if read_only {
        conn.pragma_update(None, "query_only", true)
            .map_err(failed("cannot configure it"))?;
    }
    register_functions(&conn).map_err(failed("cannot register its functions"))?;
    Ok(conn)
}

/// `yetibot_contains(body, text)`: whether `body` contains `text`, compared in lower case
/// for all of Unicode (SQLite's own `LIKE` folds ASCII only). `yetibot_matches(pattern,
/// body)`: whether `body` contains a match of the case-insensitive regular expression.
fn register_functions(conn: &Connection) -> rusqlite::Result<()> {
    let flags = FunctionFlags::SQLITE_UTF8
        | FunctionFlags::SQLITE_DETERMINISTIC
        | FunctionFlags::SQLITE_DIRECTONLY;
    conn.create_scalar_function("yetibot_contains", 2, flags, |ctx| {
        let needle = ctx.get_or_create_aux(1, |value| -> rusqlite::Result<String> {
            Ok(value.as_str().unwrap_or_default().to_lowercase())
        })?;
        let body = match ctx.get_raw(0) {
            ValueRef::Text(bytes) => String::from_utf8_lossy(bytes).to_lowercase(),
            _ => return Ok(false),
        };
        Ok(body.contains(needle.as_str()))
    })?;
    conn.create_scalar_function("yetibot_matches", 2, flags, |ctx| {
        let pattern = ctx.get_or_create_aux(0, |value| {
            RegexBuilder::new(value.as_str().unwrap_or_default())
                .case_insensitive(true)
                .size_limit(PATTERN_SIZE_LIMIT)
                .build()
                .map_err(|error| rusqlite::Error::UserFunctionError(Box::new(error)))
        })?;
        Ok(match ctx.get_raw(1) {
            ValueRef::Text(bytes) => pattern.is_match(&String::from_utf8_lossy(bytes)),
            _ => false,
        })
    })
}

/// Creates or migrates the tables in one immediate transaction (which also keeps a second
/// process from migrating at the same time).
fn migrate(conn: &mut Connection, tables: &Tables) -> Result<()> {
    let failed = |error: rusqlite::Error| Error::Migration {
        reason: format!("a statement failed ({})", sqlite_code(&error)),
    };
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(failed)?;
    tx.execute_batch(&schema::version_table(tables))
        .map_err(failed)?;
    let found: Option<i64> = tx
        .query_row(
            &format!("SELECT MAX(version) FROM {}", tables.version),
            [],
            |row| row.get(0),
        )
        .map_err(failed)?;
    let found = found.unwrap_or(0);
    if found > SCHEMA_VERSION {
        return Err(Error::NewerSchema {
            found,
            known: SCHEMA_VERSION,
        });
    }
    for (version, steps) in migrations(Dialect::Sqlite, tables) {
        if version <= found {
            continue;
        }
        for step in steps {
            match step {
                Step::Sql(sql) => tx.execute_batch(&sql).map_err(failed)?,
                Step::AddColumn {
                    table,
                    column,
                    definition,
                } => {
                    let present = tx
                        .query_row(
                            "SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2",
                            [table.as_str(), column],
                            |_| Ok(()),
                        )
                        .optional()
                        .map_err(failed)?
                        .is_some();
                    if !present {
                        tx.execute_batch(&format!(
                            "ALTER TABLE {table} ADD COLUMN {column} {definition}"
                        ))
                        .map_err(failed)?;
                    }
                }
            }
        }
        tx.execute(
            &format!("INSERT INTO {} (version) VALUES (?1)", tables.version),
            [version],
        )
        .map_err(failed)?;
    }
    tx.commit().map_err(failed)
}

/// SQLite's name for an error's code, which never quotes data.
fn sqlite_code(error: &rusqlite::Error) -> String {
    match error {
        rusqlite::Error::SqliteFailure(failure, _) => format!("{:?}", failure.code),
        _ => "an unexpected result".to_owned(),
    }
}

/// What a failed call tells the chat.
fn store_error(error: &rusqlite::Error) -> StoreError {
    match error {
        rusqlite::Error::SqliteFailure(failure, _)
            if failure.code == ErrorCode::OperationInterrupted =>
        {
            StoreError::TimedOut
        }
        rusqlite::Error::UserFunctionError(_) => {
            StoreError::Refused("the database cannot run this regular expression")
        }
        _ => StoreError::Unavailable,
    }
}

fn raw_row(row: &Row<'_>) -> rusqlite::Result<HistoryRow> {
    Ok(HistoryRow::from(RawHistoryRow {
        id: row.get(0)?,
        created_at: row.get(1)?,
        user_id: row.get(2)?,
        user_name: row.get(3)?,
        body: row.get(4)?,
        is_yetibot: row.get(5)?,
        is_command: row.get(6)?,
        is_error: row.get(7)?,
    }))
}

fn alias_row(row: &Row<'_>) -> rusqlite::Result<Alias> {
    Ok(Alias {
        name: row.get(0)?,
        expression: row.get(1)?,
        user_id: row.get(2)?,
    })
}

/// The first alias named `name`.
fn first_alias(conn: &Connection, sql: &AliasSql, name: &str) -> rusqlite::Result<Option<Alias>> {
    conn.query_row(&sql.get, [name], alias_row).optional()
}

impl HistoryStore for SqliteStore {
    fn append(
        &self,
        records: Vec<HistoryRecord>,
    ) -> BoxFuture<'_, std::result::Result<(), StoreError>> {
        Box::pin(self.blocking(move |inner| {
            if records.is_empty() {
                return Ok(());
            }
            let statement = schema::insert(Dialect::Sqlite, &inner.tables, &records);
            inner
                .writer()
                .execute(
                    &statement.sql,
                    rusqlite::params_from_iter(&statement.params),
                )
                .map(|_| ())
                .map_err(|error| store_error(&error))
        }))
    }

    fn rows<'a>(
        &'a self,
        scope: &'a HistoryScope,
        query: &'a HistoryQuery,
    ) -> BoxFuture<'a, std::result::Result<Vec<HistoryRow>, StoreError>> {
        let statement = schema::select_rows(Dialect::Sqlite, &self.inner.tables, scope, query);
        Box::pin(self.blocking(move |inner| inner.read(&statement, raw_row)))
    }

    fn count<'a>(
        &'a self,
        scope: &'a HistoryScope,
        filter: &'a HistoryFilter,
    ) -> BoxFuture<'a, std::result::Result<u64, StoreError>> {
        let statement = schema::count_rows(Dialect::Sqlite, &self.inner.tables, scope, filter);
        Box::pin(self.blocking(move |inner| {
            let counts = inner.read(&statement, |row| row.get::<_, i64>(0))?;
            counts
                .first()
                .and_then(|n| u64::try_from(*n).ok())
                .ok_or(StoreError::Unavailable)
        }))
    }
}

impl AliasStore for SqliteStore {
    fn get<'a>(
        &'a self,
        name: &'a str,
    ) -> BoxFuture<'a, std::result::Result<Option<Alias>, StoreError>> {
        let name = name.to_owned();
        Box::pin(self.blocking(move |inner| {
            first_alias(&inner.writer(), &inner.alias_sql, &name).map_err(|e| store_error(&e))
        }))
    }

    fn put(&self, alias: Alias) -> BoxFuture<'_, std::result::Result<Option<Alias>, StoreError>> {
        Box::pin(self.blocking(move |inner| {
            let mut conn = inner.writer();
            let mut change = || -> rusqlite::Result<Option<Alias>> {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let old = first_alias(&tx, &inner.alias_sql, &alias.name)?;
                let sql = if old.is_some() {
                    &inner.alias_sql.update
                } else {
                    &inner.alias_sql.insert
                };
                tx.execute(sql, [&alias.name, &alias.expression, &alias.user_id])?;
                tx.commit()?;
                Ok(old)
            };
            change().map_err(|e| store_error(&e))
        }))
    }

    fn remove<'a>(
        &'a self,
        name: &'a str,
    ) -> BoxFuture<'a, std::result::Result<Option<Alias>, StoreError>> {
        let name = name.to_owned();
        Box::pin(self.blocking(move |inner| {
            let mut conn = inner.writer();
            let mut change = || -> rusqlite::Result<Option<Alias>> {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let old = first_alias(&tx, &inner.alias_sql, &name)?;
                tx.execute(&inner.alias_sql.delete, [&name])?;
                tx.commit()?;
                Ok(old)
            };
            change().map_err(|e| store_error(&e))
        }))
    }

    fn list(&self) -> BoxFuture<'_, std::result::Result<Vec<Alias>, StoreError>> {
        Box::pin(self.blocking(move |inner| {
            let conn = inner.writer();
            let statement = Statement {
                sql: inner.alias_sql.list.clone(),
                params: Vec::new(),
            };
            let mut aliases = query(&conn, &statement, alias_row).map_err(|e| store_error(&e))?;
            aliases.sort_by(|a, b| a.name.cmp(&b.name));
            Ok(aliases)
        }))
    }
}
