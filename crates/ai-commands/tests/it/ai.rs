//! The AI commands below the binary, where a test controls what the binary fixes: the
//! discovery cache and its clock (routing by catalogs), admins (the runtime default), the
//! xAI key's Grok provider and a provider's billing capability (cost labels).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use provider_fixture::{Fixture, Reply, script};
use serde_json::{Value, json};
use tokio::time::Instant;
use yetibot_ai_commands::{AiServices, Clock, xai_provider};
use yetibot_ai_providers::{Billing, Client, ClientOptions, ProviderConfig, ProviderSet};
use yetibot_command::{
    Caller, Interpreter, Platform, PlatformError, Progress, Reply as BotReply, Settings,
    ThreadError, ThreadMessage, ThreadSource, builtins,
};
use yetibot_conversation::AdapterKind;
use yetibot_discovery_cache::{Bounds, DiscoveryCache, Observation, ProviderListing};
use yetibot_history::MemoryAliases;
use yetibot_json_util::SplitMix64;
use yetibot_mcp_host::{Host, HostOptions, ServerSet};
use yetibot_redaction::Secret;
use yetibot_tool_policy::{KnownNames, PolicyConfig, ToolPolicy};

/// A clock the test moves by hand.
#[derive(Clone)]
struct Hand(Arc<Mutex<Instant>>);

impl Hand {
    fn new() -> Self {
        Self(Arc::new(Mutex::new(Instant::now())))
    }
    fn now(&self) -> Instant {
        *self.0.lock().expect("clock")
    }
    fn advance(&self, by: Duration) {
        *self.0.lock().expect("clock") += by;
    }
    fn clock(&self) -> Clock {
        let hand = self.clone();
        Arc::new(move || hand.now())
    }
}

pub(crate) fn provider(name: &str, url: String, model: Option<&str>) -> ProviderConfig {
    ProviderConfig {
        name: Some(name.into()),
        url: Some(url),
        model: model.map(str::to_owned),
        ..ProviderConfig::default()
    }
}

/// No toolsets, and the bot's native tools registered as the binary registers them.
pub(crate) fn policy() -> ToolPolicy {
    let natives = yetibot_ai_commands::native_tools();
    let config = PolicyConfig {
        toolsets: &[],
        default_toolset: None,
        max_tool_calls: None,
    };
    let known = KnownNames {
        servers: Vec::new(),
        providers: Vec::new(),
        with_github_api_token: Vec::new(),
        native_tools: &natives,
    };
    ToolPolicy::from_config(&config, &known).expect("an empty policy is valid")
}

pub(crate) fn services(providers: ProviderSet, clock: Clock) -> AiServices {
    AiServices::new(
        Client::new(ClientOptions::default()).expect("client"),
        providers,
        Host::new(ServerSet::default(), HostOptions::new()).expect("host"),
        policy(),
        clock,
    )
}

pub(crate) fn bot(services: AiServices, admins: &[&str]) -> Interpreter {
    let mut registry = builtins();
    for spec in yetibot_ai_commands::commands(Arc::new(services)) {
        registry.add(spec);
    }
    Interpreter::new(
        registry,
        Arc::new(MemoryAliases::new()),
        Box::new(SplitMix64::new(7)),
        Settings {
            admins: admins.iter().map(|a| (*a).to_owned()).collect(),
            ..Settings::default()
        },
    )
}

fn caller(user: &str) -> Caller {
    Caller {
        adapter: AdapterKind::Slack,
        connection: "slack".into(),
        room: "#general".into(),
        user_id: user.into(),
        user_name: user.into(),
        trusted: true,
        message_id: None,
        platform: None,
    }
}

fn shown(reply: &BotReply) -> String {
    reply
        .error
        .clone()
        .unwrap_or_else(|| reply.messages().join("\n"))
}

