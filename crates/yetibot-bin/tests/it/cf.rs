//! The `cf` command end to end against the provider fixture on loopback, asserting what the
//! fixture received (count, path, query, body) and what was printed.
//!
//! The Workers AI catalog and the `max_tokens` field are capabilities the provider gets from
//! an `https://api.cloudflare.com/client/v4/accounts/<account>/ai/v1` URL, which a loopback
//! fixture cannot serve. So two harnesses share this file:
//!
//! - `yetibot run` itself, for everything that must stop before any request (options,
//!   usage, configuration), with a `cloudflare` provider on the fixture's plain URL;
//! - the binary's own wiring (`config::load`, `commands::ai_services`, `commands::wire`,
//!   `Interpreter::run`, the reply's messages: what `yetibot run` does) with one change:
//!   the `cloudflare` provider's derived capabilities are pointed at the fixture
//!   ([`Provider::with_capabilities`]). A test checks that they equal what the real URL
//!   derives, apart from the fixture's address.

use std::sync::Arc;

use provider_fixture::{Fixture, Recorded, Reply, script};
use serde_json::{Value, json};
use yetibot_ai_providers::{
    Billing, ModelListing, OutputTokenParam, Provider, ProviderConfig, ProviderSet,
};

use crate::Workdir;

/// A secret in the cloudflare provider's key slot: it may appear only in its
/// Authorization header.
const CANARY: &str = "canary-cf-5d1e7b-secret";
/// A well-formed Workers AI account ID.
const ACCOUNT: &str = "0123456789abcdef0123456789abcdef";

fn base_path() -> String {
    format!("/client/v4/accounts/{ACCOUNT}/ai/v1")
}

fn search_path() -> String {
    format!("/client/v4/accounts/{ACCOUNT}/ai/models/search")
}

fn chat_path() -> String {
    format!("{}/chat/completions", base_path())
}

/// The configuration the spec recommends, on `url`, with `extra` inside `:ai`.
fn config_edn(url: &str, extra: &str, db: &std::path::Path) -> String {
    format!(
        r#"{{:yetibot {{:db {{:sqlite {{:path "{}"}}}}
             :ai {{:providers [{{:name "local" :url "http://127.0.0.1:9/v1" :model "m1"}}
                               {{:name "cloudflare" :url "{url}" :key "{CANARY}"
                                 :model "@cf/zai-org/glm-4.7-flash" :gateway-id "my-gateway"}}]
                   {extra}}}}}}}"#,
        db.display()
    )
}

fn task(name: &str) -> Value {
    json!({"id": format!("uuid-{name}"), "name": name, "description": "d"})
}

/// A catalog in the shape of the official Workers AI records, IDs deliberately unsorted.
fn catalog() -> Value {
    let chat_schema = json!({"input": {"type": "object", "oneOf": [
        {"properties": {"prompt": {"type": "string"}}},
        {"properties": {"messages": {"type": "array"}, "tools": {"type": "array"}}}]},
        "output": {"properties": {"response": {}, "tool_calls": {}}}});
    let clef_schema = json!({"input": {"type": "object", "properties": {
        "model": {}, "state": {}, "questions": {}, "images": {}}},
        "output": {"properties": {"answers": {}, "usage": {}}}});
    let entry = |name: &str, task_name: Option<&str>| {
        let mut record = json!({"id": format!("uuid-{name}"), "name": name, "source": 1,
            "description": format!("about {name}"), "created_at": "2026-01-01 00:00:00.000",
            "tags": [], "properties": [{"property_id": "context_window", "value": "32000"}]});
        if let Some(t) = task_name {
            record["task"] = task(t);
        }
        record
    };
    let mut llama = entry(
        "@cf/meta/llama-3.1-8b-instruct-fp8",
        Some("Text Generation"),
    );
    llama["schema"] = chat_schema;
    let mut clef = entry("@cf/cloudflare/clef", Some("Text Generation"));
    clef["schema"] = clef_schema;
    let mut glm = entry("@cf/zai-org/glm-4.7-flash", Some("Text Generation"));
    glm["properties"] = json!([{"property_id": "price", "value": [
        {"unit": "per M input tokens", "price": 0.06, "currency": "USD"}]}]);
    json!([
        glm,
        entry("@cf/qwen/qwen3-30b-a3b-fp8", Some("Text Generation")),
        entry("@cf/google/gemma-3-12b-it", Some("Text Generation")),
        entry(
            "@cf/aisingapore/gemma-sea-lion-v4-27b-it",
            Some("Text Generation")
        ),
        llama,
        clef,
        entry(
            "@cf/black-forest-labs/flux-1-schnell",
            Some("Text-to-Image")
        ),
        entry("@cf/openai/whisper", Some("Automatic Speech Recognition")),
        entry("@cf/baai/bge-m3", Some("Text Embeddings")),
        entry("@cf/unknown/mystery", None),
    ])
}

