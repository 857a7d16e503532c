//! Responses streaming against the fixture: typed events, completion-only tool batches,
//! opaque replay, failures and bounds.

use std::time::Duration;

use provider_fixture::{End, Fixture, Reply};
use serde_json::{Value, json};
use yetibot_ai_providers::{
    Category, Client, ClientOptions, Message, ProviderConfig, ToolCall, ToolDefinition, ToolId,
    TurnEvent, TurnRequest, Usage,
};

use crate::support::{KEY, assert_safe, client, client_with_read_timeout, config, provider};

const PATH: &str = "/v1/responses";

fn grok(url: &str) -> yetibot_ai_providers::Provider {
    provider(ProviderConfig {
        api: Some("responses".into()),
        key: Some(KEY.into()),
        native_tools: Some(vec!["web_search".into(), "x_search".into()]),
        max_turns: Some(4),
        ..config("g", url)
    })
}

fn reasoning() -> Value {
    json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "opaque+state/=="})
}

fn function_call() -> Value {
    json!({"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "lookup", "arguments": "{\"q\":\"x\"}", "status": "completed"})
}

fn message_item() -> Value {
    json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hi there"}]})
}

fn search(status: &str) -> Value {
    json!({"type": "web_search_call", "id": "ws_1", "status": status})
}

fn completed() -> Value {
    json!({"type": "response.completed", "response": {
        "status": "completed",
        "output": [search("completed"), reasoning(), message_item(), function_call()],
        "usage": {
            "input_tokens": 12,
            "input_tokens_details": {"cached_tokens": 8},
            "output_tokens": 4,
            "output_tokens_details": {"reasoning_tokens": 2},
            "total_tokens": 16,
            "num_server_side_tools_used": 1,
            "cost_in_usd_ticks": 37_756_000,
            "server_side_tool_usage_details": {"web_search_calls": 1, "x_search_calls": 0}
        }
    }})
}

fn full_stream() -> Vec<String> {
    [
        json!({"type": "response.created", "response": {"status": "in_progress"}}),
        json!({"type": "response.output_item.added", "item": search("in_progress")}),
        json!({"type": "response.output_item.done", "item": search("completed")}),
        json!({"type": "response.output_item.done", "item": reasoning()}),
        json!({"type": "response.output_text.delta", "delta": "Hi "}),
        json!({"type": "response.output_text.delta", "delta": "there"}),
        json!({"type": "response.output_item.done", "item": message_item()}),
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": "{\"q\""}),
        json!({"type": "response.function_call_arguments.done", "item_id": "fc_1", "arguments": "{\"q\":\"x\"}"}),
        json!({"type": "response.output_item.done", "item": function_call()}),
        completed(),
    ]
    .iter()
    .map(Value::to_string)
    .collect()
}

fn request() -> TurnRequest {
    TurnRequest {
        model: None,
        messages: vec![
            Message::System("sys".into()),
            Message::User("q".into()),
            Message::Assistant {
                text: "ignored when opaque is present".into(),
                calls: vec![],
                opaque: vec![reasoning().into(), function_call().into()],
            },
            Message::ToolResult {
                call_id: "call_1".into(),
                content: "42".into(),
                is_error: false,
            },
        ],
        tools: vec![ToolDefinition::new(
            ToolId::new("kb", "lookup"),
            "d",
            json!({"type": "object"}),
        )],
        tools_enabled: true,
        max_output_tokens: Some(500),
        stream: false,
    }
}

async fn run(
    client: &Client,
    p: &yetibot_ai_providers::Provider,
) -> (
    yetibot_ai_providers::Result<yetibot_ai_providers::Turn>,
    Vec<TurnEvent>,
) {
    let mut events = Vec::new();
    let result = client.turn(p, &request(), &mut |e| events.push(e)).await;
    (result, events)
}

