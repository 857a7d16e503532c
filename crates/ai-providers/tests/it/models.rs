//! Model listing: standard, separate (Zen-style) and Cloudflare's paginated catalog.

use provider_fixture::{Fixture, Reply};
use serde_json::{Value, json};
use yetibot_ai_providers::{Amount, Category, ModelListing, Price, ProviderSet};

use crate::support::{client, config, keyed};

#[tokio::test]
async fn standard_listing_sorts_dedupes_and_reads_context_windows() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/models",
        Reply::json(
            json!({"data": [
                {"id": "zeta", "context_length": 8192},
                {"id": "alpha", "max_model_len": 32768},
                {"id": "gemma.gguf", "owned_by": "llamacpp",
                 "meta": {"n_ctx": 4096, "n_ctx_train": 32768, "n_vocab": 262144}},
                {"id": "zeta"},
                {"id": ""},
                {"id": "x".repeat(600)},
                {"object": "no id"},
            ]})
            .to_string(),
        ),
    );
    let list = client()
        .list_models(&keyed("p", &fixture.url("/v1")))
        .await
        .expect("list");
    assert_eq!(
        list.ids().collect::<Vec<_>>(),
        ["alpha", "gemma.gguf", "zeta"]
    );
    assert_eq!(list.context_window("alpha"), Some(32768));
    // llama.cpp's server: the window it serves, not the one the model was trained with.
    assert_eq!(list.context_window("gemma.gguf"), Some(4096));
    assert_eq!(list.context_window("zeta"), Some(8192));
    assert!(list.truncated, "the over-long ID was dropped");
    assert_eq!(fixture.requests()[0].method, "GET");
}

#[tokio::test]
async fn a_separate_models_endpoint_is_used_when_flagged() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/inference/v1/models",
        Reply::json(r#"{"data":[{"id":"free-1"}]}"#),
    );
    let p = keyed("zen", &fixture.url("/inference/openai/v1"));
    let mut caps = p.capabilities().clone();
    caps.listing = ModelListing::Separate {
        url: fixture.url("/inference/v1/models"),
    };
    let p = p.with_capabilities(caps);
    let list = client().list_models(&p).await.expect("list");
    assert_eq!(list.ids().collect::<Vec<_>>(), ["free-1"]);
    assert_eq!(fixture.count("/inference/openai/v1/models"), 0);
}

/// A Zen-shaped catalog: models.dev `cost` objects (dollars per million tokens) on a
/// paid, a free and a partly priced model, and one with no prices at all.
const PRICED_CATALOG: &str = r#"{"object":"list","data":[
    {"id":"paid-1","cost":{"input":0.6,"output":2.2,"cache_read":0.1}},
    {"id":"free-1","cost":{"input":0,"output":0,"cache_read":0,"cache_write":0,
        "context_over_200k":{"input":0,"output":0}}},
    {"id":"partly-1","cost":{"output":0}},
    {"id":"unpriced-1","object":"model","owned_by":"opencode"},
    {"id":"tiny-1","cost":{"input":1e-330,"output":0}},
    {"id":"free-1","cost":{"input":5,"output":5}}
]}"#;

fn price(text: &str) -> Price {
    Price::Exact(Amount::parse(text).expect("a test amount"))
}

