//! Chat Completions against the fixture: request shape, JSON replies and streams.

use provider_fixture::{End, Fixture, Reply};
use serde_json::{Value, json};
use yetibot_ai_providers::{
    Amount, Category, Ending, Message, ProviderConfig, ToolCall, ToolDefinition, ToolId, Turn,
    TurnEvent, TurnRequest, Usage,
};

use crate::support::{assert_safe, client, config, keyed, provider};

const PATH: &str = "/v1/chat/completions";

fn tool_request(stream: bool) -> TurnRequest {
    TurnRequest {
        model: Some("m1".into()),
        messages: vec![
            Message::System("be brief".into()),
            Message::User("weather?".into()),
            Message::Assistant {
                text: String::new(),
                calls: vec![ToolCall {
                    id: "c0".into(),
                    function_name: "lookup".into(),
                    arguments: "{}".into(),
                }],
                opaque: vec![json!({"ignored": true}).into()],
            },
            Message::ToolResult {
                call_id: "c0".into(),
                content: "sunny".into(),
                is_error: false,
            },
        ],
        tools: vec![ToolDefinition::new(
            ToolId::new("kb", "lookup"),
            "Looks things up",
            json!({"type": "object", "properties": {"q": {"type": "string"}}}),
        )],
        tools_enabled: true,
        max_output_tokens: Some(99),
        stream,
    }
}

fn sent(fixture: &Fixture) -> Value {
    let requests = fixture.requests();
    serde_json::from_slice(&requests.last().expect("a request").body).expect("json body")
}

async fn run(
    p: &yetibot_ai_providers::Provider,
    request: &TurnRequest,
) -> (yetibot_ai_providers::Result<Turn>, Vec<TurnEvent>) {
    let mut events = Vec::new();
    let result = client().turn(p, request, &mut |e| events.push(e)).await;
    (result, events)
}

#[tokio::test]
async fn a_json_reply_yields_text_tool_calls_and_usage() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        PATH,
        Reply::json(
            json!({
                "choices": [{
                    "message": {
                        "content": "checking",
                        "tool_calls": [{"id": "c1", "type": "function",
                            "function": {"name": "lookup", "arguments": "{\"q\":\"x\"}"}}]
                    },
                    "finish_reason": "tool_calls"
                }],
                "usage": {"prompt_tokens": 10, "completion_tokens": 3, "cost": 0.25}
            })
            .to_string(),
        ),
    );
    let p = keyed("p", &fixture.url("/v1"));
    let (turn, events) = run(&p, &tool_request(false)).await;
    let turn = turn.expect("turn");
    assert_eq!(turn.text, "checking");
    assert_eq!(
        turn.calls,
        [ToolCall {
            id: "c1".into(),
            function_name: "lookup".into(),
            arguments: "{\"q\":\"x\"}".into()
        }]
    );
    assert_eq!(turn.finish_reason.as_deref(), Some("tool_calls"));
    let usage = Usage {
        input_tokens: Some(10),
        output_tokens: Some(3),
        cost_usd: Amount::parse("0.25"),
        ..Usage::default()
    };
    assert_eq!(turn.usage, Some(usage));
    assert_eq!(events, [TurnEvent::Usage(usage), TurnEvent::Completed]);

    let body = sent(&fixture);
    assert_eq!(body["model"], "m1");
    assert_eq!(body["tool_choice"], "auto");
    assert_eq!(body["max_completion_tokens"], 99);
    assert_eq!(body["tools"][0]["function"]["name"], "kb__lookup");
    assert_eq!(body["tools"][0]["function"]["parameters"]["type"], "object");
    let roles: Vec<&str> = body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["role"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool"]);
    assert_eq!(body["messages"][2]["tool_calls"][0]["id"], "c0");
    assert_eq!(body["messages"][3]["tool_call_id"], "c0");
    assert!(body.get("stream").is_none());
    let auth = fixture.requests()[0]
        .headers
        .get("authorization")
        .cloned()
        .expect("auth");
    assert_eq!(auth, format!("Bearer {}", crate::support::KEY).as_str());
}

