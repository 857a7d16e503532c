//! Recording chat history: what a message and its replies write, that a full queue or a
//! failing store never holds up an answer, and that each outage is reported once.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use yetibot_command::{Caller, Interpreter, Settings, builtins};
use yetibot_history::{
    HistoryFilter, HistoryOptions, HistoryQuery, HistoryRecord, HistoryRow, HistoryScope,
    HistoryStore, MemoryAliases, Notice, Notify, StoreError, history,
};
use yetibot_json_util::SplitMix64;

/// A store that keeps what it is given, answering each write with the next scripted
/// result (success once the script runs out) and telling the test about every write.
#[derive(Default)]
struct Fake {
    written: Mutex<Vec<HistoryRecord>>,
    script: Mutex<VecDeque<Result<(), StoreError>>>,
    calls: Mutex<Option<tokio::sync::mpsc::UnboundedSender<usize>>>,
}

impl HistoryStore for Fake {
    fn append(&self, records: Vec<HistoryRecord>) -> BoxFuture<'_, Result<(), StoreError>> {
        let size = records.len();
        let result = self
            .script
            .lock()
            .expect("lock")
            .pop_front()
            .unwrap_or(Ok(()));
        if result.is_ok() {
            self.written.lock().expect("lock").extend(records);
        }
        if let Some(calls) = self.calls.lock().expect("lock").as_ref() {
            let _ = calls.send(size);
        }
        Box::pin(std::future::ready(result))
    }

    fn rows<'a>(
        &'a self,
        _: &'a HistoryScope,
        _: &'a HistoryQuery,
    ) -> BoxFuture<'a, Result<Vec<HistoryRow>, StoreError>> {
        Box::pin(std::future::ready(Ok(Vec::new())))
    }

    fn count<'a>(
        &'a self,
        _: &'a HistoryScope,
        _: &'a HistoryFilter,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        Box::pin(std::future::ready(Ok(0)))
    }
}

/// User, body, command, from the bot, a command, an error, key.
type Summary<'a> = (&'a str, &'a str, &'a str, bool, bool, bool, Option<&'a str>);

fn notices() -> (Notify, Arc<Mutex<Vec<Notice>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let notify: Notify = Arc::new(move |notice| sink.lock().expect("lock").push(notice));
    (notify, seen)
}

fn bot() -> Interpreter {
    Interpreter::new(
        builtins(),
        Arc::new(MemoryAliases::new()),
        Box::new(SplitMix64::new(3)),
        Settings::default(),
    )
}

fn caller(message_id: Option<&str>, trusted: bool) -> Caller {
    Caller {
        adapter: yetibot_conversation::AdapterKind::Slack,
        connection: "slack".into(),
        room: "#general".into(),
        user_id: "U1".into(),
        user_name: "ann".into(),
        trusted,
        message_id: message_id.map(str::to_owned),
        platform: None,
    }
}

