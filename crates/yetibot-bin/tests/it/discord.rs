//! The running bot on Discord: the real binary connected, through its `:http-proxy` and
//! `:gateway-url` settings, to the fake Discord on loopback, with a scripted provider. A
//! prompt in a channel is answered with a captioned card that mentions nobody, once, and the
//! token appears nowhere but in the REST `Authorization` header.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use discord_fixture::{FakeDiscord, Start, TOKEN, payload};
use provider_fixture::{Fixture, Reply, script};
use serde_json::json;

use crate::Workdir;

const CHANNEL: u64 = 10;

/// The bot process, stopped if a test fails first.
struct Bot {
    child: Child,
    stderr: Option<std::thread::JoinHandle<Vec<String>>>,
}

impl Drop for Bot {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Bot {
    fn start(dir: &Workdir, edn: &str) -> Self {
        let file = dir.path.join("config.edn");
        std::fs::write(&file, edn).expect("write config");
        let mut child = Command::new(env!("CARGO_BIN_EXE_yetibot"))
            .env_clear()
            .current_dir(&dir.path)
            .env("CONFIG_PATH", &file)
            .env("YETIBOT_ADAPTERS_GUILD_TOKEN", TOKEN)
            .env("RUST_LOG", "debug")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let stderr = child.stderr.take().expect("stderr");
        let stderr = std::thread::spawn(move || {
            BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
                .collect()
        });
        Self {
            child,
            stderr: Some(stderr),
        }
    }

    fn stop(mut self) -> (Option<i32>, Vec<String>) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
        let exit = self.child.wait().expect("wait");
        let lines = self
            .stderr
            .take()
            .map(|reader| reader.join().expect("stderr reader"))
            .unwrap_or_default();
        (exit.code(), lines)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bot_answers_on_discord_with_a_captioned_card_once() {
    let fake = FakeDiscord::start().await;
    let provider = Fixture::start().await.expect("provider");
    provider.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("Hi, @everyone!")),
    );
    let edn = format!(
        r#"{{:yetibot {{:web {{:enabled false}}
                      :adapters {{:guild {{:type "discord" :http-proxy "{}" :gateway-url "{}"}}}}
                      :ai {{:providers [{{:name "local" :url "{}" :model "m1"}}]}}}}}}"#,
        fake.http_proxy(),
        fake.gateway.url(),
        provider.url("/v1")
    );
    let dir = Workdir::new();
    let bot = Bot::start(&dir, &edn);
    fake.until("the bot identifies on the gateway", |f| {
        f.gateway
            .starts()
            .iter()
            .any(|s| matches!(s, Start::Identify(0, 1)))
    })
    .await;
    let alice = payload::user(42, "alice", false);
    let id = fake.next_id();
    let said = payload::message(id, CHANNEL, &alice, "!ai --no-tools Say hi.");
    fake.gateway.dispatch("MESSAGE_CREATE", &said);
    // The same event again, as a resume would replay it: still one answer.
    fake.gateway.dispatch("MESSAGE_CREATE", &said);
    fake.until("the answer card", |f| {
        f.visible(CHANNEL)
            .iter()
            .any(|m| m.text().starts_with("Hi, @everyone!"))
    })
    .await;
    let answers: Vec<_> = fake
        .visible(CHANNEL)
        .into_iter()
        .filter(|m| m.text().starts_with("Hi"))
        .collect();
    assert_eq!(answers.len(), 1);
    let card = &answers[0];
    assert!(card.text().contains("-# m1 · "), "{}", card.text());
    assert_eq!(card.fields["allowed_mentions"], json!({"parse": []}));
    assert_eq!(provider.count("/v1/chat/completions"), 1, "one paid call");
    let (code, lines) = tokio::task::spawn_blocking(move || bot.stop())
        .await
        .expect("stop");
    assert_eq!(code, Some(0), "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("Discord connection guild is ready")),
        "{lines:?}"
    );
    assert!(
        !lines.iter().any(|l| l.contains(TOKEN)),
        "the token was logged"
    );
    assert!(
        !lines.iter().any(|l| l.contains("Say hi")),
        "the prompt was logged"
    );
    for request in fake.requests() {
        if let Some(auth) = &request.authorization {
            assert_eq!(auth, &format!("Bot {TOKEN}"));
        }
    }
}