#[tokio::test]
async fn a_stream_emits_typed_events_and_one_completed_batch() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(PATH, Reply::sse_events(full_stream()));
    let (turn, events) = run(&client(), &grok(&fixture.url("/v1"))).await;
    let turn = turn.expect("turn");
    assert_eq!(turn.text, "Hi there");
    assert_eq!(
        turn.calls,
        [ToolCall {
            id: "call_1".into(),
            function_name: "lookup".into(),
            arguments: "{\"q\":\"x\"}".into()
        }]
    );
    assert_eq!(
        turn.opaque[1].as_value(),
        &reasoning(),
        "encrypted reasoning is kept unchanged"
    );
    assert_eq!(turn.opaque.len(), 4);
    assert_eq!(
        turn.usage,
        Some(Usage {
            input_tokens: Some(12),
            cached_input_tokens: Some(8),
            output_tokens: Some(4),
            cost_usd_ticks: Some(37_756_000),
            web_search_calls: Some(1),
            x_search_calls: Some(0),
            ..Usage::default()
        })
    );
    let search = |status: &str| TurnEvent::NativeSearch {
        kind: "web_search_call".into(),
        status: status.into(),
    };
    assert_eq!(
        events,
        [
            search("in_progress"),
            search("completed"),
            TurnEvent::TextDelta("Hi ".into()),
            TurnEvent::TextDelta("there".into()),
            TurnEvent::MessageCompleted("Hi there".into()),
            TurnEvent::FunctionCallItem {
                name: "lookup".into()
            },
            TurnEvent::Usage(turn.usage.expect("usage")),
            TurnEvent::Completed,
        ]
    );
}

#[tokio::test]
async fn the_request_replays_everything_with_store_false() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(PATH, Reply::sse_events(full_stream()));
    run(&client(), &grok(&fixture.url("/v1")))
        .await
        .0
        .expect("turn");
    let body: Value = serde_json::from_slice(&fixture.requests()[0].body).expect("json");
    assert_eq!(body["stream"], true);
    assert_eq!(body["store"], false);
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["max_output_tokens"], 500);
    assert_eq!(body["max_turns"], 4);
    assert_eq!(body["tool_choice"], "auto");
    assert_eq!(
        body["input"],
        json!([
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "q"},
            reasoning(),
            function_call(),
            {"type": "function_call_output", "call_id": "call_1", "output": "42"},
        ])
    );
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["type"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(tools, ["function", "web_search", "x_search"]);
}

#[tokio::test]
async fn without_tools_no_native_tools_or_max_turns_are_sent() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(PATH, Reply::sse_events(full_stream()));
    let mut req = request();
    req.tools_enabled = false;
    client()
        .turn(&grok(&fixture.url("/v1")), &req, &mut |_| {})
        .await
        .expect("turn");
    let body: Value = serde_json::from_slice(&fixture.requests()[0].body).expect("json");
    assert!(body.get("tools").is_none() && body.get("max_turns").is_none());
}

#[tokio::test]
async fn partial_calls_never_execute_when_the_stream_breaks() {
    let mut partial = full_stream();
    partial.pop();
    for end in [End::Close, End::Abort] {
        let fixture = Fixture::start().await.expect("fixture");
        fixture.route(PATH, Reply::sse_events(partial.clone()).ending(end));
        let (result, events) = run(&client(), &grok(&fixture.url("/v1"))).await;
        let error = result.expect_err("no completion");
        let expected = match end {
            End::Abort => Category::ConnectionLost,
            _ => Category::Malformed,
        };
        assert_eq!(error.category(), expected, "{end:?}");
        assert!(error.is_unknown_outcome());
        assert!(!events.contains(&TurnEvent::Completed));
        assert_eq!(fixture.requests().len(), 1, "not resampled");
    }
}

#[tokio::test]
async fn failed_incomplete_and_error_events_fail_the_turn() {
    for kind in ["response.failed", "response.incomplete", "error"] {
        let fixture = Fixture::start().await.expect("fixture");
        let mut stream = full_stream();
        stream.truncate(3);
        stream.push(json!({"type": kind, "message": crate::support::BODY_MARKER}).to_string());
        fixture.route(PATH, Reply::sse_events(stream));
        let error = run(&client(), &grok(&fixture.url("/v1")))
            .await
            .0
            .expect_err(kind);
        assert_eq!(error.category(), Category::ProviderFailed, "{kind}");
        assert_safe(&error);
        assert_eq!(fixture.requests().len(), 1);
    }
}

