//! What only the PostgreSQL store has: the statement timeout (proved with a session that
//! holds the table locked while it sleeps in `pg_sleep`), the socket and connect timeouts,
//! and the server going away mid-run and coming back. The server itself is never stopped:
//! a proxy in front of it takes its port away, or the test ends its own sessions.

use std::sync::Arc;
use std::time::Duration;

use yetibot_ai_commands::history_tool;
use yetibot_command::{Interpreter, Settings, builtins};
use yetibot_history::{HistoryFilter, HistoryOptions, HistoryStore, Notice, StoreError, history};
use yetibot_history_store::{Error, PostgresOptions, PostgresStore, TablePrefix};
use yetibot_json_util::SplitMix64;
use yetibot_redaction::Secret;

use crate::fixture::{Proxy, Schema, admin, said, say, slack, unique};
use crate::suite::{collect_notices, unavailable};

fn quick() -> PostgresOptions {
    PostgresOptions {
        statement_timeout: Duration::from_millis(300),
        connect_timeout: Duration::from_millis(500),
        socket_timeout: Duration::from_millis(800),
        application_name: unique("yb_app"),
        ..PostgresOptions::default()
    }
}

async fn store(url: String, options: PostgresOptions) -> Arc<PostgresStore> {
    Arc::new(
        PostgresStore::open(&Secret::new(url), &TablePrefix::default(), options)
            .await
            .expect("the store opens"),
    )
}

#[test]
fn the_default_limits_are_the_specified_ones() {
    let options = PostgresOptions::default();
    assert_eq!(options.statement_timeout, Duration::from_secs(2));
    assert_eq!(options.connect_timeout, Duration::from_secs(2));
    assert_eq!(options.socket_timeout, Duration::from_secs(3));
}

#[tokio::test]
async fn a_slow_query_is_cancelled_by_the_statement_timeout() {
    let schema = Schema::new().await;
    let store = store(schema.url(), quick()).await;
    let a = slack("#a");
    store
        .append(vec![said(&a, "ann", "hi")])
        .await
        .expect("append");
    // Another session locks the table and sleeps, so every read of it waits.
    let locker = admin(&schema.url()).await;
    let pid: i32 = locker
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .expect("pid")
        .get(0);
    let sleeping = tokio::spawn(async move {
        let _ = locker
            .batch_execute(
                "BEGIN; LOCK TABLE yetibot_history IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(30);",
            )
            .await;
    });
    let watcher = admin(&schema.url()).await;
    // Wait until the lock is held (the locker's sleep has started).
    loop {
        let sleeping_now: bool = watcher
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND query LIKE '%pg_sleep%' AND wait_event = 'PgSleep')",
                &[&pid],
            )
            .await
            .expect("activity")
            .get(0);
        if sleeping_now {
            break;
        }
        tokio::task::yield_now().await;
    }
    let scope = a.history_scope();
    assert_eq!(
        store.count(&scope, &HistoryFilter::default()).await,
        Err(StoreError::TimedOut)
    );
    assert_eq!(
        history_tool(store.as_ref(), &a, "{}").await,
        Err(yetibot_ai_commands::HistoryToolError::Store(
            StoreError::TimedOut
        ))
    );
    watcher
        .execute("SELECT pg_terminate_backend($1, 5000)", &[&pid])
        .await
        .expect("end the locker");
    let _ = sleeping.await;
    // The session that timed out is still good.
    assert_eq!(store.count(&scope, &HistoryFilter::default()).await, Ok(1));
}

#[tokio::test]
async fn a_server_that_stops_answering_hits_the_socket_and_connect_timeouts() {
    let schema = Schema::new().await;
    let mut proxy = Proxy::start().await;
    let store = store(schema.url_via(&proxy.address.to_string()), quick()).await;
    let scope = slack("#a").history_scope();
    assert_eq!(store.count(&scope, &HistoryFilter::default()).await, Ok(0));
    proxy.freeze(true);
    assert_eq!(
        store.count(&scope, &HistoryFilter::default()).await,
        Err(StoreError::TimedOut)
    );
    proxy.freeze(false);
    assert_eq!(store.count(&scope, &HistoryFilter::default()).await, Ok(0));
    // A server that accepts connections but never answers cannot be opened.
    proxy.freeze(true);
    let opening = PostgresStore::open(
        &Secret::new(schema.url_via(&proxy.address.to_string())),
        &TablePrefix::default(),
        quick(),
    )
    .await;
    match opening {
        Err(Error::Connect { reason }) => assert_eq!(reason, "the server did not answer in time"),
        other => panic!("expected a connect timeout, got {:?}", other.map(|_| ())),
    }
    proxy.stop().await;
}

