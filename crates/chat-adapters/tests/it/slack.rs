//! The Slack adapter against the fake Slack on loopback: Socket Mode envelopes in (acks,
//! redeliveries, bots, edits, reactions, bad envelopes, reconnects) and the outbox's Web
//! API calls out (threads, captions, splitting, files, escaping, rate limits, histories).

use std::sync::Arc;

use serde_json::{Value, json};
use slack_fixture::{BOT_USER, FakeSlack, Scripted, Thread};
use yetibot_chat_adapters::config::SlackSettings;
use yetibot_chat_adapters::slack::{SlackAdapter, SlackError, SlackOptions};
use yetibot_chat_adapters::{
    AdapterKind, Answer, Event, EventKind, Events, HistoryError, HistoryLimits, Limits, Outbox,
    Outgoing, Place, Role, SendError, fit, intake,
};
use yetibot_redaction::Secret;

const BOT_TOKEN: &str = "xoxb-test-bot-token";

struct Running {
    fake: FakeSlack,
    events: Events,
    outbox: Arc<dyn Outbox>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    run: tokio::task::JoinHandle<()>,
}

impl Running {
    async fn start() -> Self {
        Self::start_with(SlackOptions {
            connections: 1,
            ..SlackOptions::default()
        })
        .await
    }

    async fn start_with(options: SlackOptions) -> Self {
        let fake = FakeSlack::start().await;
        fake.set_channel("C1", json!({"id": "C1", "name": "general"}));
        fake.set_channel("D1", json!({"id": "D1", "is_im": true, "user": "U1"}));
        fake.set_user(
            "U1",
            json!({"id": "U1", "name": "ada", "profile": {"display_name": "Ada"}}),
        );
        let settings = SlackSettings {
            connection: "myteam".into(),
            bot_token: Secret::new(BOT_TOKEN),
            app_token: Secret::new("xapp-test-app-token"),
            api_url: fake.api_url(),
        };
        let (intake, events) = intake(16);
        let adapter = SlackAdapter::connect(&settings, options, intake)
            .await
            .expect("connects");
        let outbox = adapter.outbox();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let run = tokio::spawn(adapter.run(async move {
            let _ = stopped.await;
        }));
        fake.wait_connections(1).await;
        Self {
            fake,
            events,
            outbox,
            stop: Some(stop),
            run,
        }
    }

    async fn next(&mut self) -> Event {
        self.events.next().await.expect("an event").event
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = self.run.await;
    }
}

fn message(user: &str, text: &str, ts: &str) -> Value {
    json!({"type": "message", "channel": "C1", "user": user, "text": text, "ts": ts})
}

