//! The `zen` command and Zen runtime defaults with OpenCode Zen's own capabilities: a
//! separate catalog endpoint and credit billing, which the configuration derives only from
//! an `https://opencode.ai/inference/...` URL. A loopback fixture cannot serve that URL, so
//! the provider here is configured at the fixture and given exactly the capabilities the
//! real URL derives, with only the catalog URL's origin moved to the fixture. The binary's
//! tests (`yetibot-bin`, `tests/it/zen.rs`) cover the rest through `yetibot run`.

use std::sync::Arc;

use provider_fixture::{Fixture, Recorded, Reply};
use serde_json::{Value, json};
use yetibot_ai_commands::AiServices;
use yetibot_ai_providers::{
    Billing, Client, ClientOptions, ModelListing, ProviderConfig, ProviderSet,
};
use yetibot_command::{Caller, Interpreter, Reply as BotReply, Settings, builtins};
use yetibot_history::MemoryAliases;
use yetibot_json_util::SplitMix64;
use yetibot_mcp_host::{Host, HostOptions, ServerSet};
use yetibot_tool_policy::ToolPolicy;

/// The key in the provider's slot: it may appear only in Zen's Authorization header.
const CANARY: &str = "canary-zen-5b1d-secret";
const ZEN_URL: &str = "https://opencode.ai/inference/openai/v1";
const CATALOG: &str = "/inference/v1/models";
const CHAT: &str = "/inference/openai/v1/chat/completions";

/// Zen's catalog with models.dev `cost` objects: two free models, a paid one, one priced
/// only in part and one without prices.
fn catalog(free_1_paid: bool) -> Reply {
    let free_1 = if free_1_paid {
        json!({"input": 0.5, "output": 2})
    } else {
        json!({"input": 0, "output": 0, "cache_read": 0, "cache_write": 0})
    };
    Reply::json(
        json!({"object": "list", "data": [
            {"id": "paid-1", "cost": {"input": 0.6, "output": 2.2, "cache_read": 0.1}},
            {"id": "free-1", "cost": free_1},
            {"id": "partly-1", "cost": {"output": 0}},
            {"id": "unpriced-1", "object": "model", "owned_by": "opencode"},
            {"id": "a-free", "cost": {"input": 0, "output": 0}},
        ]})
        .to_string(),
    )
}

