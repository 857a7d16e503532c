//! `yetibot doctor` end to end: the real binary against the provider fixture and the MCP
//! fixture server on loopback, asserting the report, the exit status and exactly which
//! requests reached the provider.

use provider_fixture::{Fixture, Recorded, Reply, script};
use serde_json::{Value, json};

use crate::Workdir;

/// A secret in the provider's key slot: it may reach only that provider's Authorization
/// header, never the report.
const CANARY_KEY: &str = "canary-doctor-key-5e21b7";
/// Text a failing provider puts in its error body, which must never be shown.
const CANARY_BODY: &str = "canary-doctor-body-93c0";

/// Runs `yetibot doctor <args>` with this configuration in a fresh directory, off the async
/// runtime so that the fixture keeps answering.
async fn doctor(edn: String, args: &[&str]) -> std::process::Output {
    let args: Vec<String> = std::iter::once("doctor")
        .chain(args.iter().copied())
        .map(str::to_owned)
        .collect();
    tokio::task::spawn_blocking(move || {
        let dir = Workdir::new();
        let file = dir.path.join("config.edn");
        std::fs::write(&file, edn).expect("write config");
        let path = file.to_str().expect("utf-8").to_owned();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        crate::run_in(&dir, &[("CONFIG_PATH", &path)], &args)
    })
    .await
    .expect("doctor finishes")
}

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Everything the binary printed.
fn printed(output: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// One row of the final table.
#[derive(Debug, PartialEq, Eq)]
struct TableRow {
    check: String,
    target: String,
    result: String,
    detail: String,
}

/// The final table's rows, cut at the header's column positions (the table pads every
/// column to one width, so each row's cells start where the header's names do).
fn table(stdout: &str) -> Vec<TableRow> {
    let lines: Vec<&str> = stdout.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with("check ") && l.contains(" detail"))
        .unwrap_or_else(|| panic!("no table in:\n{stdout}"));
    let header = lines[start];
    let column = |name: &str| header.find(name).expect("a header column");
    let (target, result, detail) = (column("target"), column("result"), column("detail"));
    let cell = |line: &str, from: usize, to: Option<usize>| -> String {
        let chars: Vec<char> = line.chars().collect();
        let end = to.unwrap_or(chars.len()).min(chars.len());
        chars
            .get(from.min(end)..end)
            .map(|c| c.iter().collect::<String>().trim().to_owned())
            .unwrap_or_default()
    };
    lines[start + 1..]
        .iter()
        .take_while(|l| !l.starts_with("doctor: "))
        .map(|line| TableRow {
            check: cell(line, 0, Some(target)),
            target: cell(line, target, Some(result)),
            result: cell(line, result, Some(detail)),
            detail: cell(line, detail, None),
        })
        .collect()
}

fn find<'t>(rows: &'t [TableRow], check: &str, target: &str) -> &'t TableRow {
    rows.iter()
        .find(|r| r.check == check && r.target == target)
        .unwrap_or_else(|| panic!("no {check} row for {target}: {rows:#?}"))
}

fn body(request: &Recorded) -> Value {
    serde_json::from_slice(&request.body).expect("a JSON request body")
}

/// What the fixture received, as `(method, path)` pairs in a stable order (the checks run
/// concurrently, so arrival order is not fixed).
fn received(fixture: &Fixture) -> Vec<(String, String)> {
    let mut requests: Vec<(String, String)> = fixture
        .requests()
        .iter()
        .map(|r| (r.method.clone(), r.path.clone()))
        .collect();
    requests.sort();
    requests
}

fn pair(method: &str, path: &str) -> (String, String) {
    (method.to_owned(), path.to_owned())
}

fn probe_call() -> String {
    json!({
        "choices": [{
            "message": {
                "role": "assistant",
                "content": null,
                "tool_calls": [{
                    "id": "call_probe",
                    "type": "function",
                    "function": {"name": "yetibot__report_probe", "arguments": "{\"status\":\"ok\"}"},
                }],
            },
            "finish_reason": "tool_calls",
        }],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5},
    })
    .to_string()
}