#[tokio::test]
async fn a_listing_carries_each_models_advertised_prices_exactly() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route("/inference/v1/models", Reply::json(PRICED_CATALOG));
    let p = keyed("zen", &fixture.url("/inference/openai/v1"));
    let mut caps = p.capabilities().clone();
    caps.listing = ModelListing::Separate {
        url: fixture.url("/inference/v1/models"),
    };
    let list = client()
        .list_models(&p.with_capabilities(caps))
        .await
        .expect("list");
    let free: Vec<&str> = list
        .models
        .iter()
        .filter(|m| m.is_verified_free())
        .map(|m| m.id.as_str())
        .collect();
    // The first record of a repeated ID wins, prices included.
    assert_eq!(free, ["free-1"]);
    let model = |id: &str| {
        list.models
            .iter()
            .find(|m| m.id == id)
            .expect("listed")
            .clone()
    };
    let paid = model("paid-1").pricing.expect("priced");
    assert_eq!(paid.input, price("0.6"));
    assert_eq!(paid.output, price("2.2"));
    assert_eq!(paid.cache, vec![("cache_read".to_owned(), price("0.1"))]);
    let partly = model("partly-1").pricing.expect("priced");
    assert_eq!(partly.input, Price::Missing, "missing is not zero");
    assert_eq!(partly.output, price("0"));
    assert!(!partly.is_free());
    assert_eq!(model("unpriced-1").pricing, None);
    assert!(!model("unpriced-1").is_verified_free());
    let tiny = model("tiny-1").pricing.expect("priced");
    assert_eq!(tiny.input, price("1e-330"), "no float rounds it to zero");
    assert!(!tiny.is_free());
    let free = model("free-1").pricing.expect("priced");
    assert_eq!(free.tiers.len(), 1);
    assert_eq!(free.tiers[0].0, "context_over_200k");
    let requests = fixture.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].method, "GET");
    assert_eq!(requests[0].path, "/inference/v1/models");
}

#[tokio::test]
async fn a_listing_without_prices_still_lists_every_id() {
    // The shape OpenCode's console code serves: IDs and bookkeeping, no prices.
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/models",
        Reply::json(
            r#"{"object":"list","data":[{"id":"big-pickle","object":"model","created":1,"owned_by":"opencode"},{"id":"gpt-5.4-mini","object":"model","created":1,"owned_by":"opencode"}]}"#,
        ),
    );
    let list = client()
        .list_models(&keyed("zen", &fixture.url("/v1")))
        .await
        .expect("list");
    assert_eq!(
        list.ids().collect::<Vec<_>>(),
        ["big-pickle", "gpt-5.4-mini"]
    );
    assert!(list.models.iter().all(|m| m.pricing.is_none()));
}

fn cf_record(name: &str) -> Value {
    json!({"id": format!("uuid-{name}"), "name": name, "source": 1, "description": "d",
           "task": {"id": "t1", "name": "Text Generation"},
           "properties": [{"property_id": "context_window", "value": "4096"}]})
}

fn cf_page(page: u64, names: &[&str], total_count: u64) -> Reply {
    let result: Vec<Value> = names.iter().map(|n| cf_record(n)).collect();
    Reply::json(json!({"success": true, "result": result,
        "result_info": {"page": page, "per_page": 100, "count": names.len(), "total_count": total_count}}).to_string())
}

/// A catalog search answer holding every record on its only page.
fn one_page(records: &Value) -> Reply {
    let count = records.as_array().map_or(0, Vec::len);
    Reply::json(
        json!({"success": true, "result": records,
            "result_info": {"page": 1, "per_page": 100, "count": count, "total_count": count}})
        .to_string(),
    )
}

fn cloudflare(fixture: &Fixture) -> yetibot_ai_providers::Provider {
    let p = keyed("cf", &fixture.url("/client/v4/accounts/abc/ai/v1"));
    let mut caps = p.capabilities().clone();
    caps.listing = ModelListing::CloudflareSearch {
        url: fixture.url("/search"),
    };
    p.with_capabilities(caps)
}

#[tokio::test]
async fn cloudflare_traverses_short_and_empty_pages_without_inventing_models() {
    let fixture = Fixture::start().await.expect("fixture");
    // total_count 350 => 4 pages, although far fewer records are visible.
    fixture.route("/search", cf_page(1, &["@cf/b", "@cf/a"], 350));
    fixture.route("/search", cf_page(2, &[], 350));
    fixture.route("/search", cf_page(3, &["@cf/c"], 350));
    fixture.route("/search", cf_page(4, &["@cf/a"], 350));
    let list = client()
        .list_models(&cloudflare(&fixture))
        .await
        .expect("list");
    assert_eq!(list.ids().collect::<Vec<_>>(), ["@cf/a", "@cf/b", "@cf/c"]);
    assert!(!list.truncated);
    let queries: Vec<String> = fixture
        .requests()
        .iter()
        .map(|r| r.query.clone().unwrap_or_default())
        .collect();
    assert_eq!(
        queries,
        [
            "page=1&per_page=100",
            "page=2&per_page=100",
            "page=3&per_page=100",
            "page=4&per_page=100"
        ]
    );
    assert_eq!(list.context_window("@cf/a"), Some(4096));
    let record = list.models[0].record.clone().expect("record");
    assert_eq!(record["task"], "Text Generation");
    assert_eq!(record["function-calling"], json!({"status": "unknown"}));
}