#[tokio::test]
async fn tool_choice_omit_and_disabled_tools() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        PATH,
        Reply::json(r#"{"choices":[{"message":{"content":"ok"},"finish_reason":"stop"}]}"#),
    );
    let omit = provider(ProviderConfig {
        tool_choice: Some("omit".into()),
        ..config("o", &fixture.url("/v1"))
    });
    run(&omit, &tool_request(false)).await.0.expect("turn");
    let body = sent(&fixture);
    assert!(body.get("tool_choice").is_none());
    assert!(body.get("tools").is_some());

    request_without_tools_offers_none(&fixture, &omit).await;
    let standard = keyed("s", &fixture.url("/v1"));
    request_without_tools_offers_none(&fixture, &standard).await;
}

/// A turn with tools disabled used to carry the definitions anyway (with `tool_choice:
/// "none"` in standard mode, and with no choice at all under `:tool-choice "omit"`, where the
/// model could call them).
#[tokio::test]
async fn tools_disabled_turn_offers_no_tool_definitions() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        PATH,
        Reply::json(r#"{"choices":[{"message":{"content":"ok"},"finish_reason":"stop"}]}"#),
    );
    for mode in ["omit", "standard"] {
        let p = provider(ProviderConfig {
            tool_choice: Some(mode.into()),
            ..config(mode, &fixture.url("/v1"))
        });
        request_without_tools_offers_none(&fixture, &p).await;
    }
}

async fn request_without_tools_offers_none(
    fixture: &Fixture,
    provider: &yetibot_ai_providers::Provider,
) {
    let mut request = tool_request(false);
    request.tools_enabled = false;
    run(provider, &request).await.0.expect("turn");
    let body = sent(fixture);
    assert!(body.get("tools").is_none(), "{body}");
    assert!(body.get("tool_choice").is_none(), "{body}");
}

/// Counts a provider leaves out are "not reported", never zero.
#[tokio::test]
async fn missing_token_counts_stay_not_reported() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        PATH,
        Reply::json(
            r#"{"choices":[{"message":{"content":"ok"},"finish_reason":"stop"}],"usage":{"completion_tokens":7}}"#,
        ),
    );
    let turn = run(&keyed("u", &fixture.url("/v1")), &tool_request(false))
        .await
        .0
        .expect("turn");
    assert_eq!(
        turn.usage,
        Some(Usage {
            output_tokens: Some(7),
            ..Usage::default()
        })
    );
}

#[tokio::test]
async fn zen_reports_its_charged_dollars_beside_usage() {
    // OpenCode Zen's gateway answers a credited request with the upstream usage and the
    // charged dollars as a decimal string at the top of the reply.
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        PATH,
        Reply::json(
            json!({
                "id": "chatcmpl-9",
                "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                    "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 18, "completion_tokens": 96, "total_tokens": 114,
                    "prompt_tokens_details": {"cached_tokens": 0}},
                "cost": "0.00380000"
            })
            .to_string(),
        ),
    );
    let turn = run(&keyed("z", &fixture.url("/v1")), &tool_request(false))
        .await
        .0
        .expect("turn");
    assert_eq!(
        turn.usage,
        Some(Usage {
            input_tokens: Some(18),
            cached_input_tokens: Some(0),
            output_tokens: Some(96),
            cost_usd: Amount::parse("0.0038"),
            ..Usage::default()
        })
    );
}

#[tokio::test]
async fn a_streamed_cost_chunk_joins_the_streamed_usage() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(PATH, Reply::sse_events([
        chunk(json!({"content": "ok"}), Some("stop")),
        json!({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2}}).to_string(),
        json!({"id": "", "object": "chat.completion.chunk", "choices": [], "cost": "0.00001200"}).to_string(),
        "[DONE]".to_owned(),
    ]));
    let (turn, events) = run(&keyed("z", &fixture.url("/v1")), &tool_request(true)).await;
    let usage = Usage {
        input_tokens: Some(5),
        output_tokens: Some(2),
        cost_usd: Amount::parse("0.000012"),
        ..Usage::default()
    };
    assert_eq!(turn.expect("turn").usage, Some(usage));
    assert_eq!(
        events,
        [
            TurnEvent::TextDelta("ok".into()),
            TurnEvent::Usage(usage),
            TurnEvent::Completed
        ]
    );
}

