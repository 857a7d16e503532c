//! `clef` and `clairic` with images, below the binary, where a test controls what the
//! binary fixes: the image fetcher's resolver, dialer and trusted roots (so a TLS image host
//! on loopback with a test CA stands in for a public one, pinned to the address the
//! resolver gave), and the caller's platform (so a message can carry attachments and a
//! platform token for its own file host). Cloudflare is the fake Workers AI endpoint of
//! `provider-fixture`.

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use image_fixture::{FixedResolver, JPEG, LoopbackDialer, PNG, PUBLIC, Pki, Script, Seen, Server};
use provider_fixture::{Fixture, Recorded, Reply, script};
use serde_json::{Value, json};
use yetibot_ai_commands::AiServices;
use yetibot_ai_providers::{Client, ClientOptions, ProviderConfig, ProviderSet, WorkersAccount};
use yetibot_command::{Caller, Interpreter, Platform, PlatformError, Settings, builtins};
use yetibot_conversation::{AdapterKind, Attachment};
use yetibot_history::MemoryAliases;
use yetibot_json_util::SplitMix64;
use yetibot_mcp_host::{Host, HostOptions, ServerSet};
use yetibot_redaction::Secret;

const ACCOUNT: &str = "0123456789abcdef0123456789abcdef";
const CF_TOKEN: &str = "cf-token-canary-7e2b9d41";
pub(crate) const FILE_TOKEN: &str = "xoxb-file-token-canary";

fn run_path(model: &str) -> String {
    format!("/client/v4/accounts/{ACCOUNT}/ai/run/@cf/cloudflare/{model}")
}

/// The image host: `images.test` (and `files.test`, standing in for a platform's file host)
/// at a public address, serving PNG and JPEG by path and 404 otherwise.
pub(crate) struct Images {
    pub(crate) server: Server,
    pub(crate) dialer: Arc<LoopbackDialer>,
    pub(crate) fetcher: yetibot_image_fetch::Fetcher,
}

pub(crate) async fn images(resolver: Arc<FixedResolver>) -> Images {
    let pki = Pki::new();
    let server = Server::start(pki.server(&["images.test", "files.test"]), |seen: &Seen| {
        let line = seen.line().to_owned();
        if line.contains(".png") {
            Script::Reply(image_fixture::ok("image/png", PNG))
        } else if line.contains(".jpg") {
            Script::Reply(image_fixture::ok("image/jpeg", JPEG))
        } else {
            Script::Reply(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n".to_vec())
        }
    })
    .await;
    let dialer = LoopbackDialer::to(&server);
    let fetcher = image_fixture::fetcher(&pki, resolver, dialer.clone());
    Images {
        server,
        dialer,
        fetcher,
    }
}

pub(crate) fn public_resolver() -> Arc<FixedResolver> {
    FixedResolver::new()
        .answer("images.test", &[PUBLIC])
        .answer("files.test", &[PUBLIC])
        .answer("evil.test", &["10.0.0.7"])
}

/// A chat message's platform: its attachments, a token for `files.test` only, and the bytes
/// of the attachments it holds itself (as the console holds its uploads).
pub(crate) struct Message {
    pub(crate) attachments: Vec<Attachment>,
    pub(crate) held: Vec<(String, Arc<[u8]>)>,
}

impl Platform for Message {
    fn react<'a>(
        &'a self,
        _: &'a str,
        _: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async { Err(PlatformError::Refused("no reactions here")) })
    }

    fn attachments(&self) -> &[Attachment] {
        &self.attachments
    }

    fn attachment_token(&self, url: &str) -> Option<Secret> {
        url.starts_with("https://files.test/")
            .then(|| Secret::new(FILE_TOKEN))
    }

    fn attachment_bytes(&self, url: &str) -> Option<Arc<[u8]>> {
        self.held
            .iter()
            .find(|(held, _)| held == url)
            .map(|(_, bytes)| Arc::clone(bytes))
    }
}

pub(crate) fn attachment(name: &str, media_type: &str, url: &str) -> Attachment {
    Attachment::new(name, Some(media_type), url, Some(100)).expect("an attachment")
}

struct Bot {
    interpreter: Interpreter,
    _key: tempdir::Dir,
}

