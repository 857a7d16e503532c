//! The PostgreSQL store on `tokio-postgres`: a small pool of connections that are polled
//! only while they work (no background task), reads in read-only transactions, a statement
//! timeout on every session, a connect timeout and a socket timeout on every operation.
//! Tables keep upstream Yetibot's names and columns, so an existing database works as it is.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::Duration;

use futures_util::FutureExt as _;
use futures_util::future::BoxFuture;
use tokio::sync::{Semaphore, SemaphorePermit};
use tokio_postgres::error::SqlState;
use tokio_postgres::tls::NoTlsStream;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, NoTls, Row, Socket};
use yetibot_history::limits::MAX_LISTED_ALIASES;
use yetibot_history::{
    Alias, AliasStore, HistoryFilter, HistoryQuery, HistoryRecord, HistoryRow, HistoryScope,
    HistoryStore, RawHistoryRow, StoreError,
};
use yetibot_redaction::Secret;

use crate::config::{TablePrefix, postgres_config};
use crate::error::{Error, Result};
use crate::schema::{
    self, AliasSql, Dialect, Param, SCHEMA_VERSION, Statement, Step, Tables, migrations,
};

/// Time limits and pool size of a [`PostgresStore`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostgresOptions {
    /// Every statement of a session is cancelled by the server after this long (2 s).
    pub statement_timeout: Duration,
    /// Opening a connection, start-up and authentication included, gives up after this
    /// long (2 s).
    pub connect_timeout: Duration,
    /// An operation (a few round trips) not finished after this long is abandoned and its
    /// connection closed (3 s): the answer to a server or network that stops responding.
    pub socket_timeout: Duration,
    /// The limit for creating or migrating the tables at start, which on a large existing
    /// table may build an index (10 minutes).
    pub migration_timeout: Duration,
    /// The most connections open at once (4).
    pub max_connections: usize,
    /// The `application_name` the server shows for these connections.
    pub application_name: String,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        Self {
            statement_timeout: Duration::from_secs(2),
            connect_timeout: Duration::from_secs(2),
            socket_timeout: Duration::from_secs(3),
            migration_timeout: Duration::from_secs(600),
            max_connections: 4,
            application_name: "yetibot".to_owned(),
        }
    }
}

type PgConnection = tokio_postgres::Connection<Socket, NoTlsStream>;

/// One open connection: the client and the connection future that does its I/O, which is
/// polled only while an operation runs on it.
struct Conn {
    client: Client,
    connection: Pin<Box<PgConnection>>,
}

/// History and aliases in PostgreSQL.
pub struct PostgresStore {
    config: tokio_postgres::Config,
    tables: Tables,
    alias_sql: AliasSql,
    options: PostgresOptions,
    idle: Mutex<Vec<Conn>>,
    permits: Semaphore,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("history", &self.tables.history)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// How an operation on a connection ended.
enum Driven<T> {
    Done(std::result::Result<T, tokio_postgres::Error>),
    /// The connection ended (the server closed it or the socket failed).
    Closed,
    /// Nothing came back within the socket timeout.
    TimedOut,
}

impl PostgresStore {
    /// Connects to the database at `url`, creates or migrates the tables named with
    /// `prefix`, and keeps the connection for later work.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] for a URL that cannot be used, [`Error::Connect`] when the
    /// server cannot be reached or refuses the connection, [`Error::NewerSchema`] when a
    /// newer build has migrated the tables, [`Error::Migration`] when creating or altering
    /// them fails. No message contains the URL.
    pub async fn open(
        url: &Secret,
        prefix: &TablePrefix,
        options: PostgresOptions,
    ) -> Result<Self> {
        let mut config =
            postgres_config(url.expose()).map_err(|reason| Error::config("url", reason))?;
        config
            .connect_timeout(options.connect_timeout)
            .application_name(options.application_name.clone());
        let tables = Tables::new(prefix);
        let store = Self {
            config,
            alias_sql: AliasSql::new(Dialect::Postgres, &tables, MAX_LISTED_ALIASES),
            tables,
            permits: Semaphore::new(options.max_connections.max(1)),
            options,
            idle: Mutex::new(Vec::new()),
        };
        let mut conn = store
            .connect()
            .await
            .map_err(|reason| Error::Connect { reason })?;
        let Conn { client, connection } = &mut conn;
        let migrated = drive(
            connection,
            store.options.migration_timeout,
            migrate(client, &store.tables),
        )
        .await;
        match migrated {
            Driven::Done(Ok(Ok(()))) => {}
            Driven::Done(Ok(Err(found))) => {
                return Err(Error::NewerSchema {
                    found,
                    known: SCHEMA_VERSION,
                });
            }
            Driven::Done(Err(error)) => {
                return Err(Error::Migration {
                    reason: describe_db_error(&error),
                });
            }
            Driven::Closed => {
                return Err(Error::Migration {
                    reason: "the server closed the connection".to_owned(),
                });
            }
            Driven::TimedOut => {
                return Err(Error::Migration {
                    reason: "it took longer than the migration timeout".to_owned(),
                });
            }
        }
        store.release(conn);
        Ok(store)
    }