fn catalog_page(records: &Value) -> Reply {
    let count = records.as_array().map_or(0, Vec::len);
    Reply::json(
        json!({"success": true, "result": records, "errors": [], "messages": [],
            "result_info": {"page": 1, "per_page": 100, "count": count, "total_count": count}})
        .to_string(),
    )
}

/// A fixture serving the catalog (every time) and one chat answer.
async fn cloudflare_fixture(answer: &str) -> Fixture {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(&search_path(), catalog_page(&catalog()));
    fixture.route(&chat_path(), Reply::json(script::chat_completion(answer)));
    fixture
}

/// The capabilities `capability.rs` derives for the real Workers AI URL, with the catalog
/// search on `fixture`.
fn fixture_capabilities(provider: &Provider, fixture: &Fixture) -> Provider {
    let mut caps = provider.capabilities().clone();
    caps.listing = ModelListing::CloudflareSearch {
        url: fixture.url(&search_path()),
    };
    caps.output_tokens = OutputTokenParam::MaxTokens;
    caps.billing = Billing::WorkersAi;
    provider.clone().with_capabilities(caps)
}

/// What one run printed and whether it failed, as `yetibot run` reports it.
struct Ran {
    stdout: String,
    failed: bool,
    reply: yetibot_command::Reply,
}

/// Runs `line` through the binary's wiring with the cloudflare provider's capabilities on
/// `fixture`, and `extra` inside `:ai`.
async fn run_wired(fixture: &Fixture, extra: &str, line: &str) -> Ran {
    let dir = Workdir::new();
    let edn = config_edn(&fixture.url(&base_path()), extra, &dir.path.join("y.db"));
    let mut config = yetibot_bin::config::load(Some((&dir.path.join("config.edn"), &edn)), &[])
        .expect("a valid configuration");
    let provider = config
        .providers
        .get("cloudflare")
        .expect("cloudflare")
        .clone();
    config.providers = config
        .providers
        .clone()
        .with_provider(fixture_capabilities(&provider, fixture));
    let ai = yetibot_bin::commands::ai_services(&config, None).expect("services");
    let wiring = yetibot_bin::commands::wire(&config, ai, Arc::new(|_| {}), None)
        .await
        .expect("wiring");
    let reply = wiring.interpreter.run(&config.local, line).await;
    let stdout: String = reply.messages().iter().map(|m| format!("{m}\n")).collect();
    assert!(!stdout.contains(CANARY), "{stdout}");
    Ran {
        stdout,
        failed: reply.error.is_some(),
        reply,
    }
}

/// Runs `yetibot run <line>` with the cloudflare provider on `url`.
async fn run_binary(url: String, extra: &'static str, line: &'static str) -> std::process::Output {
    tokio::task::spawn_blocking(move || {
        let dir = Workdir::new();
        let file = dir.path.join("config.edn");
        std::fs::write(&file, config_edn(&url, extra, &dir.path.join("y.db"))).expect("write");
        let path = file.to_str().expect("utf-8").to_owned();
        crate::run_in(&dir, &[("CONFIG_PATH", &path)], &["run", line])
    })
    .await
    .expect("the run finishes")
}