/// Provider `local` (keyed with the canary, model `m1`) on the fixture, plus `extra`
/// inside the `:ai` map.
fn local_provider(fixture: &Fixture, extra: &str) -> String {
    format!(
        r#"{{:yetibot {{:ai {{:providers [{{:name "local" :url "{}" :key "{CANARY_KEY}" :model "m1"}}]{extra}}}}}}}"#,
        fixture.url("/v1")
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_check_passes_against_a_working_provider_and_mcp_servers() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/models",
        Reply::json(r#"{"data":[{"id":"m1","max_model_len":8192},{"id":"m2"}]}"#),
    );
    fixture.route("/v1/chat/completions", Reply::json(probe_call()));
    fixture.route("/bare/v1/models", Reply::json(r#"{"data":[{"id":"x"}]}"#));
    let edn = format!(
        r#"{{:yetibot {{:ai {{:providers [{{:name "local" :url "{}" :key "{CANARY_KEY}" :model "m1"}}
                                        {{:name "bare" :url "{}"}}]
                           :mcp {{:servers [{{:name "fx" :command "{mcp}" :tools ["echo" "hang" "search"]}}
                                            {{:name "odd" :command "{mcp}" :args ["--only-extra" "--extra" "2" "--bad-names"]}}]}}}}}}}}"#,
        fixture.url("/v1"),
        fixture.url("/bare/v1"),
        mcp = crate::mcp_fixture(),
    );
    let out = doctor(edn, &[]).await;
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    assert_eq!(
        text.lines().next(),
        Some(
            "doctor sends one small tool-probe request (at most 256 output tokens) to each provider with a model: local"
        ),
        "the probe is announced before anything is sent"
    );
    let rows = table(&text);
    assert_eq!(rows.len(), 8, "{rows:#?}");
    assert_eq!(
        find(&rows, "models", "local"),
        &TableRow {
            check: "models".into(),
            target: "local".into(),
            result: "ok".into(),
            detail: "2 models; the configured model m1 is listed".into(),
        }
    );
    let context = find(&rows, "context window", "local");
    assert_eq!(
        (context.result.as_str(), context.detail.as_str()),
        ("ok", "8192 tokens, from the model listing")
    );
    let probe = find(&rows, "tool probe", "local");
    assert_eq!(
        (probe.result.as_str(), probe.detail.as_str()),
        ("ok", "the model called yetibot__report_probe")
    );
    assert_eq!(find(&rows, "models", "bare").detail, "1 model");
    for check in ["context window", "tool probe"] {
        let row = find(&rows, check, "bare");
        assert_eq!(
            (row.result.as_str(), row.detail.as_str()),
            ("skipped", "no model configured")
        );
    }
    let fx = find(&rows, "mcp tools", "fx");
    assert_eq!((fx.result.as_str(), fx.detail.as_str()), ("ok", "3 tools"));
    // The badly named tools are reported as dropped, with reasons, and their escape
    // sequences and line breaks never reach the terminal.
    let odd = find(&rows, "mcp tools", "odd");
    assert_eq!(odd.result, "ok");
    assert!(
        odd.detail
            .starts_with("2 tools; 11 dropped (name breaks the MCP naming rule: "),
        "{}",
        odd.detail
    );
    assert!(
        odd.detail
            .ends_with("; listed more than once: `twice`, `twice`; function name collides: `wire.name`, `wire_name`)"),
        "{}",
        odd.detail
    );
    assert!(
        !text.contains('\u{1b}'),
        "no ANSI when stdout is not a terminal"
    );
    // Notice, one line per check, a blank line, header, one row per check, verdict: a
    // server's tool name cannot add a line.
    assert_eq!(text.lines().count(), 1 + 8 + 1 + 1 + 8 + 1, "{text}");
    assert!(
        text.ends_with("doctor: every check passed (6 ok, 2 skipped)\n"),
        "{text}"
    );
    assert!(!printed(&out).contains(CANARY_KEY));
    // Exactly one listing per provider and one probe, the probe small and tool-only.
    assert_eq!(
        received(&fixture),
        [
            pair("GET", "/bare/v1/models"),
            pair("GET", "/v1/models"),
            pair("POST", "/v1/chat/completions"),
        ]
    );
    let requests = fixture.requests();
    let probe = requests
        .iter()
        .find(|r| r.method == "POST")
        .expect("the probe");
    assert_eq!(
        probe
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok()),
        Some(format!("Bearer {CANARY_KEY}").as_str())
    );
    let sent = body(probe);
    assert_eq!(sent["model"], "m1");
    assert_eq!(sent["max_completion_tokens"], 256);
    let tools: Vec<&str> = sent["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert_eq!(tools, ["yetibot__report_probe"]);
    let messages = sent["messages"].as_array().expect("messages");
    assert_eq!(
        messages.len(),
        1,
        "the probe is the only prompt: {messages:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_provider_fails_with_its_own_reason_but_never_its_body_or_key() {
    let fixture = Fixture::start().await.expect("fixture");
    // The provider's account of the error is shown (its key redacted); the rest of its
    // body never is.
    let failure = format!(
        r#"{{"error":{{"message":"overloaded for {CANARY_KEY}","trace":"{CANARY_BODY}"}}}}"#
    );
    fixture.route("/v1/models", Reply::status_json(500, failure.clone()));
    fixture.route("/v1/chat/completions", Reply::status_json(500, failure));
    let out = doctor(local_provider(&fixture, ""), &[]).await;
    assert_eq!(out.status.code(), Some(1), "{}", printed(&out));
    let rows = table(&stdout(&out));
    let models = find(&rows, "models", "local");
    assert_eq!(
        (models.result.as_str(), models.detail.as_str()),
        (
            "FAILED",
            "http-status: provider local answered HTTP 500 (Internal Server Error): overloaded for [redacted]"
        )
    );
    let context = find(&rows, "context window", "local");
    assert_eq!(
        (context.result.as_str(), context.detail.as_str()),
        ("skipped", "needs the model listing, which failed")
    );
    assert_eq!(find(&rows, "tool probe", "local").result, "FAILED");
    assert!(
        stdout(&out).ends_with("doctor: 2 of 3 checks FAILED (0 ok, 1 skipped)\n"),
        "{}",
        stdout(&out)
    );
    for canary in [CANARY_BODY, CANARY_KEY] {
        assert!(
            !printed(&out).contains(canary),
            "{canary} printed: {}",
            printed(&out)
        );
    }
    assert_eq!(
        received(&fixture),
        [
            pair("GET", "/v1/models"),
            pair("POST", "/v1/chat/completions")
        ],
        "nothing is retried"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_probe_answered_in_text_does_not_confirm_tool_calling() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route("/v1/models", Reply::json(r#"{"data":[{"id":"m1"}]}"#));
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion(
            r#"{"name":"yetibot__report_probe","arguments":{"status":"ok"}}"#,
        )),
    );
    let out = doctor(local_provider(&fixture, ""), &[]).await;
    assert_eq!(out.status.code(), Some(1), "{}", printed(&out));
    let rows = table(&stdout(&out));
    let probe = find(&rows, "tool probe", "local");
    assert_eq!(
        (probe.result.as_str(), probe.detail.as_str()),
        (
            "FAILED",
            "the model answered without calling yetibot__report_probe: tool calling is not confirmed"
        ),
        "text that looks like a call is not a call"
    );
    let context = find(&rows, "context window", "local");
    assert_eq!(
        (context.result.as_str(), context.detail.as_str()),
        ("ok", "not reported"),
        "an unreported window is a result, not a failure"
    );
    assert_eq!(find(&rows, "models", "local").result, "ok");
    assert_eq!(
        received(&fixture),
        [
            pair("GET", "/v1/models"),
            pair("POST", "/v1/chat/completions")
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_probe_sends_no_post_at_all() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route("/v1/models", Reply::json(r#"{"data":[{"id":"m1"}]}"#));
    fixture.route("/v1/chat/completions", Reply::json(probe_call()));
    let edn = format!(
        r#"{{:yetibot {{:ai {{:providers [{{:name "local" :url "{}" :key "{CANARY_KEY}" :model "m1" :context-length 4096}}]}}}}}}"#,
        fixture.url("/v1")
    );
    let out = doctor(edn, &["--no-probe"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    let text = stdout(&out);
    assert!(
        !text.contains("tool-probe request"),
        "nothing to announce: {text}"
    );
    let rows = table(&text);
    let probe = find(&rows, "tool probe", "local");
    assert_eq!(
        (probe.result.as_str(), probe.detail.as_str()),
        ("skipped", "--no-probe")
    );
    assert_eq!(
        find(&rows, "context window", "local").detail,
        "not reported; the configured :context-length 4096 applies"
    );
    assert_eq!(received(&fixture), [pair("GET", "/v1/models")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_mcp_server_fails_and_hides_no_other_server() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let edn = format!(
        r#"{{:yetibot {{:ai {{:mcp {{:timeout-ms 2000
                                   :servers [{{:name "gone" :url "http://127.0.0.1:{port}/mcp" :headers {{"Authorization" "Bearer {CANARY_KEY}"}}}}
                                             {{:name "fx" :command "{}" :tools ["echo"]}}]}}}}}}}}"#,
        crate::mcp_fixture()
    );
    let out = doctor(edn, &[]).await;
    assert_eq!(out.status.code(), Some(1), "{}", printed(&out));
    let rows = table(&stdout(&out));
    assert_eq!(rows.len(), 2, "{rows:#?}");
    let gone = find(&rows, "mcp tools", "gone");
    assert_eq!(gone.result, "FAILED");
    assert!(
        gone.detail
            .starts_with(r#"MCP server "gone" is unavailable: "#),
        "{}",
        gone.detail
    );
    assert_eq!(find(&rows, "mcp tools", "fx").detail, "1 tool");
    assert!(!printed(&out).contains(CANARY_KEY));
    assert!(
        !printed(&out).contains(&port.to_string()),
        "no URL is shown: {}",
        printed(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_configured_is_said_and_passes() {
    let out = doctor("{}".to_owned(), &[]).await;
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    assert_eq!(
        stdout(&out),
        "nothing to check: no AI providers or MCP servers are configured\n"
    );
    assert!(out.stderr.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_configuration_exits_2_with_the_check_config_report() {
    let edn = format!(
        r#"{{:yetibot {{:ai {{:providers [{{:name "a b" :url "https://x.example/v1?q=1" :key "{CANARY_KEY}"}}]}}}}}}"#
    );
    let out = doctor(edn.clone(), &[]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let checked = tokio::task::spawn_blocking(move || {
        let dir = Workdir::new();
        let file = dir.path.join("config.edn");
        std::fs::write(&file, edn).expect("write config");
        let path = file.to_str().expect("utf-8").to_owned();
        crate::run_in(&dir, &[("CONFIG_PATH", &path)], &["check-config"])
    })
    .await
    .expect("check-config finishes");
    assert_eq!(checked.status.code(), Some(2));
    assert_eq!(
        out.stderr, checked.stderr,
        "the same report as check-config"
    );
    assert!(!printed(&out).contains(CANARY_KEY));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_model_a_complete_listing_lacks_fails_with_the_closest_ids() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/models",
        Reply::json(r#"{"data":[{"id":"m10"},{"id":"llama3.2"},{"id":"m2"}]}"#),
    );
    let out = doctor(local_provider(&fixture, ""), &["--no-probe"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", printed(&out));
    let rows = table(&stdout(&out));
    let models = find(&rows, "models", "local");
    assert_eq!(
        (models.result.as_str(), models.detail.as_str()),
        (
            "FAILED",
            "3 models; the configured model m1 is not listed (closest: m10, m2, llama3.2)"
        )
    );
    assert_eq!(received(&fixture), [pair("GET", "/v1/models")]);
}