#[tokio::test]
async fn events_and_turns_are_bounded() {
    let fixture = Fixture::start().await.expect("fixture");
    let huge = json!({"type": "response.output_text.delta", "delta": "é".repeat(3000)}).to_string();
    fixture.route(PATH, Reply::sse_events([huge.clone()]));
    let small_events = Client::new(ClientOptions {
        max_event_chars: 2048,
        ..ClientOptions::default()
    })
    .expect("client");
    let error = run(&small_events, &grok(&fixture.url("/v1")))
        .await
        .0
        .expect_err("event bound");
    assert_eq!(error.category(), Category::TooLarge);
    assert!(error.to_string().contains("event"));

    // Many small events add up to the per-turn wire bound.
    let fixture = Fixture::start().await.expect("fixture");
    let delta = json!({"type": "response.output_text.delta", "delta": "x".repeat(500)}).to_string();
    fixture.route(PATH, Reply::sse_events(vec![delta; 40]));
    let small_turns = Client::new(ClientOptions {
        max_turn_bytes: 10_000,
        ..ClientOptions::default()
    })
    .expect("client");
    let error = run(&small_turns, &grok(&fixture.url("/v1")))
        .await
        .0
        .expect_err("turn bound");
    assert_eq!(error.category(), Category::TooLarge);
    assert!(error.to_string().contains("turn"));
}

#[tokio::test]
async fn events_split_across_chunks_and_crlf_parse() {
    let fixture = Fixture::start().await.expect("fixture");
    let text: String = full_stream()
        .iter()
        .map(|e| format!("event: x\r\ndata: {e}\r\n\r\n"))
        .collect();
    let chunks: Vec<String> = text
        .as_bytes()
        .chunks(7)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect();
    // Byte-chunking may split a UTF-8 sequence; the stream is ASCII, so lossy is exact.
    fixture.route(PATH, Reply::sse_chunks(chunks));
    let turn = run(&client(), &grok(&fixture.url("/v1")))
        .await
        .0
        .expect("turn");
    assert_eq!(turn.calls.len(), 1);
}

#[tokio::test]
async fn a_stalled_stream_hits_the_read_deadline() {
    let fixture = Fixture::start().await.expect("fixture");
    let mut stream = full_stream();
    stream.truncate(4);
    fixture.route(PATH, Reply::sse_events(stream).ending(End::Stall));
    let error = run(
        &client_with_read_timeout(Duration::from_millis(200)),
        &grok(&fixture.url("/v1")),
    )
    .await
    .0
    .expect_err("stalled");
    assert_eq!(error.category(), Category::Timeout);
    assert!(error.is_unknown_outcome());
}

#[tokio::test]
async fn a_json_reply_from_a_proxy_is_accepted() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(PATH, Reply::json(completed()["response"].to_string()));
    let (turn, events) = run(&client(), &grok(&fixture.url("/v1"))).await;
    let turn = turn.expect("turn");
    assert_eq!(turn.calls.len(), 1);
    assert_eq!(events.last(), Some(&TurnEvent::Completed));

    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        PATH,
        Reply::json(json!({"status": "failed", "output": []}).to_string()),
    );
    let error = run(&client(), &grok(&fixture.url("/v1")))
        .await
        .0
        .expect_err("failed");
    assert_eq!(error.category(), Category::ProviderFailed);
}

/// The default 120-second read deadline, checked on tokio's paused clock: the stall is
/// detected without waiting in real time.
#[tokio::test(start_paused = true)]
async fn the_default_read_deadline_is_120_seconds() {
    let fixture = Fixture::start().await.expect("fixture");
    let mut stream = full_stream();
    stream.truncate(5);
    fixture.route(PATH, Reply::sse_events(stream).ending(End::Stall));
    let started = tokio::time::Instant::now();
    let mut events = Vec::new();
    let error = client()
        .turn(&grok(&fixture.url("/v1")), &request(), &mut |e| {
            events.push(e)
        })
        .await
        .expect_err("stalled");
    assert_eq!(error.category(), Category::Timeout);
    assert!(error.to_string().contains("next stream event"), "{error}");
    assert!(
        events.contains(&TurnEvent::TextDelta("Hi ".into())),
        "events before the stall arrive"
    );
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(120) && waited < Duration::from_secs(125),
        "{waited:?}"
    );
}

