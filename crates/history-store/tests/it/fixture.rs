//! Test databases: a fresh PostgreSQL schema or SQLite file per test, removed when the test
//! ends (even when it fails), records and callers to fill them, an interpreter over them,
//! and a TCP proxy that can take the PostgreSQL server away and bring it back.

use std::hash::BuildHasher;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;
use yetibot_command::{Caller, Interpreter, Settings, builtins};
use yetibot_conversation::AdapterKind;
use yetibot_history::{AliasStore, HistoryRecord, HistoryStore};
use yetibot_history_store::{
    PostgresOptions, PostgresStore, SqliteOptions, SqliteStore, Stores, TablePrefix,
};
use yetibot_json_util::SplitMix64;
use yetibot_redaction::Secret;

/// The server CI starts (trust authentication).
pub(crate) const SERVER: &str = "127.0.0.1:5432";
pub(crate) const ADMIN_URL: &str = "postgresql://postgres@127.0.0.1:5432/test";

/// Which database a suite case runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Postgres,
    Sqlite,
}

/// A name no other test or run uses.
pub(crate) fn unique(stem: &str) -> String {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let salt = std::collections::hash_map::RandomState::new().hash_one(n) % 1_000_000;
    format!("{stem}_{}_{n}_{salt}", std::process::id())
}

/// A connection for the test itself, its I/O running on the test's runtime.
pub(crate) async fn admin(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|error| {
            panic!(
                "PostgreSQL must run on {SERVER} with database `test` (.ci/run starts it): {error}"
            )
        });
    tokio::spawn(connection);
    client
}

/// A schema that exists for one test and is dropped with everything in it afterwards.
pub(crate) struct Schema {
    pub(crate) name: String,
}

impl Schema {
    pub(crate) async fn new() -> Self {
        let name = unique("yb_test");
        admin(ADMIN_URL)
            .await
            .batch_execute(&format!("CREATE SCHEMA {name}"))
            .await
            .expect("create the test schema");
        Self { name }
    }

    /// A URL whose sessions use only this schema, through `server` (`host:port`).
    pub(crate) fn url_via(&self, server: &str) -> String {
        format!(
            "postgresql://postgres@{server}/test?options=-c%20search_path%3D{}",
            self.name
        )
    }

    pub(crate) fn url(&self) -> String {
        self.url_via(SERVER)
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        // Best effort, on a thread of its own so that it also works while a test unwinds.
        let name = self.name.clone();
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async {
                if let Ok((client, connection)) =
                    tokio_postgres::connect(ADMIN_URL, tokio_postgres::NoTls).await
                {
                    tokio::spawn(connection);
                    let _ = client
                        .batch_execute(&format!("DROP SCHEMA IF EXISTS {name} CASCADE"))
                        .await;
                }
            });
        })
        .join();
    }
}

/// A folder that exists for one test.
pub(crate) struct Folder {
    pub(crate) path: PathBuf,
}

