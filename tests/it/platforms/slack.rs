//! The suite's Slack: the adapter against `slack-fixture`, read as a Slack client would
//! show it.

use std::time::Duration;

use serde_json::{Value, json};
use slack_fixture::{BOT_USER, FakeSlack, Scripted, Stored};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use yetibot_chat_adapters::Intake;
use yetibot_chat_adapters::config::SlackSettings;
use yetibot_chat_adapters::slack::{SlackAdapter, SlackOptions};
use yetibot_redaction::Secret;

use super::{Fault, Person, Platform, Sender, Shown};

const CHANNEL: &str = "C1";

pub(crate) struct OnSlack {
    fake: FakeSlack,
    stop: Option<oneshot::Sender<()>>,
    run: JoinHandle<()>,
    /// Every event sent, with its event ID, for redelivery.
    sent: Vec<(String, Value)>,
    /// The people's messages: timestamp and text, for their edits.
    texts: Vec<(String, String)>,
    next: u64,
}

fn user_id(who: Person) -> &'static str {
    match who {
        Person::Alice => "U1",
        Person::Bob => "U2",
        Person::Mallory => "U3",
    }
}

impl OnSlack {
    fn next(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    fn ts(&mut self) -> String {
        format!("1700000000.{:06}", self.next())
    }

    fn send(&mut self, event: Value) {
        let id = format!("Ev{}", self.next());
        self.fake.send_event(&id, event.clone());
        self.sent.push((id, event));
    }
}

impl Platform for OnSlack {
    const NAME: &'static str = "Slack";

    async fn start(intake: Intake) -> Self {
        let fake = FakeSlack::start().await;
        fake.set_channel(CHANNEL, json!({"id": CHANNEL, "name": "general"}));
        for who in [Person::Alice, Person::Bob, Person::Mallory] {
            let id = user_id(who);
            fake.set_user(
                id,
                json!({"id": id, "name": who.display_name(),
                    "profile": {"display_name": who.display_name()}}),
            );
        }
        let settings = SlackSettings {
            connection: "myteam".into(),
            bot_token: Secret::new("xoxb-suite-bot-token"),
            app_token: Secret::new("xapp-suite-app-token"),
            api_url: fake.api_url(),
        };
        // One event prepared at a time, so that events reach the bot in the order sent.
        let options = SlackOptions {
            connections: 1,
            concurrency: 1,
            ..SlackOptions::default()
        };
        let adapter = SlackAdapter::connect(&settings, options, intake)
            .await
            .expect("connects");
        let (stop, stopped) = oneshot::channel::<()>();
        let run = tokio::spawn(adapter.run(async move {
            let _ = stopped.await;
        }));
        tokio::time::timeout(Duration::from_secs(10), fake.wait_connections(1))
            .await
            .expect("a Socket Mode connection");
        Self {
            fake,
            stop: Some(stop),
            run,
            sent: Vec::new(),
            texts: Vec::new(),
            next: 0,
        }
    }

    fn say(&mut self, who: Person, text: &str) -> String {
        let ts = self.ts();
        self.send(
            json!({"type": "message", "channel": CHANNEL, "user": user_id(who),
            "text": text, "ts": ts}),
        );
        self.texts.push((ts.clone(), text.to_owned()));
        ts
    }

    fn reply(&mut self, who: Person, message: &Shown, text: &str) -> String {
        let ts = self.ts();
        let thread = message.thread.clone().unwrap_or_else(|| message.id.clone());
        self.send(
            json!({"type": "message", "channel": CHANNEL, "user": user_id(who),
            "text": text, "ts": ts, "thread_ts": thread}),
        );
        self.texts.push((ts.clone(), text.to_owned()));
        ts
    }

    fn say_as(&mut self, sender: Sender, text: &str) {
        let ts = self.ts();
        let event = match sender {
            // An app posting with its bot token: a user ID, and its bot ID beside it.
            Sender::OtherBot => json!({"type": "message", "channel": CHANNEL, "user": "U7",
                "bot_id": "B7", "text": text, "ts": ts}),
            Sender::Webhook => json!({"type": "message", "subtype": "bot_message",
                "channel": CHANNEL, "bot_id": "B8", "username": "hook", "text": text, "ts": ts}),
            // The bot's own user, without the bot ID: the user ID alone must tell.
            Sender::Myself => json!({"type": "message", "channel": CHANNEL, "user": BOT_USER,
                "text": text, "ts": ts}),
        };
        self.send(event);
    }