    /// A new connection whose session has the statement timeout, or why there is none.
    async fn connect(&self) -> std::result::Result<Conn, String> {
        let connecting = self.config.connect(NoTls);
        let (client, connection) =
            match tokio::time::timeout(self.options.connect_timeout, connecting).await {
                Err(_) => return Err("the server did not answer in time".to_owned()),
                Ok(Err(error)) => return Err(describe_connect_error(&error)),
                Ok(Ok(pair)) => pair,
            };
        let mut conn = Conn {
            client,
            connection: Box::pin(connection),
        };
        let setting = format!(
            "SET statement_timeout = {}",
            self.options.statement_timeout.as_millis()
        );
        let Conn { client, connection } = &mut conn;
        match drive(
            connection,
            self.options.socket_timeout,
            client.batch_execute(&setting),
        )
        .await
        {
            Driven::Done(Ok(())) => Ok(conn),
            Driven::Done(Err(error)) => Err(describe_connect_error(&error)),
            Driven::Closed => Err("the server closed the connection".to_owned()),
            Driven::TimedOut => Err("the server did not answer in time".to_owned()),
        }
    }

    /// A connection for one operation: an idle one that is still open, or a new one.
    async fn lease(&self) -> std::result::Result<Lease<'_>, StoreError> {
        let permit = tokio::time::timeout(self.options.socket_timeout, self.permits.acquire())
            .await
            .map_err(|_| StoreError::TimedOut)?
            .map_err(|_| StoreError::Unavailable)?;
        loop {
            let idle = self
                .idle
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .pop();
            let Some(mut conn) = idle else {
                break;
            };
            // A connection the server closed while it was idle ends as soon as it is
            // polled: then it is dropped here instead of failing an operation.
            if conn.client.is_closed() || conn.connection.as_mut().now_or_never().is_some() {
                continue;
            }
            return Ok(Lease {
                store: self,
                conn,
                _permit: permit,
            });
        }
        let conn = self.connect().await.map_err(|_| StoreError::Unavailable)?;
        Ok(Lease {
            store: self,
            conn,
            _permit: permit,
        })
    }

    fn release(&self, conn: Conn) {
        if !conn.client.is_closed() {
            self.idle
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(conn);
        }
    }

    /// Runs `statement` in a read-only transaction.
    async fn read(&self, statement: &Statement) -> std::result::Result<Vec<Row>, StoreError> {
        let mut lease = self.lease().await?;
        let Conn { client, connection } = &mut lease.conn;
        let driven = drive(
            connection,
            self.options.socket_timeout,
            read_only(client, statement),
        )
        .await;
        lease.finish(driven)
    }
}

/// A connection lent to one operation. Dropped without [`Lease::finish`] (the operation
/// was cancelled), the connection closes, so no half-done exchange is reused.
struct Lease<'s> {
    store: &'s PostgresStore,
    conn: Conn,
    _permit: SemaphorePermit<'s>,
}