#[tokio::test]
async fn the_event_bound_holds_across_tiny_chunks_without_false_alarms() {
    // Each event is about 300 characters; the bound is 400, and the stream arrives in
    // 7-byte pieces with CRLF line endings, so event ends often straddle chunks.
    let deltas = (0..50).map(|_| {
        json!({"type": "response.output_text.delta", "delta": "y".repeat(250)}).to_string()
    });
    let events: Vec<String> = deltas.chain([completed().to_string()]).collect();
    let tight = Client::new(ClientOptions {
        max_event_chars: 400,
        ..ClientOptions::default()
    })
    .expect("client");
    let text: String = events[..50]
        .iter()
        .map(|e| format!("data: {e}\r\n\r\n"))
        .collect();
    let mut chunks: Vec<String> = text
        .as_bytes()
        .chunks(7)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect();
    let fixture = Fixture::start().await.expect("fixture");
    // The completion event is larger than 400 characters: it must trip the bound.
    chunks.push(format!("data: {}\r\n\r\n", events[50]));
    fixture.route(PATH, Reply::sse_chunks(chunks));
    let mut deltas_seen = 0;
    let error = tight
        .turn(&grok(&fixture.url("/v1")), &request(), &mut |e| {
            deltas_seen += usize::from(matches!(e, TurnEvent::TextDelta(_)))
        })
        .await
        .expect_err("the completion event is over the bound");
    assert_eq!(error.category(), Category::TooLarge);
    assert_eq!(deltas_seen, 50);
}

/// Listening ends at the completed response: a body that stays open afterwards costs at
/// most the short drain grace, never the read deadline, and the turn succeeds.
#[tokio::test(start_paused = true)]
async fn a_stream_left_open_after_completion_still_completes() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(PATH, Reply::sse_events(full_stream()).ending(End::Stall));
    let started = tokio::time::Instant::now();
    let turn = run(&client(), &grok(&fixture.url("/v1")))
        .await
        .0
        .expect("turn");
    assert_eq!(turn.calls.len(), 1);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn the_fixture_script_payloads_round_trip() {
    use provider_fixture::script;
    let fixture = Fixture::start().await.expect("fixture");
    let reasoning = script::reasoning_item("enc\"rypted");
    let call = script::function_call_item("call_7", "lookup", "{\"q\":\"x\"}");
    let message = script::message_item("done");
    fixture.route(
        PATH,
        Reply::sse_events([
            script::search_call("x_search_call", "in_progress", false),
            script::search_call("x_search_call", "completed", true),
            script::item_done(&reasoning),
            script::text_delta("do"),
            script::text_delta("ne"),
            script::item_done(&message),
            script::item_done(&call),
            script::completed(&[reasoning.clone(), message, call], 3, 2),
        ]),
    );
    let (turn, events) = run(&client(), &grok(&fixture.url("/v1"))).await;
    let turn = turn.expect("turn");
    assert_eq!(turn.text, "done");
    assert_eq!(turn.calls[0].id, "call_7");
    assert_eq!(
        turn.opaque[0].as_value(),
        &serde_json::from_str::<Value>(&reasoning).expect("json")
    );
    assert_eq!(
        events[0],
        TurnEvent::NativeSearch {
            kind: "x_search_call".into(),
            status: "in_progress".into()
        }
    );

    for kind in ["response.failed", "response.incomplete", "error"] {
        let fixture = Fixture::start().await.expect("fixture");
        fixture.route(
            PATH,
            Reply::sse_events([script::text_delta("a"), script::failure(kind)]),
        );
        let error = run(&client(), &grok(&fixture.url("/v1")))
            .await
            .0
            .expect_err(kind);
        assert_eq!(error.category(), Category::ProviderFailed);
    }
}