fn place(thread: &str) -> Place {
    Place {
        adapter: AdapterKind::Slack,
        connection: "myteam".into(),
        room: "C1".into(),
        room_name: Some("#general".into()),
        thread: Some(thread.into()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_is_acknowledged_and_becomes_a_trusted_event_in_its_thread() {
    let mut slack = Running::start().await;
    let envelope = slack.fake.send_event(
        "Ev1",
        message("U1", "!echo hi &amp; bye", "1700000000.000100"),
    );
    assert_eq!(slack.fake.next_ack().await, envelope);
    let event = slack.next().await;
    assert_eq!(
        event.place,
        Place {
            adapter: AdapterKind::Slack,
            connection: "myteam".into(),
            room: "C1".into(),
            room_name: Some("#general".into()),
            thread: Some("1700000000.000100".into()),
        }
    );
    assert_eq!(
        (
            event.author.id.as_str(),
            event.author.name.as_str(),
            event.author.is_bot
        ),
        ("U1", "Ada", false)
    );
    assert_eq!(event.message_id, "1700000000.000100");
    assert_eq!(
        event.kind,
        EventKind::Message {
            text: "!echo hi & bye".into()
        }
    );
    // A direct message's history key is the other person's name.
    slack.fake.send_event(
        "Ev2",
        json!({"type": "message", "channel": "D1", "user": "U1",
        "text": "!help", "ts": "1700000001.000000", "channel_type": "im"}),
    );
    assert_eq!(slack.next().await.place.room_name.as_deref(), Some("ada"));
    // The Web API got the bot token, and Socket Mode the app token.
    assert!(
        slack
            .fake
            .calls("conversations.info")
            .iter()
            .all(|c| c.auth.as_deref() == Some("Bearer xoxb-test-bot-token"))
    );
    assert!(
        slack
            .fake
            .calls("apps.connections.open")
            .iter()
            .all(|c| c.auth.as_deref() == Some("Bearer xapp-test-app-token"))
    );
    slack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redelivered_or_retried_event_is_taken_once() {
    let mut slack = Running::start().await;
    let first = slack
        .fake
        .send_event("Ev1", message("U1", "!ai hi", "1.000100"));
    let again = slack
        .fake
        .send_event("Ev1", message("U1", "!ai hi", "1.000100"));
    assert_eq!(slack.fake.next_ack().await, first);
    assert_eq!(
        slack.fake.next_ack().await,
        again,
        "a redelivery is acknowledged too"
    );
    // Slack's retry after an acknowledgement it never saw comes on a new connection.
    slack
        .fake
        .send_event("Ev2", message("U1", "!ai two", "2.000100"));
    slack.fake.drop_socket();
    slack.fake.wait_connections(2).await;
    let retry = slack
        .fake
        .send_event("Ev2", message("U1", "!ai two", "2.000100"));
    loop {
        if slack.fake.next_ack().await == retry {
            break;
        }
    }
    slack
        .fake
        .send_event("Ev3", message("U1", "!ai three", "3.000100"));
    let texts: Vec<EventKind> = vec![
        slack.next().await.kind,
        slack.next().await.kind,
        slack.next().await.kind,
    ];
    assert_eq!(
        texts,
        [
            EventKind::Message {
                text: "!ai hi".into()
            },
            EventKind::Message {
                text: "!ai two".into()
            },
            EventKind::Message {
                text: "!ai three".into()
            },
        ]
    );
    slack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_the_bot_cannot_take_stays_unacknowledged_for_slack_to_retry() {
    let mut slack = Running::start().await;
    slack.events.close();
    let deferred = slack
        .fake
        .send_event("Ev1", message("U1", "!ai hi", "1.000100"));
    let ignored = slack.fake.send_event(
        "Ev2",
        json!({"type": "app_home_opened", "user": "U1", "channel": "D1"}),
    );
    // Envelopes are answered in order on a connection: the next acknowledgement is the
    // second envelope's, so the first was left for Slack to deliver again.
    assert_eq!(slack.fake.next_ack().await, ignored);
    assert!(!slack.fake.pending_acks().contains(&deferred));
    slack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bots_the_bot_itself_and_bad_envelopes_trigger_nothing() {
    let mut slack = Running::start().await;
    let huge = "x".repeat(yetibot_chat_adapters::slack::MAX_TEXT_BYTES + 1);
    slack.fake.send_event("Ev1", json!({"type": "message", "channel": "C1", "user": BOT_USER, "text": "!ai loop", "ts": "1.0"}));
    slack.fake.send_event("Ev2", json!({"type": "message", "subtype": "bot_message", "channel": "C1", "bot_id": "B9", "text": "!ai", "ts": "2.0"}));
    slack.fake.send_event("Ev3", json!({"type": "message", "subtype": "message_changed", "channel": "C1",
        "message": {"user": "U9", "bot_id": "B9", "text": "!ai new", "ts": "3.0", "edited": {"user": "U9", "ts": "4.0"}},
        "previous_message": {"text": "!ai old"}}));
    slack.fake.send_event("Ev4", message("U1", &huge, "5.0"));
    slack
        .fake
        .send_event("Ev5", json!({"type": "no_such_event", "x": [1, 2]}));
    slack
        .fake
        .send_event("Ev6", json!({"type": "message", "channel": 7}));
    slack.fake.send_raw("not json at all");
    slack
        .fake
        .send_raw(r#"{"type": "something_new", "envelope_id": "env-odd", "payload": {}}"#);
    slack.fake.send_raw(
        r#"{"type": "events_api", "envelope_id": "env-broken", "payload": {"event": 3}}"#,
    );
    let last = slack
        .fake
        .send_event("Ev7", message("U1", "!echo ok", "6.0"));
    let event = slack.next().await;
    assert_eq!(
        event.kind,
        EventKind::Message {
            text: "!echo ok".into()
        }
    );
    loop {
        if slack.fake.next_ack().await == last {
            break;
        }
    }
    slack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edits_reactions_and_presses() {
    let mut slack = Running::start().await;
    // A reply in a thread, then its edit as Slack sends it: the outer event has a `ts` of its
    // own, so slack-morphism reads it as a typed message event, whose edited message keeps
    // no `thread_ts`. The edit still belongs to the thread its message was sent in.
    slack.fake.send_event(
        "Ev0",
        json!({"type": "message", "channel": "C1", "user": "U1", "text": "!ai old",
            "ts": "1700000001.000000", "thread_ts": "1700000000.000100"}),
    );
    assert_eq!(
        slack.next().await.place.thread.as_deref(),
        Some("1700000000.000100")
    );
    let edit_of = |ts: &str| {
        json!({"type": "message", "subtype": "message_changed", "channel": "C1", "hidden": true,
            "ts": "1700000002.000001", "event_ts": "1700000002.000001",
            "message": {"type": "message", "user": "U1", "text": "!ai new", "ts": ts,
                "thread_ts": "1700000000.000100",
                "edited": {"user": "U1", "ts": "1700000002.000000"}},
            "previous_message": {"type": "message", "user": "U1", "text": "!ai old", "ts": ts,
                "thread_ts": "1700000000.000100"}})
    };
    // The edit of a message this adapter never saw is not answered in a guessed place.
    slack.fake.send_event("Ev1a", edit_of("1600000000.000000"));
    slack.fake.send_event("Ev1", edit_of("1700000001.000000"));
    let edit = slack.next().await;
    assert_eq!(
        edit.kind,
        EventKind::Edited {
            text: "!ai new".into()
        }
    );
    assert_eq!(edit.message_id, "1700000001.000000");
    assert!(edit.revision > 0);
    assert_eq!(edit.place.thread.as_deref(), Some("1700000000.000100"));
    // A reaction on someone else's message is dropped; one on the bot's reaches the bot.
    slack.fake.send_event(
        "Ev2",
        json!({"type": "reaction_added", "user": "U1", "reaction": "delete",
        "item_user": "U2", "item": {"type": "message", "channel": "C1", "ts": "5.0"}}),
    );
    slack.fake.send_event(
        "Ev3",
        json!({"type": "reaction_added", "user": "U1", "reaction": "delete-it",
        "item_user": BOT_USER, "item": {"type": "message", "channel": "C1", "ts": "6.0"}}),
    );
    let reaction = slack.next().await;
    assert_eq!(reaction.message_id, "6.0");
    assert_eq!(
        reaction.kind,
        EventKind::Reacted {
            emoji: "delete-it".into(),
            on_bot_message: true
        }
    );
    slack.fake.send_interaction(json!({"type": "block_actions", "user": {"id": "U1", "name": "ada"},
        "trigger_id": "TR1", "team": {"id": "T1"}, "api_app_id": "A1", "token": "x",
        "container": {"type": "message", "message_ts": "7.0", "channel_id": "C1", "thread_ts": "6.5"},
        "channel": {"id": "C1", "name": "general"},
            "message": {"type": "message", "ts": "7.0", "thread_ts": "6.5", "user": BOT_USER, "text": "an answer"},
        "actions": [{"type": "button", "action_id": "yetibot-show-details", "block_id": "b",
            "value": "tok-1", "action_ts": "8.0", "text": {"type": "plain_text", "text": "Show details"}}]}));
    let press = slack.next().await;
    assert_eq!(
        press.kind,
        EventKind::Pressed {
            action: yetibot_chat_adapters::Action::ShowDetails,
            token: "tok-1".into()
        }
    );
    assert_eq!(press.place.thread.as_deref(), Some("6.5"));
    slack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_whose_name_cannot_be_read_is_told_once_not_per_message() {
    // One event prepared at a time, so the conversation's events are settled in order.
    let mut slack = Running::start_with(SlackOptions {
        connections: 1,
        concurrency: 1,
        ..SlackOptions::default()
    })
    .await;
    // C9 is not known to conversations.info (the scopes are missing, or the app is not in
    // it): nothing of it reaches the bot, and chatter there brings one notice, not one each.
    for (n, text) in ["hello", "!echo hi", "more chatter"]
        .into_iter()
        .enumerate()
    {
        slack.fake.send_event(
            &format!("Ev{n}"),
            json!({"type": "message", "channel": "C9", "user": "U1", "text": text,
                "ts": format!("1700000000.00000{n}")}),
        );
    }
    slack
        .fake
        .send_event("Ev9", message("U1", "!echo ok", "1700000009.000000"));
    let event = slack.next().await;
    assert_eq!(event.place.room, "C1");
    let posts = slack.fake.calls("chat.postMessage");
    assert_eq!(posts.len(), 1, "{posts:?}");
    assert_eq!(posts[0].body["channel"], "C9");
    assert!(
        posts[0].body.to_string().contains("channels:read"),
        "{:?}",
        posts[0].body
    );
    assert_eq!(slack.fake.calls("conversations.info").len(), 4);
    slack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnects_when_slack_asks_and_when_the_socket_drops() {
    let mut slack = Running::start().await;
    slack.fake.request_reconnect();
    slack.fake.wait_connections(2).await;
    slack.fake.drop_socket();
    slack.fake.wait_connections(3).await;
    slack
        .fake
        .send_event("Ev1", message("U1", "!echo back", "1.0"));
    assert_eq!(
        slack.next().await.kind,
        EventKind::Message {
            text: "!echo back".into()
        }
    );
    slack.stop().await;
}

fn answer(text: &str) -> Answer {
    Answer {
        files: Vec::new(),
        messages: vec![text.to_owned()],
        caption: Some("m1 · 0.4 s · cost n/a".into()),
        error: false,
        buttons: Vec::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_go_in_the_thread_without_a_caption_and_no_mention_is_formed() {
    let slack = Running::start().await;
    let thread = place("1700000000.000100");
    let messages = fit(&answer("Hi <!channel> and <@U2>: **done**"), &Limits::SLACK);
    let posted = slack.outbox.post(&thread, messages).await.expect("posted");
    assert_eq!(posted.ids.len(), 1);
    let call = &slack.fake.calls("chat.postMessage")[0];
    assert_eq!(call.auth.as_deref(), Some("Bearer xoxb-test-bot-token"));
    assert_eq!(call.body["channel"], "C1");
    assert_eq!(call.body["thread_ts"], "1700000000.000100");
    assert_eq!(
        call.body["blocks"][0]["text"]["text"],
        "Hi &lt;!channel&gt; and &lt;@U2&gt;: *done*"
    );
    // Slack never parses a mention out of the section, and captions are Discord's.
    assert_eq!(call.body["blocks"][0]["text"]["verbatim"], true);
    assert_eq!(call.body["blocks"].as_array().map(Vec::len), Some(1));
    assert!(!call.body.to_string().contains("cost n/a"));
    assert!(!call.body.to_string().contains("<!channel>"));
    // Replace edits in place and deletes what is left over; delete and react work by ts.
    let two = slack
        .outbox
        .post(
            &thread,
            vec![
                Outgoing::text(Role::Answer, "a"),
                Outgoing::text(Role::Answer, "b"),
            ],
        )
        .await
        .expect("two");
    let one = slack
        .outbox
        .replace(&two, vec![Outgoing::text(Role::Answer, "c")])
        .await
        .expect("replaced");
    assert_eq!(one.ids, two.ids[..1]);
    assert_eq!(
        slack.fake.calls("chat.update")[0].body["ts"],
        json!(two.ids[0])
    );
    assert_eq!(
        slack.fake.calls("chat.delete")[0].body["ts"],
        json!(two.ids[1])
    );
    slack.outbox.delete(&one).await.expect("deleted");
    slack
        .outbox
        .react(&thread, "5.0", ":thumbsup:")
        .await
        .expect("reacted");
    assert_eq!(
        slack.fake.calls("reactions.add")[0].body,
        json!({"channel": "C1", "timestamp": "5.0", "name": "thumbsup"})
    );
    slack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_answer_is_split_and_a_very_long_one_uploaded_as_answer_md() {
    let slack = Running::start().await;
    let thread = place("1.0");
    let long = format!(
        "{}\n\n```\n{}```",
        "A paragraph of prose.\n".repeat(120),
        "let x = 1;\n".repeat(100)
    );
    let posted = slack
        .outbox
        .post(&thread, fit(&answer(&long), &Limits::SLACK))
        .await
        .expect("posted");
    let calls = slack.fake.calls("chat.postMessage");
    assert_eq!(posted.ids.len(), calls.len());
    assert!(calls.len() >= 2, "{}", calls.len());
    for call in &calls {
        let text = call.body["blocks"][0]["text"]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(text.chars().count() <= 3_000);
        assert_eq!(
            text.matches("```").count() % 2,
            0,
            "a piece ends inside code: {text}"
        );
    }
    assert!(
        calls
            .iter()
            .all(|c| !c.body["blocks"].to_string().contains("context")),
        "Slack answers carry no caption"
    );
    let very_long = format!("# Report\n\n{}", "A line of the report.\n".repeat(1_200));
    let posted = slack
        .outbox
        .post(&thread, fit(&answer(&very_long), &Limits::SLACK))
        .await
        .expect("posted");
    assert!(posted.ids.last().is_some_and(|id| id.starts_with("file:")));
    let upload = &slack.fake.calls("upload")[0];
    assert_eq!(upload.body["content"], very_long);
    let ticket = &slack.fake.calls("files.getUploadURLExternal")[0];
    assert_eq!(ticket.body["filename"], "answer.md");
    let complete = &slack.fake.calls("files.completeUploadExternal")[0];
    assert_eq!(complete.body["thread_ts"], "1.0");
    assert_eq!(complete.body["channel_id"], "C1");
    slack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limits_are_waited_out_and_an_unconfirmed_post_is_never_resent() {
    let slack = Running::start().await;
    let thread = place("1.0");
    slack.fake.script(
        "chat.postMessage",
        Scripted {
            status: 429,
            headers: vec![("retry-after".into(), "1".into())],
            body: json!({"ok": false, "error": "ratelimited"}),
            ..Scripted::default()
        },
    );
    slack
        .outbox
        .post(
            &thread,
            vec![Outgoing::text(Role::Answer, "after the wait")],
        )
        .await
        .expect("posted after the wait");
    assert_eq!(slack.fake.calls("chat.postMessage").len(), 2);
    slack.fake.script(
        "chat.postMessage",
        Scripted {
            status: 500,
            headers: Vec::new(),
            body: json!({"ok": false, "error": "fatal_error", "secret": BOT_TOKEN}),
            ..Scripted::default()
        },
    );
    let error = slack
        .outbox
        .post(&thread, vec![Outgoing::text(Role::Answer, "lost?")])
        .await
        .expect_err("unknown outcome");
    assert!(matches!(error, SendError::Unconfirmed(_)), "{error:?}");
    assert!(!error.to_string().contains(BOT_TOKEN));
    assert_eq!(slack.fake.calls("chat.postMessage").len(), 3, "no resend");
    slack.stop().await;
}

fn history_message(ts: &str, user: Option<&str>, text: &str) -> Value {
    match user {
        Some(user) => json!({"type": "message", "ts": ts, "user": user, "text": text}),
        None => {
            json!({"type": "message", "ts": ts, "bot_id": "BBOT", "user": BOT_USER, "text": text})
        }
    }
}

const LIMITS: HistoryLimits = HistoryLimits {
    max_messages: 200,
    max_bytes: 100_000,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thread_history_follows_every_page_oldest_first_or_fails_whole() {
    let slack = Running::start().await;
    slack.fake.set_thread("10.0", Thread {
        pages: vec![
            vec![history_message("10.0", Some("U1"), "!ai start"), history_message("11.0", None, "an answer")],
            // As Slack does, every page starts with the thread's parent again.
            vec![history_message("10.0", Some("U1"), "!ai start"), history_message("12.0", Some("U1"), "more &lt;please&gt;"), json!({"type": "message", "subtype": "channel_join", "ts": "12.5", "user": "U3", "text": "joined"})],
            vec![history_message("10.0", Some("U1"), "!ai start"), history_message("13.0", Some("U1"), "!ai now"), history_message("14.0", Some("U1"), "later")],
        ],
        ..Thread::default()
    });
    let history = slack
        .outbox
        .thread_history(&place("10.0"), "13.0", LIMITS)
        .await
        .expect("whole");
    let seen: Vec<(&str, &str, bool)> = history
        .iter()
        .map(|m| (m.author.as_str(), m.text.as_str(), m.from_bot))
        .collect();
    assert_eq!(
        seen,
        [
            ("Ada", "!ai start", false),
            ("yetibot", "an answer", true),
            ("Ada", "more <please>", false)
        ]
    );
    let cursors: Vec<Value> = slack
        .fake
        .calls("conversations.replies")
        .iter()
        .map(|c| c.body["cursor"].clone())
        .collect();
    assert_eq!(cursors, [Value::Null, json!("page-1"), json!("page-2")]);
    // The start of a thread has nothing before it: no call at all.
    assert!(
        slack
            .outbox
            .thread_history(&place("10.0"), "10.0", LIMITS)
            .await
            .expect("empty")
            .is_empty()
    );
    assert_eq!(slack.fake.calls("conversations.replies").len(), 3);
    // One failing page fails the whole read; a missing scope is named.
    slack.fake.set_thread(
        "20.0",
        Thread {
            pages: vec![
                vec![history_message("20.0", Some("U1"), "a")],
                vec![history_message("21.0", Some("U1"), "b")],
            ],
            failing_page: Some(1),
            ..Thread::default()
        },
    );
    let error = slack
        .outbox
        .thread_history(&place("20.0"), "22.0", LIMITS)
        .await
        .expect_err("partial");
    assert!(matches!(error, HistoryError::Unavailable(_)), "{error:?}");
    slack.fake.set_thread(
        "30.0",
        Thread {
            missing_scope: Some("groups:history".into()),
            ..Thread::default()
        },
    );
    let error = slack
        .outbox
        .thread_history(&place("30.0"), "31.0", LIMITS)
        .await
        .expect_err("scope");
    assert_eq!(
        error,
        HistoryError::Unavailable("the Slack app lacks the scope groups:history")
    );
    slack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_app_token_fails_the_start_with_a_clear_error() {
    let fake = FakeSlack::start().await;
    let settings = SlackSettings {
        connection: "myteam".into(),
        bot_token: Secret::new(BOT_TOKEN),
        app_token: Secret::new("not-an-app-token-0123456789"),
        api_url: fake.api_url(),
    };
    let (intake, _events) = intake(16);
    let error = SlackAdapter::connect(&settings, SlackOptions::default(), intake)
        .await
        .expect_err("the app token is refused at the start");
    let text = error.to_string();
    assert!(
        matches!(&error, SlackError::AppToken { reason, .. } if reason == "invalid_auth"),
        "{text}"
    );
    assert!(
        text.contains("app-level token was refused (invalid_auth)"),
        "{text}"
    );
    assert!(!text.contains("not-an-app-token"), "{text}");
    // Checked once, not retried.
    assert_eq!(fake.calls("apps.connections.open").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slash_command_is_answered_with_how_to_write_commands() {
    let slack = Running::start().await;
    let id = slack.fake.send_slash_command(
        "/ai",
        "my secret question",
        "https://hooks.slack.com/commands/T1/1/capability",
    );
    loop {
        if slack.fake.next_ack().await == id {
            break;
        }
    }
    let frame = slack.fake.ack_frame(&id).expect("acknowledged");
    let text = frame.to_string();
    assert!(
        text.contains(yetibot_chat_adapters::slack::SLASH_COMMAND_REPLY),
        "{text}"
    );
    assert_eq!(frame["payload"]["response_type"], "ephemeral", "{text}");
    slack.stop().await;
}
