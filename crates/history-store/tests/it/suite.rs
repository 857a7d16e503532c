//! The cases every backend must pass alike. Each `case!` runs once on PostgreSQL and once on
//! SQLite.

use std::sync::Arc;

use serde_json::Value;
use yetibot_ai_commands::{HistoryToolError, history_count_tool, history_tool};
use yetibot_command::{Interpreter, Settings, builtins};
use yetibot_conversation::AdapterKind;
use yetibot_history::{
    Alias, HistoryFilter, HistoryOptions, HistoryOrder, HistoryQuery, Notice, StoreError,
};
use yetibot_history_store::{Error, SCHEMA_VERSION};
use yetibot_json_util::SplitMix64;

use crate::fixture::{Db, Kind, bot, caller, said, say, slack};

macro_rules! case {
    ($($name:ident),* $(,)?) => {
        mod postgres_suite {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(crate::fixture::Db::new(crate::fixture::Kind::Postgres).await).await;
                }
            )*
        }
        mod sqlite_suite {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(crate::fixture::Db::new(crate::fixture::Kind::Sqlite).await).await;
                }
            )*
        }
    };
}

case!(
    reads_never_leave_the_scope_of_two_rooms_and_two_adapters,
    pages_run_newest_first_in_time_order_and_a_foreign_cursor_reads_nothing,
    percent_underscore_and_backslash_are_literal_and_case_is_ignored,
    long_bodies_and_names_are_cut_by_the_query_and_flagged,
    a_replayed_event_is_recorded_once,
    history_pushes_its_following_stages_into_the_query,
    aliases_are_kept_replaced_listed_and_removed,
    tables_of_upstream_yetibot_are_migrated_in_place,
    a_newer_schema_is_refused_and_reopening_changes_nothing,
);

fn page(text: &str) -> Value {
    serde_json::from_str(text).expect("a JSON page")
}