mod tempdir {
    /// A private directory holding the token file, removed on drop.
    pub(crate) struct Dir(pub(crate) std::path::PathBuf);
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn bot(cloudflare: &Fixture, fetcher: yetibot_image_fetch::Fetcher, chat: Option<&Fixture>) -> Bot {
    let dir = std::env::temp_dir().join(format!(
        "yetibot-clef-{}-{}",
        std::process::id(),
        cloudflare.addr().port()
    ));
    std::fs::create_dir_all(&dir).expect("dir");
    let key = dir.join("token");
    std::fs::write(&key, CF_TOKEN).expect("key");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("mode");
    let providers = match chat {
        Some(chat) => ProviderSet::from_config(
            None,
            &[ProviderConfig {
                name: Some("local".into()),
                url: Some(chat.url("/v1")),
                model: Some("m1".into()),
                ..ProviderConfig::default()
            }],
        )
        .expect("providers"),
        None => ProviderSet::default(),
    };
    let services = AiServices::new(
        Client::new(ClientOptions::default()).expect("client"),
        providers,
        Host::new(ServerSet::default(), HostOptions::new()).expect("host"),
        crate::ai::policy(),
        Arc::new(tokio::time::Instant::now),
    )
    .with_decisions(WorkersAccount::new(
        &cloudflare.url("/client/v4"),
        ACCOUNT,
        key,
        None,
    ))
    .with_images(fetcher);
    let mut registry = builtins();
    for spec in yetibot_ai_commands::commands(Arc::new(services)) {
        registry.add(spec);
    }
    Bot {
        interpreter: Interpreter::new(
            registry,
            Arc::new(MemoryAliases::new()),
            Box::new(SplitMix64::new(3)),
            Settings::default(),
        ),
        _key: tempdir::Dir(dir),
    }
}

fn caller(attachments: Vec<Attachment>) -> Caller {
    Caller {
        adapter: AdapterKind::Slack,
        connection: "slack".into(),
        room: "#general".into(),
        user_id: "U1".into(),
        user_name: "alice".into(),
        trusted: true,
        message_id: Some("1.0".into()),
        platform: Some(Arc::new(Message {
            attachments,
            held: Vec::new(),
        })),
    }
}

async fn fake_cloudflare() -> Fixture {
    let fixture = Fixture::start().await.expect("fixture");
    for model in ["clef", "clairic"] {
        fixture.respond_with(&run_path(model), provider_fixture::workers::answer);
    }
    fixture
}

fn bodies(fixture: &Fixture, path: &str) -> Vec<Value> {
    fixture
        .requests()
        .iter()
        .filter(|r| r.path == path)
        .map(|r: &Recorded| serde_json::from_slice(&r.body).expect("JSON"))
        .collect()
}

fn shown(reply: &yetibot_command::Reply) -> String {
    reply
        .error
        .clone()
        .unwrap_or_else(|| reply.messages().join("\n"))
}

/// The base64 of `bytes`, decoded back, for comparing what was embedded.
pub(crate) fn decoded(text: &str) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut bits = 0u32;
    let mut count = 0;
    let mut out = Vec::new();
    for byte in text.bytes().filter(|b| *b != b'=') {
        let value = ALPHABET.iter().position(|a| *a == byte).expect("base64") as u32;
        bits = (bits << 6) | value;
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typed_image_url_is_fetched_pinned_and_embedded_without_the_cloudflare_token() {
    let cloudflare = fake_cloudflare().await;
    let host = images(public_resolver()).await;
    let bot = bot(&cloudflare, host.fetcher.clone(), None);
    let reply = bot
        .interpreter
        .run(
            &caller(Vec::new()),
            "clef Is this a receipt? https://images.test/receipt.png",
        )
        .await;
    assert_eq!(shown(&reply), "decision: no · P(yes) 0.12");
    let sent = bodies(&cloudflare, &run_path("clef"));
    assert_eq!(sent.len(), 1);
    assert_eq!(
        sent[0]["questions"]["decision"]["instructions"],
        "Is this a receipt?"
    );
    assert_eq!(sent[0]["images"][0]["content_type"], "image/png");
    assert_eq!(
        decoded(sent[0]["images"][0]["base64"].as_str().expect("base64")),
        PNG
    );
    // The image host saw one plain GET on the checked address: no Cloudflare token, no
    // credential of any kind.
    let seen = host.server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].line(), "GET /receipt.png HTTP/1.1");
    assert!(!seen[0].head.contains(CF_TOKEN));
    assert!(!seen[0].headers().contains_key("authorization"));
    assert_eq!(host.dialer.dialed().len(), 1);
    assert_eq!(host.dialer.dialed()[0].ip().to_string(), PUBLIC);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_messages_image_attachments_reach_clairic_and_only_its_own_file_host_gets_the_token() {
    let cloudflare = fake_cloudflare().await;
    let host = images(public_resolver()).await;
    let bot = bot(&cloudflare, host.fetcher.clone(), None);
    let attachments = vec![
        attachment("meme.jpg", "image/jpeg", "https://images.test/meme.jpg"),
        attachment("notes.txt", "text/plain", "https://images.test/notes.txt"),
        attachment(
            "private.png",
            "image/png",
            "https://files.test/F1/private.png",
        ),
    ];
    let reply = bot
        .interpreter
        .run(&caller(attachments), "clairic count helicopters")
        .await;
    assert!(reply.error.is_none(), "{}", shown(&reply));
    let sent = bodies(&cloudflare, &run_path("clairic"));
    let embedded: Vec<&str> = sent[0]["images"]
        .as_array()
        .expect("images")
        .iter()
        .map(|i| i["content_type"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        embedded,
        ["image/jpeg", "image/png"],
        "the text file is not an image"
    );
    let seen = host.server.seen();
    let authorization = |path: &str| {
        seen.iter()
            .find(|s| s.line().contains(path))
            .and_then(|s| s.headers().get("authorization").cloned())
    };
    assert_eq!(authorization("/meme.jpg"), None);
    assert_eq!(
        authorization("/F1/private.png"),
        Some(format!("Bearer {FILE_TOKEN}"))
    );
    assert!(seen.iter().all(|s| !s.head.contains(CF_TOKEN)));
    // The demo ignores attachments: it is a text-only smoke test.
    let before = host.server.connections();
    let demo = bot
        .interpreter
        .run(
            &caller(vec![attachment(
                "a.png",
                "image/png",
                "https://images.test/a.png",
            )]),
            "clairic demo",
        )
        .await;
    assert!(shown(&demo).starts_with("demo passed"), "{}", shown(&demo));
    assert_eq!(host.server.connections(), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_image_stops_the_request_before_anything_is_sent() {
    let cloudflare = fake_cloudflare().await;
    let host = images(public_resolver()).await;
    let bot = bot(&cloudflare, host.fetcher.clone(), None);
    let me = caller(Vec::new());
    for (line, says) in [
        (
            "echo x | clef Bad? https://evil.test/a.png?sig=s3cret",
            "private address",
        ),
        (
            "echo x | clef Bad? https://images.test/missing.webp?sig=s3cret",
            "404",
        ),
        ("echo x | clef Bad? http://images.test/a.png", "https"),
        ("echo x | clef Bad? https://images.test:8443/a.png", "port"),
        (
            "echo x | clef Bad? https://u:p@images.test/a.png",
            "user name or password",
        ),
    ] {
        let reply = bot.interpreter.run(&me, line).await;
        let text = shown(&reply);
        assert!(reply.error.is_some(), "{line}: {text}");
        assert!(
            text.contains("image 1") && text.contains(says),
            "{line}: {text}"
        );
        // Errors name the image and its host, never its path, query or resolved address
        // (the line itself is quoted back, as for every error).
        let message = text.split("`: ").nth(1).unwrap_or_default();
        assert!(
            !message.contains("s3cret") && !message.contains("10.0.0.7"),
            "{line}: {text}"
        );
    }
    // Five images in all (three URLs and two attachments) are refused before any fetch.
    let before = host.server.connections();
    let five = caller(vec![
        attachment("a.png", "image/png", "https://images.test/4.png"),
        attachment("b.png", "image/png", "https://images.test/5.png"),
    ]);
    let reply = bot
        .interpreter
        .run(&five, "clef Bad? https://images.test/1.png https://images.test/2.png https://images.test/3.png")
        .await;
    assert!(
        shown(&reply).contains("at most 4 images"),
        "{}",
        shown(&reply)
    );
    assert_eq!(host.server.connections(), before);
    assert!(
        bodies(&cloudflare, &run_path("clef")).is_empty(),
        "nothing reached Cloudflare"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zero_image_tokens_are_reported_beside_the_answer() {
    let cloudflare = Fixture::start().await.expect("fixture");
    cloudflare.route(
        &run_path("clairic"),
        Reply::json(
            json!({"result": {"model": "clairic", "answers": {"count": {"value": 0}},
                   "usage": {"input_tokens": 5, "output_tokens": 1, "image_tokens": 0}},
                   "success": true})
            .to_string(),
        ),
    );
    let host = images(public_resolver()).await;
    let bot = bot(&cloudflare, host.fetcher.clone(), None);
    let reply = bot
        .interpreter
        .run(
            &caller(Vec::new()),
            "clairic count cats https://images.test/cats.png",
        )
        .await;
    let text = shown(&reply);
    assert!(text.starts_with("count: 0"), "{text}");
    assert!(text.contains("zero image tokens"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clairic_tool_gets_the_messages_attachment() {
    let cloudflare = fake_cloudflare().await;
    let chat = Fixture::start().await.expect("chat");
    let call = |id: &str, arguments: Value| {
        json!({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": id, "type": "function",
             "function": {"name": "yetibot__clairic", "arguments": arguments.to_string()}}]},
            "finish_reason": "tool_calls"}]})
        .to_string()
    };
    chat.route(
        "/v1/chat/completions",
        Reply::json(call(
            "c1",
            json!({"fields": {"amount": {"type": "number"}, "date": {"type": "date"}}}),
        )),
    );
    chat.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("Done.")),
    );
    let host = images(public_resolver()).await;
    let bot = bot(&cloudflare, host.fetcher.clone(), Some(&chat));
    let receipt = vec![attachment(
        "receipt.png",
        "image/png",
        "https://images.test/receipt.png",
    )];
    let reply = bot
        .interpreter
        .run(
            &caller(receipt),
            "ai Use Clairic to extract amount:number and date:date from this receipt.",
        )
        .await;
    assert_eq!(
        shown(&reply).lines().next(),
        Some("Done."),
        "{}",
        shown(&reply)
    );
    let sent = bodies(&cloudflare, &run_path("clairic"));
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["images"][0]["content_type"], "image/png");
    assert_eq!(sent[0]["state"], "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_cut_off_after_it_was_sent_is_an_unknown_outcome_and_not_retried() {
    let cloudflare = Fixture::start().await.expect("fixture");
    cloudflare.route(
        &run_path("clef"),
        Reply::json(r#"{"result":{"answers":"#).ending(provider_fixture::End::Abort),
    );
    let chat = Fixture::start().await.expect("chat");
    let arguments = json!({"question": "Is it down?", "input": "service is down"}).to_string();
    chat.route(
        "/v1/chat/completions",
        Reply::json(
            json!({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "yetibot__clef", "arguments": arguments}}]},
                "finish_reason": "tool_calls"}]})
            .to_string(),
        ),
    );
    chat.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("Unknown.")),
    );
    let host = images(public_resolver()).await;
    let bot = bot(&cloudflare, host.fetcher.clone(), Some(&chat));
    bot.interpreter
        .run(
            &caller(Vec::new()),
            "ai Classify this with Clef: is it down?",
        )
        .await;
    assert_eq!(cloudflare.count(&run_path("clef")), 1, "never retried");
    let last = chat
        .requests()
        .last()
        .map(|r| serde_json::from_slice::<Value>(&r.body).expect("JSON"));
    let tool = last
        .as_ref()
        .and_then(|body| body["messages"].as_array())
        .and_then(|messages| messages.iter().find(|m| m["role"] == "tool"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned();
    assert!(tool.contains("Outcome unknown"), "{tool}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upload_the_platform_holds_is_checked_and_embedded_without_any_fetch() {
    let cloudflare = fake_cloudflare().await;
    let host = images(public_resolver()).await;
    let bot = bot(&cloudflare, host.fetcher.clone(), None);
    let console = |bytes: &[u8]| Caller {
        adapter: AdapterKind::Web,
        platform: Some(Arc::new(Message {
            attachments: vec![attachment("cats.png", "image/png", "console-upload:abc")],
            held: vec![("console-upload:abc".to_owned(), Arc::from(bytes))],
        })),
        ..caller(Vec::new())
    };
    let reply = bot
        .interpreter
        .run(&console(PNG), "clairic count cats")
        .await;
    assert!(reply.error.is_none(), "{}", shown(&reply));
    let sent = bodies(&cloudflare, &run_path("clairic"));
    assert_eq!(
        decoded(sent[0]["images"][0]["base64"].as_str().expect("base64")),
        PNG
    );
    assert_eq!(host.server.connections(), 0, "nothing was fetched");
    // Held bytes are held to the fetcher's rules: a GIF is refused before anything is sent.
    let reply = bot
        .interpreter
        .run(&console(image_fixture::GIF), "clairic count cats")
        .await;
    assert!(
        shown(&reply).contains("image 1 from the attached file is not a PNG, JPEG or WebP image"),
        "{}",
        shown(&reply)
    );
    assert_eq!(bodies(&cloudflare, &run_path("clairic")).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_credential_in_an_image_url_or_an_unusable_token_stops_everything_before_a_fetch() {
    let cloudflare = fake_cloudflare().await;
    let host = images(public_resolver()).await;
    let bot = bot(&cloudflare, host.fetcher.clone(), None);
    let me = caller(Vec::new());
    let leak = format!("echo x | clef Bad? https://images.test/a.png?k={CF_TOKEN}");
    let reply = bot.interpreter.run(&me, &leak).await;
    let text = shown(&reply);
    assert!(text.contains("quotes a configured credential"), "{text}");
    assert_eq!(
        host.server.connections(),
        0,
        "the image host was never asked"
    );
    assert!(bodies(&cloudflare, &run_path("clef")).is_empty());
    // A token file that cannot be used is found before any image is fetched.
    let key = bot._key.0.join("token");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o666)).expect("mode");
    let reply = bot
        .interpreter
        .run(&me, "echo x | clef Bad? https://images.test/a.png")
        .await;
    assert!(
        shown(&reply).contains("token file cannot be used"),
        "{}",
        shown(&reply)
    );
    assert!(!shown(&reply).contains(&key.display().to_string()));
    assert_eq!(host.server.connections(), 0);
}