impl Lease<'_> {
    /// The operation's result; the connection goes back to the pool unless it failed.
    fn finish<T>(self, driven: Driven<T>) -> std::result::Result<T, StoreError> {
        match driven {
            Driven::Done(Ok(value)) => {
                self.store.release(self.conn);
                Ok(value)
            }
            Driven::Done(Err(error)) => {
                // A refused statement leaves the session usable; a broken socket does not.
                if error.as_db_error().is_some() {
                    self.store.release(self.conn);
                }
                Err(store_error(&error))
            }
            Driven::Closed => Err(StoreError::Unavailable),
            Driven::TimedOut => Err(StoreError::TimedOut),
        }
    }
}

/// Runs `work` while polling the connection that carries it, abandoning it after `limit`.
/// An operation is a few round trips, so the socket timeout bounds the whole of it.
async fn drive<T>(
    connection: &mut Pin<Box<PgConnection>>,
    limit: Duration,
    work: impl Future<Output = std::result::Result<T, tokio_postgres::Error>>,
) -> Driven<T> {
    let both = async {
        tokio::select! {
            biased;
            result = work => Driven::Done(result),
            _ = connection.as_mut() => Driven::Closed,
        }
    };
    tokio::time::timeout(limit, both)
        .await
        .unwrap_or(Driven::TimedOut)
}

/// `statement` in a read-only transaction (rolled back when it fails).
async fn read_only(
    client: &Client,
    statement: &Statement,
) -> std::result::Result<Vec<Row>, tokio_postgres::Error> {
    client.batch_execute("BEGIN READ ONLY").await?;
    match client
        .query_typed(&statement.sql, &typed(&statement.params))
        .await
    {
        Ok(rows) => {
            client.batch_execute("COMMIT").await?;
            Ok(rows)
        }
        Err(error) => {
            let _ = client.batch_execute("ROLLBACK").await;
            Err(error)
        }
    }
}

/// `work` in a read-write transaction, rolled back when it fails.
async fn in_transaction<T>(
    client: &Client,
    work: impl Future<Output = std::result::Result<T, tokio_postgres::Error>>,
) -> std::result::Result<T, tokio_postgres::Error> {
    client.batch_execute("BEGIN").await?;
    match work.await {
        Ok(value) => {
            client.batch_execute("COMMIT").await?;
            Ok(value)
        }
        Err(error) => {
            let _ = client.batch_execute("ROLLBACK").await;
            Err(error)
        }
    }
}

/// Creates or migrates the tables under an advisory lock, so that two bots starting at
/// once do not race. `Ok(Err(found))` when the database is at a newer version.
async fn migrate(
    client: &Client,
    tables: &Tables,
) -> std::result::Result<std::result::Result<(), i64>, tokio_postgres::Error> {
    in_transaction(client, async {
        client
            .batch_execute("SET LOCAL statement_timeout = 0")
            .await?;
        client
            .execute_typed(
                "SELECT pg_advisory_xact_lock(hashtext($1))",
                &[(&tables.version, Type::TEXT)],
            )
            .await?;
        client.batch_execute(&schema::version_table(tables)).await?;
        let found: Option<i64> = client
            .query_typed_one(&format!("SELECT MAX(version) FROM {}", tables.version), &[])
            .await?
            .try_get(0)?;
        let found = found.unwrap_or(0);
        if found > SCHEMA_VERSION {
            return Ok(Err(found));
        }
        for (version, steps) in migrations(Dialect::Postgres, tables) {
            if version <= found {
                continue;
            }
            for step in steps {
                let sql = match step {
                    Step::Sql(sql) => sql,
                    Step::AddColumn {
                        table,
                        column,
                        definition,
                    } => format!(
                        "ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {column} {definition}"
                    ),
                };
                client.batch_execute(&sql).await?;
            }
            client
                .execute_typed(
                    &format!("INSERT INTO {} (version) VALUES ($1)", tables.version),
                    &[(&version, Type::INT8)],
                )
                .await?;
        }
        Ok(Ok(()))
    })
    .await
}