#[tokio::test]
async fn responses_without_opaque_items_rebuild_the_assistant_turn() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(PATH, Reply::sse_events(full_stream()));
    let mut req = request();
    req.messages[2] = Message::Assistant {
        text: "earlier".into(),
        calls: vec![ToolCall {
            id: "call_1".into(),
            function_name: "lookup".into(),
            arguments: "{}".into(),
        }],
        opaque: vec![],
    };
    client()
        .turn(&grok(&fixture.url("/v1")), &req, &mut |_| {})
        .await
        .expect("turn");
    let body: Value = serde_json::from_slice(&fixture.requests()[0].body).expect("json");
    assert_eq!(
        body["input"][2],
        json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "earlier"}]})
    );
    assert_eq!(
        body["input"][3],
        json!({"type": "function_call", "call_id": "call_1", "name": "lookup", "arguments": "{}"})
    );
}

/// The read deadline limits each wait and the ceiling limits the whole turn: a stream that
/// sends an event every 100 seconds never trips the first, and used to hold the request
/// open for as long as it kept dripping.
#[tokio::test(start_paused = true)]
async fn slow_drip_stream_hits_the_whole_turn_ceiling() {
    let fixture = Fixture::start().await.expect("fixture");
    let mut stream = full_stream();
    // Long enough that dripping it takes well over ten minutes.
    stream.splice(
        1..1,
        vec![json!({"type": "response.in_progress"}).to_string(); 8],
    );
    fixture.route(
        PATH,
        Reply::sse_events(stream).slow(Duration::from_secs(100)),
    );
    let started = tokio::time::Instant::now();
    let error = run(&client(), &grok(&fixture.url("/v1")))
        .await
        .0
        .expect_err("ceiling");
    assert_eq!(error.category(), Category::Timeout);
    assert!(error.to_string().contains("whole request"), "{error}");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(600) && waited < Duration::from_secs(605),
        "the default ceiling is ten minutes: {waited:?}"
    );
}

/// The ceiling is configurable, and a slow stream under it completes.
#[tokio::test(start_paused = true)]
async fn a_slow_stream_under_a_raised_ceiling_completes() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        PATH,
        Reply::sse_events(full_stream()).slow(Duration::from_secs(100)),
    );
    let client = Client::new(ClientOptions {
        total_timeout: Duration::from_secs(3600),
        ..ClientOptions::default()
    })
    .expect("client");
    let started = tokio::time::Instant::now();
    let turn = run(&client, &grok(&fixture.url("/v1")))
        .await
        .0
        .expect("turn");
    assert_eq!(turn.calls.len(), 1);
    assert!(started.elapsed() >= Duration::from_secs(1000));
}

/// The whole stream as SSE bytes, one `data:` event per JSON value.
fn sse_body(events: &[String]) -> Vec<u8> {
    events
        .iter()
        .flat_map(|e| format!("data: {e}\n\n").into_bytes())
        .collect()
}

/// A body that starts with a UTF-8 byte-order mark used to panic the process inside the
/// SSE parser (it sliced the text at byte 1), whether the mark came whole or byte by byte.
#[tokio::test]
async fn utf8_bom_at_stream_start_is_stripped_whole_or_split() {
    let mut body = "\u{FEFF}".as_bytes().to_vec();
    body.extend(sse_body(&full_stream()));
    let whole = vec![body.clone()];
    let bytewise: Vec<Vec<u8>> = body.iter().map(|b| vec![*b]).collect();
    for chunks in [whole, bytewise] {
        let fixture = Fixture::start().await.expect("fixture");
        fixture.route(PATH, Reply::sse_bytes(chunks));
        let turn = run(&client(), &grok(&fixture.url("/v1")))
            .await
            .0
            .expect("turn");
        assert_eq!(turn.calls.len(), 1);
        assert_eq!(turn.text, "Hi there");
    }
}

/// A byte-order mark later in the stream is content, not something to strip.
#[tokio::test]
async fn a_bom_inside_the_stream_is_content() {
    let fixture = Fixture::start().await.expect("fixture");
    let mut stream = full_stream();
    stream.insert(
        1,
        json!({"type": "response.output_text.delta", "delta": "\u{FEFF}"}).to_string(),
    );
    fixture.route(PATH, Reply::sse_events(stream));
    let (turn, events) = run(&client(), &grok(&fixture.url("/v1"))).await;
    turn.expect("turn");
    assert!(events.contains(&TurnEvent::TextDelta("\u{FEFF}".into())));
}