fn body(request: &Recorded) -> Value {
    serde_json::from_slice(&request.body).expect("a JSON request body")
}

fn posts(fixture: &Fixture) -> Vec<Recorded> {
    fixture
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST")
        .collect()
}

/// Asserts the requests were exactly `gets` catalog reads (page 1 of 100) and `posts`
/// chat requests, in that order per command.
fn assert_catalog_reads(fixture: &Fixture, gets: usize) {
    let reads: Vec<Recorded> = fixture
        .requests()
        .into_iter()
        .filter(|r| r.method == "GET")
        .collect();
    assert_eq!(reads.len(), gets, "{reads:?}");
    for read in reads {
        assert_eq!(read.path, search_path());
        assert_eq!(read.query.as_deref(), Some("page=1&per_page=100"));
    }
}

const SORTED: [&str; 10] = [
    "@cf/aisingapore/gemma-sea-lion-v4-27b-it (text-generation, chat)",
    "@cf/baai/bge-m3 (text-embeddings, embedding)",
    "@cf/black-forest-labs/flux-1-schnell (text-to-image, image)",
    "@cf/cloudflare/clef (text-generation, decision)",
    "@cf/google/gemma-3-12b-it (text-generation, chat)",
    "@cf/meta/llama-3.1-8b-instruct-fp8 (text-generation, chat)",
    "@cf/openai/whisper (automatic-speech-recognition, audio)",
    "@cf/qwen/qwen3-30b-a3b-fp8 (text-generation, chat)",
    "@cf/unknown/mystery (uncategorized, unknown)",
    "@cf/zai-org/glm-4.7-flash (text-generation, chat)",
];

fn lines(rows: &[&str]) -> String {
    rows.iter().map(|r| format!("{r}\n")).collect()
}