impl Folder {
    pub(crate) fn new() -> Self {
        let path = std::env::temp_dir().join(unique("yetibot_history_store"));
        std::fs::create_dir_all(&path).expect("temp folder");
        Self { path }
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Where a test database lives; dropped last, after the stores.
pub(crate) enum Place {
    Schema(Schema),
    Folder(Folder),
}

/// A test database with both stores open on it.
pub(crate) struct Db {
    pub(crate) kind: Kind,
    pub(crate) history: Arc<dyn HistoryStore>,
    pub(crate) aliases: Arc<dyn AliasStore>,
    pub(crate) place: Place,
}

impl Db {
    pub(crate) async fn new(kind: Kind) -> Self {
        let place = match kind {
            Kind::Postgres => Place::Schema(Schema::new().await),
            Kind::Sqlite => Place::Folder(Folder::new()),
        };
        let stores = open(kind, &place).await.expect("the store opens");
        Self {
            kind,
            history: stores.history,
            aliases: stores.aliases,
            place,
        }
    }

    /// The same database opened again, as a restarted bot opens it.
    pub(crate) async fn reopen(&self) -> yetibot_history_store::Result<Stores> {
        open(self.kind, &self.place).await
    }

    /// Runs `sql` directly on the test database (the suite's way to set up what no store
    /// call can, such as an upstream table).
    pub(crate) async fn execute(&self, sql: &str) {
        match &self.place {
            Place::Schema(schema) => admin(&schema.url())
                .await
                .batch_execute(sql)
                .await
                .expect("the setup statement runs"),
            Place::Folder(folder) => rusqlite::Connection::open(sqlite_path(folder))
                .and_then(|conn| conn.execute_batch(sql))
                .expect("the setup statement runs"),
        }
    }

    /// One number from `sql`.
    pub(crate) async fn number(&self, sql: &str) -> i64 {
        match &self.place {
            Place::Schema(schema) => admin(&schema.url())
                .await
                .query_one(sql, &[])
                .await
                .expect("the query runs")
                .get(0),
            Place::Folder(folder) => rusqlite::Connection::open(sqlite_path(folder))
                .and_then(|conn| conn.query_row(sql, [], |row| row.get(0)))
                .expect("the query runs"),
        }
    }
}

pub(crate) fn sqlite_path(folder: &Folder) -> PathBuf {
    folder.path.join("data").join("yetibot.db")
}

pub(crate) async fn open(kind: Kind, place: &Place) -> yetibot_history_store::Result<Stores> {
    let prefix = TablePrefix::default();
    match (kind, place) {
        (Kind::Postgres, Place::Schema(schema)) => {
            let store = Arc::new(
                PostgresStore::open(
                    &Secret::new(schema.url()),
                    &prefix,
                    PostgresOptions::default(),
                )
                .await?,
            );
            Ok(Stores {
                history: Arc::clone(&store) as Arc<dyn HistoryStore>,
                aliases: store,
            })
        }
        (_, Place::Folder(folder)) => {
            let store = Arc::new(
                SqliteStore::open(&sqlite_path(folder), &prefix, SqliteOptions::default()).await?,
            );
            Ok(Stores {
                history: Arc::clone(&store) as Arc<dyn HistoryStore>,
                aliases: store,
            })
        }
        (Kind::Sqlite, Place::Schema(_)) => unreachable!("an SQLite test has a folder"),
    }
}

/// A trusted caller in `room` of `adapter`.
pub(crate) fn caller(adapter: AdapterKind, room: &str) -> Caller {
    Caller {
        adapter,
        connection: adapter.as_str().to_owned(),
        room: room.to_owned(),
        user_id: "U1".to_owned(),
        user_name: "ann".to_owned(),
        trusted: true,
        message_id: None,
        platform: None,
    }
}

pub(crate) fn slack(room: &str) -> Caller {
    caller(AdapterKind::Slack, room)
}

/// A chat message `body` from `who` in `caller`'s room.
pub(crate) fn said(caller: &Caller, who: &str, body: &str) -> HistoryRecord {
    HistoryRecord {
        scope: caller.history_scope(),
        user_id: format!("id-{who}"),
        user_name: who.to_owned(),
        body: body.to_owned(),
        command: String::new(),
        correlation_id: format!("c-{body}"),
        is_yetibot: false,
        is_private: false,
        is_error: false,
        is_command: body.starts_with('!'),
        message_key: None,
    }
}

/// An interpreter reading history from (and keeping aliases in) `db`.
pub(crate) fn bot(db: &Db) -> Interpreter {
    let (history, _writer) = yetibot_history::history(
        Arc::clone(&db.history),
        yetibot_history::HistoryOptions::default(),
        Arc::new(|_| {}),
    );
    Interpreter::new(
        builtins(),
        Arc::clone(&db.aliases),
        Box::new(SplitMix64::new(11)),
        Settings::default(),
    )
    .with_history(history)
}

/// What `line` posts, run as `caller` (not recorded: `run` is not a chat message).
pub(crate) async fn say(bot: &Interpreter, caller: &Caller, line: &str) -> String {
    bot.run(caller, line).await.messages().join("\n")
}

/// A TCP proxy in front of the PostgreSQL server that the test can stop (its port then
/// refuses connections and open ones are cut), start again on the same port, or freeze
/// (connections stay open but nothing is passed on).
pub(crate) struct Proxy {
    pub(crate) address: SocketAddr,
    running: Option<JoinSet<()>>,
    frozen: watch::Sender<bool>,
}

impl Proxy {
    pub(crate) async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("address");
        let (frozen, _) = watch::channel(false);
        let mut proxy = Self {
            address,
            running: None,
            frozen,
        };
        proxy.serve(listener);
        proxy
    }

    fn serve(&mut self, listener: TcpListener) {
        let mut tasks = JoinSet::new();
        let frozen = self.frozen.subscribe();
        tasks.spawn(async move {
            let mut connections = JoinSet::new();
            while let Ok((inbound, _)) = listener.accept().await {
                connections.spawn(forward(inbound, frozen.clone()));
            }
        });
        self.running = Some(tasks);
    }

    /// The server goes away: the port closes and every open connection is cut.
    pub(crate) async fn stop(&mut self) {
        if let Some(mut tasks) = self.running.take() {
            tasks.abort_all();
            while tasks.join_next().await.is_some() {}
        }
    }

    /// The server is back on the same port.
    pub(crate) async fn restart(&mut self) {
        let listener = TcpListener::bind(self.address).await.expect("rebind");
        self.serve(listener);
    }

    pub(crate) fn freeze(&self, frozen: bool) {
        self.frozen.send_replace(frozen);
    }
}

async fn forward(mut inbound: TcpStream, mut frozen: watch::Receiver<bool>) {
    let Ok(mut outbound) = TcpStream::connect(SERVER).await else {
        return;
    };
    let (mut a, mut b) = ([0u8; 8192], [0u8; 8192]);
    loop {
        if *frozen.borrow_and_update() {
            if frozen.changed().await.is_err() {
                return;
            }
            continue;
        }
        tokio::select! {
            read = inbound.read(&mut a) => match read {
                Ok(0) | Err(_) => return,
                Ok(n) => if outbound.write_all(&a[..n]).await.is_err() { return },
            },
            read = outbound.read(&mut b) => match read {
                Ok(0) | Err(_) => return,
                Ok(n) => if inbound.write_all(&b[..n]).await.is_err() { return },
            },
            changed = frozen.changed() => if changed.is_err() { return },
        }
    }
}