#[tokio::test]
async fn zen_charged_dollars_sent_after_done_join_the_usage() {
    // Zen's gateway closes a streamed answer with `[DONE]` and only then sends the chunk
    // with the charged dollars.
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        PATH,
        Reply::sse_events([
            chunk(json!({"content": "ok"}), Some("stop")),
            json!({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2}})
                .to_string(),
            "[DONE]".to_owned(),
            json!({"choices": [], "cost": "0.00001200"}).to_string(),
        ]),
    );
    let (turn, events) = run(&keyed("z", &fixture.url("/v1")), &tool_request(true)).await;
    let usage = Usage {
        input_tokens: Some(5),
        output_tokens: Some(2),
        cost_usd: Amount::parse("0.000012"),
        ..Usage::default()
    };
    let turn = turn.expect("turn");
    assert_eq!(turn.text, "ok");
    assert_eq!(turn.usage, Some(usage));
    assert_eq!(
        events,
        [
            TurnEvent::TextDelta("ok".into()),
            TurnEvent::Usage(usage),
            TurnEvent::Completed
        ]
    );
}

/// A body left open after `[DONE]` costs at most the short grace, never the read deadline.
#[tokio::test(start_paused = true)]
async fn a_stream_left_open_after_done_still_completes() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        PATH,
        Reply::sse_events([
            chunk(json!({"content": "ok"}), Some("stop")),
            "[DONE]".to_owned(),
        ])
        .ending(End::Stall),
    );
    let started = tokio::time::Instant::now();
    let turn = run(&keyed("z", &fixture.url("/v1")), &tool_request(true))
        .await
        .0
        .expect("turn");
    assert_eq!(turn.text, "ok");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

#[tokio::test]
async fn only_accounting_is_read_after_done() {
    // Text, garbage and a disagreeing second cost after `[DONE]` change nothing but the
    // cost, which two disagreeing reports make unreported.
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(PATH, Reply::sse_events([
        chunk(json!({"content": "ok"}), Some("stop")),
        json!({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2}, "cost": "0.1"}).to_string(),
        "[DONE]".to_owned(),
        chunk(json!({"content": " more"}), None),
        "{not json".to_owned(),
        json!({"choices": [], "cost": "0.2"}).to_string(),
    ]));
    let turn = run(&keyed("z", &fixture.url("/v1")), &tool_request(true))
        .await
        .0
        .expect("turn");
    assert_eq!(turn.text, "ok");
    let usage = turn.usage.expect("usage");
    assert_eq!(
        (usage.input_tokens, usage.output_tokens),
        (Some(5), Some(2))
    );
    assert_eq!(usage.cost_usd, None);
}

#[tokio::test]
async fn tool_calling_false_refuses_tools_before_sending() {
    let fixture = Fixture::start().await.expect("fixture");
    let p = provider(ProviderConfig {
        tool_calling: Some(false),
        ..config("n", &fixture.url("/v1"))
    });
    let error = run(&p, &tool_request(false)).await.0.expect_err("refused");
    assert_eq!(error.category(), Category::Setup);
    assert_eq!(fixture.requests().len(), 0);
}

#[tokio::test]
async fn text_that_looks_like_a_tool_call_stays_text() {
    let fixture = Fixture::start().await.expect("fixture");
    let fake = r#"{"name":"lookup","arguments":{"q":"x"}} <tool_call>lookup</tool_call>"#;
    fixture.route(
        PATH,
        Reply::json(
            json!({"choices":[{"message":{"content": fake},"finish_reason":"stop"}]}).to_string(),
        ),
    );
    let turn = run(&keyed("p", &fixture.url("/v1")), &tool_request(false))
        .await
        .0
        .expect("turn");
    assert!(turn.calls.is_empty());
    assert_eq!(turn.text, fake);
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}).to_string()
}