/// The substitution the wired harness makes is what the real URL derives.
#[test]
fn the_fixture_capabilities_are_those_of_a_real_workers_ai_url() {
    let real = ProviderSet::from_config(
        None,
        &[ProviderConfig {
            name: Some("cloudflare".into()),
            url: Some(format!("https://api.cloudflare.com{}", base_path())),
            key: Some(CANARY.into()),
            ..ProviderConfig::default()
        }],
    )
    .expect("config");
    let caps = real.get("cloudflare").expect("provider").capabilities();
    assert_eq!(
        caps.listing,
        ModelListing::CloudflareSearch {
            url: format!("https://api.cloudflare.com{}", search_path())
        }
    );
    assert_eq!(caps.output_tokens, OutputTokenParam::MaxTokens);
    assert_eq!(caps.billing, Billing::WorkersAi);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cf_models_lists_the_whole_catalog_with_labels_and_sends_no_prompt() {
    let fixture = cloudflare_fixture("unused").await;
    let ran = run_wired(&fixture, "", "cf models").await;
    assert!(!ran.failed, "{}", ran.stdout);
    assert_eq!(ran.stdout, lines(&SORTED));
    assert_catalog_reads(&fixture, 1);
    assert!(posts(&fixture).is_empty());
    // The headers carry the key and the gateway, like every request to this provider.
    let read = &fixture.requests()[0];
    assert_eq!(
        read.headers
            .get("authorization")
            .and_then(|v| v.to_str().ok()),
        Some(format!("Bearer {CANARY}").as_str())
    );
    // The records sit under `models`, one per row, and nothing else is a row.
    let data = ran.reply.data.expect("data").to_json();
    let data: Value = serde_json::from_str(&data).expect("json");
    assert_eq!(data["provider"], "cloudflare");
    assert_eq!(data["truncated"], false);
    let records = data["models"].as_array().expect("records");
    assert_eq!(records.len(), SORTED.len());
    assert_eq!(records[9]["id"], "@cf/zai-org/glm-4.7-flash");
    assert_eq!(
        records[9]["properties"]["price"][0],
        json!({"unit": "per M input tokens", "price": 0.06, "currency": "USD"})
    );
    assert_eq!(
        records[5]["function-calling"],
        json!({"status": "advertised"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_random_model_row_shows_its_whole_record() {
    let fixture = cloudflare_fixture("unused").await;
    let ran = run_wired(&fixture, "", "cf models | random | data show").await;
    assert!(!ran.failed, "{}", ran.stdout);
    let shown: Value = serde_json::from_str(&ran.stdout).expect("one pretty record");
    let id = shown["id"].as_str().expect("an id");
    let row = SORTED
        .iter()
        .find(|r| r.starts_with(&format!("{id} (")))
        .expect("a listed model");
    assert!(row.contains(shown["interface"].as_str().expect("interface")));
    assert!(shown.get("description").is_some(), "{shown}");
    assert!(shown.get("models").is_none(), "not the whole listing");
    assert!(posts(&fixture).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn categories_are_counted_by_task_and_sorted_by_id() {
    let fixture = cloudflare_fixture("unused").await;
    let ran = run_wired(&fixture, "", "cf models --categories").await;
    assert!(!ran.failed, "{}", ran.stdout);
    assert_eq!(
        ran.stdout,
        lines(&[
            "automatic-speech-recognition: 1 model (Automatic Speech Recognition)",
            "text-embeddings: 1 model (Text Embeddings)",
            "text-generation: 6 models (Text Generation)",
            "text-to-image: 1 model (Text-to-Image)",
            "uncategorized: 1 model (no usable task name)",
        ])
    );
    // The collection holds category records, not model records.
    let ran = run_wired(&fixture, "", "cf models --categories | tail | data show").await;
    let shown: Value = serde_json::from_str(&ran.stdout).expect("one record");
    assert_eq!(
        shown,
        json!({"id": "uncategorized", "name": "no usable task name", "count": 1})
    );
    assert_catalog_reads(&fixture, 2);
    assert!(posts(&fixture).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_category_keeps_its_records_and_their_order() {
    let fixture = cloudflare_fixture("unused").await;
    let text_generation = lines(&[
        SORTED[0], SORTED[3], SORTED[4], SORTED[5], SORTED[7], SORTED[9],
    ]);
    for line in [
        "cf models --category text-generation",
        "cf models --category TEXT-Generation",
    ] {
        let ran = run_wired(&fixture, "", line).await;
        assert!(!ran.failed, "{line}: {}", ran.stdout);
        assert_eq!(ran.stdout, text_generation, "{line}");
    }
    let ran = run_wired(
        &fixture,
        "",
        "cf models --category text-to-image | random | data show",
    )
    .await;
    let shown: Value = serde_json::from_str(&ran.stdout).expect("record");
    assert_eq!(shown["id"], "@cf/black-forest-labs/flux-1-schnell");
    assert_eq!(shown["interface"], "image");
    assert_eq!(shown["task"], "Text-to-Image");
    let ran = run_wired(
        &fixture,
        "",
        "cf models --category text-generation | grep gemma | head | data show",
    )
    .await;
    assert!(!ran.failed, "{}", ran.stdout);
    let shown: Value = serde_json::from_str(&ran.stdout).expect("record");
    assert_eq!(shown["id"], "@cf/aisingapore/gemma-sea-lion-v4-27b-it");
    assert_eq!(
        shown["description"],
        "about @cf/aisingapore/gemma-sea-lion-v4-27b-it"
    );
    let ran = run_wired(&fixture, "", "cf models --category uncategorized").await;
    assert_eq!(ran.stdout, lines(&[SORTED[8]]));
    assert_catalog_reads(&fixture, 5);
    assert!(posts(&fixture).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unmatched_category_or_a_catalog_error_stops_the_pipeline() {
    let fixture = cloudflare_fixture("unused").await;
    let ran = run_wired(&fixture, "", "cf models --category nope-<b> | echo reached").await;
    assert!(ran.failed);
    // The interpreter names the failing stage; the hint itself repeats nothing typed.
    assert!(
        ran.stdout.contains(
            "`: no Workers AI model is in that category; `cf models --categories` lists the \
             category IDs"
        ),
        "{}",
        ran.stdout
    );
    assert!(!ran.stdout.contains("reached"));

    let failing = Fixture::start().await.expect("fixture");
    failing.route(
        &search_path(),
        Reply::status_json(500, format!(r#"{{"errors":["BODY {CANARY}"]}}"#)),
    );
    for line in [
        "cf models | echo reached",
        "cf models --categories | echo reached",
    ] {
        let ran = run_wired(&failing, "", line).await;
        assert!(ran.failed, "{line}");
        assert!(ran.stdout.starts_with("💥"), "{}", ran.stdout);
        assert!(ran.stdout.contains("cloudflare"), "{}", ran.stdout);
        assert!(!ran.stdout.contains("reached") && !ran.stdout.contains("BODY"));
    }
    let empty = Fixture::start().await.expect("fixture");
    empty.route(&search_path(), catalog_page(&json!([])));
    for line in ["cf models", "cf models --categories"] {
        let ran = run_wired(&empty, "", line).await;
        assert_eq!(
            ran.stdout, "the Workers AI catalog lists no models\n",
            "{line}"
        );
    }

    // A prompt whose catalog cannot be read is never sent.
    let ran = run_wired(&failing, "", "cf Say hello.").await;
    assert!(ran.failed);
    assert!(posts(&failing).is_empty());
    assert_eq!(
        failing.requests().len(),
        3,
        "one catalog read each, no retry"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_reads_the_catalog_then_sends_one_capped_text_only_request() {
    let fixture = cloudflare_fixture("Hello!").await;
    let ran = run_wired(&fixture, "", "cf Say hello.").await;
    assert!(!ran.failed, "{}", ran.stdout);
    assert_eq!(ran.stdout, "Hello!\n");
    let requests = fixture.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_eq!(requests[0].method, "GET", "the catalog comes first");
    assert_eq!(requests[0].path, search_path());
    assert_eq!(requests[1].method, "POST");
    assert_eq!(requests[1].path, chat_path());
    assert_eq!(requests[1].query, None);
    assert_eq!(
        requests[1]
            .headers
            .get("cf-aig-gateway-id")
            .and_then(|v| v.to_str().ok()),
        Some("my-gateway")
    );
    let sent = body(&requests[1]);
    assert_eq!(sent["model"], "@cf/zai-org/glm-4.7-flash");
    assert_eq!(sent["max_tokens"], 2048);
    assert!(sent.get("max_completion_tokens").is_none());
    assert!(sent.get("tools").is_none());
    assert!(sent.get("tool_choice").is_none());
    // Only the supplied prompt: no instructions, no history, no budget guidance.
    assert_eq!(
        sent["messages"],
        json!([{"role": "user", "content": "Say hello."}])
    );
    let meta = ran.reply.meta.expect("answer metadata");
    assert_eq!(meta.details["provider"], "cloudflare");
    assert_eq!(meta.details["model"], "@cf/zai-org/glm-4.7-flash");
    assert_eq!(meta.details["tool_calls"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_chooses_another_catalogued_chat_model() {
    let fixture = cloudflare_fixture("Hi.").await;
    let ran = run_wired(
        &fixture,
        "",
        "cf --model @cf/qwen/qwen3-30b-a3b-fp8 Say hello.",
    )
    .await;
    assert!(!ran.failed, "{}", ran.stdout);
    assert_eq!(ran.stdout, "Hi.\n");
    let posts = posts(&fixture);
    assert_eq!(posts.len(), 1);
    let sent = body(&posts[0]);
    assert_eq!(sent["model"], "@cf/qwen/qwen3-30b-a3b-fp8");
    assert_eq!(sent["max_tokens"], 2048);
    assert_catalog_reads(&fixture, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_that_are_not_catalogued_chat_interfaces_get_no_request() {
    let fixture = cloudflare_fixture("unused").await;
    for (model, why) in [
        ("@cf/cloudflare/clef", "decision model"),
        ("@cf/black-forest-labs/flux-1-schnell", "image model"),
        ("@cf/openai/whisper", "audio model"),
        ("@cf/baai/bge-m3", "embedding model"),
        ("@cf/unknown/mystery", "unknown model"),
        ("@cf/meta/not-listed", "not in the Workers AI catalog"),
        ("@cf/zai-org/GLM-4.7-flash", "not in the Workers AI catalog"),
    ] {
        let line = format!("cf --model {model} Say hello.");
        let ran = run_wired(&fixture, "", &line).await;
        assert!(ran.failed, "{line}");
        assert!(ran.stdout.contains(why), "{line}: {}", ran.stdout);
    }
    assert_catalog_reads(&fixture, 7);
    assert!(posts(&fixture).is_empty(), "nothing paid was sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_toolset_applies_its_provider_and_model_policy() {
    let fixture = cloudflare_fixture("Allowed.").await;
    let toolsets = r#":mcp {:toolsets [{:name "cf_glm" :kind "search" :servers []
                                       :providers [{:name "cloudflare" :models ["@cf/zai-org/glm-4.7-flash"]}]}]}"#;
    let ran = run_wired(&fixture, toolsets, "cf --toolset cf_glm Say hello.").await;
    assert!(!ran.failed, "{}", ran.stdout);
    assert_eq!(ran.stdout, "Allowed.\n");
    assert_eq!(posts(&fixture).len(), 1);
    assert!(body(&posts(&fixture)[0]).get("tools").is_none());
    let before = fixture.requests().len();
    for line in [
        "cf --toolset cf_glm --model @cf/qwen/qwen3-30b-a3b-fp8 Say hello.",
        // The default toolset applies without --toolset, as it does for ai.
        "cf --model @cf/qwen/qwen3-30b-a3b-fp8 Say hello.",
        "cf --toolset nope Say hello.",
    ] {
        let ran = run_wired(&fixture, toolsets, line).await;
        assert!(ran.failed, "{line}: {}", ran.stdout);
    }
    assert_eq!(
        fixture.requests().len(),
        before,
        "access is checked before the catalog or the credential"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn piped_data_is_a_separate_untrusted_message() {
    let fixture = cloudflare_fixture("A summary.").await;
    let ran = run_wired(&fixture, "", "echo hello world | cf Summarize this.").await;
    assert!(!ran.failed, "{}", ran.stdout);
    let sent = body(&posts(&fixture)[0]);
    let messages = sent["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 2);
    assert_eq!(
        messages[1],
        json!({"role": "user", "content": "Summarize this."})
    );
    let data = messages[0]["content"].as_str().expect("data");
    assert!(data.starts_with("Untrusted data"), "{data}");
    assert!(data.contains("hello world"), "{data}");

    // A model record chosen from the listing is what the model receives.
    let fixture = cloudflare_fixture("A record.").await;
    let ran = run_wired(
        &fixture,
        "",
        "cf models --category text-to-image | random | cf Describe this model.",
    )
    .await;
    assert!(!ran.failed, "{}", ran.stdout);
    let sent = body(&posts(&fixture)[0]);
    let data = sent["messages"][0]["content"].as_str().expect("data");
    assert!(data.contains("flux-1-schnell"), "{data}");
    assert!(!data.contains("whisper"), "only the chosen record: {data}");
    assert_catalog_reads(&fixture, 2);

    // A pipe-only request answers the data.
    let fixture = cloudflare_fixture("Two words.").await;
    let ran = run_wired(&fixture, "", "echo hello world | cf").await;
    assert_eq!(ran.stdout, "Two words.\n");
    let sent = body(&posts(&fixture)[0]);
    assert_eq!(sent["messages"].as_array().map(Vec::len), Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ai_command_lists_and_asks_the_same_provider() {
    let fixture = cloudflare_fixture("Hello from ai.").await;
    let ran = run_wired(&fixture, "", "ai models cloudflare").await;
    assert!(!ran.failed, "{}", ran.stdout);
    assert!(
        ran.stdout
            .starts_with("@cf/aisingapore/gemma-sea-lion-v4-27b-it\n@cf/baai/bge-m3\n"),
        "{}",
        ran.stdout
    );
    let ran = run_wired(&fixture, "", "ai models cloudflare | random | data show").await;
    assert!(ran.stdout.contains("\"interface\""), "{}", ran.stdout);
    let ran = run_wired(
        &fixture,
        "",
        "ai --provider cloudflare --no-tools Say hello.",
    )
    .await;
    assert_eq!(ran.stdout, "Hello from ai.\n");
    let posts = posts(&fixture);
    assert_eq!(posts.len(), 1);
    assert!(body(&posts[0]).get("tools").is_none());
    assert_catalog_reads(&fixture, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bare_cf_prints_its_usage_and_option_errors_send_nothing() {
    let fixture = Fixture::start().await.expect("fixture");
    let url = fixture.url("/v1");
    let out = run_binary(url.clone(), "", "cf").await;
    assert_eq!(out.status.code(), Some(0));
    let usage = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        usage.starts_with("cf models [--categories | --category <id>]"),
        "{usage}"
    );
    assert!(
        usage.contains("\ncf [--model <id>] [--toolset <name>]"),
        "{usage}"
    );
    for line in [
        "cf --max-tool-calls 3 Say hello.",
        "cf --no-tools --max-tool-calls 3 Say hello.",
        "cf --toolset any --no-tools Say hello.",
        "cf --provider local Say hello.",
        "cf --no-thread Say hello.",
        "cf --model",
        "cf --model a --model b Say hello.",
        "cf --frobnicate Say hello.",
        "cf --model @cf/qwen/qwen3-30b-a3b-fp8",
        "cf models --frobnicate",
        "cf models --category",
        "cf models --categories extra",
        "cf models --category a b",
        "cf models gemma",
    ] {
        let out = run_binary(url.clone(), "", line).await;
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{line}: {stdout}");
        assert!(stdout.starts_with("💥"), "{line}: {stdout}");
        if line.starts_with("cf models") {
            assert!(stdout.contains("usage: cf models"), "{line}: {stdout}");
        }
    }
    assert!(fixture.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cf_needs_a_workers_ai_provider_named_cloudflare() {
    let fixture = Fixture::start().await.expect("fixture");
    // A provider named cloudflare on another URL has no Workers AI catalog.
    for line in ["cf models", "cf Say hello.", "cf models --categories"] {
        let out = run_binary(fixture.url("/v1"), "", line).await;
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{line}: {stdout}");
        assert!(stdout.contains("not a Workers AI account URL"), "{stdout}");
        assert!(!stdout.contains(CANARY));
    }
    // No provider named cloudflare at all.
    let dir = Workdir::new();
    let file = dir.path.join("config.edn");
    std::fs::write(
        &file,
        format!(
            r#"{{:yetibot {{:ai {{:providers [{{:name "local" :url "{}" :model "m1"}}]}}}}}}"#,
            fixture.url("/v1")
        ),
    )
    .expect("write");
    let path = file.to_str().expect("utf-8").to_owned();
    for line in ["cf models", "cf Say hello."] {
        let (dir_path, path) = (dir.path.clone(), path.clone());
        let out = tokio::task::spawn_blocking(move || {
            crate::yetibot(&dir_path, &[("CONFIG_PATH", &path)])
                .args(["run", line])
                .output()
                .expect("runs")
        })
        .await
        .expect("join");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{line}: {stdout}");
        assert!(stdout.contains("named cloudflare"), "{stdout}");
    }
    assert!(fixture.requests().is_empty());
}

fn tool_call(arguments: &str) -> Reply {
    Reply::json(
        json!({
            "choices": [{
                "message": {"role": "assistant", "content": null, "tool_calls": [{
                    "id": "call_cf", "type": "function",
                    "function": {"name": "yetibot__cf", "arguments": arguments},
                }]},
                "finish_reason": "tool_calls",
            }],
        })
        .to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cf_tool_reads_the_catalog_before_one_capped_child_request() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(&search_path(), catalog_page(&catalog()));
    fixture.route(
        &chat_path(),
        tool_call(
            r#"{"action":"ask","model":"@cf/meta/llama-3.1-8b-instruct-fp8","prompt":"Name a prime."}"#,
        ),
    );
    fixture.route(&chat_path(), Reply::json(script::chat_completion("7")));
    fixture.route(
        &chat_path(),
        Reply::json(script::chat_completion("It said 7.")),
    );
    let ran = run_wired(
        &fixture,
        "",
        "ai --provider cloudflare Ask a Workers AI model.",
    )
    .await;
    assert!(!ran.failed, "{}", ran.stdout);
    assert_eq!(ran.stdout, "It said 7.\n");
    let requests = fixture.requests();
    let order: Vec<(&str, bool)> = requests
        .iter()
        .map(|r| (r.method.as_str(), r.path == search_path()))
        .collect();
    assert_eq!(
        order,
        [
            ("POST", false),
            ("GET", true),
            ("POST", false),
            ("POST", false)
        ],
        "the catalog is read inside the call, before the child's request"
    );
    let child = body(&requests[2]);
    assert_eq!(child["model"], "@cf/meta/llama-3.1-8b-instruct-fp8");
    assert_eq!(child["max_tokens"], 2048);
    assert!(child.get("tools").is_none());
    assert_eq!(
        child["messages"],
        json!([{"role": "user", "content": "Name a prime."}])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cf_tool_refuses_a_model_that_is_not_a_catalogued_chat_model() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(&search_path(), catalog_page(&catalog()));
    fixture.route(
        &chat_path(),
        tool_call(r#"{"action":"ask","model":"@cf/cloudflare/clef","prompt":"Is it down?"}"#),
    );
    fixture.route(
        &chat_path(),
        Reply::json(script::chat_completion("That model cannot chat.")),
    );
    let ran = run_wired(&fixture, "", "ai --provider cloudflare Ask clef.").await;
    assert!(!ran.failed, "{}", ran.stdout);
    let requests = fixture.requests();
    assert_eq!(
        posts(&fixture).len(),
        2,
        "the parent's two turns and no child"
    );
    let result = body(&requests[2])["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "tool").cloned())
        .expect("the refusal went back to the model");
    assert!(
        result["content"]
            .as_str()
            .is_some_and(|c| c.contains("not a chat model")),
        "{result}"
    );
    // Arguments the tool does not take refuse the whole batch before any request.
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(&search_path(), catalog_page(&catalog()));
    fixture.route(
        &chat_path(),
        tool_call(r#"{"action":"ask","provider":"local","prompt":"x"}"#),
    );
    let ran = run_wired(&fixture, "", "ai --provider cloudflare Ask.").await;
    assert!(ran.failed, "{}", ran.stdout);
    assert_eq!(fixture.requests().len(), 1, "no catalog read, no child");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_random_catalog_record_piped_into_ai_is_sent_exactly_and_alone() {
    let fixture = cloudflare_fixture("Formatted.").await;
    let ran = run_wired(
        &fixture,
        r#":default-provider "cloudflare""#,
        "cf models | random | ai --no-tools Format all fields and units.",
    )
    .await;
    assert!(!ran.failed, "{}", ran.stdout);
    let sent = body(&posts(&fixture)[0]);
    let messages = sent["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 3, "instructions, the record, the request");
    // The request is exactly what was typed: the row's display label is not appended.
    assert_eq!(
        messages[2],
        json!({"role": "user", "content": "Format all fields and units."})
    );
    let data = messages[1]["content"].as_str().expect("data");
    let json_start = data.find('{').expect("a JSON object follows the preamble");
    let record: Value = serde_json::from_str(&data[json_start..]).expect("one JSON record");
    let name = record["name"]
        .as_str()
        .or(record["id"].as_str())
        .unwrap_or_else(|| panic!("no model name in {record}"));
    let listed: Vec<String> = catalog()
        .as_array()
        .expect("catalog")
        .iter()
        .filter_map(|r| r["name"].as_str().map(str::to_owned))
        .collect();
    assert!(listed.iter().any(|n| n == name), "{name}");
    // Only the chosen record: no other model's name appears.
    for other in listed.iter().filter(|n| *n != name) {
        assert!(!data.contains(other.as_str()), "{other} leaked into {data}");
    }
}