#[tokio::test]
async fn invalid_utf8_in_a_stream_is_malformed_not_a_panic() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        PATH,
        Reply::sse_bytes([
            b"data: {\"type\":\"response.output_text.delta\",\"delta\":\"\xFF\"}\n\n".to_vec(),
        ]),
    );
    let error = run(&client(), &grok(&fixture.url("/v1")))
        .await
        .0
        .expect_err("not UTF-8");
    assert_eq!(error.category(), Category::Malformed);
    assert_safe(&error);
}

/// One event line just over the 4 MiB bound, arriving in 1 KiB pieces, is refused; the
/// parser used to rescan the unfinished line on every chunk (quadratic), taking seconds in
/// release builds and minutes in debug builds. `benches/sse.rs` shows the cost is linear.
#[tokio::test]
async fn oversized_event_line_in_small_chunks_is_refused() {
    let fixture = Fixture::start().await.expect("fixture");
    let limit = ClientOptions::default().max_event_chars;
    let mut line = b"data: ".to_vec();
    line.resize(limit + 1, b'x');
    let chunks: Vec<Vec<u8>> = line.chunks(1024).map(<[u8]>::to_vec).collect();
    fixture.route(PATH, Reply::sse_bytes(chunks));
    let error = run(&client(), &grok(&fixture.url("/v1")))
        .await
        .0
        .expect_err("event bound");
    assert_eq!(error.category(), Category::TooLarge);
    assert!(error.to_string().contains("event"), "{error}");
}

/// Sequence numbers only ever increase; a step back (or a repeat) means replayed or
/// reordered events, which used to be accepted along with their tool calls.
#[tokio::test]
async fn sequence_number_going_backwards_rejects_the_turn() {
    for numbers in [[1, 2, 3, 2], [1, 2, 3, 3]] {
        let fixture = Fixture::start().await.expect("fixture");
        let mut stream: Vec<String> = numbers[..3]
            .iter()
            .map(|n| {
                json!({"type": "response.output_text.delta", "delta": "x", "sequence_number": n})
                    .to_string()
            })
            .collect();
        let mut last = completed();
        last["sequence_number"] = json!(numbers[3]);
        stream.push(last.to_string());
        fixture.route(PATH, Reply::sse_events(stream));
        let error = run(&client(), &grok(&fixture.url("/v1")))
            .await
            .0
            .expect_err("out of sequence");
        assert_eq!(error.category(), Category::Malformed);
        assert!(error.to_string().contains("sequence"), "{error}");
    }
    // Increasing numbers, with gaps, are fine.
    let fixture = Fixture::start().await.expect("fixture");
    let mut last = completed();
    last["sequence_number"] = json!(9);
    fixture.route(
        PATH,
        Reply::sse_events([
            json!({"type": "response.output_text.delta", "delta": "x", "sequence_number": 1})
                .to_string(),
            last.to_string(),
        ]),
    );
    run(&client(), &grok(&fixture.url("/v1")))
        .await
        .0
        .expect("in order");
}

/// A function call whose arguments streamed as deltas but never got their `.done` event
/// is unfinished, whatever the completed response claims.
#[tokio::test]
async fn function_call_arguments_delta_without_done_rejects_the_turn() {
    let fixture = Fixture::start().await.expect("fixture");
    let stream: Vec<String> = full_stream()
        .into_iter()
        .filter(|e| !e.contains("function_call_arguments.done"))
        .collect();
    fixture.route(PATH, Reply::sse_events(stream));
    let error = run(&client(), &grok(&fixture.url("/v1")))
        .await
        .0
        .expect_err("unfinished arguments");
    assert_eq!(error.category(), Category::Malformed);
    assert!(error.to_string().contains("arguments"), "{error}");
}