#[tokio::test]
async fn a_stream_assembles_text_and_tool_calls_at_the_end() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(PATH, Reply::sse_events([
        chunk(json!({"role": "assistant", "content": "Hel"}), None),
        chunk(json!({"content": "lo"}), None),
        chunk(json!({"tool_calls": [{"index": 0, "id": "c9", "function": {"name": "look", "arguments": "{\"q\""}}]}), None),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"name": "up", "arguments": ":1}"}}]}), None),
        chunk(json!({}), Some("tool_calls")),
        json!({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2}}).to_string(),
        "[DONE]".to_owned(),
    ]));
    let (turn, events) = run(&keyed("p", &fixture.url("/v1")), &tool_request(true)).await;
    let turn = turn.expect("turn");
    assert_eq!(turn.text, "Hello");
    assert_eq!(
        turn.calls,
        [ToolCall {
            id: "c9".into(),
            function_name: "lookup".into(),
            arguments: "{\"q\":1}".into()
        }]
    );
    assert_eq!(turn.usage.and_then(|u| u.input_tokens), Some(5));
    assert_eq!(
        events[..2],
        [
            TurnEvent::TextDelta("Hel".into()),
            TurnEvent::TextDelta("lo".into())
        ]
    );
    assert_eq!(events.last(), Some(&TurnEvent::Completed));
    assert_eq!(sent(&fixture)["stream"], true);
}

#[tokio::test]
async fn a_cut_off_stream_never_yields_its_partial_calls() {
    for end in [End::Close, End::Abort] {
        let fixture = Fixture::start().await.expect("fixture");
        fixture.route(PATH, Reply::sse_events([
            chunk(json!({"tool_calls": [{"index": 0, "id": "c9", "function": {"name": "lookup", "arguments": "{"}}]}), None),
        ]).ending(end));
        let (result, events) = run(&keyed("p", &fixture.url("/v1")), &tool_request(true)).await;
        let error = result.expect_err("cut off");
        // A stream that ends cleanly too soon is malformed; one whose connection breaks is a
        // lost connection. Either way the request may have run.
        let expected = match end {
            End::Abort => Category::ConnectionLost,
            _ => Category::Malformed,
        };
        assert_eq!(error.category(), expected, "{end:?}");
        assert!(error.is_unknown_outcome());
        assert_safe(&error);
        assert!(!events.contains(&TurnEvent::Completed));
        assert_eq!(fixture.requests().len(), 1);
    }
}

#[tokio::test]
async fn no_model_is_a_setup_error_before_sending() {
    let fixture = Fixture::start().await.expect("fixture");
    let p = provider(ProviderConfig {
        model: None,
        ..config("p", &fixture.url("/v1"))
    });
    let error = run(&p, &TurnRequest::prompt("hi"))
        .await
        .0
        .expect_err("no model");
    assert_eq!(error.category(), Category::Setup);
    assert_eq!(fixture.requests().len(), 0);
}

#[tokio::test]
async fn the_gateway_header_is_sent_only_when_configured() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        PATH,
        Reply::json(r#"{"choices":[{"message":{"content":"ok"},"finish_reason":"stop"}]}"#),
    );
    let with = provider(ProviderConfig {
        gateway_id: Some("my-gw".into()),
        ..config("cf", &fixture.url("/v1"))
    });
    run(&with, &TurnRequest::prompt("hi"))
        .await
        .0
        .expect("turn");
    run(&keyed("p", &fixture.url("/v1")), &TurnRequest::prompt("hi"))
        .await
        .0
        .expect("turn");
    let requests = fixture.requests();
    assert_eq!(
        requests[0]
            .headers
            .get("cf-aig-gateway-id")
            .expect("header"),
        "my-gw"
    );
    assert!(requests[1].headers.get("cf-aig-gateway-id").is_none());
}

#[tokio::test]
async fn the_doctor_probe_counts_only_real_tool_calls() {
    let fixture = Fixture::start().await.expect("fixture");
    let call = json!({"choices": [{"message": {"content": null, "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": yetibot_ai_providers::PROBE_TOOL, "arguments": "{\"status\":\"ok\"}"}}]}, "finish_reason": "tool_calls"}]});
    let prose = json!({"choices": [{"message": {"content": format!("{{\"name\":\"{}\"}}", yetibot_ai_providers::PROBE_TOOL)}, "finish_reason": "stop"}]});
    fixture.route(PATH, Reply::json(call.to_string()));
    fixture.route(PATH, Reply::json(prose.to_string()));
    let p = keyed("p", &fixture.url("/v1"));
    assert!(client().probe(&p, None).await.expect("probe").tool_call);
    assert!(!client().probe(&p, None).await.expect("probe").tool_call);
    let body = sent(&fixture);
    assert_eq!(
        body["tools"][0]["function"]["name"],
        yetibot_ai_providers::PROBE_TOOL
    );
    assert_eq!(body["tool_choice"], "auto");
    // The probe is sent the way prompts are: streamed, unless the provider cannot take it.
    assert_eq!(body["stream"], true);
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(PATH, Reply::json(call.to_string()));
    let unstreamed = provider(ProviderConfig {
        stream: Some(false),
        ..config("q", &fixture.url("/v1"))
    });
    assert!(
        client()
            .probe(&unstreamed, None)
            .await
            .expect("probe")
            .tool_call
    );
    assert!(sent(&fixture).get("stream").is_none());
}

