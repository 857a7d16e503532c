//! The `ai` command end to end: `yetibot run` against the provider fixture on loopback,
//! asserting what the fixture received (count, path, body, headers) and what was printed.

use provider_fixture::{Fixture, Recorded, Reply, script};
use serde_json::{Value, json};

use crate::Workdir;

/// A secret placed in the provider's key slot: it may appear nowhere but that provider's
/// Authorization header.
const CANARY: &str = "canary-7f3a9c1e-secret";

/// Runs `yetibot run <args>` with this configuration in a fresh directory, off the async
/// runtime so the fixture keeps answering.
async fn run_ai(edn: String, args: Vec<String>) -> std::process::Output {
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

fn one_provider(fixture: &Fixture, extra: &str) -> String {
    format!(
        r#"{{:yetibot {{:ai {{:providers [{{:name "local" :url "{}" :key "{CANARY}" :model "m1"}}]{extra}}}}}}}"#,
        fixture.url("/v1")
    )
}

fn body(request: &Recorded) -> Value {
    serde_json::from_slice(&request.body).expect("a JSON request body")
}

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Everything the binary printed, for the canary check.
fn printed(output: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn chat_call(name: &str, arguments: &str) -> String {
    json!({
        "choices": [{
            "message": {
                "role": "assistant",
                "content": null,
                "tool_calls": [{
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }],
            },
            "finish_reason": "tool_calls",
        }],
        "usage": {"prompt_tokens": 10, "completion_tokens": 3},
    })
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_goes_to_the_default_provider_once_and_its_answer_is_printed() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("Map transforms; reduce folds.")),
    );
    let out = run_ai(
        one_provider(&fixture, ""),
        vec!["ai Explain the difference between map and reduce.".into()],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    assert_eq!(stdout(&out), "Map transforms; reduce folds.\n");
    let requests = fixture.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].method, "POST");
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(
        requests[0]
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok()),
        Some(format!("Bearer {CANARY}").as_str())
    );
    let sent = body(&requests[0]);
    assert_eq!(sent["model"], "m1");
    let messages = sent["messages"].as_array().expect("messages");
    assert_eq!(messages[0]["role"], "system");
    assert!(
        messages[0]["content"]
            .as_str()
            .is_some_and(|c| c.contains("untrusted"))
    );
    // The prompt, then the budget guidance that closes every tool-offering turn.
    let prompt = &messages[messages.len() - 2];
    assert_eq!(prompt["role"], "user");
    assert_eq!(
        prompt["content"],
        "Explain the difference between map and reduce."
    );
    let guidance = &messages[messages.len() - 1];
    assert_eq!(guidance["role"], "system");
    assert!(
        guidance["content"]
            .as_str()
            .is_some_and(|c| c.contains("6 calls in total, 0 used, 6 remaining"))
    );
    // The local operator is trusted: the native tools are offered.
    let tools: Vec<&str> = sent["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(tools.contains(&"yetibot__help"), "{tools:?}");
    assert!(tools.contains(&"yetibot__util"), "{tools:?}");
    assert!(!printed(&out).contains(CANARY));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_tools_sends_no_tool_definitions_and_the_metadata_is_in_json_output() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("Snow falls.")),
    );
    let out = run_ai(
        one_provider(&fixture, ""),
        vec![
            "--json".into(),
            "ai --no-tools --model m2 Write a short poem about snow.".into(),
        ],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    let reply: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(reply["value"], "Snow falls.");
    assert_eq!(reply["meta"]["provider"], "local");
    assert_eq!(reply["meta"]["model"], "m2");
    assert_eq!(reply["meta"]["tool_calls"], 0);
    assert_eq!(reply["meta"]["usage"]["input_tokens"], 1);
    let requests = fixture.requests();
    assert_eq!(requests.len(), 1);
    let sent = body(&requests[0]);
    assert_eq!(sent["model"], "m2");
    assert!(sent.get("tools").is_none());
    assert!(sent.get("tool_choice").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn option_errors_stop_before_any_request() {
    let fixture = Fixture::start().await.expect("fixture");
    for line in [
        "ai --model",
        "ai --model a --model b hi",
        "ai --no-tools --max-tool-calls 3 hi",
        "ai --max-tool-calls 0 hi",
        "ai --max-tool-calls 21 hi",
        "ai --frobnicate hi",
        "ai --toolset nope hi",
        "ai --provider nope hi",
        "ai",
    ] {
        let out = run_ai(one_provider(&fixture, ""), vec![line.into()]).await;
        assert_eq!(out.status.code(), Some(1), "{line}: {}", printed(&out));
        assert!(stdout(&out).contains("💥"), "{line}: {}", stdout(&out));
    }
    assert_eq!(fixture.requests().len(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_native_tool_call_runs_and_its_result_goes_back_to_the_model() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/chat/completions",
        Reply::json(chat_call(
            "yetibot__util",
            r#"{"operation":"count","input_json":"[1,2,3]"}"#,
        )),
    );
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("There are 3.")),
    );
    let out = run_ai(
        one_provider(&fixture, ""),
        vec!["--json".into(), "ai How many items are in [1,2,3]?".into()],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    let reply: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(reply["value"], "There are 3.");
    assert_eq!(reply["meta"]["tool_calls"], 1);
    let requests = fixture.requests();
    assert_eq!(requests.len(), 2);
    let second = body(&requests[1]);
    let messages = second["messages"].as_array().expect("messages");
    let result = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("a tool result");
    assert_eq!(result["tool_call_id"], "call_1");
    assert!(
        result["content"].as_str().is_some_and(|c| c.contains('3')),
        "{result}"
    );
    // The first turn carried budget guidance: six calls by default.
    let first = body(&requests[0]);
    let guidance = first["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned();
    assert!(guidance.contains("6 calls in total"), "{guidance}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spent_budget_sends_the_final_turn_without_tools() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/chat/completions",
        Reply::json(chat_call("yetibot__help", "{}")),
    );
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("Here is what I found.")),
    );
    let out = run_ai(
        one_provider(&fixture, ""),
        vec!["ai --max-tool-calls 1 What can you do?".into()],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    assert_eq!(stdout(&out), "Here is what I found.\n");
    let requests = fixture.requests();
    assert_eq!(requests.len(), 2, "no extra closing turn");
    assert!(body(&requests[0]).get("tools").is_some());
    assert!(
        body(&requests[1]).get("tools").is_none(),
        "the final turn offers no tools"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invented_tool_refuses_the_batch_and_prints_the_trace() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/chat/completions",
        Reply::json(chat_call("yetibot__launch_rockets", r#"{"count":3}"#)),
    );
    let out = run_ai(one_provider(&fixture, ""), vec!["ai Do it.".into()]).await;
    assert_eq!(out.status.code(), Some(1), "{}", printed(&out));
    let text = stdout(&out);
    assert!(text.contains("#1"), "{text}");
    assert!(
        !text.contains("launch_rockets"),
        "unknown names are withheld: {text}"
    );
    assert_eq!(fixture.requests().len(), 1, "nothing is retried");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn piped_text_is_a_separate_data_message_and_not_part_of_the_prompt() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("A greeting.")),
    );
    let out = run_ai(
        one_provider(&fixture, ""),
        vec!["echo hello world | ai --no-tools Summarize this.".into()],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    let sent = body(&fixture.requests()[0]);
    let messages = sent["messages"].as_array().expect("messages");
    let last = messages.last().expect("prompt");
    assert_eq!(last["content"], "Summarize this.");
    let data = &messages[messages.len() - 2];
    assert_eq!(data["role"], "user");
    assert!(
        data["content"]
            .as_str()
            .is_some_and(|c| c.contains("hello world")),
        "{data}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pipe_only_request_answers_the_supplied_input() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("Two words.")),
    );
    let out = run_ai(
        one_provider(&fixture, ""),
        vec!["echo hello world | ai --no-tools".into()],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    assert_eq!(stdout(&out), "Two words.\n");
    let sent = body(&fixture.requests()[0]);
    let messages = sent["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 3, "runner instructions, data, request");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_never_appears_in_output_even_when_the_model_repeats_it() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion(&format!("Your key is {CANARY}."))),
    );
    let out = run_ai(
        one_provider(&fixture, ""),
        vec!["--json".into(), "ai --no-tools What is my key?".into()],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    assert!(!printed(&out).contains(CANARY), "{}", printed(&out));
    // A provider error names no key either: the provider's own account of it is shown
    // with the key redacted.
    let failing = Fixture::start().await.expect("fixture");
    failing.route(
        "/v1/chat/completions",
        Reply::status_json(401, format!(r#"{{"error":"bad key {CANARY}"}}"#)),
    );
    let out = run_ai(one_provider(&failing, ""), vec!["ai --no-tools hi".into()]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(!printed(&out).contains(CANARY), "{}", printed(&out));
    assert!(
        printed(&out).contains("answered HTTP 401 (Unauthorized): bad key [redacted]"),
        "{}",
        printed(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_placeholder_key_is_never_sent() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route("/v1/models", Reply::json(r#"{"data":[{"id":"m1"}]}"#));
    let edn = format!(
        r#"{{:yetibot {{:ai {{:providers [{{:name "zen" :url "{}" :key "REPLACE_WITH_OPENCODE_ZEN_API_KEY" :model "m1"}}]}}}}}}"#,
        fixture.url("/v1")
    );
    let out = run_ai(edn.clone(), vec!["ai models zen".into()]).await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    assert_eq!(stdout(&out), "m1\n");
    let out = run_ai(edn, vec!["ai --no-tools hi".into()]).await;
    assert_eq!(out.status.code(), Some(1), "a prompt needs a real key");
    let requests = fixture.requests();
    assert_eq!(requests.len(), 1, "only the listing reached the server");
    assert!(requests[0].headers.get("authorization").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listings_label_every_provider_and_one_failure_hides_no_other() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/a/v1/models",
        Reply::json(r#"{"data":[{"id":"llama3.2"},{"id":"qwen3"}]}"#),
    );
    fixture.route("/b/v1/models", Reply::status_json(500, "{}"));
    let edn = format!(
        r#"{{:yetibot {{:ai {{:default-provider "b" :providers [{{:name "a" :url "{}" :model "llama3.2"}} {{:name "b" :url "{}"}}]}}}}}}"#,
        fixture.url("/a/v1"),
        fixture.url("/b/v1")
    );
    let out = run_ai(edn.clone(), vec!["ai providers".into()]).await;
    assert_eq!(
        stdout(&out),
        "a: model llama3.2, chat-completions\nb: no default model, chat-completions (default)\n"
    );
    let out = run_ai(edn.clone(), vec!["ai models".into()]).await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    let text = stdout(&out);
    assert!(text.starts_with("a: llama3.2\na: qwen3\n⚠ b: "), "{text}");
    // The failure is a note beside the models, not a model: it is not counted, and it stays
    // with the count.
    let out = run_ai(edn.clone(), vec!["ai models | count".into()]).await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    let text = stdout(&out);
    assert!(text.starts_with("2\n⚠ b: "), "{text}");
    let out = run_ai(
        edn.clone(),
        vec!["--json".into(), "ai models | count".into()],
    )
    .await;
    let parsed: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
    assert_eq!(parsed["value"], 2);
    assert!(
        parsed["notes"][0]
            .as_str()
            .is_some_and(|n| n.starts_with("b: "))
    );
    let out = run_ai(edn.clone(), vec!["ai models a | random | data show".into()]).await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    assert!(stdout(&out).contains("\"provider\""), "{}", stdout(&out));
    // Two providers: --model alone reads both catalogs on demand, and b's cannot be read,
    // so the model is not routed and the refusal names the provider in the way.
    let out = run_ai(edn, vec!["ai --model qwen3 hi".into()]).await;
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(text.contains("--provider"), "{text}");
    assert!(
        text.contains("the model catalog of b could not be read completely"),
        "{text}"
    );
    assert!(
        fixture.requests().iter().all(|r| r.method == "GET"),
        "no prompt was sent"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_reads_the_catalogs_on_demand_to_route_a_model_alone() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/a/v1/models",
        Reply::json(r#"{"data":[{"id":"llama3.2"},{"id":"qwen3"}]}"#),
    );
    fixture.route("/b/v1/models", Reply::json(r#"{"data":[{"id":"gemma3"}]}"#));
    fixture.route(
        "/a/v1/chat/completions",
        Reply::json(script::chat_completion("From a.")),
    );
    let edn = format!(
        r#"{{:yetibot {{:ai {{:default-provider "b" :providers [{{:name "a" :url "{}" :model "llama3.2"}} {{:name "b" :url "{}" :model "gemma3"}}]}}}}}}"#,
        fixture.url("/a/v1"),
        fixture.url("/b/v1")
    );
    let out = run_ai(edn.clone(), vec!["ai --model qwen3 --no-tools hi".into()]).await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    assert_eq!(stdout(&out), "From a.\n");
    let sent = fixture
        .requests()
        .into_iter()
        .find(|r| r.method == "POST")
        .expect("the prompt");
    assert_eq!(sent.path, "/a/v1/chat/completions");
    assert_eq!(body(&sent)["model"], "qwen3");
    // A model no catalog lists is refused as such, after the same read.
    let out = run_ai(edn, vec!["ai --model nowhere --no-tools hi".into()]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("no provider lists model nowhere"),
        "{}",
        stdout(&out)
    );
    assert_eq!(
        fixture
            .requests()
            .iter()
            .filter(|r| r.path.ends_with("/models"))
            .count(),
        4,
        "each run read each catalog once, and only for --model"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_are_listed_as_rows_that_xargs_can_feed_back() {
    let fixture = Fixture::start().await.expect("fixture");
    let edn = one_provider(&fixture, "");
    let out = run_ai(edn.clone(), vec!["ai tools".into()]).await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    let rows = stdout(&out);
    assert!(
        rows.lines().any(|l| l.starts_with("`yetibot/help`")),
        "{rows}"
    );
    // Descriptions are shown as written: no command-language escapes for anyone to see,
    // and punctuation (quotes, parentheses) is still there.
    assert!(!rows.contains('\\'), "{rows}");
    assert!(rows.contains('(') || rows.contains('\''), "{rows}");
    // Every row, punctuation and all, goes back through xargs as data.
    let out = run_ai(edn.clone(), vec!["ai tools | xargs ai tools".into()]).await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    let help = stdout(&out);
    assert!(
        !help.contains("Error") && !help.contains("No matches"),
        "{help}"
    );
    let out = run_ai(
        edn.clone(),
        vec!["ai tools | tail 2 | xargs ai tools".into()],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    let out = run_ai(edn, vec!["ai tools yetibot/util | data show".into()]).await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    assert!(stdout(&out).contains("inputSchema"), "{}", stdout(&out));
    assert_eq!(fixture.requests().len(), 0, "listing runs no model");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grok_uses_the_provider_named_grok_over_responses_and_keeps_its_reply_preference() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/x/v1/responses",
        Reply::sse_events([
            script::search_call("web_search_call", "in_progress", false),
            script::search_call("web_search_call", "completed", true),
            script::text_delta("People like it."),
            script::completed(&[script::message_item("People like it.")], 12, 4),
        ]),
    );
    let edn = format!(
        r#"{{:yetibot {{:ai {{:default-provider "local" :providers [{{:name "local" :url "{}" :model "m1"}} {{:name "grok" :url "{}" :key "{CANARY}" :model "grok-4.7" :api "responses" :native-tools ["web_search" "x_search"]}}]}}}}}}"#,
        fixture.url("/local/v1"),
        fixture.url("/x/v1")
    );
    let out = run_ai(
        edn.clone(),
        vec![
            "--json".into(),
            "grok --no-thread --no-tools What are people saying about Clojure?".into(),
        ],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    let reply: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(reply["value"], "People like it.");
    assert_eq!(reply["meta"]["provider"], "grok");
    assert_eq!(reply["meta"]["model"], "grok-4.7");
    assert_eq!(reply["meta"]["no_thread"], true);
    let requests = fixture.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].path, "/x/v1/responses",
        "never the shared default"
    );
    // --provider belongs to ai; --no-thread to grok.
    for line in ["grok --provider local hi", "ai --no-thread hi"] {
        let out = run_ai(edn.clone(), vec![line.into()]).await;
        assert_eq!(out.status.code(), Some(1), "{line}");
    }
    assert_eq!(fixture.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grok_without_a_grok_provider_or_xai_key_is_a_configuration_error() {
    let fixture = Fixture::start().await.expect("fixture");
    let out = run_ai(one_provider(&fixture, ""), vec!["grok hi".into()]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains(":yetibot :xai :key"),
        "{}",
        stdout(&out)
    );
    assert_eq!(fixture.requests().len(), 0, "no other provider is used");
}

/// One provider plus the MCP fixture over stdio as server `fx`, with a short operation
/// timeout so that `hang` ends quickly as an unknown outcome.
fn with_mcp(fixture: &Fixture) -> String {
    one_provider(
        fixture,
        &format!(
            r#" :mcp {{:timeout-ms 1500 :servers [{{:name "fx" :command "{}" :tools ["echo" "hang" "search"]}}]}}"#,
            crate::mcp_fixture()
        ),
    )
}

fn chat_calls(calls: &[(&str, &str, &str)]) -> String {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, arguments)| {
            json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
        })
        .collect();
    json!({
        "choices": [{
            "message": {"role": "assistant", "content": null, "tool_calls": calls},
            "finish_reason": "tool_calls",
        }],
    })
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_tools_are_listed_with_the_native_ones_and_looked_up_without_running() {
    let fixture = Fixture::start().await.expect("fixture");
    let edn = with_mcp(&fixture);
    let out = run_ai(edn.clone(), vec!["ai servers".into()]).await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    assert!(stdout(&out).contains("fx"), "{}", stdout(&out));
    let out = run_ai(edn.clone(), vec!["ai tools".into()]).await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    let rows = stdout(&out);
    assert!(rows.lines().any(|l| l.starts_with("`fx/echo`")), "{rows}");
    assert!(
        rows.lines().any(|l| l.starts_with("`yetibot/help`")),
        "{rows}"
    );
    assert!(!rows.contains("crash"), "the allowlist applies: {rows}");
    let out = run_ai(edn.clone(), vec!["ai tools fx".into()]).await;
    let rows = stdout(&out);
    assert!(rows.lines().all(|l| l.starts_with("`fx/")), "{rows}");
    let out = run_ai(edn.clone(), vec!["ai tools fx/echo".into()]).await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    assert!(
        stdout(&out).contains("text"),
        "focused help: {}",
        stdout(&out)
    );
    let out = run_ai(
        edn.clone(),
        vec!["ai tools | tail 3 | xargs ai tools".into()],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    let out = run_ai(edn, vec!["ai tools yetibot".into()]).await;
    assert!(
        stdout(&out).lines().all(|l| l.starts_with("`yetibot/")),
        "{}",
        stdout(&out)
    );
    assert_eq!(fixture.requests().len(), 0, "listing runs no model");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_call_runs_and_its_untrusted_result_reaches_the_model() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/chat/completions",
        Reply::json(chat_calls(&[(
            "c1",
            "fx__echo",
            r#"{"text":"from the server"}"#,
        )])),
    );
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("The server said hello.")),
    );
    let out = run_ai(
        with_mcp(&fixture),
        vec!["--json".into(), "ai Ask the server.".into()],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    let reply: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(reply["meta"]["tool_calls"], 1);
    let requests = fixture.requests();
    assert_eq!(requests.len(), 2);
    let offered: Vec<String> = body(&requests[0])["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect();
    assert!(offered.contains(&"fx__echo".to_owned()), "{offered:?}");
    let second = body(&requests[1]);
    let result = second["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "tool"))
        .expect("a tool result")
        .clone();
    assert!(
        result["content"]
            .as_str()
            .is_some_and(|c| c.contains("from the server")),
        "{result}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_mcp_outcome_skips_the_rest_of_the_batch_and_turns_tools_off() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/chat/completions",
        Reply::json(chat_calls(&[
            ("c1", "fx__hang", "{}"),
            ("c2", "fx__echo", r#"{"text":"never"}"#),
        ])),
    );
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("I could not confirm that.")),
    );
    let out = run_ai(with_mcp(&fixture), vec!["ai Do both.".into()]).await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    assert_eq!(stdout(&out), "I could not confirm that.\n");
    let requests = fixture.requests();
    assert_eq!(requests.len(), 2, "no retry, no extra turn");
    let second = body(&requests[1]);
    assert!(
        second.get("tools").is_none(),
        "tools are off after an unknown outcome"
    );
    let results: Vec<Value> = second["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "tool")
        .cloned()
        .collect();
    assert_eq!(results.len(), 2);
    assert!(
        results[0]["content"]
            .as_str()
            .is_some_and(|c| c.contains("unknown"))
    );
    assert!(
        results[1]["content"]
            .as_str()
            .is_some_and(|c| c.contains("Skipped"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canary_in_every_credential_slot_reaches_only_its_own_authorization_header() {
    const MCP_CANARY: &str = "canary-mcp-env-52d1";
    const XAI_CANARY: &str = "canary-xai-key-9b07";
    const IMGFLIP_CANARY: &str = "canary-imgflip-6e3c";
    const FILE_CANARY: &str = "canary-key-file-a4f8";
    let fixture = Fixture::start().await.expect("fixture");
    let dir = Workdir::new();
    let key_file = dir.path.join("other.key");
    std::fs::write(&key_file, FILE_CANARY).expect("key file");
    fixture.route(
        "/v1/chat/completions",
        Reply::json(chat_calls(&[("c1", "fx__secret", "{}")])),
    );
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion(&format!(
            "keys: {CANARY} {MCP_CANARY} {XAI_CANARY} {IMGFLIP_CANARY}"
        ))),
    );
    // The other provider's key file is read only by a request to that provider, which
    // then redacts its token too.
    fixture.route(
        "/other/v1/chat/completions",
        Reply::json(script::chat_completion(&format!("mine: {FILE_CANARY}"))),
    );
    let edn = format!(
        r#"{{:yetibot {{:xai {{:key "{XAI_CANARY}"}} :imgflip {{:username "y" :password "{IMGFLIP_CANARY}"}}
           :ai {{:providers [{{:name "local" :url "{}" :key "{CANARY}" :model "m1"}}
                             {{:name "other" :url "{}" :key-file "{}" :model "m2"}}]
                 :mcp {{:servers [{{:name "fx" :command "{}" :env {{"FIXTURE_SECRET" "{MCP_CANARY}"}} :tools ["secret"]}}]}}}}}}}}"#,
        fixture.url("/v1"),
        fixture.url("/other/v1"),
        key_file.display(),
        crate::mcp_fixture()
    );
    let out = run_ai(
        edn.clone(),
        vec!["--json".into(), "ai Show me the keys.".into()],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    let mut everything = printed(&out);
    let out = run_ai(
        edn,
        vec!["ai --provider other --no-tools And yours?".into()],
    )
    .await;
    assert_eq!(stdout(&out), "mine: [redacted]\n", "{}", printed(&out));
    everything.push_str(&printed(&out));
    for canary in [CANARY, MCP_CANARY, XAI_CANARY, IMGFLIP_CANARY, FILE_CANARY] {
        assert!(
            !everything.contains(canary),
            "{canary} printed: {everything}"
        );
    }
    let requests = fixture.requests();
    assert_eq!(requests.len(), 3);
    // The tool result that quoted the MCP secret reached the model redacted.
    let second = String::from_utf8_lossy(&requests[1].body).into_owned();
    assert!(
        second.contains("raw="),
        "the tool result was sent: {second}"
    );
    for request in &requests {
        let body = String::from_utf8_lossy(&request.body);
        for canary in [CANARY, MCP_CANARY, XAI_CANARY, IMGFLIP_CANARY, FILE_CANARY] {
            assert!(!body.contains(canary), "{canary} sent in a body");
        }
        // Each provider's own key, in its own Authorization header only.
        let own = if request.path.starts_with("/other/") {
            FILE_CANARY
        } else {
            CANARY
        };
        for (name, value) in &request.headers {
            let value = value.to_str().unwrap_or_default();
            for canary in [CANARY, MCP_CANARY, XAI_CANARY, IMGFLIP_CANARY, FILE_CANARY] {
                if value.contains(canary) {
                    assert_eq!((name.as_str(), canary), ("authorization", own));
                }
            }
        }
    }
}

fn two_providers(fixture: &Fixture) -> String {
    format!(
        r#"{{:yetibot {{:ai {{:providers [{{:name "local" :url "{}" :key "{CANARY}" :model "m1"}} {{:name "other" :url "{}" :model "child-model"}}]}}}}}}"#,
        fixture.url("/v1"),
        fixture.url("/other/v1")
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delegated_child_is_one_direct_text_call_that_sees_only_its_prompt() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/chat/completions",
        Reply::json(chat_calls(&[(
            "c1",
            "yetibot__ai",
            r#"{"action":"ask","provider":"other","prompt":"Name a prime.","max_output_tokens":64}"#,
        )])),
    );
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("The child said 7.")),
    );
    fixture.route(
        "/other/v1/chat/completions",
        Reply::json(script::chat_completion("7")),
    );
    let out = run_ai(
        two_providers(&fixture),
        vec!["--json".into(), "ai Ask another model for a prime.".into()],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    let reply: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(reply["value"], "The child said 7.");
    assert_eq!(reply["meta"]["tool_calls"], 1, "the child is one host call");
    let requests = fixture.requests();
    let paths: Vec<&str> = requests.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/v1/chat/completions",
            "/other/v1/chat/completions",
            "/v1/chat/completions"
        ]
    );
    let child = body(&requests[1]);
    assert_eq!(child["model"], "child-model");
    assert_eq!(child["max_completion_tokens"], 64);
    assert!(child.get("tools").is_none(), "a child gets no tools");
    assert_eq!(
        child["messages"],
        json!([{"role": "user", "content": "Name a prime."}]),
        "only its prompt: no history, instructions or piped data"
    );
    assert!(
        requests[1].headers.get("authorization").is_none(),
        "its own (absent) key"
    );
    let result = body(&requests[2])["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "tool").cloned())
        .expect("the child's result");
    let content: Value =
        serde_json::from_str(result["content"].as_str().unwrap_or_default()).expect("JSON result");
    assert_eq!(content["text"], "7");
    assert_eq!(content["untrusted"], true);
    assert_eq!(content["provider"], "other");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_delegation_refuses_the_whole_batch_before_any_call() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/chat/completions",
        Reply::json(chat_calls(&[
            (
                "c1",
                "yetibot__ai",
                r#"{"action":"ask","provider":"other","prompt":"fine"}"#,
            ),
            (
                "c2",
                "yetibot__ai",
                r#"{"action":"ask","provider":"nowhere","prompt":"x"}"#,
            ),
        ])),
    );
    for arguments in [
        r#"{"action":"ask","provider":"other","prompt":"x","max_output_tokens":4096}"#,
        r#"{"action":"ask","provider":"other","prompt":"x","url":"http://evil"}"#,
        &format!(r#"{{"action":"ask","provider":"other","prompt":"use {CANARY}"}}"#),
    ] {
        fixture.route(
            "/v1/chat/completions",
            Reply::json(chat_calls(&[("c1", "yetibot__ai", arguments)])),
        );
    }
    for _ in 0..4 {
        let out = run_ai(two_providers(&fixture), vec!["ai Ask around.".into()]).await;
        assert_eq!(out.status.code(), Some(1), "{}", printed(&out));
        assert!(stdout(&out).contains("refused"), "{}", stdout(&out));
        assert!(!printed(&out).contains(CANARY));
    }
    assert_eq!(
        fixture.count("/other/v1/chat/completions"),
        0,
        "no child ran: batches are checked whole first"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_info_reports_the_running_versions_and_bundled_notes() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/chat/completions",
        Reply::json(chat_call("yetibot__release_info", r#"{"limit":1}"#)),
    );
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("Lots.")),
    );
    let out = run_ai(
        one_provider(&fixture, ""),
        vec!["ai What's new in Yetibot?".into()],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    let requests = fixture.requests();
    let result = body(&requests[1])["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "tool").cloned())
        .expect("a tool result");
    let content: Value =
        serde_json::from_str(result["content"].as_str().unwrap_or_default()).expect("JSON");
    assert_eq!(content["running"]["app"], env!("CARGO_PKG_VERSION"));
    assert_eq!(content["notes"].as_array().map(Vec::len), Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_info_latest_reads_the_configured_feed_without_credentials() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/feed/releases.json",
        Reply::json(
            json!({"notes": [
                {"date": "2027-02-01", "title": "Published later", "notes": ["n"]},
                {"date": "2026-01-01", "title": "Older", "notes": []},
            ]})
            .to_string(),
        ),
    );
    // The second call finds no feed at the other URL: a tool error, and the loop goes on.
    fixture.route(
        "/v1/chat/completions",
        Reply::json(chat_call(
            "yetibot__release_info",
            r#"{"view":"latest","limit":1}"#,
        )),
    );
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("Published later is out.")),
    );
    let edn = one_provider(&fixture, "").replacen(
        "{:ai",
        &format!(
            r#"{{:release-info {{:feed-url "{}"}} :ai"#,
            fixture.url("/feed/releases.json")
        ),
        1,
    );
    let out = run_ai(edn, vec!["ai What was published?".into()]).await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    assert_eq!(stdout(&out), "Published later is out.\n");
    let feed: Vec<_> = fixture
        .requests()
        .into_iter()
        .filter(|r| r.path == "/feed/releases.json")
        .collect();
    assert_eq!(feed.len(), 1);
    assert_eq!(feed[0].method, "GET");
    assert!(!feed[0].headers.contains_key("authorization"));
    let requests = fixture.requests();
    let second = requests
        .iter()
        .filter(|r| r.path == "/v1/chat/completions")
        .nth(1)
        .expect("a second turn");
    let result = body(second)["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "tool").cloned())
        .expect("a tool result");
    let content: Value =
        serde_json::from_str(result["content"].as_str().unwrap_or_default()).expect("JSON");
    assert_eq!(content["view"], "latest");
    assert_eq!(content["running"]["app"], env!("CARGO_PKG_VERSION"));
    assert_eq!(content["published"][0]["title"], "Published later");
    assert_eq!(content["has_more"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_info_latest_without_a_feed_or_with_a_broken_one_is_a_tool_error() {
    for broken in [false, true] {
        let fixture = Fixture::start().await.expect("fixture");
        fixture.route("/feed.json", Reply::status_json(500, "canary-body-5b1d"));
        let (edn_extra, expected) = if broken {
            (
                format!(
                    r#":release-info {{:feed-url "{}"}} "#,
                    fixture.url("/feed.json")
                ),
                "the published release notes could not be read: it answered with an error status",
            )
        } else {
            (String::new(), "no published release feed is configured")
        };
        fixture.route(
            "/v1/chat/completions",
            Reply::json(chat_call("yetibot__release_info", r#"{"view":"latest"}"#)),
        );
        fixture.route(
            "/v1/chat/completions",
            Reply::json(script::chat_completion("Sorry.")),
        );
        let edn = one_provider(&fixture, "").replacen("{:ai", &format!("{{{edn_extra}:ai"), 1);
        let out = run_ai(edn, vec!["ai What was published?".into()]).await;
        assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
        let requests: Vec<_> = fixture
            .requests()
            .into_iter()
            .filter(|r| r.path == "/v1/chat/completions")
            .collect();
        assert_eq!(requests.len(), 2);
        let second = &requests[1];
        let result = body(second)["messages"]
            .as_array()
            .and_then(|m| m.iter().find(|m| m["role"] == "tool").cloned())
            .expect("a tool result");
        let text = result["content"].to_string();
        assert!(text.contains(expected), "{text}");
        assert!(!text.contains("canary-body"), "{text}");
        assert!(!text.contains("127.0.0.1"), "{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_prompt_quoting_the_parents_key_file_token_is_refused() {
    const TOKEN: &str = "canary-parent-key-file-71c2";
    let fixture = Fixture::start().await.expect("fixture");
    let dir = Workdir::new();
    let key_file = dir.path.join("parent.key");
    std::fs::write(&key_file, TOKEN).expect("key file");
    fixture.route(
        "/v1/chat/completions",
        Reply::json(chat_calls(&[(
            "c1",
            "yetibot__ai",
            &format!(r#"{{"action":"ask","provider":"other","prompt":"the key is {TOKEN}"}}"#),
        )])),
    );
    let edn = format!(
        r#"{{:yetibot {{:ai {{:providers [{{:name "local" :url "{}" :key-file "{}" :model "m1"}} {{:name "other" :url "{}" :model "c"}}]}}}}}}"#,
        fixture.url("/v1"),
        key_file.display(),
        fixture.url("/other/v1")
    );
    let out = run_ai(edn, vec!["ai Pass it on.".into()]).await;
    assert_eq!(out.status.code(), Some(1), "{}", printed(&out));
    assert!(!printed(&out).contains(TOKEN));
    assert_eq!(fixture.count("/other/v1/chat/completions"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_that_dies_mid_stream_or_sends_garbage_fails_the_command_cleanly() {
    let fixture = Fixture::start().await.expect("fixture");
    // A stream cut off before its completion event, then bytes that are no SSE at all.
    fixture.route(
        "/x/v1/responses",
        Reply::sse_events([script::text_delta("Half an ans")]).ending(provider_fixture::End::Abort),
    );
    fixture.route(
        "/x/v1/responses",
        Reply::sse_bytes([&b"\xff\xfe not an event stream \x00\n\n"[..]]),
    );
    let edn = format!(
        r#"{{:yetibot {{:ai {{:providers [{{:name "grok" :url "{}" :key "{CANARY}" :model "g" :api "responses"}}]}}}}}}"#,
        fixture.url("/x/v1")
    );
    for _ in 0..2 {
        let out = run_ai(edn.clone(), vec!["grok --no-tools hi".into()]).await;
        assert_eq!(out.status.code(), Some(1), "{}", printed(&out));
        let text = printed(&out);
        assert!(!text.contains("panicked"), "{text}");
        assert!(
            !text.contains("Half an ans"),
            "no partial answer is shown: {text}"
        );
        assert!(!text.contains(CANARY));
    }
    assert_eq!(fixture.requests().len(), 2, "nothing is retried");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whatever_prints_a_configured_credential_shows_it_redacted_and_no_bidi_controls() {
    let fixture = Fixture::start().await.expect("fixture");
    let edn = one_provider(&fixture, "");
    let out = run_ai(edn.clone(), vec![format!("echo my key is {CANARY}")]).await;
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{shown}");
    assert!(!shown.contains(CANARY), "{shown}");
    assert!(shown.contains("my key is [redacted]"), "{shown}");
    // A right-to-left override would show "evil" reversed; it is removed.
    let out = run_ai(
        edn.clone(),
        vec!["echo \u{202e}evil\u{202c} and \u{2067}iso\u{2069}".into()],
    )
    .await;
    let shown = String::from_utf8_lossy(&out.stdout);
    assert_eq!(shown.trim_end(), "evil and iso");
    // Errors too, even one that quotes the line.
    let out = run_ai(edn, vec![format!("nosuchcommand {CANARY}")]).await;
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!all.contains(CANARY), "{all}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_lists_only_the_toolsets_and_servers_the_caller_may_use() {
    let edn = r#"{:yetibot
 {:local {:user-id "OP" :user-name "operator"}
  :ai {:providers [{:name "local" :url "http://127.0.0.1:9/v1" :model "llama3.2"}]
       :mcp {:servers [{:name "web" :url "http://127.0.0.1:9/mcp"}
                       {:name "github-read" :command "/bin/true"
                        :github-api-token "READ_TOKEN_PLACEHOLDER"}
                       {:name "github-write" :command "/bin/true"}]
             :toolsets [{:name "search" :kind "search" :servers [{:name "web"}]}
                        {:name "github-read" :kind "github-read" :users ["SLACK_USER_ID"]
                         :adapters ["slack"] :repositories ["your-org/your-repo"]
                         :providers [{:name "local" :models ["llama3.2"]}]
                         :servers [{:name "github-read"}]}
                        {:name "github-pr" :kind "github-pr" :users ["SLACK_USER_ID"]
                         :adapters ["slack" "discord"] :repositories ["your-org/your-repo"]
                         :providers [{:name "local" :models ["llama3.2"]}]
                         :base-branches ["main"] :allowed-paths ["src/"]
                         :branch-prefix "yetibot/ai-" :write-server "github-write"
                         :servers [{:name "github-read"}]}]}}}}"#;
    let out = run_ai(edn.to_owned(), vec!["ai toolsets".into()]).await;
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{shown} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        shown.contains("search (search), default: servers web"),
        "{shown}"
    );
    assert!(!shown.contains("github"), "{shown}");
    let out = run_ai(edn.to_owned(), vec!["ai servers".into()]).await;
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{shown}");
    assert!(shown.contains("`web`"), "{shown}");
    // github-read serves only toolsets this caller may not use, and github-write is a
    // writer connection: neither is listed.
    assert!(!shown.contains("github"), "{shown}");
}
