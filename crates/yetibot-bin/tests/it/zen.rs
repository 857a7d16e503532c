//! The `zen` command end to end: `yetibot run` against the provider fixture on loopback,
//! asserting what the fixture received and what was printed.
//!
//! The provider is configured as `zen` at the fixture. Its capabilities are derived from
//! that URL, so they are the standard ones (catalog at `{base}/models`, no Zen billing):
//! OpenCode Zen's own (the separate `{origin}/inference/v1/models` catalog, Zen credits, and
//! with them the `API est. $0.0000` label of a verified-free answer) come only from an
//! `https://opencode.ai/inference/...` URL, which a loopback fixture cannot serve. Those are
//! covered below the binary, in `yetibot-ai-commands`' `tests/it/zen.rs`. Everything else —
//! usage, listing, the free-price rule, model choice, limits, denials and what is sent — is
//! covered here.

use provider_fixture::{Fixture, Recorded, Reply, script};
use serde_json::{Value, json};

use crate::Workdir;

/// The key in Zen's slot: it may appear only in Zen's Authorization header.
const CANARY: &str = "canary-zen-2c8e-secret";

async fn run_line(edn: String, args: Vec<String>) -> std::process::Output {
    tokio::task::spawn_blocking(move || {
        let dir = Workdir::new();
        let file = dir.path.join("config.edn");
        std::fs::write(&file, edn).expect("write config");
        let path = file.to_str().expect("utf-8").to_owned();
        let args: Vec<&str> = std::iter::once("run")
            .chain(args.iter().map(String::as_str))
            .collect();
        crate::run_in(&dir, &[("CONFIG_PATH", &path)], &args)
    })
    .await
    .expect("the run finishes")
}

async fn zen(edn: &str, line: &str) -> std::process::Output {
    run_line(edn.to_owned(), vec![line.to_owned()]).await
}

async fn zen_json(edn: &str, line: &str) -> (std::process::Output, Value) {
    let out = run_line(edn.to_owned(), vec!["--json".into(), line.to_owned()]).await;
    let reply = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out, reply)
}

/// A configuration with the `zen` provider at the fixture; `provider` adds keys to its
/// map, `ai` to the `:ai` map and `top` to the `:yetibot` map.
fn config_with(fixture: &Fixture, provider: &str, ai: &str, top: &str) -> String {
    format!(
        r#"{{:yetibot {{:ai {{:providers [{{:name "zen" :url "{}" :key "{CANARY}" {provider}}}] {ai}}} {top}}}}}"#,
        fixture.url("/v1")
    )
}

fn config(fixture: &Fixture, provider: &str, top: &str) -> String {
    config_with(fixture, provider, "", top)
}

/// A catalog with models.dev `cost` objects: a paid model, a free one, one priced in part.
fn catalog(entries: &[Value]) -> Reply {
    Reply::json(json!({"object": "list", "data": entries}).to_string())
}

fn paid() -> Value {
    json!({"id": "paid-1", "cost": {"input": 0.6, "output": 2.2, "cache_read": 0.1}})
}

fn free(id: &str) -> Value {
    json!({"id": id, "cost": {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}})
}