    fn edit(&mut self, who: Person, id: &str, text: &str) {
        let previous = self
            .texts
            .iter()
            .rev()
            .find(|(ts, _)| ts == id)
            .map(|(_, text)| text.clone())
            .expect("an earlier message");
        let at = self.ts();
        let user = user_id(who);
        self.send(
            json!({"type": "message", "subtype": "message_changed", "hidden": true,
            "channel": CHANNEL, "ts": at,
            "message": {"type": "message", "user": user, "text": text, "ts": id,
                "edited": {"user": user, "ts": at}},
            "previous_message": {"type": "message", "user": user, "text": previous, "ts": id}}),
        );
        self.texts.push((id.to_owned(), text.to_owned()));
    }

    async fn redeliver(&mut self) {
        let connections = self.fake.connections();
        self.fake.drop_socket();
        tokio::time::timeout(
            Duration::from_secs(10),
            self.fake.wait_connections(connections + 1),
        )
        .await
        .expect("the adapter reconnects");
        for (id, event) in &self.sent {
            self.fake.send_event(id, event.clone());
        }
    }

    fn press(&mut self, who: Person, message: &Shown, label: &str) {
        let stored = self
            .fake
            .visible(CHANNEL)
            .into_iter()
            .find(|m| m.ts == message.id)
            .expect("the message is there");
        let button = buttons(&stored.body)
            .into_iter()
            .find(|b| b["text"]["text"] == label)
            .expect("the button is there");
        let n = self.next();
        let thread = stored
            .thread_ts
            .clone()
            .unwrap_or_else(|| stored.ts.clone());
        self.fake.send_interaction(json!({"type": "block_actions",
            "user": {"id": user_id(who), "name": who.display_name()},
            "trigger_id": format!("TR{n}"), "team": {"id": "T1"}, "api_app_id": "A1",
            "token": "x",
            "container": {"type": "message", "message_ts": stored.ts, "channel_id": CHANNEL,
                "thread_ts": thread},
            "channel": {"id": CHANNEL, "name": "general"},
            "message": {"type": "message", "ts": stored.ts, "thread_ts": thread,
                "user": BOT_USER, "text": stored.body["text"]},
            "actions": [{"type": "button", "action_id": button["action_id"], "block_id": "b",
                "value": button["value"], "action_ts": format!("1700000500.{n:06}"),
                "text": button["text"]}]}));
    }

    fn fault_next_post(&self, fault: Fault) {
        let scripted = match fault {
            Fault::RateLimited { seconds } => Scripted {
                status: 429,
                headers: vec![("retry-after".into(), seconds.to_string())],
                body: json!({"ok": false, "error": "ratelimited"}),
                ..Scripted::default()
            },
            Fault::ServerErrorAfterPosting => Scripted {
                status: 500,
                body: json!({"ok": false, "error": "internal_error"}),
                applied: true,
                ..Scripted::default()
            },
            Fault::DroppedAfterPosting => Scripted {
                applied: true,
                dropped: true,
                ..Scripted::default()
            },
        };
        self.fake.script("chat.postMessage", scripted);
    }

    fn shown(&self) -> Vec<Shown> {
        self.fake.visible(CHANNEL).iter().map(shown).collect()
    }

    fn files(&self) -> Vec<String> {
        self.fake
            .calls("upload")
            .into_iter()
            .filter_map(|c| c.body["content"].as_str().map(str::to_owned))
            .collect()
    }

    fn uploads(&self) -> Vec<Vec<u8>> {
        self.fake
            .calls("upload")
            .into_iter()
            .filter_map(|c| serde_json::from_value(c.body["bytes"].clone()).ok())
            .collect()
    }