#[tokio::test]
async fn cloudflare_refuses_unstable_page_metadata() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route("/search", cf_page(1, &["@cf/a"], 200));
    fixture.route("/search", cf_page(2, &["@cf/b"], 300));
    let error = client()
        .list_models(&cloudflare(&fixture))
        .await
        .expect_err("unstable");
    assert_eq!(error.category(), Category::Malformed);
}

#[tokio::test]
async fn cloudflare_stops_after_twenty_pages() {
    let fixture = Fixture::start().await.expect("fixture");
    for page in 1..=20 {
        fixture.route("/search", cf_page(page, &["@cf/a"], 2500));
    }
    let list = client()
        .list_models(&cloudflare(&fixture))
        .await
        .expect("list");
    assert_eq!(fixture.requests().len(), 20);
    assert!(list.truncated);
}

#[tokio::test]
async fn cloudflare_records_are_projected_and_bounded() {
    let fixture = Fixture::start().await.expect("fixture");
    let records = json!([
        {"name": "@cf/no", "properties": [{"property_id": "function_calling", "value": "false"},
            {"property_id": "context_window", "value": "8192"},
            {"property_id": "price", "value": [{"unit": "per M input tokens", "price": 0.1, "currency": "USD"}]}]},
        {"name": "@cf/tools", "schema": {"input": {"properties": {"messages": {}, "tools": {}}}, "output": {"properties": {"response": {}}}},
         "secret_field_not_projected": "x"},
        {"name": "@cf/long", "description": format!("{}{}", "y".repeat(1995), crate::support::KEY)},
    ]);
    fixture.route("/search", one_page(&records));
    let list = client()
        .list_models(&cloudflare(&fixture))
        .await
        .expect("list");
    let record = |id: &str| {
        list.models
            .iter()
            .find(|m| m.id == id)
            .and_then(|m| m.record.clone())
            .expect(id)
    };
    assert_eq!(
        record("@cf/no")["function-calling"],
        json!({"supported": false})
    );
    assert_eq!(
        record("@cf/no")["properties"]["price"][0]["currency"],
        "USD"
    );
    assert_eq!(
        record("@cf/no")["limits"],
        json!({"context_window": "8192"})
    );
    assert!(
        record("@cf/tools").get("limits").is_none(),
        "no limits are invented"
    );
    assert_eq!(
        record("@cf/tools")["function-calling"],
        json!({"status": "advertised"})
    );
    assert_eq!(
        record("@cf/tools")["schema"]["input"],
        json!(["messages", "tools"])
    );
    assert!(
        record("@cf/tools")
            .get("secret_field_not_projected")
            .is_none()
    );
    let long = record("@cf/long");
    assert_eq!(long["metadata-truncated"], true);
    assert_eq!(
        long["description"].as_str().map(|s| s.chars().count()),
        Some(2000)
    );
    assert!(serde_json::to_vec(&long).expect("json").len() <= 8000);
}

/// Several fields of 2,000 characters each (and characters that JSON escapes to six bytes)
/// used to survive the cut, leaving records far over the 8,000-byte cap.
#[tokio::test]
async fn cloudflare_record_over_8000_bytes_is_cut_to_the_bound() {
    let fixture = Fixture::start().await.expect("fixture");
    let long = |c: char| c.to_string().repeat(2000);
    let records = json!([{
        "name": "@cf/wide",
        "id": long('u'),
        "source": long('\u{1}'),
        "created_at": long('c'),
        "task": {"id": long('t'), "name": long('n')},
        "description": long('d'),
        "tags": [long('g')],
    }]);
    fixture.route("/search", one_page(&records));
    let list = client()
        .list_models(&cloudflare(&fixture))
        .await
        .expect("list");
    let record = list.models[0].record.clone().expect("record");
    let size = serde_json::to_vec(&record).expect("json").len();
    assert!(size <= 8000, "{size} bytes");
    assert_eq!(record["metadata-truncated"], true);
    assert_eq!(record["id"], "@cf/wide");
}