#[tokio::test]
async fn the_bot_keeps_answering_while_the_server_is_away_and_recovers_when_it_returns() {
    let schema = Schema::new().await;
    let mut proxy = Proxy::start().await;
    let store = store(schema.url_via(&proxy.address.to_string()), quick()).await;
    let (notify, mut notices) = collect_notices();
    let (history, writer) = history(
        Arc::clone(&store) as Arc<dyn HistoryStore>,
        HistoryOptions::default(),
        notify,
    );
    let writing = tokio::spawn(writer.run());
    let bot = Interpreter::new(
        builtins(),
        Arc::clone(&store) as Arc<dyn yetibot_history::AliasStore>,
        Box::new(SplitMix64::new(1)),
        Settings::default(),
    )
    .with_history(history);
    let a = slack("#a");
    assert_eq!(say(&bot, &a, "history | count").await, "0");

    proxy.stop().await;
    let replies = bot.handle_message(&a, "!echo still here").await;
    assert_eq!(
        replies[0].messages(),
        ["still here"],
        "the bot keeps answering"
    );
    assert_eq!(
        notices.recv().await,
        Some(Notice::WriteFailed(StoreError::Unavailable))
    );
    let replies = bot.handle_message(&a, "!echo and here").await;
    assert_eq!(replies[0].messages(), ["and here"]);
    assert_eq!(
        say(&bot, &a, "history | count").await,
        "💥 Error in `history`: the database is unavailable; try again later 💥"
    );
    assert_eq!(
        history_tool(store.as_ref(), &a, "{}").await,
        Err(unavailable())
    );

    proxy.restart().await;
    // The first read after the outage may still meet a dead connection; then it is gone.
    let mut failures = 0;
    while say(&bot, &a, "history | count").await.starts_with("💥") {
        failures += 1;
        assert!(failures < 2, "the store recovers by itself");
    }
    bot.handle_message(&a, "!echo back").await;
    match notices.recv().await {
        Some(Notice::Recovered { lost }) => assert!((2..=4).contains(&lost), "lost {lost}"),
        other => panic!("expected a recovery notice, got {other:?}"),
    }
    drop(bot);
    writing.await.expect("the writer ends");
    assert!(notices.try_recv().is_err(), "one notice each way");
    let stored = store
        .count(&a.history_scope(), &HistoryFilter::default())
        .await
        .expect("count");
    assert!(
        stored >= 2,
        "the message after the outage and its reply are stored"
    );
    proxy.stop().await;
}

#[tokio::test]
async fn ended_sessions_are_replaced_without_failing_a_read() {
    let schema = Schema::new().await;
    let options = quick();
    let name = options.application_name.clone();
    let store = store(schema.url(), options).await;
    let a = slack("#a");
    store
        .append(vec![said(&a, "ann", "hi")])
        .await
        .expect("append");
    let scope = a.history_scope();
    let ended: i64 = admin(&schema.url())
        .await
        .query_one(
            "SELECT COUNT(*) FROM (SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE application_name = $1) ended",
            &[&name],
        )
        .await
        .expect("terminate")
        .get(0);
    assert!(ended >= 1, "the store's idle session was ended");
    assert_eq!(store.count(&scope, &HistoryFilter::default()).await, Ok(1));
}

#[tokio::test]
async fn connection_failures_name_no_credential() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    drop(listener);
    let url = format!("postgresql://bot:hunter2-secret@127.0.0.1:{port}/yetibot");
    let error = PostgresStore::open(&Secret::new(url), &TablePrefix::default(), quick())
        .await
        .expect_err("nothing listens there");
    let text = error.to_string();
    assert_eq!(text, "cannot connect to the database: connection refused");
    let wrong_db = "postgresql://postgres@127.0.0.1:5432/no_such_database_here";
    let error = PostgresStore::open(&Secret::new(wrong_db), &TablePrefix::default(), quick())
        .await
        .expect_err("no such database");
    assert_eq!(
        error.to_string(),
        "cannot connect to the database: the database does not exist"
    );
}