/// The parameters with their types, so that a statement is sent in one round trip.
fn typed(params: &[Param]) -> Vec<(&(dyn ToSql + Sync), Type)> {
    params
        .iter()
        .map(|param| match param {
            Param::Text(text) => (text as &(dyn ToSql + Sync), Type::TEXT),
            Param::Int(n) => (n as &(dyn ToSql + Sync), Type::INT8),
            Param::Bool(b) => (b as &(dyn ToSql + Sync), Type::BOOL),
        })
        .collect()
}

/// What a failed operation tells the chat.
fn store_error(error: &tokio_postgres::Error) -> StoreError {
    match error.code() {
        Some(code) if *code == SqlState::QUERY_CANCELED => StoreError::TimedOut,
        Some(code) if *code == SqlState::INVALID_REGULAR_EXPRESSION => {
            StoreError::Refused("the database cannot run this regular expression")
        }
        _ => StoreError::Unavailable,
    }
}

/// Why a connection failed, without the server's own words.
fn describe_connect_error(error: &tokio_postgres::Error) -> String {
    if let Some(code) = error.code() {
        return if *code == SqlState::INVALID_PASSWORD
            || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
        {
            "the server refused the credentials".to_owned()
        } else if *code == SqlState::INVALID_CATALOG_NAME {
            "the database does not exist".to_owned()
        } else {
            format!(
                "the server refused the connection (SQLSTATE {})",
                code.code()
            )
        };
    }
    let io = std::error::Error::source(error)
        .and_then(|source| source.downcast_ref::<std::io::Error>())
        .map(std::io::Error::kind);
    match io {
        Some(std::io::ErrorKind::ConnectionRefused) => "connection refused".to_owned(),
        Some(std::io::ErrorKind::TimedOut) => "the server did not answer in time".to_owned(),
        _ if error.is_closed() => "the server closed the connection".to_owned(),
        _ => "the server cannot be reached".to_owned(),
    }
}

/// A failed migration's SQLSTATE, without the server's own words.
fn describe_db_error(error: &tokio_postgres::Error) -> String {
    match error.code() {
        Some(code) if *code == SqlState::INSUFFICIENT_PRIVILEGE => {
            "the database user may not create or alter the tables (SQLSTATE 42501)".to_owned()
        }
        Some(code) => format!("the server refused a statement (SQLSTATE {})", code.code()),
        None => "the connection failed".to_owned(),
    }
}

fn raw_row(row: &Row) -> std::result::Result<HistoryRow, tokio_postgres::Error> {
    Ok(HistoryRow::from(RawHistoryRow {
        id: row.try_get(0)?,
        created_at: row.try_get(1)?,
        user_id: row.try_get(2)?,
        user_name: row.try_get(3)?,
        body: row.try_get(4)?,
        is_yetibot: row.try_get(5)?,
        is_command: row.try_get(6)?,
        is_error: row.try_get(7)?,
    }))
}

fn alias_row(row: &Row) -> std::result::Result<Alias, tokio_postgres::Error> {
    Ok(Alias {
        name: row.try_get(0)?,
        expression: row.try_get(1)?,
        user_id: row.try_get(2)?,
    })
}

impl HistoryStore for PostgresStore {
    fn append(
        &self,
        records: Vec<HistoryRecord>,
    ) -> BoxFuture<'_, std::result::Result<(), StoreError>> {
        Box::pin(async move {
            if records.is_empty() {
                return Ok(());
            }
            let statement = schema::insert(Dialect::Postgres, &self.tables, &records);
            let mut lease = self.lease().await?;
            let Conn { client, connection } = &mut lease.conn;
            let driven = drive(
                connection,
                self.options.socket_timeout,
                client.execute_typed(&statement.sql, &typed(&statement.params)),
            )
            .await;
            lease.finish(driven).map(|_| ())
        })
    }

    fn rows<'a>(
        &'a self,
        scope: &'a HistoryScope,
        query: &'a HistoryQuery,
    ) -> BoxFuture<'a, std::result::Result<Vec<HistoryRow>, StoreError>> {
        Box::pin(async move {
            let statement = schema::select_rows(Dialect::Postgres, &self.tables, scope, query);
            let rows = self.read(&statement).await?;
            rows.iter()
                .map(raw_row)
                .collect::<std::result::Result<_, _>>()
                .map_err(|_| StoreError::Unavailable)
        })
    }

    fn count<'a>(
        &'a self,
        scope: &'a HistoryScope,
        filter: &'a HistoryFilter,
    ) -> BoxFuture<'a, std::result::Result<u64, StoreError>> {
        Box::pin(async move {
            let statement = schema::count_rows(Dialect::Postgres, &self.tables, scope, filter);
            let rows = self.read(&statement).await?;
            let count: i64 = rows
                .first()
                .and_then(|row| row.try_get(0).ok())
                .ok_or(StoreError::Unavailable)?;
            u64::try_from(count).map_err(|_| StoreError::Unavailable)
        })
    }
}