/// Only the listing provider's own key used to be masked in its catalog records; every
/// configured credential must be.
#[tokio::test]
async fn cloudflare_records_redact_every_configured_credential() {
    let fixture = Fixture::start().await.expect("fixture");
    let other = "sk-other-provider-0123456789";
    let records = json!([{
        "name": "@cf/leaky",
        "description": format!("try {other} or {}", crate::support::KEY),
        "properties": [{"property_id": format!("note-{other}"), "value": other}],
    }]);
    fixture.route("/search", one_page(&records));
    let secrets = yetibot_redaction::Secrets::new([other]).expect("secrets");
    let list = client()
        .with_secrets(secrets)
        .list_models(&cloudflare(&fixture))
        .await
        .expect("list");
    let text = serde_json::to_string(&list.models[0].record).expect("json");
    assert!(!text.contains(other), "{text}");
    assert!(!text.contains(crate::support::KEY), "{text}");
    assert!(text.contains("[redacted]"), "{text}");
}

#[tokio::test]
async fn one_failing_provider_does_not_hide_the_others() {
    let good = Fixture::start().await.expect("fixture");
    let bad = Fixture::start().await.expect("fixture");
    good.route("/v1/models", Reply::json(r#"{"data":[{"id":"m"}]}"#));
    bad.route("/v1/models", Reply::status_json(500, "{}"));
    let set = ProviderSet::from_config(
        None,
        &[
            config("bad", &bad.url("/v1")),
            config("good", &good.url("/v1")),
        ],
    )
    .expect("config");
    let results = client().list_all(&set).await;
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].0, "bad");
    assert_eq!(
        results[0]
            .1
            .as_ref()
            .map_err(yetibot_ai_providers::Error::category)
            .err(),
        Some(Category::HttpStatus)
    );
    assert_eq!(results[1].1.as_ref().map(|l| l.models.len()).ok(), Some(1));
}