/// A JSON reply (from a proxy) yields tool calls only when its status says completed: one
/// queued, in progress, or without a status used to have its calls executed.
#[tokio::test]
async fn json_response_not_completed_yields_no_tool_calls() {
    for status in [Some("in_progress"), Some("queued"), None] {
        let fixture = Fixture::start().await.expect("fixture");
        let mut response = completed()["response"].clone();
        match status {
            Some(status) => response["status"] = json!(status),
            None => {
                response.as_object_mut().expect("object").remove("status");
            }
        }
        fixture.route(PATH, Reply::json(response.to_string()));
        let error = run(&client(), &grok(&fixture.url("/v1")))
            .await
            .0
            .expect_err("not completed");
        assert!(
            matches!(
                error.category(),
                Category::ProviderFailed | Category::Malformed
            ),
            "{status:?}: {error}"
        );
    }
}

/// `response.completed` whose response says it is still in progress is not a finished
/// response either.
#[tokio::test]
async fn a_completed_event_with_an_unfinished_status_is_refused() {
    let fixture = Fixture::start().await.expect("fixture");
    let mut stream = full_stream();
    let mut last = completed();
    last["response"]["status"] = json!("in_progress");
    *stream.last_mut().expect("last") = last.to_string();
    fixture.route(PATH, Reply::sse_events(stream));
    let error = run(&client(), &grok(&fixture.url("/v1")))
        .await
        .0
        .expect_err("not completed");
    assert_eq!(error.category(), Category::ProviderFailed);
}

#[tokio::test]
async fn an_incomplete_response_keeps_its_text_says_why_and_runs_nothing() {
    let incomplete = |reason: &str| {
        json!({"type": "response.incomplete", "response": {
            "id": "resp_1", "status": "incomplete",
            "incomplete_details": {"reason": reason},
            "output": [
                {"type": "message", "id": "m1", "role": "assistant",
                 "content": [{"type": "output_text", "text": "Half an ans"}]},
                {"type": "function_call", "id": "f1", "call_id": "c1", "name": "lookup",
                 "arguments": "{\"q\""}
            ],
            "usage": {"input_tokens": 10, "output_tokens": 500}
        }})
        .to_string()
    };
    for (reason, ending) in [
        ("max_output_tokens", yetibot_ai_providers::Ending::Length),
        (
            "content_filter",
            yetibot_ai_providers::Ending::ContentFilter,
        ),
        ("something_new", yetibot_ai_providers::Ending::Incomplete),
    ] {
        let fixture = Fixture::start().await.expect("fixture");
        fixture.route(
            PATH,
            Reply::sse_events([
                provider_fixture::script::text_delta("Half an ans"),
                incomplete(reason),
            ]),
        );
        let (turn, events) = run(&client(), &grok(&fixture.url("/v1"))).await;
        let turn = turn.expect("a cut-off answer is still an answer");
        assert_eq!(turn.text, "Half an ans");
        assert_eq!(turn.ending(), ending, "{reason}");
        assert!(
            turn.calls.is_empty() && turn.opaque.is_empty(),
            "nothing of it runs or is replayed"
        );
        assert_eq!(turn.usage.and_then(|u| u.output_tokens), Some(500));
        assert!(events.contains(&TurnEvent::Completed));
        assert_eq!(fixture.requests().len(), 1, "never resent");
    }
}

#[tokio::test]
async fn a_failed_response_names_the_providers_error_code_and_nothing_else() {
    for (code, shown) in [
        (json!("server_error"), " (code server_error)"),
        (json!("a code with spaces <script>"), ""),
        (json!(42), ""),
    ] {
        let fixture = Fixture::start().await.expect("fixture");
        let failed = json!({"type": "response.failed", "response": {
            "id": "resp_1", "status": "failed",
            "error": {"code": code, "message": crate::support::BODY_MARKER}}});
        fixture.route(PATH, Reply::sse_events([failed.to_string()]));
        let error = run(&client(), &grok(&fixture.url("/v1")))
            .await
            .0
            .expect_err("failed");
        assert_eq!(error.category(), Category::ProviderFailed);
        assert_eq!(
            error.user_message(),
            format!("provider g failed the response: the response failed{shown}")
        );
        assert_safe(&error);
    }
}