fn bodies(page: &Value) -> Vec<String> {
    page["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["body"].as_str().expect("body").to_owned())
        .collect()
}

async fn count(db: &Db, caller: &yetibot_command::Caller, query: &str) -> u64 {
    let args = serde_json::json!({ "query": query }).to_string();
    let text = history_count_tool(db.history.as_ref(), caller, &args)
        .await
        .expect("count");
    page(&text)["count"].as_u64().expect("a count")
}

async fn reads_never_leave_the_scope_of_two_rooms_and_two_adapters(db: Db) {
    let a = slack("#a");
    let b = slack("#b");
    let discord_a = caller(AdapterKind::Discord, "#a");
    db.history
        .append(vec![
            said(&a, "ann", "in slack a"),
            said(&b, "bob", "in slack b"),
            said(&discord_a, "cat", "in discord a"),
            said(&a, "ann", "again in slack a"),
        ])
        .await
        .expect("append");
    for (who, expected) in [
        (&a, vec!["in slack a", "again in slack a"]),
        (&b, vec!["in slack b"]),
        (&discord_a, vec!["in discord a"]),
    ] {
        let text = history_tool(db.history.as_ref(), who, "{}")
            .await
            .expect("page");
        assert_eq!(bodies(&page(&text)), expected, "{:?}", who.history_scope());
        let counted = history_count_tool(db.history.as_ref(), who, "{}")
            .await
            .expect("count");
        assert_eq!(page(&counted)["count"], expected.len());
    }
    assert_eq!(count(&db, &a, "in").await, 2);
    let bot = bot(&db);
    assert_eq!(say(&bot, &b, "history | count").await, "1");
    // An untrusted caller reads nothing at all.
    let mut forged = a.clone();
    forged.trusted = false;
    assert_eq!(
        history_tool(db.history.as_ref(), &forged, "{}").await,
        Err(HistoryToolError::Untrusted)
    );
}

async fn pages_run_newest_first_in_time_order_and_a_foreign_cursor_reads_nothing(db: Db) {
    let a = slack("#a");
    let b = slack("#b");
    for n in 1..=5 {
        db.history
            .append(vec![
                said(&a, "ann", &format!("a{n}")),
                said(&b, "bob", &format!("b{n}")),
            ])
            .await
            .expect("append");
    }
    let first = page(
        &history_tool(db.history.as_ref(), &a, r#"{"limit":2}"#)
            .await
            .expect("page"),
    );
    assert_eq!(bodies(&first), ["a4", "a5"]);
    assert_eq!(first["has_more"], true);
    let cursor = first["next_before"].as_i64().expect("a cursor");
    assert_eq!(cursor, first["messages"][0]["id"].as_i64().expect("id"));
    let second = page(
        &history_tool(
            db.history.as_ref(),
            &a,
            &format!(r#"{{"limit":2,"before_id":{cursor}}}"#),
        )
        .await
        .expect("page"),
    );
    assert_eq!(bodies(&second), ["a2", "a3"]);
    let cursor = second["next_before"].as_i64().expect("a cursor");
    let last = page(
        &history_tool(
            db.history.as_ref(),
            &a,
            &format!(r#"{{"limit":2,"before_id":{cursor}}}"#),
        )
        .await
        .expect("page"),
    );
    assert_eq!(bodies(&last), ["a1"]);
    assert_eq!(last["has_more"], false);
    assert_eq!(last["next_before"], Value::Null);
    // A row of room #b as the cursor of room #a, or a row that does not exist: nothing.
    let foreign = page(
        &history_tool(db.history.as_ref(), &b, "{}")
            .await
            .expect("page"),
    )["messages"][0]["id"]
        .as_i64()
        .expect("id");
    for cursor in [foreign, 1_000_000] {
        let misused = page(
            &history_tool(
                db.history.as_ref(),
                &a,
                &format!(r#"{{"before_id":{cursor}}}"#),
            )
            .await
            .expect("page"),
        );
        assert_eq!(bodies(&misused), Vec::<String>::new(), "cursor {cursor}");
        assert_eq!(misused["has_more"], false);
    }
    // The query narrows the pages too.
    let searched = page(
        &history_tool(db.history.as_ref(), &a, r#"{"query":"A3","limit":20}"#)
            .await
            .expect("page"),
    );
    assert_eq!(bodies(&searched), ["a3"]);
}

async fn percent_underscore_and_backslash_are_literal_and_case_is_ignored(db: Db) {
    let a = slack("#a");
    db.history
        .append(
            [
                "100% done",
                "snake_case",
                r"C:\path",
                "plain TEXT",
                "ÉCOLE",
                "nothing",
            ]
            .into_iter()
            .map(|body| said(&a, "ann", body))
            .collect(),
        )
        .await
        .expect("append");
    for (query, expected) in [
        ("%", 1),
        ("_", 1),
        (r"\", 1),
        (r"C:\p", 1),
        ("0% d", 1),
        ("%done", 0),
        ("a_e", 0),
        ("text", 1),
        ("école", 1),
        (".*", 0),
        ("o", 3),
    ] {
        assert_eq!(count(&db, &a, query).await, expected, "query {query:?}");
    }
    let found = page(
        &history_tool(db.history.as_ref(), &a, r#"{"query":"_"}"#)
            .await
            .expect("page"),
    );
    assert_eq!(bodies(&found), ["snake_case"]);
}

async fn long_bodies_and_names_are_cut_by_the_query_and_flagged(db: Db) {
    let a = slack("#a");
    let mut long = said(&a, &"n".repeat(150), &format!("{}é", "x".repeat(1200)));
    long.user_id = "u".repeat(100);
    db.history
        .append(vec![long, said(&a, "ann", "short")])
        .await
        .expect("append");
    let text = history_tool(db.history.as_ref(), &a, "{}")
        .await
        .expect("page");
    let page = page(&text);
    let cut = &page["messages"][0];
    assert_eq!(cut["body"].as_str().map(|b| b.chars().count()), Some(1000));
    assert_eq!(cut["user_name"].as_str().map(str::len), Some(100));
    assert_eq!(cut["body_truncated"], true);
    assert_eq!(cut["user_name_truncated"], true);
    assert_eq!(
        cut["user_id_truncated"],
        Value::Null,
        "exactly 100 is not cut"
    );
    let whole = &page["messages"][1];
    assert_eq!(whole["body_truncated"], Value::Null);
    assert_eq!(page["truncated"], true);
    let line = say(&bot(&db), &a, "history | head").await;
    assert!(
        line.starts_with(&format!("{} in #a at ", "n".repeat(100))),
        "{line}"
    );
    assert!(line.ends_with("xxx…"), "{line}");
}

async fn a_replayed_event_is_recorded_once(db: Db) {
    let mut event = slack("#a");
    event.message_id = Some("1712345.0001".to_owned());
    let (history, writer) = yetibot_history::history(
        Arc::clone(&db.history),
        HistoryOptions::default(),
        Arc::new(|_| {}),
    );
    let recording = Interpreter::new(
        builtins(),
        Arc::clone(&db.aliases),
        Box::new(SplitMix64::new(5)),
        Settings::default(),
    )
    .with_history(history);
    // The platform delivers the same message three times; a different message once.
    for _ in 0..3 {
        recording.handle_message(&event, "!echo once").await;
    }
    let mut other = event.clone();
    other.message_id = Some("1712345.0002".to_owned());
    recording.handle_message(&other, "!echo once").await;
    drop(recording);
    writer.run().await;
    let a = slack("#a");
    assert_eq!(
        count(&db, &a, "once").await,
        4,
        "two messages and two replies"
    );
    let rows = db
        .history
        .rows(
            &a.history_scope(),
            &HistoryQuery {
                filter: HistoryFilter::default(),
                before_id: None,
                order: HistoryOrder::OldestFirst,
                offset: 0,
                limit: 20,
            },
        )
        .await
        .expect("rows");
    let shape: Vec<(&str, bool, bool)> = rows
        .iter()
        .map(|r| (r.body.as_str(), r.is_yetibot, r.is_command))
        .collect();
    assert_eq!(
        shape,
        [
            ("!echo once", false, true),
            ("once", true, false),
            ("!echo once", false, true),
            ("once", true, false),
        ]
    );
    // Replayed inside one batch, too.
    let mut twice = said(&a, "ann", "twice");
    twice.message_key = Some("k".to_owned());
    db.history
        .append(vec![twice.clone(), twice])
        .await
        .expect("append");
    assert_eq!(count(&db, &a, "twice").await, 1);
}

async fn history_pushes_its_following_stages_into_the_query(db: Db) {
    let a = slack("#a");
    let mut records: Vec<_> = (1..=12)
        .map(|n| said(&a, "ann", &format!("message {n}")))
        .collect();
    records.push(said(&a, "bob", "Deploy started"));
    records.push(said(&a, "bob", "!history | count"));
    records.push(said(&a, "bob", "deploy finished"));
    db.history.append(records).await.expect("append");
    let bot = bot(&db);
    // The `!history` line is left out of every read.
    assert_eq!(say(&bot, &a, "history | count").await, "14");
    assert_eq!(say(&bot, &a, "history | grep deploy | count").await, "2");
    assert_eq!(
        say(&bot, &a, "history | grep ^message 1[0-2]$ | count").await,
        "3"
    );
    let head = say(&bot, &a, "history | head 2").await;
    assert!(
        head.starts_with("ann in #a at ") && head.contains(": message 1\n"),
        "{head}"
    );
    assert!(head.ends_with(": message 2"), "{head}");
    let tail = say(&bot, &a, "history | tail 2").await;
    let lines: Vec<&str> = tail.lines().collect();
    assert_eq!(lines.len(), 2, "{tail}");
    assert!(lines[0].ends_with(": Deploy started"), "{tail}");
    assert!(lines[1].ends_with(": deploy finished"), "{tail}");
    assert!(
        say(&bot, &a, "history | tail")
            .await
            .ends_with(": deploy finished")
    );
    let grepped = say(&bot, &a, "history | grep DEPLOY | head").await;
    assert!(grepped.ends_with(": Deploy started"), "{grepped}");
    // The records travel with the rows.
    assert_eq!(
        say(&bot, &a, "history | tail 2 | data $.[1].user_name").await,
        "bob"
    );
    let random = say(&bot, &a, "history | grep message | random").await;
    assert!(random.contains(": message "), "{random}");
    // Stages after the consumed ones run as usual.
    assert_eq!(
        say(&bot, &a, "history | grep deploy | count | echo n=").await,
        "n= 2"
    );
    assert_eq!(
        say(&bot, &a, "history | head 3 | tail 1 | data $.body").await,
        "message 3"
    );
    // Without a following stage: the latest 30, oldest first.
    let all = say(&bot, &a, "history").await;
    assert_eq!(all.lines().count(), 14);
    assert!(
        all.lines()
            .next()
            .is_some_and(|l| l.ends_with(": message 1"))
    );
    // What the database cannot run is left to grep itself, on the latest 30 rows.
    assert_eq!(
        say(&bot, &a, "history | grep -v message | count").await,
        "2"
    );
    assert!(
        say(&bot, &a, "history | grep ( | count")
            .await
            .starts_with("💥 Error in `grep (`")
    );
    // An empty channel.
    assert_eq!(say(&bot, &slack("#empty"), "history | count").await, "0");
    assert_eq!(
        say(&bot, &slack("#empty"), "history | random").await,
        "No results"
    );
}

async fn aliases_are_kept_replaced_listed_and_removed(db: Db) {
    let alias = |name: &str, expression: &str| Alias {
        name: name.to_owned(),
        expression: expression.to_owned(),
        user_id: "U1".to_owned(),
    };
    let aliases = &db.aliases;
    assert_eq!(aliases.get("hi").await, Ok(None));
    assert_eq!(aliases.put(alias("hi", "echo hi")).await, Ok(None));
    assert_eq!(aliases.put(alias("b", "echo b")).await, Ok(None));
    assert_eq!(
        aliases.put(alias("hi", "echo hello")).await,
        Ok(Some(alias("hi", "echo hi")))
    );
    assert_eq!(
        aliases.list().await,
        Ok(vec![alias("b", "echo b"), alias("hi", "echo hello")])
    );
    // They outlive the store that wrote them.
    let reopened = db.reopen().await.expect("reopen");
    assert_eq!(
        reopened.aliases.get("hi").await,
        Ok(Some(alias("hi", "echo hello")))
    );
    assert_eq!(
        reopened.aliases.remove("hi").await,
        Ok(Some(alias("hi", "echo hello")))
    );
    assert_eq!(aliases.remove("hi").await, Ok(None));
    // Through the language.
    let bot = bot(&db);
    let me = slack("#a");
    assert_eq!(
        say(&bot, &me, r#"alias greet = "echo hey $s""#).await,
        "greet alias created"
    );
    assert_eq!(say(&bot, &me, "greet you").await, "hey you");
}

async fn tables_of_upstream_yetibot_are_migrated_in_place(db: Db) {
    // Upstream's tables as an older Yetibot left them (without `command`,
    // `correlation_id`, `is_private` and `is_error`), under another prefix, with rows.
    let key = match db.kind {
        Kind::Postgres => "id SERIAL PRIMARY KEY",
        Kind::Sqlite => "id INTEGER PRIMARY KEY AUTOINCREMENT",
    };
    let created = match db.kind {
        Kind::Postgres => "created_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP",
        Kind::Sqlite => "created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now'))",
    };
    db.execute(&format!(
        "CREATE TABLE old_history ({key}, chat_source_adapter TEXT, chat_source_room TEXT, user_id TEXT, user_name TEXT, body TEXT, is_yetibot BOOLEAN DEFAULT false, is_command BOOLEAN, {created});
         CREATE TABLE old_alias ({key}, user_id TEXT NOT NULL, cmd_name TEXT NOT NULL, cmd TEXT NOT NULL, {created});
         INSERT INTO old_history (chat_source_adapter, chat_source_room, user_id, user_name, body, is_command) VALUES (':slack', '#a', 'U9', 'old', 'from upstream', false);
         INSERT INTO old_history (chat_source_adapter, chat_source_room, user_id, body) VALUES (':slack', '#a', 'U9', NULL);
         INSERT INTO old_alias (user_id, cmd_name, cmd) VALUES ('U9', 'up', 'echo first'), ('U9', 'up', 'echo second');"
    ))
    .await;
    let prefix = yetibot_history_store::TablePrefix::new("old_").expect("prefix");
    let stores = match (&db.place, db.kind) {
        (crate::fixture::Place::Schema(schema), _) => {
            let store = yetibot_history_store::PostgresStore::open(
                &yetibot_redaction::Secret::new(schema.url()),
                &prefix,
                yetibot_history_store::PostgresOptions::default(),
            )
            .await
            .expect("an upstream database opens");
            let store = Arc::new(store);
            (
                Arc::clone(&store) as Arc<dyn yetibot_history::HistoryStore>,
                store as Arc<dyn yetibot_history::AliasStore>,
            )
        }
        (crate::fixture::Place::Folder(folder), _) => {
            let store = yetibot_history_store::SqliteStore::open(
                &crate::fixture::sqlite_path(folder),
                &prefix,
                yetibot_history_store::SqliteOptions::default(),
            )
            .await
            .expect("an upstream database opens");
            let store = Arc::new(store);
            (
                Arc::clone(&store) as Arc<dyn yetibot_history::HistoryStore>,
                store as Arc<dyn yetibot_history::AliasStore>,
            )
        }
    };
    let (history, aliases) = stores;
    let a = slack("#a");
    // Old rows read as they are (a NULL body reads as empty).
    let text = history_tool(history.as_ref(), &a, "{}")
        .await
        .expect("page");
    assert_eq!(bodies(&page(&text)), ["from upstream", ""]);
    // New rows go in beside them, with every column.
    history
        .append(vec![said(&a, "new", "from rust")])
        .await
        .expect("append");
    assert_eq!(
        db.number("SELECT COUNT(*) FROM old_history WHERE correlation_id = 'c-from rust' AND is_private = false AND is_error = false AND command = ''").await,
        1
    );
    // An upstream-style insert (no message key) still works.
    db.execute("INSERT INTO old_history (chat_source_adapter, chat_source_room, user_id, body) VALUES (':slack', '#a', 'U9', 'upstream again')").await;
    assert_eq!(count_in(history.as_ref(), &a).await, 4);
    // The first of two same-named upstream aliases wins, as upstream's lookup did.
    assert_eq!(
        aliases.get("up").await.map(|a| a.map(|a| a.expression)),
        Ok(Some("echo first".to_owned()))
    );
    assert_eq!(
        db.number("SELECT MAX(version) FROM old_schema_version")
            .await,
        SCHEMA_VERSION
    );
    let indexes = match db.kind {
        Kind::Postgres => {
            "SELECT COUNT(*) FROM pg_indexes WHERE indexname IN ('old_history_scope', 'old_history_message_key', 'old_alias_cmd_name') AND schemaname = current_schema()"
        }
        Kind::Sqlite => {
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name IN ('old_history_scope', 'old_history_message_key', 'old_alias_cmd_name')"
        }
    };
    assert_eq!(db.number(indexes).await, 3);
}

async fn count_in(
    history: &dyn yetibot_history::HistoryStore,
    caller: &yetibot_command::Caller,
) -> u64 {
    history
        .count(&caller.history_scope(), &HistoryFilter::default())
        .await
        .expect("count")
}

async fn a_newer_schema_is_refused_and_reopening_changes_nothing(db: Db) {
    let reopened = db.reopen().await.expect("reopening is a no-op");
    drop(reopened);
    assert_eq!(
        db.number("SELECT COUNT(*) FROM yetibot_schema_version")
            .await,
        2
    );
    db.execute("INSERT INTO yetibot_schema_version (version) VALUES (99)")
        .await;
    match db.reopen().await {
        Err(Error::NewerSchema { found: 99, known }) => assert_eq!(known, SCHEMA_VERSION),
        other => panic!("expected a newer-schema error, got {:?}", other.map(|_| ())),
    }
    // Nothing was changed.
    assert_eq!(
        db.number("SELECT MAX(version) FROM yetibot_schema_version")
            .await,
        99
    );
}

/// The notices of a recorder, for the backend-specific outage tests.
pub(crate) fn collect_notices() -> (
    yetibot_history::Notify,
    tokio::sync::mpsc::UnboundedReceiver<Notice>,
) {
    let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
    let notify: yetibot_history::Notify = Arc::new(move |notice| {
        let _ = sender.send(notice);
    });
    (notify, receiver)
}

/// What a failed read tells a model.
pub(crate) fn unavailable() -> HistoryToolError {
    HistoryToolError::Store(StoreError::Unavailable)
}
