//! The running bot on Discord: the real binary connected, through its `:http-proxy` and
//! `:gateway-url` settings, to the fake Discord on loopback, with a scripted provider. A
//! prompt in a channel is answered with a captioned card that mentions nobody, once, and the
//! token appears nowhere but in the REST `Authorization` header.

use discord_fixture::{FakeDiscord, Start, TOKEN, payload};
use provider_fixture::{Fixture, Reply, script};
use serde_json::json;

use crate::Workdir;

const CHANNEL: u64 = 10;

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
    let bot = crate::Service::start(
        &dir,
        &edn,
        &[
            ("YETIBOT_ADAPTERS_GUILD_TOKEN", TOKEN),
            ("RUST_LOG", "debug"),
        ],
    );
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
            .any(|l| l.contains("Discord connection guild started")),
        "{lines:?}"
    );
    // "Ready" is Discord's answer, logged when it comes.
    assert!(
        lines
            .iter()
            .any(|l| l.contains("Discord accepted the connection (ready)")),
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_console_off_the_bot_exits_with_a_failure_when_discord_refuses_it_for_good() {
    let fake = FakeDiscord::start().await;
    let edn = format!(
        r#"{{:yetibot {{:web {{:enabled false}}
                      :adapters {{:guild {{:type "discord" :http-proxy "{}" :gateway-url "{}"}}}}}}}}"#,
        fake.http_proxy(),
        fake.gateway.url(),
    );
    let dir = Workdir::new();
    let bot = crate::Service::start(&dir, &edn, &[("YETIBOT_ADAPTERS_GUILD_TOKEN", TOKEN)]);
    fake.until("the bot identifies on the gateway", |f| {
        f.gateway
            .starts()
            .iter()
            .any(|s| matches!(s, Start::Identify(0, 1)))
    })
    .await;
    // 4014: intents the application may not use. Reconnecting cannot fix it.
    fake.gateway.close(4014);
    let (code, lines) = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        tokio::task::spawn_blocking(move || bot.wait()),
    )
    .await
    .expect("the bot exits by itself")
    .expect("wait");
    assert_eq!(code, Some(1), "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("every chat connection has ended")),
        "{lines:?}"
    );
    assert!(
        !lines.iter().any(|l| l.contains(TOKEN)),
        "the token was logged"
    );
}