#[tokio::test]
async fn a_message_and_its_replies_are_recorded_under_one_correlation_id() {
    let store = Arc::new(Fake::default());
    let (notify, seen) = notices();
    let (history, writer) = history(
        Arc::clone(&store) as Arc<dyn HistoryStore>,
        HistoryOptions {
            bot_user_id: "B1".into(),
            bot_user_name: "yeti".into(),
            ..HistoryOptions::default()
        },
        notify,
    );
    let bot = bot().with_history(history);
    bot.handle_message(&caller(Some("m1"), true), "!echo hi")
        .await;
    bot.handle_message(&caller(Some("m2"), true), "see `echo a` and `nosuch`")
        .await;
    bot.handle_message(&caller(Some("m3"), true), "!list a | count x")
        .await;
    bot.handle_message(&caller(Some("m4"), false), "!echo untrusted")
        .await;
    drop(bot);
    writer.run().await;
    let written = store.written.lock().expect("lock").clone();
    let summary: Vec<Summary<'_>> = written
        .iter()
        .map(|r| {
            (
                r.user_id.as_str(),
                r.body.as_str(),
                r.command.as_str(),
                r.is_yetibot,
                r.is_command,
                r.is_error,
                r.message_key.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("U1", "!echo hi", "", false, true, false, Some("m1")),
            ("B1", "hi", "echo hi", true, false, false, Some("m1/1")),
            (
                "U1",
                "see `echo a` and `nosuch`",
                "",
                false,
                false,
                false,
                Some("m2")
            ),
            ("B1", "a", "echo a", true, false, false, Some("m2/1")),
            (
                "U1",
                "!list a | count x",
                "",
                false,
                true,
                false,
                Some("m3")
            ),
            (
                "B1",
                "1",
                "list a | count x",
                true,
                false,
                false,
                Some("m3/1")
            ),
        ],
        "untrusted callers are not recorded"
    );
    for pair in written.chunks(2) {
        assert_eq!(pair[0].correlation_id, pair[1].correlation_id);
        assert_eq!(pair[0].correlation_id.len(), 36);
        assert_eq!(pair[0].scope.adapter(), ":slack");
        assert_eq!(pair[0].scope.room(), "#general");
        assert_eq!(pair[1].user_name, "yeti");
    }
    assert_ne!(written[0].correlation_id, written[2].correlation_id);
    assert!(seen.lock().expect("lock").is_empty());
}

#[tokio::test]
async fn an_error_reply_is_recorded_as_one() {
    let store = Arc::new(Fake::default());
    let (notify, _) = notices();
    let (history, writer) = history(
        Arc::clone(&store) as Arc<dyn HistoryStore>,
        HistoryOptions::default(),
        notify,
    );
    let bot = bot().with_history(history);
    bot.handle_message(&caller(None, true), "!echo a | count")
        .await;
    drop(bot);
    writer.run().await;
    let written = store.written.lock().expect("lock").clone();
    assert_eq!(written.len(), 2);
    assert!(written[1].is_error && written[1].body.contains("Error in `count"));
    assert_eq!(written[1].message_key, None, "no message ID, no key");
}

#[tokio::test]
async fn a_full_queue_drops_records_without_waiting_and_says_so_once() {
    let store = Arc::new(Fake::default());
    let (notify, seen) = notices();
    let (history, writer) = history(
        Arc::clone(&store) as Arc<dyn HistoryStore>,
        HistoryOptions {
            queue_capacity: 2,
            ..HistoryOptions::default()
        },
        notify,
    );
    let bot = bot().with_history(history);
    // The writer is not running, so only two records fit; every answer still comes.
    for n in 0..10 {
        let replies = bot
            .handle_message(&caller(Some(&format!("m{n}")), true), "!echo hi")
            .await;
        assert_eq!(replies[0].messages(), ["hi"]);
    }
    assert_eq!(*seen.lock().expect("lock"), [Notice::QueueFull]);
    drop(bot);
    writer.run().await;
    assert_eq!(store.written.lock().expect("lock").len(), 2);
    assert_eq!(
        *seen.lock().expect("lock"),
        [Notice::QueueFull, Notice::Recovered { lost: 18 }]
    );
}

#[tokio::test]
async fn a_failing_store_is_reported_once_per_outage() {
    let store = Arc::new(Fake::default());
    store.script.lock().expect("lock").extend([
        Err(StoreError::Unavailable),
        Err(StoreError::Unavailable),
        Ok(()),
        Err(StoreError::TimedOut),
        Ok(()),
    ]);
    let (calls, mut called) = tokio::sync::mpsc::unbounded_channel();
    *store.calls.lock().expect("lock") = Some(calls);
    let (notify, seen) = notices();
    let (history, writer) = history(
        Arc::clone(&store) as Arc<dyn HistoryStore>,
        HistoryOptions::default(),
        notify,
    );
    let writing = tokio::spawn(writer.run());
    let bot = bot().with_history(history);
    let mut expected = Vec::new();
    for (n, after) in [
        Some(Notice::WriteFailed(StoreError::Unavailable)),
        None,
        Some(Notice::Recovered { lost: 4 }),
        Some(Notice::WriteFailed(StoreError::TimedOut)),
        Some(Notice::Recovered { lost: 2 }),
    ]
    .into_iter()
    .enumerate()
    {
        let replies = bot
            .handle_message(&caller(Some(&format!("m{n}")), true), "!echo up")
            .await;
        assert_eq!(replies[0].messages(), ["up"], "the bot keeps answering");
        // Both records of the message go in one batch.
        assert_eq!(called.recv().await, Some(2));
        expected.extend(after);
        assert_eq!(*seen.lock().expect("lock"), expected, "after message {n}");
    }
    drop(bot);
    writing
        .await
        .expect("the writer ends when the history is dropped");
    assert_eq!(store.written.lock().expect("lock").len(), 4);
}