impl AliasStore for PostgresStore {
    fn get<'a>(
        &'a self,
        name: &'a str,
    ) -> BoxFuture<'a, std::result::Result<Option<Alias>, StoreError>> {
        Box::pin(async move {
            let mut lease = self.lease().await?;
            let Conn { client, connection } = &mut lease.conn;
            let name = name.to_owned();
            let driven = drive(connection, self.options.socket_timeout, async {
                let row = client
                    .query_typed_opt(&self.alias_sql.get, &[(&name, Type::TEXT)])
                    .await?;
                row.as_ref().map(alias_row).transpose()
            })
            .await;
            lease.finish(driven)
        })
    }

    fn put(&self, alias: Alias) -> BoxFuture<'_, std::result::Result<Option<Alias>, StoreError>> {
        Box::pin(async move {
            let mut lease = self.lease().await?;
            let Conn { client, connection } = &mut lease.conn;
            let sql = &self.alias_sql;
            let driven = drive(
                connection,
                self.options.socket_timeout,
                in_transaction(client, async {
                    let name = || (&alias.name as &(dyn ToSql + Sync), Type::TEXT);
                    let old = client
                        .query_typed_opt(&sql.get, &[name()])
                        .await?
                        .as_ref()
                        .map(alias_row)
                        .transpose()?;
                    let values = [
                        name(),
                        (&alias.expression as &(dyn ToSql + Sync), Type::TEXT),
                        (&alias.user_id as &(dyn ToSql + Sync), Type::TEXT),
                    ];
                    let change = if old.is_some() {
                        &sql.update
                    } else {
                        &sql.insert
                    };
                    client.execute_typed(change, &values).await?;
                    Ok(old)
                }),
            )
            .await;
            lease.finish(driven)
        })
    }

    fn remove<'a>(
        &'a self,
        name: &'a str,
    ) -> BoxFuture<'a, std::result::Result<Option<Alias>, StoreError>> {
        Box::pin(async move {
            let mut lease = self.lease().await?;
            let Conn { client, connection } = &mut lease.conn;
            let sql = &self.alias_sql;
            let name = name.to_owned();
            let driven = drive(
                connection,
                self.options.socket_timeout,
                in_transaction(client, async {
                    let key = [(&name as &(dyn ToSql + Sync), Type::TEXT)];
                    let old = client
                        .query_typed_opt(&sql.get, &key)
                        .await?
                        .as_ref()
                        .map(alias_row)
                        .transpose()?;
                    client.execute_typed(&sql.delete, &key).await?;
                    Ok(old)
                }),
            )
            .await;
            lease.finish(driven)
        })
    }

    fn list(&self) -> BoxFuture<'_, std::result::Result<Vec<Alias>, StoreError>> {
        Box::pin(async move {
            let mut lease = self.lease().await?;
            let Conn { client, connection } = &mut lease.conn;
            let driven = drive(connection, self.options.socket_timeout, async {
                let rows = client.query_typed(&self.alias_sql.list, &[]).await?;
                rows.iter()
                    .map(alias_row)
                    .collect::<std::result::Result<Vec<_>, _>>()
            })
            .await;
            let mut aliases = lease.finish(driven)?;
            // By name in byte order, whatever the database's collation.
            aliases.sort_by(|a, b| a.name.cmp(&b.name));
            Ok(aliases)
        })
    }
}