#[tokio::test]
async fn finished_streams_return_their_connection_to_the_pool() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        PATH,
        Reply::sse_events([
            chunk(json!({"content": "a"}), Some("stop")),
            "[DONE]".to_owned(),
        ]),
    );
    let p = keyed("p", &fixture.url("/v1"));
    let client = client();
    let mut request = TurnRequest::prompt("hi");
    request.stream = true;
    for _ in 0..5 {
        client.turn(&p, &request, &mut |_| {}).await.expect("turn");
    }
    assert_eq!(fixture.requests().len(), 5);
    assert_eq!(fixture.connections(), 1);
}

#[tokio::test]
async fn the_output_token_field_follows_the_flag() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        PATH,
        Reply::json(r#"{"choices":[{"message":{"content":"ok"},"finish_reason":"stop"}]}"#),
    );
    let p = keyed("workers", &fixture.url("/v1"));
    let mut caps = p.capabilities().clone();
    caps.output_tokens = yetibot_ai_providers::OutputTokenParam::MaxTokens;
    let p = p.with_capabilities(caps);
    let mut request = TurnRequest::prompt("hi");
    request.max_output_tokens = Some(2048);
    run(&p, &request).await.0.expect("turn");
    let body = sent(&fixture);
    assert_eq!(body["max_tokens"], 2048);
    assert!(body.get("max_completion_tokens").is_none());
    // An operator picks the older field for a server that knows only it.
    let older = provider(ProviderConfig {
        output_token_field: Some("max_tokens".into()),
        ..config("older", &fixture.url("/v1"))
    });
    run(&older, &request).await.0.expect("turn");
    let body = sent(&fixture);
    assert_eq!(body["max_tokens"], 2048);
    assert!(body.get("max_completion_tokens").is_none());
}

#[tokio::test]
async fn a_turn_cut_off_at_its_output_limit_says_so_and_keeps_no_calls() {
    // As one JSON reply...
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        PATH,
        Reply::json(
            json!({"choices": [{"index": 0, "finish_reason": "length", "message": {
                "role": "assistant", "content": "The answer is forty",
                "tool_calls": [{"id": "c1", "type": "function",
                                "function": {"name": "lookup", "arguments": "{\"q\":"}}]}}]})
            .to_string(),
        ),
    );
    let (turn, _) = run(&keyed("p", &fixture.url("/v1")), &tool_request(false)).await;
    let turn = turn.expect("a cut-off answer is still an answer");
    assert_eq!(turn.text, "The answer is forty");
    assert_eq!(turn.ending(), Ending::Length);
    assert!(turn.calls.is_empty(), "a cut-off call never runs");
    // ...and as a stream, whatever the filter.
    for (reason, ending) in [
        ("length", Ending::Length),
        ("content_filter", Ending::ContentFilter),
    ] {
        let fixture = Fixture::start().await.expect("fixture");
        fixture.route(PATH, Reply::sse_events([
            chunk(json!({"content": "Partial"}), None),
            chunk(json!({"tool_calls": [{"index": 0, "id": "c9", "function": {"name": "lookup", "arguments": "{"}}]}), None),
            chunk(json!({}), Some(reason)),
            "[DONE]".to_owned(),
        ]));
        let (turn, _) = run(&keyed("p", &fixture.url("/v1")), &tool_request(true)).await;
        let turn = turn.expect("turn");
        assert_eq!((turn.text.as_str(), turn.ending()), ("Partial", ending));
        assert!(turn.calls.is_empty());
        assert_eq!(fixture.requests().len(), 1, "never resent");
    }
}
