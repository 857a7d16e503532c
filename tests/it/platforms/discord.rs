//! The suite's Discord: the adapter against `discord-fixture`, read as a Discord client
//! would show it.

use std::time::Duration;

use discord_fixture::{BOT_ID, FakeDiscord, Start, Stored, TOKEN, payload};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use yetibot_chat_adapters::Intake;
use yetibot_chat_adapters::discord::{Discord, DiscordBounds, DiscordOptions, Error};
use yetibot_redaction::Secret;

use super::{Fault, Person, Platform, Sender, Shown};

const CHANNEL: u64 = 10;
/// Where message creates in the channel go.
const POSTS: &str = "channels/10/messages";
/// Components V2: the message is its components, and `content` is not allowed.
const COMPONENTS_V2: u64 = 1 << 15;

pub(crate) struct OnDiscord {
    fake: FakeDiscord,
    running: Running,
    /// Seconds into the day of the next edit.
    edits: u32,
}

/// A running Discord adapter.
pub(crate) struct Running {
    stop: oneshot::Sender<()>,
    run: JoinHandle<Result<(), Error>>,
}

impl Running {
    /// Stops the adapter, which must end cleanly and in time.
    pub(crate) async fn stop(self) {
        let _ = self.stop.send(());
        let stopped = tokio::time::timeout(Duration::from_secs(10), self.run)
            .await
            .expect("stops in time")
            .expect("no panic");
        assert_eq!(stopped, Ok(()));
    }
}

/// Starts a fake Discord and the adapter against it, offering its events to `intake`, and
/// waits until the shard has identified.
pub(crate) async fn connect(intake: Intake, bounds: DiscordBounds) -> (FakeDiscord, Running) {
    let fake = FakeDiscord::start().await;
    let options = DiscordOptions {
        token: Secret::new(TOKEN),
        connection: "main".into(),
        http_proxy: Some(fake.http_proxy()),
        gateway_url: Some(fake.gateway.url()),
        shards: None,
        bounds,
    };
    let running = Discord::start(options, intake).await.expect("starts");
    let (stop, stopped) = oneshot::channel::<()>();
    let run = tokio::spawn(running.run(async move {
        let _ = stopped.await;
    }));
    fake.until("the shard identifies", |f| !f.gateway.starts().is_empty())
        .await;
    (fake, Running { stop, run })
}

fn user(who: Person) -> Value {
    match who {
        Person::Alice => payload::user(42, "alice", false),
        Person::Bob => payload::user(43, "bob", false),
        Person::Mallory => payload::user(44, who.display_name(), false),
    }
}

impl Platform for OnDiscord {
    const NAME: &'static str = "Discord";

    async fn start(intake: Intake) -> Self {
        let (fake, running) = connect(intake, DiscordBounds::default()).await;
        Self {
            fake,
            running,
            edits: 0,
        }
    }

    fn say(&mut self, who: Person, text: &str) -> String {
        let id = self.fake.next_id();
        self.fake.gateway.dispatch(
            "MESSAGE_CREATE",
            &payload::message(id, CHANNEL, &user(who), text),
        );
        id.to_string()
    }

    fn reply(&mut self, who: Person, _message: &Shown, text: &str) -> String {
        self.say(who, text)
    }

    fn say_as(&mut self, sender: Sender, text: &str) {
        let id = self.fake.next_id();
        let message = match sender {
            Sender::OtherBot => {
                payload::message(id, CHANNEL, &payload::user(7, "otherbot", true), text)
            }
            // A webhook's author is not flagged as a bot: its `webhook_id` is what tells.
            Sender::Webhook => {
                let mut message =
                    payload::message(id, CHANNEL, &payload::user(77, "hook", false), text);
                message["webhook_id"] = json!("77");
                message
            }
            Sender::Myself => {
                payload::message(id, CHANNEL, &payload::user(BOT_ID, "yetibot", true), text)
            }
        };
        self.fake.gateway.dispatch("MESSAGE_CREATE", &message);
    }

    fn edit(&mut self, who: Person, id: &str, text: &str) {
        self.edits += 1;
        let id: u64 = id.parse().expect("a Discord ID");
        let original = payload::message(id, CHANNEL, &user(who), "");
        self.fake.gateway.dispatch(
            "MESSAGE_UPDATE",
            &payload::edited(original, text, self.edits),
        );
    }

    async fn redeliver(&mut self) {
        let resumes = |f: &FakeDiscord| {
            f.gateway
                .starts()
                .iter()
                .filter(|s| matches!(s, Start::Resume(..)))
                .count()
        };
        let before = resumes(&self.fake);
        self.fake.gateway.replay_on_resume(u64::MAX);
        self.fake.gateway.drop_connection();
        self.fake.until("a resume", |f| resumes(f) > before).await;
    }

    fn press(&mut self, who: Person, message: &Shown, label: &str) {
        let id: u64 = message.id.parse().expect("a Discord ID");
        let stored = self
            .fake
            .visible(CHANNEL)
            .into_iter()
            .find(|m| m.id == id)
            .expect("the message is there");
        let mut buttons = Vec::new();
        collect_buttons(&stored.fields["components"], &mut buttons);
        let custom_id = buttons
            .into_iter()
            .find(|b| b["label"] == label)
            .and_then(|b| b["custom_id"].as_str().map(str::to_owned))
            .expect("the button is there");
        let on = payload::message(id, CHANNEL, &payload::user(BOT_ID, "yetibot", true), "");
        let interaction = self.fake.next_id();
        self.fake.gateway.dispatch(
            "INTERACTION_CREATE",
            &payload::press(interaction, CHANNEL, &on, &user(who), &custom_id),
        );
    }