/// A Chat Completions answer with Zen's top-level `cost` (dollars, as a decimal string).
fn answer(text: &str, cost: &str) -> Reply {
    Reply::json(
        json!({
            "choices": [{"message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 3},
            "cost": cost,
        })
        .to_string(),
    )
}

/// An interpreter with the AI commands over one provider named `zen` at the fixture, with
/// the real Zen URL's capabilities.
fn bot(fixture: &Fixture, model: Option<&str>) -> Interpreter {
    let at_fixture = ProviderConfig {
        name: Some("zen".into()),
        url: Some(fixture.url("/inference/openai/v1")),
        key: Some(CANARY.into()),
        model: model.map(str::to_owned),
        ..ProviderConfig::default()
    };
    let real = ProviderConfig {
        url: Some(ZEN_URL.into()),
        ..at_fixture.clone()
    };
    let real = ProviderSet::from_config(None, &[real]).expect("valid");
    let mut capabilities = real.get("zen").expect("zen").capabilities().clone();
    assert_eq!(
        capabilities.listing,
        ModelListing::Separate {
            url: "https://opencode.ai/inference/v1/models".into()
        }
    );
    assert_eq!(capabilities.billing, Billing::ZenCredits);
    capabilities.listing = ModelListing::Separate {
        url: fixture.url(CATALOG),
    };
    let mut providers = ProviderSet::from_config(None, &[at_fixture]).expect("valid");
    let zen = providers.get("zen").expect("zen").clone();
    assert!(
        providers
            .replace(zen.with_capabilities(capabilities))
            .is_some()
    );
    let secrets = yetibot_redaction::Secrets::new([CANARY]).expect("secrets");
    let client = Client::new(ClientOptions::default())
        .expect("client")
        .with_secrets(secrets.clone());
    let host = Host::new(
        ServerSet::default(),
        HostOptions::new().with_secrets(secrets),
    )
    .expect("host");
    let services = AiServices::new(
        client,
        providers,
        host,
        ToolPolicy::default(),
        Arc::new(tokio::time::Instant::now),
    );
    let mut registry = builtins();
    for spec in yetibot_ai_commands::commands(Arc::new(services)) {
        registry.add(spec);
    }
    Interpreter::new(
        registry,
        Arc::new(MemoryAliases::new()),
        Box::new(SplitMix64::new(1)),
        Settings {
            admins: vec!["U1".to_owned()],
            ..Settings::default()
        },
    )
}

fn admin() -> Caller {
    Caller {
        adapter: yetibot_conversation::AdapterKind::Cli,
        connection: "cli".into(),
        room: "cli".into(),
        user_id: "U1".into(),
        user_name: "op".into(),
        trusted: true,
        message_id: None,
        platform: None,
    }
}

async fn run(bot: &Interpreter, line: &str) -> BotReply {
    let reply = bot.run(&admin(), line).await;
    let shown = format!("{reply:?}");
    assert!(!shown.contains(CANARY), "{shown}");
    reply
}

fn text(reply: &BotReply) -> String {
    reply.messages().join("\n")
}

fn cost(reply: &BotReply) -> String {
    reply
        .meta
        .as_ref()
        .and_then(|m| m.cost.clone())
        .unwrap_or_default()
}

fn model(reply: &BotReply) -> String {
    reply
        .meta
        .as_ref()
        .and_then(|m| m.details["model"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn body(request: &Recorded) -> Value {
    serde_json::from_slice(&request.body).expect("a JSON body")
}

fn paths(fixture: &Fixture) -> Vec<(String, String)> {
    fixture
        .requests()
        .iter()
        .map(|r| (r.method.clone(), r.path.clone()))
        .collect()
}

fn get_catalog() -> (String, String) {
    ("GET".into(), CATALOG.into())
}

fn post_chat() -> (String, String) {
    ("POST".into(), CHAT.into())
}

#[tokio::test]
async fn zen_models_reads_the_separate_catalog_with_its_prices() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(CATALOG, catalog(false));
    let bot = bot(&fixture, None);
    let reply = run(&bot, "zen models").await;
    assert_eq!(reply.error, None, "{}", text(&reply));
    assert_eq!(text(&reply), "a-free\nfree-1\npaid-1\npartly-1\nunpriced-1");
    let data = reply.data.expect("records").to_json();
    let records: Value = serde_json::from_str(&data).expect("JSON");
    assert_eq!(records[1]["id"], "free-1");
    assert_eq!(records[1]["verified_free"], true);
    assert_eq!(records[1]["pricing"]["cache_write"], "0");
    assert_eq!(records[2]["pricing"]["input"], "0.6");
    assert_eq!(
        records[3]["pricing"]["input"],
        Value::Null,
        "missing, not zero"
    );
    assert_eq!(records[3]["verified_free"], false);
    assert!(records[4].get("pricing").is_none());
    assert_eq!(
        paths(&fixture),
        [get_catalog()],
        "never the chat base's /models"
    );
    // The inline key authenticates the catalog request.
    let auth = fixture.requests()[0]
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    assert_eq!(auth, Some(format!("Bearer {CANARY}")));
}

#[tokio::test]
async fn an_automatic_choice_is_the_first_free_model_and_is_labelled_verified_free() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(CATALOG, catalog(false));
    fixture.route(CHAT, answer("Hello.", "0"));
    let bot = bot(&fixture, None);
    let reply = run(&bot, "zen Say hello.").await;
    assert_eq!(reply.error, None, "{}", text(&reply));
    assert_eq!(text(&reply), "Hello.");
    assert_eq!(model(&reply), "a-free");
    assert_eq!(cost(&reply), "API est. $0.0000");
    assert_eq!(paths(&fixture), [get_catalog(), post_chat()]);
    let sent = body(&fixture.requests()[1]);
    assert_eq!(sent["model"], "a-free");
    assert_eq!(sent["max_completion_tokens"], 2048);
    assert!(sent.get("tools").is_none());
    let messages = sent["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(messages[1]["content"], "Say hello.");
}

#[tokio::test]
async fn an_explicit_model_reads_no_catalog_and_shows_the_charged_cost() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(CATALOG, catalog(false));
    fixture.route(CHAT, answer("Compared.", "0.00380000"));
    let bot = bot(&fixture, None);
    let reply = run(&bot, "zen --model paid-1 Compare these approaches.").await;
    assert_eq!(reply.error, None, "{}", text(&reply));
    assert_eq!(model(&reply), "paid-1");
    assert_eq!(cost(&reply), "API $0.0038");
    assert_eq!(paths(&fixture), [post_chat()]);
}

#[tokio::test]
async fn a_configured_model_is_used_as_is_and_a_zero_charge_is_not_called_free() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(CATALOG, catalog(false));
    fixture.route(CHAT, answer("Hi.", "0"));
    let bot = bot(&fixture, Some("paid-1"));
    let reply = run(&bot, "zen hi").await;
    assert_eq!(reply.error, None, "{}", text(&reply));
    assert_eq!(model(&reply), "paid-1");
    // Zen reports zero for requests it did not charge to credits; without a fresh price
    // check that is no proof of a free model.
    assert_eq!(cost(&reply), "cost n/a");
    assert_eq!(paths(&fixture), [post_chat()]);
}

#[tokio::test]
async fn a_zen_runtime_default_must_be_free_when_set_and_is_preferred_while_free() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(CATALOG, catalog(false));
    fixture.route(CHAT, answer("Hi.", "0"));
    let bot = bot(&fixture, None);
    let refused = run(&bot, "ai default zen paid-1").await;
    assert!(
        refused
            .error
            .as_deref()
            .is_some_and(|e| e.contains("not verified free now: the catalog prices it above zero")),
        "{refused:?}"
    );
    let refused = run(&bot, "ai default zen partly-1").await;
    assert!(
        refused
            .error
            .as_deref()
            .is_some_and(|e| e.contains("does not state its input and output prices")),
        "{refused:?}"
    );
    assert_eq!(
        text(&run(&bot, "ai default").await),
        "AI default: zen (no default model) (configured)"
    );
    let set = run(&bot, "ai default zen free-1").await;
    assert_eq!(set.error, None, "{set:?}");
    assert!(text(&set).starts_with("AI default set to zen free-1"));
    // `zen` prefers the free runtime choice to the first free model (`a-free`).
    let reply = run(&bot, "zen hi").await;
    assert_eq!(model(&reply), "free-1");
    assert_eq!(cost(&reply), "API est. $0.0000");
    // An `ai` prompt routed by the runtime default checks the price again.
    let reply = run(&bot, "ai --no-tools hi").await;
    assert_eq!(reply.error, None, "{reply:?}");
    assert_eq!(model(&reply), "free-1");
    assert_eq!(cost(&reply), "API est. $0.0000");
    assert_eq!(
        paths(&fixture),
        [
            get_catalog(),
            get_catalog(),
            get_catalog(),
            get_catalog(),
            post_chat(),
            get_catalog(),
            post_chat()
        ]
    );
}

#[tokio::test]
async fn an_expired_offer_is_not_kept_and_never_becomes_a_paid_request() {
    let fixture = Fixture::start().await.expect("fixture");
    // Free when the default is set; paid from then on.
    fixture.route(CATALOG, catalog(false));
    fixture.route(CATALOG, catalog(true));
    fixture.route(CHAT, answer("Hi.", "0"));
    let bot = bot(&fixture, None);
    assert_eq!(run(&bot, "ai default zen free-1").await.error, None);
    let reply = run(&bot, "ai --no-tools hi").await;
    let error = reply.error.clone().unwrap_or_default();
    assert!(
        error.contains("zen model free-1 is not verified free now"),
        "{error}"
    );
    assert!(error.contains("nothing was sent"), "{error}");
    assert_eq!(fixture.count(CHAT), 0, "no paid fallback");
    // `zen` moves on to the first model that is free now.
    let reply = run(&bot, "zen hi").await;
    assert_eq!(model(&reply), "a-free");
    assert_eq!(cost(&reply), "API est. $0.0000");
    assert_eq!(fixture.count(CHAT), 1);
}

#[tokio::test]
async fn ai_with_provider_zen_and_no_model_uses_the_verified_free_choice() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(CATALOG, catalog(false));
    fixture.route(CHAT, answer("Hello.", "0"));
    let first = bot(&fixture, None);
    let reply = run(&first, "ai --provider zen --no-tools Say hello.").await;
    assert_eq!(reply.error, None, "{}", text(&reply));
    assert_eq!(model(&reply), "a-free");
    assert_eq!(cost(&reply), "API est. $0.0000");
    assert_eq!(paths(&fixture), [get_catalog(), post_chat()]);
    // None free: fail closed, nothing sent.
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        CATALOG,
        Reply::json(
            json!({"data": [{"id": "paid-1", "cost": {"input": 1, "output": 2}}]}).to_string(),
        ),
    );
    let second = bot(&fixture, None);
    let reply = run(&second, "ai --provider zen --no-tools Say hello.").await;
    assert!(reply.error.is_some());
    assert_eq!(paths(&fixture), [get_catalog()]);
}