    fn posts(&self) -> Vec<Instant> {
        self.fake
            .calls("chat.postMessage")
            .into_iter()
            .map(|c| c.at)
            .collect()
    }

    async fn until(&self, what: &str, check: impl Fn(&Self) -> bool) {
        // Gives up before the fake would, so the caller reports what it found.
        let deadline = Instant::now() + super::PATIENCE;
        self.fake
            .until(what, |_| check(self) || Instant::now() >= deadline)
            .await;
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        tokio::time::timeout(Duration::from_secs(10), self.run)
            .await
            .expect("stops in time")
            .expect("no panic");
    }
}

fn buttons(body: &Value) -> Vec<Value> {
    body["blocks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "actions")
        .flat_map(|b| b["elements"].as_array().cloned().unwrap_or_default())
        .filter(|e| e["type"] == "button")
        .collect()
}

/// Slack's escaping undone, as a client displays the text.
fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// Why Slack would notify someone for this text object, if it would.
fn pings(text: &str, mrkdwn_without_verbatim: bool) -> Option<String> {
    // `<!channel>`, `<!here>`, `<!everyone>`, `<!subteam^...>` and `<@U...>` always notify.
    if let Some(at) = text.find("<!").or_else(|| text.find("<@")) {
        return Some(format!("special mention at byte {at}: {text:?}"));
    }
    let plain = ["@channel", "@here", "@everyone"];
    (mrkdwn_without_verbatim && plain.iter().any(|m| text.contains(m)))
        .then(|| format!("mrkdwn without verbatim: {text:?}"))
}

/// What a reader takes from a message's text objects.
#[derive(Default)]
struct Reading {
    texts: Vec<String>,
    pings: Option<String>,
    breaks: Option<String>,
}

impl Reading {
    fn text_object(&mut self, object: &Value) {
        let Some(raw) = object["text"].as_str() else {
            return;
        };
        let mrkdwn = object["type"] == "mrkdwn" && object["verbatim"] != json!(true);
        if self.pings.is_none() {
            self.pings = pings(raw, mrkdwn);
        }
        let chars = raw.chars().count();
        if chars > 3_000 {
            self.broken(format!("a text of {chars} characters (3,000 at most)"));
        }
        self.texts.push(unescape(raw));
    }

    fn broken(&mut self, why: String) {
        self.breaks.get_or_insert(why);
    }
}

/// A message as a Slack client shows it, judged by Slack's documented rules.
fn shown(message: &Stored) -> Shown {
    let body = &message.body;
    let blocks = body["blocks"].as_array().cloned().unwrap_or_default();
    let mut reading = Reading::default();
    for block in &blocks {
        match block["type"].as_str() {
            Some("section" | "header") => reading.text_object(&block["text"]),
            Some("context") => {
                for element in block["elements"].as_array().into_iter().flatten() {
                    reading.text_object(element);
                }
            }
            _ => {}
        }
    }
    let fallback = body["text"].as_str().unwrap_or_default();
    if blocks.is_empty() {
        reading.text_object(&json!({"type": "mrkdwn", "text": fallback}));
    } else if reading.pings.is_none() {
        // The fallback text is what notifications show.
        reading.pings = pings(fallback, body["link_names"] == json!(true));
    }
    if blocks.len() > 50 {
        reading.broken(format!("{} blocks (50 at most)", blocks.len()));
    }
    if fallback.chars().count() > 40_000 {
        reading.broken("a text of over 40,000 characters".to_owned());
    }
    let buttons = buttons(body);
    for button in &buttons {
        let label = button["text"]["text"].as_str().unwrap_or_default();
        let value = button["value"].as_str().unwrap_or_default();
        if label.chars().count() > 75 || value.chars().count() > 2_000 {
            reading.broken(format!("a button too large: {button}"));
        }
    }
    Shown {
        id: message.ts.clone(),
        text: reading.texts.join("\n"),
        buttons: buttons
            .iter()
            .filter_map(|b| b["text"]["text"].as_str().map(str::to_owned))
            .collect(),
        pings: reading.pings,
        breaks: reading.breaks,
        thread: message.thread_ts.clone(),
    }
}
