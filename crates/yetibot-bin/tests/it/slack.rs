//! The running bot on Slack: the real binary connected to the fake Slack on loopback and a
//! scripted provider. A prompt answered in its thread without a caption or a status card (it
//! answered within the card delay), a redelivered envelope
//! that costs one provider request, and a thread whose history cannot be read completely,
//! which fails before any provider request.

use std::time::Duration;

use provider_fixture::{Fixture, Reply, script};
use serde_json::{Value, json};
use slack_fixture::{Call, FakeSlack, Thread};

use crate::Workdir;

const BOT_TOKEN: &str = "xoxb-e2e-bot-token-0123456789";
const APP_TOKEN: &str = "xapp-e2e-app-token-0123456789";

/// Waits for a `chat.postMessage` whose text contains `needle`.
pub(crate) async fn posted(slack: &FakeSlack, needle: &str) -> Call {
    let find = async {
        let mut n = 1;
        loop {
            let calls = slack.wait_calls("chat.postMessage", n).await;
            if let Some(call) = calls
                .iter()
                .find(|c| c.body["text"].as_str().is_some_and(|t| t.contains(needle)))
            {
                return call.clone();
            }
            n = calls.len() + 1;
        }
    };
    tokio::time::timeout(Duration::from_secs(60), find)
        .await
        .unwrap_or_else(|_| {
            panic!(
                "no message with {needle:?}: {:#?}",
                slack.calls("chat.postMessage")
            )
        })
}

/// The bot in `dir` with `edn` (a Slack adapter named `myteam`) and `RUST_LOG`, once it has
/// opened its Socket Mode connection to `slack`.
pub(crate) async fn connected(
    slack: &FakeSlack,
    dir: &Workdir,
    edn: &str,
    rust_log: &str,
) -> crate::Service {
    let bot = crate::Service::start(
        dir,
        edn,
        &[
            ("YETIBOT_ADAPTERS_MYTEAM_TOKEN", BOT_TOKEN),
            ("YETIBOT_ADAPTERS_MYTEAM_APP_TOKEN", APP_TOKEN),
            ("RUST_LOG", rust_log),
        ],
    );
    tokio::time::timeout(Duration::from_secs(60), slack.wait_connections(1))
        .await
        .expect("the bot opens a Socket Mode connection");
    bot
}

pub(crate) fn message(text: &str, ts: &str, thread: Option<&str>) -> Value {
    let mut event =
        json!({"type": "message", "channel": "C1", "user": "U1", "text": text, "ts": ts});
    if let Some(thread) = thread {
        event["thread_ts"] = json!(thread);
    }
    event
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bot_answers_on_slack_once_per_event_and_never_with_a_partial_thread() {
    let provider = Fixture::start().await.expect("provider");
    provider.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("The **answer** <!channel>")),
    );
    let slack = FakeSlack::start().await;
    slack.set_channel("C1", json!({"id": "C1", "name": "general"}));
    slack.set_user("U1", json!({"id": "U1", "name": "ada", "real_name": "Ada"}));
    let edn = format!(
        r#"{{:yetibot {{:web {{:enabled false}}
                     :ai {{:providers [{{:name "local" :url "{}" :model "m1"}}]}}
                     :adapters {{:myteam {{:type "slack" :api-url "{}"}}}}}}}}"#,
        provider.url("/v1"),
        slack.api_url()
    );
    let dir = Workdir::new();
    let bot = connected(&slack, &dir, &edn, "debug").await;

    // The same event twice (a redelivery): one provider request, one answer.
    let first = slack.send_event("Ev1", message("!ai hello", "1700000000.000100", None));
    let again = slack.send_event("Ev1", message("!ai hello", "1700000000.000100", None));
    let answer = posted(&slack, "The *answer* &lt;!channel&gt;").await;
    assert_eq!(answer.body["thread_ts"], "1700000000.000100");
    assert_eq!(answer.body["channel"], "C1");
    // Captions are Discord's: the Slack answer has none.
    assert!(
        answer.body["blocks"]
            .as_array()
            .is_some_and(|blocks| blocks.iter().all(|b| b["type"] != "context")),
        "{}",
        answer.body
    );
    let acks = [slack.next_ack().await, slack.next_ack().await];
    assert!(acks.contains(&first) && acks.contains(&again), "{acks:?}");
    // The answer came within the card delay: no status card was posted (and so none could
    // land after the answer), and nothing had to be deleted.
    assert!(
        slack
            .calls("chat.postMessage")
            .iter()
            .all(|c| !c.body["text"]
                .as_str()
                .unwrap_or_default()
                .contains("Working")),
        "{:#?}",
        slack.calls("chat.postMessage")
    );
    assert!(slack.calls("chat.delete").is_empty());

    // A prompt in a thread whose second page fails: an error, and no provider request.
    slack.set_thread("1700000100.000000", Thread {
        pages: vec![
            vec![json!({"type": "message", "ts": "1700000100.000000", "user": "U1", "text": "!ai start"})],
            vec![json!({"type": "message", "ts": "1700000101.000000", "user": "U1", "text": "more"})],
        ],
        failing_page: Some(1),
        ..Thread::default()
    });
    slack.send_event(
        "Ev2",
        message(
            "!ai and now?",
            "1700000102.000000",
            Some("1700000100.000000"),
        ),
    );
    let error = posted(&slack, "could not be read completely").await;
    assert_eq!(error.body["thread_ts"], "1700000100.000000");
    assert_eq!(slack.calls("conversations.replies").len(), 2);
    assert_eq!(
        provider.count("/v1/chat/completions"),
        1,
        "one paid call in all"
    );

    let (code, lines) = bot.stop();
    assert_eq!(code, Some(0), "{lines:#?}");
    let log = lines.join("\n");
    for secret in [BOT_TOKEN, APP_TOKEN, "!ai hello", "The **answer**"] {
        assert!(!log.contains(secret), "{secret:?} reached the log");
    }
}