    fn fault_next_post(&self, fault: Fault) {
        let fault = match fault {
            Fault::RateLimited { seconds } => discord_fixture::Fault::new("POST", POSTS, 429)
                .header("retry-after", &seconds.to_string())
                .header("x-ratelimit-scope", "user")
                .body(
                    json!({"message": "You are being rate limited.",
                        "retry_after": seconds as f64, "global": false})
                    .to_string(),
                ),
            Fault::ServerErrorAfterPosting => discord_fixture::Fault::new("POST", POSTS, 500)
                .body(r#"{"message": "500: Internal Server Error", "code": 0}"#)
                .applied(),
            Fault::DroppedAfterPosting => discord_fixture::Fault::new("POST", POSTS, 0)
                .applied()
                .dropped(),
        };
        self.fake.fault(fault);
    }

    fn shown(&self) -> Vec<Shown> {
        self.fake.visible(CHANNEL).iter().map(shown).collect()
    }

    fn files(&self) -> Vec<String> {
        self.fake
            .visible(CHANNEL)
            .into_iter()
            .filter_map(|m| m.file)
            .map(|(_, bytes)| String::from_utf8_lossy(&bytes).into_owned())
            .collect()
    }

    fn uploads(&self) -> Vec<Vec<u8>> {
        self.fake
            .visible(CHANNEL)
            .into_iter()
            .filter_map(|m| m.file)
            .map(|(_, bytes)| bytes)
            .collect()
    }

    fn posts(&self) -> Vec<Instant> {
        self.fake
            .requests_to("POST", POSTS)
            .into_iter()
            .filter(|r| r.path.ends_with(POSTS))
            .map(|r| r.at)
            .collect()
    }

    async fn until(&self, what: &str, check: impl Fn(&Self) -> bool) {
        // Gives up before the fake would, so the caller reports what it found.
        let deadline = Instant::now() + super::PATIENCE;
        self.fake
            .until(what, |_| check(self) || Instant::now() >= deadline)
            .await;
    }

    async fn stop(self) {
        self.running.stop().await;
    }
}

fn collect_buttons(value: &Value, out: &mut Vec<Value>) {
    match value {
        Value::Array(items) => items.iter().for_each(|v| collect_buttons(v, out)),
        Value::Object(map) => {
            if map.get("type") == Some(&json!(2)) {
                out.push(value.clone());
            }
            for inner in ["components", "accessory"] {
                if let Some(inner) = map.get(inner) {
                    collect_buttons(inner, out);
                }
            }
        }
        _ => {}
    }
}

fn count_components(value: &Value) -> usize {
    match value {
        Value::Array(items) => items.iter().map(count_components).sum(),
        Value::Object(map) => {
            1 + ["components", "accessory"]
                .iter()
                .filter_map(|k| map.get(*k))
                .map(count_components)
                .sum::<usize>()
        }
        _ => 0,
    }
}

/// A message as a Discord client shows it, judged by Discord's documented rules.
fn shown(message: &Stored) -> Shown {
    let fields = &message.fields;
    let v2 = fields["flags"]
        .as_u64()
        .is_some_and(|f| f & COMPONENTS_V2 != 0);
    let content = fields["content"].as_str().unwrap_or_default();
    let text = if v2 {
        message.text()
    } else {
        content.to_owned()
    };
    let mut buttons = Vec::new();
    collect_buttons(&fields["components"], &mut buttons);
    let buttons = buttons
        .iter()
        .filter_map(|b| b["label"].as_str().map(str::to_owned))
        .collect();
    // With no `allowed_mentions`, Discord notifies everyone the text mentions.
    let allowed = &fields["allowed_mentions"];
    let nobody = allowed["parse"].as_array().is_some_and(Vec::is_empty)
        && allowed["users"].as_array().is_none_or(Vec::is_empty)
        && allowed["roles"].as_array().is_none_or(Vec::is_empty)
        && allowed["replied_user"] != json!(true);
    let mentions = ["@everyone", "@here", "<@"]
        .iter()
        .any(|m| text.contains(m));
    let pings = (!nobody && mentions).then(|| format!("mentions parsed: {allowed}"));
    let breaks = if v2 {
        let units: usize = text.encode_utf16().count();
        let components = count_components(&fields["components"]);
        if !content.is_empty() {
            Some("content beside Components V2".to_owned())
        } else if units > 4_000 {
            Some(format!(
                "{units} characters of text displays (4,000 at most)"
            ))
        } else if components > 40 {
            Some(format!("{components} components (40 at most)"))
        } else {
            None
        }
    } else {
        let units = content.encode_utf16().count();
        (units > 2_000).then(|| format!("{units} characters of content (2,000 at most)"))
    };
    Shown {
        id: message.id.to_string(),
        text,
        buttons,
        pings,
        breaks,
        thread: None,
    }
}
