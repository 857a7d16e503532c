//! `gi` editing the image attached to the message, below the binary, where a test controls
//! the image fetcher (a TLS image host on loopback with a test CA, pinned to a public address
//! from an injected resolver) and the caller's platform. xAI is the fake image API of
//! `provider-fixture`.

use std::sync::Arc;

use image_fixture::PNG;
use provider_fixture::xai_images::{self, XaiImages};
use provider_fixture::{Fixture, Reply, script};
use serde_json::Value;
use yetibot_ai_commands::XaiAccount;
use yetibot_ai_providers::ProviderSet;
use yetibot_command::{Caller, Interpreter};
use yetibot_conversation::AdapterKind;
use yetibot_redaction::Secret;

use crate::clef::{FILE_TOKEN, Message, attachment, decoded, images, public_resolver};

const KEY: &str = "xai-key-canary-0d8e3f52";

fn interpreter(xai: &Fixture, fetcher: yetibot_image_fetch::Fetcher) -> Interpreter {
    let providers = ProviderSet::from_config(
        None,
        &[crate::ai::provider("local", xai.url("/v1"), Some("m1"))],
    )
    .expect("providers");
    let services = crate::ai::services(providers, Arc::new(tokio::time::Instant::now))
        .with_image_generation(XaiAccount::new(&xai.url("/x/v1"), Secret::new(KEY)))
        .with_images(fetcher);
    crate::ai::bot(services, &[])
}

fn caller(message: Message) -> Caller {
    Caller {
        adapter: AdapterKind::Slack,
        connection: "slack".into(),
        room: "#general".into(),
        user_id: "U1".into(),
        user_name: "alice".into(),
        trusted: true,
        message_id: Some("1.0".into()),
        platform: Some(Arc::new(message)),
    }
}

async fn fake_xai() -> Fixture {
    let fixture = Fixture::start().await.expect("fixture");
    XaiImages::new(KEY).mount(&fixture, "/x/v1");
    fixture
}

/// The source image of each edit request xAI received, decoded.
fn edited_sources(xai: &Fixture) -> Vec<Vec<u8>> {
    xai.requests()
        .iter()
        .filter(|r| r.path == "/x/v1/images/edits")
        .map(|r| {
            let body: Value = serde_json::from_slice(&r.body).expect("JSON");
            let url = body["image"]["url"].as_str().expect("a data URL");
            let data = url
                .strip_prefix("data:image/png;base64,")
                .expect("a PNG data URL");
            decoded(data)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attached_image_is_fetched_without_the_key_and_edited() {
    let xai = fake_xai().await;
    let host = images(public_resolver()).await;
    let bot = interpreter(&xai, host.fetcher.clone());
    let message = Message {
        attachments: vec![attachment(
            "photo.png",
            "image/png",
            "https://files.test/photo.png",
        )],
        held: Vec::new(),
    };
    let reply = bot.run(&caller(message), "gi make it blue").await;
    assert_eq!(reply.error, None);
    let shown = reply.messages().join("\n");
    assert!(
        shown.starts_with("Edited image gi-") && shown.ends_with("(3×4 PNG)"),
        "{shown}"
    );
    assert_eq!(reply.files.len(), 1);
    assert_eq!(&**reply.files[0].bytes(), xai_images::EDITED_PNG);
    assert_eq!(edited_sources(&xai), vec![PNG.to_vec()]);
    // The file host got the platform's token and never the xAI key.
    let seen = host.server.seen();
    assert_eq!(seen.len(), 1);
    assert!(!seen[0].head.contains(KEY));
    assert_eq!(
        seen[0].headers().get("authorization").map(String::as_str),
        Some(format!("Bearer {FILE_TOKEN}").as_str())
    );
    // xAI got its key and no platform token.
    for request in xai.requests() {
        let head = format!("{:?}", request.headers);
        assert!(!head.contains(FILE_TOKEN));
        assert!(!String::from_utf8_lossy(&request.body).contains(FILE_TOKEN));
    }
    assert_eq!(xai.count("/x/v1/images/generations"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_bytes_are_edited_without_a_fetch_and_refused_sources_send_nothing() {
    let xai = fake_xai().await;
    let host = images(public_resolver()).await;
    let bot = interpreter(&xai, host.fetcher.clone());
    let upload = "console-upload:0123456789abcdef0123456789abcdef";
    let message = Message {
        attachments: vec![attachment("pasted.png", "image/png", upload)],
        held: vec![(upload.to_owned(), Arc::from(PNG))],
    };
    let reply = bot.run(&caller(message), "gi add a hat").await;
    assert_eq!(reply.error, None, "{:?}", reply.error);
    assert_eq!(edited_sources(&xai), vec![PNG.to_vec()]);
    assert!(host.server.seen().is_empty(), "nothing was fetched");

    // An attachment on a private address: refused before xAI hears of it.
    let before = xai.requests().len();
    let message = Message {
        attachments: vec![attachment(
            "inside.png",
            "image/png",
            "https://evil.test/inside.png",
        )],
        held: Vec::new(),
    };
    let reply = bot.run(&caller(message), "gi add a hat").await;
    let error = reply.error.expect("refused");
    assert!(error.contains("the attached image"), "{error}");
    assert!(!error.contains("10.0.0.7"), "{error}");
    assert_eq!(xai.requests().len(), before);
    assert!(reply.files.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tool_edits_the_message_s_image_and_the_answer_carries_it() {
    let xai = fake_xai().await;
    let host = images(public_resolver()).await;
    let bot = interpreter(&xai, host.fetcher.clone());
    let call = provider_fixture::script::chat_tool_call(
        "c1",
        "yetibot__gi",
        "{\"prompt\":\"make the sky purple\"}",
    );
    xai.route("/v1/chat/completions", Reply::json(call));
    xai.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("Purple sky, as asked.")),
    );
    let message = Message {
        attachments: vec![attachment(
            "photo.png",
            "image/png",
            "https://images.test/photo.png",
        )],
        held: Vec::new(),
    };
    let reply = bot
        .run(&caller(message), "ai make the sky in my photo purple")
        .await;
    assert_eq!(reply.error, None, "{:?}", reply.error);
    assert_eq!(reply.messages(), ["Purple sky, as asked."]);
    assert_eq!(reply.files.len(), 1);
    assert_eq!(&**reply.files[0].bytes(), xai_images::EDITED_PNG);
    assert_eq!(edited_sources(&xai), vec![PNG.to_vec()]);
}