#[tokio::test]
async fn context_windows_come_from_the_listing_or_ollama_details() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/models",
        Reply::json(r#"{"data":[{"id":"served","max_model_len":16384}]}"#),
    );
    // llama3.2 is loaded with a runtime window; qwen3 is not, so /api/show answers for it.
    fixture.route(
        "/api/ps",
        Reply::json(r#"{"models":[{"name":"llama3.2:latest","model":"llama3.2:latest","context_length":4096}]}"#),
    );
    fixture.route(
        "/api/show",
        Reply::json(
            json!({
                "parameters": "temperature 0.7\nnum_ctx 8192",
                "model_info": {"llama.context_length": 131072, "general.architecture": "llama"}
            })
            .to_string(),
        ),
    );
    fixture.route(
        "/api/show",
        Reply::json(r#"{"model_info":{"qwen3.context_length":40960}}"#),
    );
    let p = keyed("local", &fixture.url("/v1"));
    let client = client();
    assert_eq!(
        client.context_window(&p, "served").await.expect("listing"),
        Some(16384)
    );
    assert_eq!(
        client.context_window(&p, "other").await.expect("listing"),
        None
    );
    assert_eq!(
        client
            .ollama_context_window(&p, "llama3.2")
            .await
            .expect("ps"),
        Some(4096),
        "a loaded model's runtime window wins"
    );
    assert_eq!(
        client
            .ollama_context_window(&p, "llama3.2:8b")
            .await
            .expect("show"),
        Some(8192),
        "another tag is not the loaded model"
    );
    assert_eq!(
        client
            .ollama_context_window(&p, "qwen3")
            .await
            .expect("show"),
        Some(40960)
    );
    let shows: Vec<Value> = fixture
        .requests()
        .iter()
        .filter(|r| r.path == "/api/show")
        .map(|r| serde_json::from_slice(&r.body).expect("json"))
        .collect();
    assert_eq!(
        shows,
        [json!({"model": "llama3.2:8b"}), json!({"model": "qwen3"})],
        "a loaded model needs no /api/show"
    );
    let ps = fixture
        .requests()
        .iter()
        .filter(|r| r.path == "/api/ps" && r.method == "GET")
        .count();
    assert_eq!(ps, 3, "/api/ps is asked first, every time");
}

/// Lists `records` from one catalog page and returns the projected models by ID.
async fn projected(records: &Value) -> Vec<yetibot_ai_providers::ModelInfo> {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route("/search", one_page(records));
    client()
        .list_models(&cloudflare(&fixture))
        .await
        .expect("list")
        .models
}

fn task(name: &str) -> Value {
    json!({"id": "task-uuid", "name": name})
}

#[tokio::test]
async fn cloudflare_entries_are_labelled_with_their_interface_and_category() {
    use yetibot_ai_providers::ModelInterface as I;
    let chat_schema = json!({"input": {"type": "object", "oneOf": [
        {"properties": {"prompt": {}}}, {"properties": {"messages": {}, "tools": {}}}]},
        "output": {"properties": {"response": {}}}});
    // The shapes of the official Clef record and of Clairic's request: filed under Text
    // Generation, but not chat models.
    let clef_schema = json!({"input": {"properties": {"model": {}, "state": {}, "questions": {}, "images": {}}},
        "output": {"properties": {"answers": {}}}});
    let clairic_schema = json!({"input": {"anyOf": [{"properties": {"input": {}, "fields": {}}}]}});
    let records = json!([
        {"name": "@cf/a/chat", "task": task("Text Generation"), "schema": chat_schema},
        {"name": "@cf/a/bare-chat", "task": task("Text Generation")},
        {"name": "@cf/b/decide", "task": task("Text Generation"), "schema": clef_schema},
        {"name": "@cf/b/extract", "task": task("Text Generation"), "schema": clairic_schema},
        {"name": "@cf/c/draw", "task": task("Text-to-Image")},
        {"name": "@cf/c/see", "task": task("Image-to-Text"), "schema": {"input": {"properties": {"question": {}, "image": {}}}}},
        {"name": "@cf/c/detect", "task": task("Object Detection")},
        {"name": "@cf/d/hear", "task": task("Automatic Speech Recognition")},
        {"name": "@cf/d/speak", "task": task("Text-to-Speech")},
        {"name": "@cf/d/turn", "task": task("Voice Activity Detection")},
        {"name": "@cf/e/embed", "task": task("Text Embeddings")},
        {"name": "@cf/f/translate", "task": task("Translation")},
        {"name": "@cf/f/none"},
    ]);
    let models = projected(&records).await;
    let label = |id: &str| {
        let model = models.iter().find(|m| m.id == id).expect(id);
        let record = model.record.clone().expect("record");
        let interface = model
            .interface
            .expect("a Cloudflare entry has an interface");
        assert_eq!(record["interface"], interface.label(), "{id}");
        (
            interface,
            record["category"].as_str().unwrap_or_default().to_owned(),
        )
    };
    let check = |id: &str, interface: I, category: &str| {
        assert_eq!(label(id), (interface, category.to_owned()), "{id}");
    };
    check("@cf/a/chat", I::Chat, "text-generation");
    check("@cf/a/bare-chat", I::Chat, "text-generation");
    check("@cf/b/decide", I::Decision, "text-generation");
    check("@cf/b/extract", I::Extraction, "text-generation");
    check("@cf/c/draw", I::Image, "text-to-image");
    check("@cf/c/see", I::Image, "image-to-text");
    check("@cf/c/detect", I::Image, "object-detection");
    check("@cf/d/hear", I::Audio, "automatic-speech-recognition");
    check("@cf/d/speak", I::Audio, "text-to-speech");
    check("@cf/d/turn", I::Audio, "voice-activity-detection");
    check("@cf/e/embed", I::Embedding, "text-embeddings");
    check("@cf/f/translate", I::Unknown, "translation");
    check("@cf/f/none", I::Unknown, "uncategorized");
    let chat = models.iter().find(|m| m.id == "@cf/a/chat").expect("chat");
    assert_eq!(
        chat.category,
        Some(yetibot_ai_providers::TaskCategory {
            id: "text-generation".into(),
            name: "Text Generation".into()
        })
    );
}

#[tokio::test]
async fn unusable_task_names_leave_the_model_uncategorized() {
    let records = json!([
        {"name": "@cf/blank", "task": task("   ")},
        {"name": "@cf/punct", "task": task("-- / --")},
        {"name": "@cf/long", "task": task(&"t".repeat(101))},
        {"name": "@cf/control", "task": task("Text\u{7}Generation")},
        {"name": "@cf/number", "task": {"name": 7}},
        {"name": "@cf/spaced", "task": task("  Text   Generation ")},
        {"name": "@cf/edge", "task": task(&"é".repeat(100))},
    ]);
    let models = projected(&records).await;
    let category = |id: &str| {
        models
            .iter()
            .find(|m| m.id == id)
            .expect(id)
            .category
            .clone()
    };
    for id in [
        "@cf/blank",
        "@cf/punct",
        "@cf/long",
        "@cf/control",
        "@cf/number",
    ] {
        assert_eq!(category(id), None, "{id}");
        let model = models.iter().find(|m| m.id == id).expect(id);
        assert_eq!(
            model.interface,
            Some(yetibot_ai_providers::ModelInterface::Unknown),
            "{id}"
        );
    }
    let spaced = category("@cf/spaced").expect("usable");
    assert_eq!(spaced.id, "text-generation");
    assert_eq!(spaced.name, "Text   Generation");
    assert_eq!(
        category("@cf/edge").map(|c| c.id),
        Some("é".repeat(100)),
        "letters of any script make the ID"
    );
}

/// The label is read from the whole record: a decision model whose oversized record has to
/// give up its schema summary is still not labelled chat.
#[tokio::test]
async fn the_interface_survives_a_record_cut_to_its_bound() {
    let long = |c: char| c.to_string().repeat(2000);
    let records = json!([{
        "name": "@cf/cloudflare/big-decider",
        "task": {"id": long('t'), "name": "Text Generation"},
        "description": long('\u{1}'),
        "source": long('s'),
        "created_at": long('c'),
        "tags": [long('g')],
        "schema": {"input": {"properties": {"state": {}, "questions": {}}}},
    }]);
    let models = projected(&records).await;
    let record = models[0].record.clone().expect("record");
    assert_eq!(record["metadata-truncated"], true);
    assert!(
        record.get("schema").is_none(),
        "the schema gave way: {record}"
    );
    assert_eq!(record["interface"], "decision");
    assert_eq!(record["category"], "text-generation");
    assert_eq!(
        models[0].interface,
        Some(yetibot_ai_providers::ModelInterface::Decision)
    );
    assert!(serde_json::to_vec(&record).expect("json").len() <= 8000);
}

#[tokio::test]
async fn standard_listings_have_no_interface_or_category() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route("/v1/models", Reply::json(r#"{"data":[{"id":"m"}]}"#));
    let list = client()
        .list_models(&keyed("p", &fixture.url("/v1")))
        .await
        .expect("list");
    assert_eq!(list.models[0].interface, None);
    assert_eq!(list.models[0].category, None);
}

#[test]
fn a_set_takes_an_adjusted_provider_in_the_same_place() {
    let set = ProviderSet::from_config(
        Some("b"),
        &[
            config("a", "http://127.0.0.1:9/v1"),
            config("b", "http://127.0.0.1:9/v1"),
        ],
    )
    .expect("config");
    let b = set.get("b").expect("b").clone();
    let mut caps = b.capabilities().clone();
    caps.listing = ModelListing::CloudflareSearch {
        url: "http://127.0.0.1:9/search".into(),
    };
    let set = set.with_provider(b.with_capabilities(caps.clone()));
    let names: Vec<&str> = set.providers().iter().map(|p| p.name()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(set.default_provider().map(|p| p.name()), Some("b"));
    assert_eq!(set.get("b").map(|p| p.capabilities()), Some(&caps));
    // A provider the set does not hold is not added.
    let stranger = crate::support::provider(config("c", "http://127.0.0.1:9/v1"));
    assert_eq!(set.with_provider(stranger).providers().len(), 2);
}