fn partly() -> Value {
    json!({"id": "partly-1", "cost": {"output": 0}})
}

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn printed(output: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn body(request: &Recorded) -> Value {
    serde_json::from_slice(&request.body).expect("a JSON request body")
}

fn authorization(request: &Recorded) -> Option<String> {
    request
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

fn calls(fixture: &Fixture) -> Vec<String> {
    fixture
        .requests()
        .iter()
        .map(|r| format!("{} {}", r.method, r.path))
        .collect()
}

/// Asserts the exact request of one `zen` prompt: the model, the 2,048-token bound, no
/// tools, Zen's key, and the prompt as the last message.
fn assert_prompt_request(request: &Recorded, model: &str, prompt: &str) {
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(
        authorization(request),
        Some(format!("Bearer {CANARY}")),
        "Zen's own key authenticates the prompt"
    );
    let sent = body(request);
    assert_eq!(sent["model"], model);
    assert_eq!(sent["max_completion_tokens"], 2048);
    assert!(sent.get("tools").is_none(), "{sent}");
    assert!(sent.get("tool_choice").is_none(), "{sent}");
    let messages = sent["messages"].as_array().expect("messages");
    assert_eq!(messages[0]["role"], "system");
    let last = messages.last().expect("a prompt");
    assert_eq!(last["role"], "user");
    assert_eq!(last["content"], prompt);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bare_zen_prints_usage_and_sends_nothing() {
    let fixture = Fixture::start().await.expect("fixture");
    let out = zen(&config(&fixture, "", ""), "zen").await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with("zen <prompt> # ask OpenCode Zen"),
        "{text}"
    );
    assert!(text.contains("zen models #"), "{text}");
    assert!(text.contains("zen --model <id> <prompt>"), "{text}");
    assert_eq!(fixture.requests().len(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zen_models_lists_every_id_with_its_record() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/models",
        catalog(&[paid(), free("free-1"), partly(), json!({"id": "new-model"})]),
    );
    let edn = config(&fixture, "", "");
    let out = zen(&edn, "zen models").await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    assert_eq!(stdout(&out), "free-1\nnew-model\npaid-1\npartly-1\n");
    let (out, reply) = zen_json(&edn, "zen models | head 2 | tail 1 | data show").await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    let shown = reply["value"].as_str().unwrap_or_default();
    assert!(shown.contains(r#""id": "new-model""#), "{shown}");
    assert!(!shown.contains("free-1"), "only the chosen record: {shown}");
    assert_eq!(calls(&fixture), ["GET /v1/models", "GET /v1/models"]);
    assert!(!printed(&out).contains(CANARY));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_verified_free_model_is_chosen_when_none_is_configured() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/models",
        catalog(&[paid(), partly(), free("free-1"), free("zz-free")]),
    );
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("Hello there.")),
    );
    let (out, reply) = zen_json(&config(&fixture, "", ""), "zen Say hello.").await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    assert_eq!(reply["value"], "Hello there.");
    assert_eq!(reply["meta"]["provider"], "zen");
    assert_eq!(reply["meta"]["model"], "free-1");
    assert_eq!(reply["meta"]["tool_calls"], 0);
    // A provider at this URL is not billed in Zen credits, so no label claims a price; the
    // verified-free label is asserted with Zen's capabilities in ai-commands' tests.
    assert_eq!(reply["meta"]["cost"], "cost n/a");
    assert_eq!(
        calls(&fixture),
        ["GET /v1/models", "POST /v1/chat/completions"]
    );
    let requests = fixture.requests();
    assert_prompt_request(&requests[1], "free-1", "Say hello.");
    assert_eq!(
        body(&requests[1])["messages"].as_array().map(Vec::len),
        Some(2)
    );
    assert!(!printed(&out).contains(CANARY));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_free_model_nothing_is_sent() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/models",
        catalog(&[
            paid(),
            partly(),
            json!({"id": "unpriced-1", "object": "model", "owned_by": "opencode"}),
            json!({"id": "odd-1", "cost": {"input": 0, "output": 0, "reasoning": 0}}),
            json!({"id": "text-1", "cost": {"input": "0", "output": "0"}}),
        ]),
    );
    let out = zen(&config(&fixture, "", ""), "zen Say hello.").await;
    assert_eq!(out.status.code(), Some(1), "{}", printed(&out));
    let text = stdout(&out);
    assert!(
        text.contains("zen lists no model whose prices are all stated and zero right now"),
        "{text}"
    );
    assert!(text.contains("nothing was sent"), "{text}");
    assert_eq!(calls(&fixture), ["GET /v1/models"], "zero POSTs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_toolset_decides_which_free_model_may_be_chosen() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/models",
        catalog(&[free("a-free"), free("b-free"), paid()]),
    );
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("Fine.")),
    );
    let edn = config_with(
        &fixture,
        "",
        r#":mcp {:toolsets [{:name "zen-b" :kind "search" :providers [{:name "zen" :models ["b-free" "paid-1"]}]}]}"#,
        "",
    );
    let out = zen(&edn, "zen --toolset zen-b hi").await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    assert_eq!(stdout(&out), "Fine.\n");
    let requests = fixture.requests();
    assert_eq!(requests.len(), 2);
    assert_prompt_request(&requests[1], "b-free", "hi");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_explicit_model_is_sent_as_given_without_reading_the_catalog() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route("/v1/models", catalog(&[free("free-1")]));
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("Compared.")),
    );
    let out = zen(
        &config(&fixture, "", ""),
        "zen --model paid-1 Compare these approaches.",
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    assert_eq!(stdout(&out), "Compared.\n");
    assert_eq!(calls(&fixture), ["POST /v1/chat/completions"]);
    assert_prompt_request(
        &fixture.requests()[0],
        "paid-1",
        "Compare these approaches.",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_model_is_never_replaced_by_a_free_one() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route("/v1/models", catalog(&[free("free-1"), paid()]));
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("Hi.")),
    );
    let out = zen(&config(&fixture, r#":model "paid-1""#, ""), "zen hi").await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    assert_eq!(calls(&fixture), ["POST /v1/chat/completions"]);
    assert_prompt_request(&fixture.requests()[0], "paid-1", "hi");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_is_an_upstream_limit_with_its_retry_after_and_is_not_retried() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route("/v1/models", catalog(&[free("free-1")]));
    fixture.route(
        "/v1/chat/completions",
        Reply::status_json(
            429,
            format!(r#"{{"error":"free usage exceeded {CANARY}"}}"#),
        )
        .header("retry-after", "30"),
    );
    let edn = config(&fixture, "", "");
    let out = zen(&edn, "zen Say hello.").await;
    assert_eq!(out.status.code(), Some(1), "{}", printed(&out));
    let text = stdout(&out);
    assert!(
        text.contains(
            "OpenCode Zen refused the request with a usage limit (HTTP 429); retry after 30 s"
        ),
        "{text}"
    );
    assert!(text.contains("not a configuration problem"), "{text}");
    assert!(
        !text.contains("free usage exceeded"),
        "no provider body is echoed"
    );
    assert!(!printed(&out).contains(CANARY));
    assert_eq!(
        calls(&fixture),
        ["GET /v1/models", "POST /v1/chat/completions"],
        "one POST: nothing retried, no paid fallback"
    );
    // A Retry-After beyond the bound (or not a number of seconds) is not repeated.
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/chat/completions",
        Reply::status_json(429, "{}").header("retry-after", "9999999"),
    );
    let out = zen(&config(&fixture, "", ""), "zen --model free-1 hi").await;
    let text = stdout(&out);
    assert!(
        text.contains("usage limit (HTTP 429). This is an upstream limit"),
        "{text}"
    );
    assert!(!text.contains("retry after"), "{text}");
    assert_eq!(fixture.count("/v1/chat/completions"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_403_is_denied_access_and_not_an_uncertain_outcome() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route("/v1/models", catalog(&[free("free-1")]));
    fixture.route(
        "/v1/chat/completions",
        Reply::status_json(
            403,
            r#"{"error":"free models are for the OpenCode client"}"#,
        ),
    );
    let out = zen(&config(&fixture, "", ""), "zen Say hello.").await;
    assert_eq!(out.status.code(), Some(1), "{}", printed(&out));
    let text = stdout(&out);
    assert!(
        text.contains("OpenCode Zen denied access to model free-1 (HTTP 403)"),
        "{text}"
    );
    assert!(!text.contains("charged"), "{text}");
    assert!(
        !text.contains("OpenCode client\""),
        "no provider body is echoed"
    );
    assert_eq!(
        calls(&fixture),
        ["GET /v1/models", "POST /v1/chat/completions"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn piped_data_is_its_own_message_and_a_pipe_alone_is_a_request() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("Summary.")),
    );
    let edn = config(&fixture, r#":model "m1""#, "");
    let out = zen(&edn, "echo hello world | zen Summarize this.").await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    let out = zen(&edn, "echo hello world | zen").await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    let requests = fixture.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        let sent = body(request);
        let messages = sent["messages"].as_array().expect("messages");
        assert_eq!(messages.len(), 3, "instructions, data, request: {sent}");
        assert!(
            messages[1]["content"]
                .as_str()
                .is_some_and(|c| c.contains("hello world")),
            "{sent}"
        );
        assert!(sent.get("tools").is_none());
    }
    assert_eq!(
        body(&requests[0])["messages"][2]["content"],
        "Summarize this."
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_and_option_errors_stop_before_any_request() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route("/v1/models", catalog(&[free("free-1")]));
    let keyed = config(&fixture, "", "");
    let placeholder = config(&fixture, "", "").replace(CANARY, "REPLACE_WITH_OPENCODE_ZEN_API_KEY");
    let keyless = config(&fixture, "", "").replace(&format!(":key \"{CANARY}\""), "");
    let other = format!(
        r#"{{:yetibot {{:ai {{:providers [{{:name "local" :url "{}" :model "m1"}}]}}}}}}"#,
        fixture.url("/v1")
    );
    for (edn, line, expect) in [
        (
            &keyed,
            "zen --provider local hi",
            "always uses its own provider",
        ),
        (&keyed, "zen --max-tool-calls 2 hi", "makes no tool calls"),
        (&keyed, "zen --model", "--model needs a value"),
        (&keyed, "zen --toolset nope hi", "no toolset has that name"),
        (&placeholder, "zen hi", "setup placeholder"),
        (&keyless, "zen hi", "has no API key"),
        (&other, "zen hi", "no AI provider is named zen"),
        (&other, "zen models", "no AI provider is named zen"),
    ] {
        let out = zen(edn, line).await;
        assert_eq!(out.status.code(), Some(1), "{line}: {}", printed(&out));
        assert!(stdout(&out).contains(expect), "{line}: {}", stdout(&out));
    }
    assert_eq!(fixture.requests().len(), 0);
    // The catalog is public: listing works with the placeholder, which is never sent.
    let out = zen(&placeholder, "zen models").await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    assert_eq!(stdout(&out), "free-1\n");
    let requests = fixture.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(authorization(&requests[0]), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zen_runtime_default_is_accepted_only_when_free_now() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route("/v1/models", catalog(&[paid(), free("free-1"), partly()]));
    let edn = config(&fixture, "", r#":admin {:users ["local"]}"#);
    let out = zen(&edn, "ai default zen paid-1").await;
    assert_eq!(out.status.code(), Some(1), "{}", printed(&out));
    assert!(
        stdout(&out).contains(
            "zen model paid-1 is not verified free now: the catalog prices it above zero"
        ),
        "{}",
        stdout(&out)
    );
    let out = zen(&edn, "ai default zen missing-1").await;
    assert!(
        stdout(&out).contains("zen does not list model missing-1"),
        "{}",
        stdout(&out)
    );
    let out = zen(&edn, "ai default zen free-1").await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    assert!(
        stdout(&out).starts_with("AI default set to zen free-1 (verified free now"),
        "{}",
        stdout(&out)
    );
    // Through a pipe it is refused before any catalog is read.
    let out = zen(&edn, "echo x | ai default zen free-1").await;
    assert_eq!(out.status.code(), Some(1), "{}", printed(&out));
    assert_eq!(calls(&fixture), ["GET /v1/models"; 3]);
}
