//! `gi` through `yetibot run`, against the fake xAI image API of `provider-fixture` on
//! loopback (`:xai :api-url` points at it): a generated image saved with `--files-dir` is
//! exactly xAI's bytes, the `gi` tool through a tool-capable model, and every failure (a
//! refused key whose body must not be shown, a credential in the prompt, a 5xx and a cut
//! connection after the request, which are unknown outcomes never retried, no key).

use provider_fixture::xai_images::{self, XaiImages};
use provider_fixture::{End, Fixture, Reply};
use serde_json::Value;

use crate::{Configured, printed};

/// The xAI key: it may appear only in the Authorization header.
const KEY: &str = "xai-key-canary-5f2c9e71";

/// A bot whose xAI account (with `key`) is on the fixture; `extra` goes inside `:yetibot`.
fn xai(fixture: &Fixture, key: &str, extra: &str) -> Configured {
    let api = fixture.url("/x/v1");
    Configured::new(&format!(
        r#"{{:yetibot {{:xai {{:key "{key}" :api-url "{api}"}} {extra}}}}}"#
    ))
}

async fn fake() -> Fixture {
    let fixture = Fixture::start().await.expect("fixture");
    XaiImages::new(KEY).mount(&fixture, "/x/v1");
    fixture
}

/// Asserts that nothing secret or of xAI's own words was printed.
fn clean(text: &str) {
    for canary in [KEY, xai_images::ERROR_CANARY, xai_images::REVISED_CANARY] {
        assert!(!text.contains(canary), "{canary} in {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generated_image_is_named_described_and_saved_exactly() {
    let fixture = fake().await;
    let setup = xai(&fixture, KEY, "");
    let out = setup
        .run(&["--files-dir", ".", "gi a yeti commuting by helicopter"])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    clean(&printed(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("Generated image gi-") && stdout.trim_end().ends_with("(4×3 PNG)"),
        "{stdout}"
    );
    let name = stdout.split_whitespace().nth(2).expect("a file name");
    assert_eq!(
        std::fs::read(setup.dir.path.join(name)).expect("saved"),
        xai_images::GENERATED_PNG
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("file: {name} (image/png, 73 bytes) saved to")),
        "{stderr}"
    );
    // What xAI was sent.
    let requests = fixture.requests();
    assert_eq!(requests.len(), 1);
    let body: Value = serde_json::from_slice(&requests[0].body).expect("JSON");
    assert_eq!(body["prompt"], "a yeti commuting by helicopter");
    assert_eq!(body["model"], "grok-imagine-image");

    // Without a directory the file is listed; --json lists it and keeps the data.
    let out = setup.run(&["--json", "gi a yeti | data $.width"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    let json: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json["value"], serde_json::json!(["4"]));
    assert_eq!(json["files"][0]["media_type"], "image/png");
    assert_eq!(json["files"][0]["bytes"], 73);
    assert!(String::from_utf8_lossy(&out.stderr).contains("pass --files-dir DIR"));
    // A directory that does not exist: the run fails and says so, without its path.
    let out = setup
        .run(&["--files-dir", "/nonexistent/yetibot-gi", "gi a yeti"])
        .await;
    assert_eq!(out.status.code(), Some(1), "{}", printed(&out));
    assert!(printed(&out).contains("could not be saved"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_holds_four_images_and_no_fifth_is_paid_for() {
    let fixture = fake().await;
    let setup = xai(&fixture, KEY, "");
    // xargs runs up to four stages at once: places are held before anything is sent.
    let out = setup
        .run(&["--json", "list a b c d e f | xargs gi a yeti number %s"])
        .await;
    clean(&printed(&out));
    let json: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json["files"].as_array().map(Vec::len), Some(4), "{json}");
    assert_eq!(fixture.count("/x/v1/images/generations"), 4);
    // xargs keeps going past a stage that failed: the two without a place show nothing.
    let shown = json["value"].as_array().expect("rows");
    assert_eq!(shown.iter().filter(|v| *v == "").count(), 2, "{json}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_and_unknown_outcomes_are_specific_and_never_retried() {
    let fixture = fake().await;
    // A key xAI refuses: no image was made, and xAI's body is not shown.
    let wrong = xai(&fixture, "xai-wrong-key-00000000", "");
    let out = wrong.run(&["gi a yeti"]).await;
    assert_eq!(out.status.code(), Some(1));
    clean(&printed(&out));
    assert!(
        printed(&out).contains("xAI made no image"),
        "{}",
        printed(&out)
    );
    assert!(!printed(&out).contains("xai-wrong-key"));

    // Checked before anything is sent: a prompt quoting the key, one over 2,000 characters,
    // none at all.
    let setup = xai(&fixture, KEY, "");
    let before = fixture.requests().len();
    let out = setup.run(&[&format!("gi draw {KEY}")]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(printed(&out).contains("quotes a configured credential"));
    clean(&printed(&out));
    let out = setup.run(&[&format!("gi {}", "y".repeat(2001))]).await;
    assert!(
        printed(&out).contains("at most 2000 characters"),
        "{}",
        printed(&out)
    );
    let out = setup.run(&["gi"]).await;
    assert!(printed(&out).contains("gi <prompt>"), "{}", printed(&out));
    assert_eq!(fixture.requests().len(), before);

    // A 5xx and a connection cut after the request: unknown outcomes, one request each.
    for (ending, path) in [(None, "/a/v1"), (Some(End::Abort), "/b/v1")] {
        let failing = Fixture::start().await.expect("fixture");
        let reply = Reply::status_json(
            500,
            format!(r#"{{"error":"{}"}}"#, xai_images::ERROR_CANARY),
        );
        let reply = match ending {
            Some(end) => Reply::json("{\"data\":[").ending(end),
            None => reply,
        };
        failing.route(&format!("{path}/images/generations"), reply);
        let setup = Configured::new(&format!(
            r#"{{:yetibot {{:xai {{:key "{KEY}" :api-url "{}"}}}}}}"#,
            failing.url(path)
        ));
        let out = setup.run(&["gi a yeti"]).await;
        assert_eq!(out.status.code(), Some(1));
        clean(&printed(&out));
        assert!(
            printed(&out).contains("may have been made and charged"),
            "{}",
            printed(&out)
        );
        assert_eq!(failing.count(&format!("{path}/images/generations")), 1);
    }

    // No key.
    let none = Configured::new("{:yetibot {}}");
    let out = none.run(&["gi a yeti"]).await;
    assert!(printed(&out).contains(":xai :key"), "{}", printed(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tool_makes_an_image_for_a_model_and_is_listed_only_when_configured() {
    let fixture = fake().await;
    let chat = fixture.url("/v1");
    let provider = format!(r#":ai {{:providers [{{:name "local" :url "{chat}" :model "m1"}}]}}"#);
    let setup = xai(&fixture, KEY, &provider);
    let out = setup.run(&["ai tools yetibot/gi"]).await;
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        listed.starts_with("`yetibot/gi`") && listed.contains("prompt"),
        "{listed}"
    );
    let unconfigured = Configured::new(&format!("{{:yetibot {{{provider}}}}}"));
    let out = unconfigured.run(&["ai tools"]).await;
    assert!(!String::from_utf8_lossy(&out.stdout).contains("yetibot/gi"));

    let call = provider_fixture::script::chat_tool_call(
        "c1",
        "yetibot__gi",
        "{\"prompt\":\"a yeti on a helicopter\"}",
    );
    fixture.route("/v1/chat/completions", Reply::json(call));
    fixture.route(
        "/v1/chat/completions",
        Reply::json(provider_fixture::script::chat_completion("Here it is.")),
    );
    let out = setup
        .run(&[
            "--json",
            "ai Generate a picture of Yetibot commuting by helicopter.",
        ])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    clean(&printed(&out));
    let json: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json["value"], "Here it is.");
    assert_eq!(json["files"][0]["bytes"], 73);
    // The model got the summary, never the bytes, xAI's revised prompt or the key.
    for request in fixture.requests() {
        clean(&String::from_utf8_lossy(&request.body));
    }
    let results = provider_fixture::script::tool_results(&fixture, "/v1/chat/completions");
    let result: Value = serde_json::from_str(&results[0]).expect("JSON result");
    assert_eq!(result["width"], 4);
    assert_eq!(result["edited"], false);
    assert_eq!(result["delivered"], "attached to your answer");
}