fn posts(fixture: &Fixture) -> Vec<String> {
    fixture
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST")
        .map(|r| r.path)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_alone_routes_only_to_a_unique_owner_of_fresh_complete_catalogs() {
    let fixture = Fixture::start().await.expect("fixture");
    for name in ["a", "b"] {
        fixture.route(
            &format!("/{name}/v1/chat/completions"),
            Reply::json(script::chat_completion(&format!("from {name}"))),
        );
    }
    let providers = ProviderSet::from_config(
        Some("a"),
        &[
            provider("a", fixture.url("/a/v1"), Some("m-a")),
            provider("b", fixture.url("/b/v1"), None),
        ],
    )
    .expect("providers");
    let hand = Hand::new();
    let cache = DiscoveryCache::new(Bounds::default());
    let listings: Vec<ProviderListing> = ["a", "b"]
        .iter()
        .map(|n| ProviderListing {
            name: (*n).to_owned(),
            fingerprint: (*n).to_owned(),
        })
        .collect();
    let generation = cache.configure(&listings).expect("configure");
    let bot = bot(
        services(providers, hand.clock()).with_discovery(cache.clone()),
        &[],
    );
    let me = caller("U1");

    // Cold start: nothing observed yet, so nothing is sent.
    let reply = bot.run(&me, "ai --no-tools --model m-b hi").await;
    assert!(shown(&reply).contains("--provider"), "{}", shown(&reply));
    assert!(posts(&fixture).is_empty());

    let ids = |list: &[&str]| Observation::Complete(list.iter().map(|s| (*s).to_owned()).collect());
    assert!(cache.record(generation, "a", ids(&["m-a", "shared"]), hand.now()));
    assert!(cache.record(generation, "b", ids(&["m-b", "shared"]), hand.now()));

    let reply = bot.run(&me, "ai --no-tools --model m-b hi").await;
    assert_eq!(shown(&reply), "from b");
    assert_eq!(posts(&fixture), ["/b/v1/chat/completions"]);

    let reply = bot.run(&me, "ai --no-tools --model shared hi").await;
    assert!(
        shown(&reply).contains("offered by a, b"),
        "a collision is an error: {}",
        shown(&reply)
    );
    let reply = bot.run(&me, "ai --no-tools --model nowhere hi").await;
    assert!(
        shown(&reply).contains("no provider lists"),
        "{}",
        shown(&reply)
    );

    // Five minutes later the catalogs are stale: no guess.
    hand.advance(Duration::from_secs(5 * 60 + 1));
    let reply = bot.run(&me, "ai --no-tools --model m-b hi").await;
    assert!(shown(&reply).contains("out of date"), "{}", shown(&reply));
    // An explicit provider never waits for catalogs.
    let reply = bot
        .run(&me, "ai --no-tools --provider b --model m-b hi")
        .await;
    assert_eq!(shown(&reply), "from b");
    assert_eq!(posts(&fixture).len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_an_admin_typing_it_directly_changes_the_shared_default() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/a/v1/chat/completions",
        Reply::json(script::chat_completion("answer")),
    );
    let providers =
        ProviderSet::from_config(None, &[provider("a", fixture.url("/a/v1"), Some("m-a"))])
            .expect("providers");
    let bot = bot(services(providers, Hand::new().clock()), &["ADMIN"]);
    let admin = caller("ADMIN");
    let user = caller("U2");
    assert_eq!(
        shown(&bot.run(&user, "ai default").await),
        "AI default: a m-a (configured)"
    );
    let refused = shown(&bot.run(&user, "ai default a m-x").await);
    assert!(refused.contains("only an admin"), "{refused}");
    // Not through an alias, nor a sub-expression, even for the admin.
    assert!(
        bot.run(&admin, r#"alias setit = "ai default a m-x""#)
            .await
            .error
            .is_none()
    );
    assert!(shown(&bot.run(&admin, "setit").await).contains("only an admin"));
    assert!(shown(&bot.run(&admin, "echo `ai default a m-x`").await).contains("only an admin"));
    assert!(shown(&bot.run(&admin, "ai default nope m").await).contains("no provider"));
    assert_eq!(
        shown(&bot.run(&admin, "ai default a m-x").await),
        "AI default set to a m-x"
    );
    // Everyone sees and uses it.
    assert!(shown(&bot.run(&user, "ai default").await).contains("a m-x (set at run time"));
    bot.run(&user, "ai --no-tools hi").await;
    let sent: Value = serde_json::from_slice(&fixture.requests()[0].body).expect("a JSON request");
    assert_eq!(sent["model"], "m-x");
    assert_eq!(
        shown(&bot.run(&admin, "ai default reset").await),
        "AI default reset to the configured default"
    );
    assert_eq!(
        shown(&bot.run(&user, "ai default").await),
        "AI default: a m-a (configured)"
    );
}

/// A Responses stream that asks for one native `help` call, then one that answers; each
/// reports xAI ticks.
fn xai_turns(fixture: &Fixture, path: &str) {
    let call = script::function_call_item("call_1", "yetibot__help", "{}");
    fixture.route(
        path,
        Reply::sse_events([
            script::item_done(&call),
            json!({"type": "response.completed", "response": {
                "status": "completed",
                "output": [serde_json::from_str::<Value>(&call).expect("item")],
                "usage": {"input_tokens": 100, "output_tokens": 10, "cost_in_usd_ticks": 38_000_000},
            }})
            .to_string(),
        ]),
    );
    fixture.route(
        path,
        Reply::sse_events([
            script::text_delta("Here you go."),
            json!({"type": "response.completed", "response": {
                "status": "completed",
                "output": [serde_json::from_str::<Value>(&script::message_item("Here you go.")).expect("item")],
                "usage": {"input_tokens": 150, "output_tokens": 5, "cost_in_usd_ticks": 10_000_000,
                          "server_side_tool_usage_details": {"web_search_calls": 1}},
            }})
            .to_string(),
        ]),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grok_falls_back_to_the_xai_keys_provider_with_native_search_and_ticks_are_summed() {
    let fixture = Fixture::start().await.expect("fixture");
    xai_turns(&fixture, "/x/v1/responses");
    let mut grok = xai_provider(&Secret::new("xai-test-key"), Some(&fixture.url("/x/v1")))
        .expect("the xAI provider");
    // xAI's billing, as the real base URL would derive it.
    let mut capabilities = grok.capabilities().clone();
    capabilities.billing = Billing::XaiTicks;
    grok = grok.with_capabilities(capabilities);
    // The configured set has no grok: `ai` keeps its own default.
    let providers = ProviderSet::from_config(
        None,
        &[provider("local", fixture.url("/local/v1"), Some("m"))],
    )
    .expect("providers");
    let bot = bot(
        services(providers, Hand::new().clock()).with_grok_fallback(grok),
        &[],
    );
    let watching = Arc::new(Test::default());
    let mut me = caller("U1");
    me.platform = Some(watching.clone());
    let reply = bot
        .run(&me, "grok --max-tool-calls 1 What changed today?")
        .await;
    // The platform saw the call go by: its ID, its outcome and the budget, nothing else.
    let seen = watching
        .shown
        .lock()
        .expect("progress")
        .clone()
        .expect("a progress snapshot");
    assert_eq!(seen.budget, Some((1, 1)), "one of one call used");
    assert_eq!(seen.steps.len(), 1);
    assert_eq!(seen.steps[0].name.as_deref(), Some("yetibot/help"));
    assert_eq!(shown(&reply), "Here you go.");
    let meta = reply.meta.as_ref().expect("answer metadata");
    assert_eq!(meta.details["provider"], "grok");
    assert_eq!(meta.details["model"], "grok-4.7");
    assert_eq!(meta.details["tool_calls"], 1);
    // 48,000,000 ticks over both turns: $0.0048, reported by the provider.
    assert_eq!(meta.cost.as_deref(), Some("API $0.0048"));
    assert_eq!(meta.details["usage"]["input_tokens"], 250);
    // The first turn reported no search count, so the total is unknown, not 1.
    assert_eq!(meta.details["usage"]["web_search_calls"], Value::Null);
    let requests = fixture.requests();
    assert_eq!(requests.len(), 2);
    for (turn, request) in requests.iter().enumerate() {
        assert_eq!(request.path, "/x/v1/responses");
        let sent: Value = serde_json::from_slice(&request.body).expect("JSON");
        let types: Vec<&str> = sent["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["type"].as_str())
            .collect();
        // The provider's own search goes with the function tools; the final turn, after
        // the budget (one call here) is spent, has every tool definition removed.
        if turn == 0 {
            assert!(
                types.contains(&"web_search") && types.contains(&"x_search"),
                "{types:?}"
            );
            assert!(types.contains(&"function"), "{types:?}");
        } else {
            assert!(sent.get("tools").is_none(), "{sent}");
        }
        assert_eq!(sent["model"], "grok-4.7");
    }
    // A budget with --no-tools is a contradiction, refused before any request.
    let refused = shown(
        &bot.run(&caller("U1"), "grok --max-tool-calls 1 --no-tools hi")
            .await,
    );
    assert!(refused.contains("--no-tools"), "{refused}");
    assert_eq!(fixture.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_without_reported_cost_is_labelled_not_available() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/a/v1/chat/completions",
        Reply::json(script::chat_completion("ok")),
    );
    let providers =
        ProviderSet::from_config(None, &[provider("a", fixture.url("/a/v1"), Some("m"))])
            .expect("providers");
    let bot = bot(services(providers, Hand::new().clock()), &[]);
    let reply = bot.run(&caller("U1"), "ai --no-tools hi").await;
    let meta = reply.meta.as_ref().expect("metadata");
    assert_eq!(meta.cost.as_deref(), Some("cost n/a"));
    assert_eq!(meta.details["tool_calls"], 0);
    // Any later stage clears the metadata: only a final answer is captioned.
    let reply = bot.run(&caller("U1"), "ai --no-tools hi | echo").await;
    assert!(reply.meta.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_cut_off_at_its_output_limit_says_so_and_its_meta_says_why() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/a/v1/chat/completions",
        Reply::json(script::chat_completion("A complete answer.")),
    );
    fixture.route(
        "/a/v1/chat/completions",
        Reply::json(
            json!({"choices": [{"message": {"role": "assistant", "content": "The answer is forty"},
                                "finish_reason": "length"}]})
            .to_string(),
        ),
    );
    let providers =
        ProviderSet::from_config(None, &[provider("a", fixture.url("/a/v1"), Some("m"))])
            .expect("providers");
    let bot = bot(services(providers, Hand::new().clock()), &[]);
    let whole = bot.run(&caller("U1"), "ai --no-tools hi").await;
    assert_eq!(shown(&whole), "A complete answer.");
    // Every turn of a prompt is capped (the provider's default of 4,096 output tokens) and
    // streamed, with the usage asked for at the end of the stream.
    let sent: Value = serde_json::from_slice(&fixture.requests()[0].body).expect("JSON");
    assert_eq!(sent["max_completion_tokens"], 4096);
    assert_eq!(sent["stream"], true);
    assert_eq!(sent["stream_options"]["include_usage"], true);
    assert_eq!(whole.meta.as_ref().expect("meta").details["finish"], "stop");
    let cut = bot.run(&caller("U1"), "ai --no-tools hi").await;
    assert_eq!(
        shown(&cut),
        "The answer is forty… (cut off: the model reached its output limit)"
    );
    assert_eq!(cut.meta.as_ref().expect("meta").details["finish"], "length");
    assert_eq!(
        fixture.requests().len(),
        2,
        "a cut-off answer is never asked again"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_tool_loop_is_framed_like_every_command_error_and_keeps_its_trace() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/a/v1/chat/completions",
        Reply::json(
            json!({"choices": [{"message": {"role": "assistant", "content": "",
                "tool_calls": [{"id": "c1", "type": "function",
                                "function": {"name": "yetibot__help", "arguments": "{}"}}]},
                "finish_reason": "tool_calls"}]})
            .to_string(),
        ),
    );
    fixture.route(
        "/a/v1/chat/completions",
        Reply::status_json(500, r#"{"error": {"message": "overloaded"}}"#),
    );
    let providers =
        ProviderSet::from_config(None, &[provider("a", fixture.url("/a/v1"), Some("m"))])
            .expect("providers");
    let bot = bot(services(providers, Hand::new().clock()), &[]);
    let reply = bot.run(&caller("U1"), "ai What can you do?").await;
    let error = reply.error.clone().expect("the loop failed");
    assert!(
        error.starts_with("💥 Error in `ai What can you do?`: ") && error.ends_with(" 💥"),
        "{error}"
    );
    // The trace of the call that was made is the reply's data.
    let data = reply.data.expect("the failure trace").to_json();
    assert!(data.contains("yetibot/help"), "{data}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_answer_is_assembled_and_a_provider_that_cannot_stream_is_not_asked_to() {
    let chunk = |delta: Value, finish: Option<&str>| {
        json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}).to_string()
    };
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/a/v1/chat/completions",
        Reply::sse_events([
            chunk(json!({"role": "assistant", "content": "Streamed "}), None),
            chunk(json!({"content": "answer."}), None),
            chunk(json!({}), Some("stop")),
            json!({"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3}})
                .to_string(),
            "[DONE]".to_owned(),
        ]),
    );
    fixture.route(
        "/b/v1/chat/completions",
        Reply::json(script::chat_completion("Whole answer.")),
    );
    let no_stream = ProviderConfig {
        stream: Some(false),
        ..provider("b", fixture.url("/b/v1"), Some("m"))
    };
    let providers = ProviderSet::from_config(
        None,
        &[provider("a", fixture.url("/a/v1"), Some("m")), no_stream],
    )
    .expect("providers");
    let bot = bot(services(providers, Hand::new().clock()), &[]);
    let streamed = bot
        .run(&caller("U1"), "ai --provider a --no-tools hi")
        .await;
    assert_eq!(shown(&streamed), "Streamed answer.");
    let meta = streamed.meta.as_ref().expect("meta");
    assert_eq!(meta.details["usage"]["input_tokens"], 7);
    assert_eq!(meta.details["finish"], "stop");
    let whole = bot
        .run(&caller("U1"), "ai --provider b --no-tools hi")
        .await;
    assert_eq!(shown(&whole), "Whole answer.");
    let sent: Value = serde_json::from_slice(&fixture.requests()[1].body).expect("JSON");
    assert!(sent.get("stream").is_none(), "{sent}");
}

/// A thread whose history is fixed, or fails; it counts how often it is read.
struct Scripted(
    Result<Vec<ThreadMessage>, ThreadError>,
    std::sync::atomic::AtomicUsize,
);

impl Scripted {
    fn new(history: Result<Vec<ThreadMessage>, ThreadError>) -> Self {
        Self(history, std::sync::atomic::AtomicUsize::new(0))
    }

    fn reads(&self) -> usize {
        self.1.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl ThreadSource for Scripted {
    fn key(&self) -> String {
        "T1".to_owned()
    }

    fn history(&self) -> BoxFuture<'_, Result<Vec<ThreadMessage>, ThreadError>> {
        self.1.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let result = self.0.clone();
        Box::pin(async move { result })
    }
}

/// A chat platform for one request: the thread it was sent in, and every progress snapshot
/// it was shown.
#[derive(Default)]
struct Test {
    thread: Option<Arc<Scripted>>,
    shown: Mutex<Option<Progress>>,
}

impl Test {
    fn in_thread(thread: Arc<Scripted>) -> Arc<dyn Platform> {
        Arc::new(Self {
            thread: Some(thread),
            ..Self::default()
        })
    }
}

impl Platform for Test {
    fn react<'a>(
        &'a self,
        _emoji: &'a str,
        _message_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async { Err(PlatformError::Refused("no reactions here")) })
    }

    fn thread(&self) -> Option<&dyn ThreadSource> {
        self.thread
            .as_deref()
            .map(|thread| thread as &dyn ThreadSource)
    }

    fn report(&self, progress: &Progress) {
        *self.shown.lock().expect("progress") = Some(progress.clone());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_thread_the_prompt_carries_the_thread_and_an_unreadable_thread_sends_nothing() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/a/v1/chat/completions",
        Reply::json(script::chat_completion("Reduce folds.")),
    );
    let providers =
        ProviderSet::from_config(None, &[provider("a", fixture.url("/a/v1"), Some("m"))])
            .expect("providers");
    let bot = bot(services(providers, Hand::new().clock()), &[]);
    let mut in_thread = caller("U1");
    in_thread.platform = Some(Test::in_thread(Arc::new(Scripted::new(Ok(vec![
        ThreadMessage {
            author: "ann".into(),
            text: "What is map?".into(),
            from_bot: false,
        },
        ThreadMessage {
            author: "yetibot".into(),
            text: "It transforms each item.".into(),
            from_bot: true,
        },
    ])))));
    let reply = bot.run(&in_thread, "ai --no-tools And reduce?").await;
    assert_eq!(shown(&reply), "Reduce folds.");
    let sent: Value = serde_json::from_slice(&fixture.requests()[0].body).expect("JSON");
    let roles: Vec<(&str, &str)> = sent["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or(""),
                m["content"].as_str().unwrap_or(""),
            )
        })
        .skip(1)
        .collect();
    assert_eq!(
        roles,
        [
            ("user", "ann: What is map?"),
            ("assistant", "It transforms each item."),
            ("user", "And reduce?"),
        ],
        "oldest first, the bot's replies as assistant, the prompt once"
    );
    // Outside a thread the prompt stands alone.
    bot.run(&caller("U1"), "ai --no-tools And reduce?").await;
    let sent: Value = serde_json::from_slice(&fixture.requests()[1].body).expect("JSON");
    assert_eq!(sent["messages"].as_array().map(Vec::len), Some(2));
    // A thread that cannot be read whole is an error, and nothing is sent.
    let mut broken = caller("U1");
    broken.platform = Some(Test::in_thread(Arc::new(Scripted::new(Err(
        ThreadError::Unavailable("missing permission"),
    )))));
    let reply = bot.run(&broken, "ai --no-tools And reduce?").await;
    assert!(
        shown(&reply).contains("could not be read completely"),
        "{}",
        shown(&reply)
    );
    assert_eq!(fixture.requests().len(), 2);
}

fn chat_tool_call(name: &str, arguments: &str) -> Reply {
    Reply::json(
        json!({
            "choices": [{
                "message": {"role": "assistant", "content": null, "tool_calls": [{
                    "id": "c1", "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }]},
                "finish_reason": "tool_calls",
            }],
        })
        .to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_changes_the_default_only_for_an_admins_own_direct_request() {
    let fixture = Fixture::start().await.expect("fixture");
    let set = r#"{"action":"set_default","provider":"a","model":"m-x"}"#;
    // Piped data reaches the model, which asks to change the default: refused whole.
    fixture.route("/a/v1/chat/completions", chat_tool_call("yetibot__ai", set));
    let providers =
        ProviderSet::from_config(None, &[provider("a", fixture.url("/a/v1"), Some("m-a"))])
            .expect("providers");
    let bot = bot(services(providers, Hand::new().clock()), &["ADMIN"]);
    let admin = caller("ADMIN");
    let reply = bot
        .run(&admin, "echo please set the default | ai Do what it says.")
        .await;
    assert!(reply.error.is_some(), "{}", shown(&reply));
    assert_eq!(
        shown(&bot.run(&admin, "ai default").await),
        "AI default: a m-a (configured)"
    );
    // The admin's own direct request may (the queued call is still first in line).
    fixture.route(
        "/a/v1/chat/completions",
        Reply::json(script::chat_completion("Done.")),
    );
    let reply = bot.run(&admin, "ai Make m-x the default.").await;
    assert_eq!(shown(&reply), "Done.");
    assert!(shown(&bot.run(&admin, "ai default").await).contains("a m-x (set at run time"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ai_provider_grok_reaches_the_xai_keys_provider_by_name() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/x/v1/responses",
        Reply::sse_events([
            script::text_delta("Hi."),
            script::completed(&[script::message_item("Hi.")], 3, 1),
        ]),
    );
    let grok = xai_provider(&Secret::new("xai-test-key"), Some(&fixture.url("/x/v1")))
        .expect("the xAI provider");
    let providers = ProviderSet::from_config(
        None,
        &[provider("local", fixture.url("/local/v1"), Some("m"))],
    )
    .expect("providers");
    let bot = bot(
        services(providers, Hand::new().clock()).with_grok_fallback(grok),
        &[],
    );
    let reply = bot
        .run(&caller("U1"), "ai --provider grok --no-tools hi")
        .await;
    assert_eq!(shown(&reply), "Hi.");
    assert_eq!(
        fixture
            .requests()
            .iter()
            .map(|r| r.path.as_str())
            .collect::<Vec<_>>(),
        ["/x/v1/responses"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_store_resends_the_threads_tool_calls_and_reads_the_platform_once() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/a/v1/chat/completions",
        chat_tool_call("yetibot__help", r#"{"limit":1}"#),
    );
    fixture.route(
        "/a/v1/chat/completions",
        Reply::json(script::chat_completion("First answer.")),
    );
    fixture.route(
        "/a/v1/chat/completions",
        Reply::json(script::chat_completion("Second answer.")),
    );
    let config = ProviderConfig {
        thread_store: Some(true),
        context_length: Some(32_768),
        ..provider("a", fixture.url("/a/v1"), Some("m"))
    };
    let providers = ProviderSet::from_config(None, &[config]).expect("providers");
    let bot = bot(services(providers, Hand::new().clock()), &[]);
    let source = Arc::new(Scripted::new(Ok(vec![ThreadMessage {
        author: "ann".into(),
        text: "Start here.".into(),
        from_bot: false,
    }])));
    let mut me = caller("U1");
    me.platform = Some(Test::in_thread(source.clone()));
    assert_eq!(
        shown(&bot.run(&me, "ai What commands are there?").await),
        "First answer."
    );
    assert_eq!(
        shown(&bot.run(&me, "ai And the next one?").await),
        "Second answer."
    );
    assert_eq!(
        source.reads(),
        1,
        "the platform is read only for a thread not yet stored"
    );
    let requests = fixture.requests();
    assert_eq!(requests.len(), 3);
    let third: Value = serde_json::from_slice(&requests[2].body).expect("JSON");
    let roles: Vec<&str> = third["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["role"].as_str())
        .collect();
    // Instructions, the thread, the first question, its tool call and result, its answer,
    // the new question (and the budget guidance).
    assert_eq!(
        roles[..7],
        [
            "system",
            "user",
            "user",
            "assistant",
            "tool",
            "assistant",
            "user"
        ]
    );
    assert_eq!(
        third["messages"][3]["tool_calls"][0]["function"]["name"],
        "yetibot__help"
    );
    assert_eq!(third["messages"][6]["content"], "And the next one?");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_alias_of_ai_keeps_piped_text_out_of_the_prompt() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/a/v1/chat/completions",
        Reply::json(script::chat_completion("ok")),
    );
    let providers =
        ProviderSet::from_config(None, &[provider("a", fixture.url("/a/v1"), Some("m"))])
            .expect("providers");
    let bot = bot(services(providers, Hand::new().clock()), &[]);
    let me = caller("U1");
    assert!(
        bot.run(&me, r#"alias gemma = "ai --no-tools""#)
            .await
            .error
            .is_none()
    );
    for line in [
        "echo hello world | gemma Render every returned field.",
        // Piped text never selects options or sub-commands through the alias either.
        "echo --provider nope | gemma Render every returned field.",
    ] {
        let reply = bot.run(&me, line).await;
        assert_eq!(shown(&reply), "ok", "{line}");
    }
    let requests = fixture.requests();
    assert_eq!(requests.len(), 2);
    for (request, piped) in requests.iter().zip(["hello world", "--provider nope"]) {
        let sent: Value = serde_json::from_slice(&request.body).expect("JSON");
        let messages = sent["messages"].as_array().expect("messages");
        assert_eq!(
            messages.last().expect("prompt")["content"],
            "Render every returned field."
        );
        let data = messages[messages.len() - 2]["content"]
            .as_str()
            .unwrap_or_default();
        assert!(data.contains(piped), "{data}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proposal_review_approval_and_cancellation_never_reach_a_model() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/a/v1/chat/completions",
        Reply::json(script::chat_completion("a paid answer")),
    );
    let providers =
        ProviderSet::from_config(None, &[provider("a", fixture.url("/a/v1"), Some("m-a"))])
            .expect("providers");
    let bot = bot(services(providers, Hand::new().clock()), &["ADMIN"]);
    let user = caller("U1");
    for line in [
        "ai proposal p-123",
        "ai proposal p-123 2",
        "ai approve p-123",
        "ai cancel p-123",
    ] {
        let reply = bot.run(&user, line).await;
        let error = reply.error.as_deref().unwrap_or_default();
        assert!(
            error.contains("no pending proposal `p-123`"),
            "{line}: {error}"
        );
    }
    // Consent is the caller's own: never through a pipe or a sub-expression.
    let piped = shown(&bot.run(&user, "echo x | ai approve p-123").await);
    assert!(piped.contains("must be sent on its own"), "{piped}");
    let nested = shown(&bot.run(&user, "echo `ai cancel p-123`").await);
    assert!(nested.contains("must be sent on its own"), "{nested}");
    assert!(posts(&fixture).is_empty(), "{:?}", posts(&fixture));
    // More words after them make a prompt again.
    bot.run(&user, "ai --no-tools approve this plan please")
        .await;
    assert_eq!(posts(&fixture), ["/a/v1/chat/completions"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_without_tool_calling_refuses_tool_enabled_prompts_before_sending() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/a/v1/chat/completions",
        Reply::json(script::chat_completion("plain answer")),
    );
    let providers = ProviderSet::from_config(
        None,
        &[ProviderConfig {
            tool_calling: Some(false),
            ..provider("a", fixture.url("/a/v1"), Some("m-a"))
        }],
    )
    .expect("providers");
    let bot = bot(services(providers, Hand::new().clock()), &[]);
    let user = caller("U1");
    let refused = shown(&bot.run(&user, "ai What is new?").await);
    assert!(refused.contains("use --no-tools"), "{refused}");
    assert!(posts(&fixture).is_empty());
    assert_eq!(
        shown(&bot.run(&user, "ai --no-tools What is new?").await),
        "plain answer"
    );
}
