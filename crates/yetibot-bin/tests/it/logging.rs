//! Log hygiene end to end: the most verbose logging an operator can ask for without naming
//! a protocol crate still writes no credential, prompt, tool argument or tool result, and
//! `--log-format json` writes only JSON objects.

use provider_fixture::{Fixture, Reply, script};
use serde_json::{Value, json};

use crate::Workdir;

pub(crate) const KEY_CANARY: &str = "canary-log-provider-key-7d1e";
pub(crate) const ENV_CANARY: &str = "canary-log-mcp-env-44b9";
pub(crate) const PROMPT_CANARY: &str = "canary-log-prompt-0f3a";
pub(crate) const ARGUMENT_CANARY: &str = "canary-log-tool-argument-c52d";
pub(crate) const ANSWER_CANARY: &str = "canary-log-answer-e6a0";

/// Runs the binary with these arguments and extra variables, off the async runtime so that
/// the fixture keeps answering.
async fn yetibot(
    edn: String,
    env: Vec<(&'static str, &'static str)>,
    args: Vec<String>,
) -> std::process::Output {
    tokio::task::spawn_blocking(move || {
        let dir = Workdir::new();
        let file = dir.path.join("config.edn");
        std::fs::write(&file, edn).expect("write config");
        let path = file.to_str().expect("utf-8").to_owned();
        let mut vars: Vec<(&str, &str)> = vec![("CONFIG_PATH", path.as_str())];
        vars.extend(env.iter().copied());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        crate::run_in(&dir, &vars, &args)
    })
    .await
    .expect("the run finishes")
}

/// A provider whose model calls the fixture's `echo` tool with the argument canary, then
/// answers with the answer canary.
pub(crate) async fn tool_using_fixture() -> Fixture {
    let fixture = Fixture::start().await.expect("fixture");
    let call = json!({
        "choices": [{
            "message": {
                "role": "assistant",
                "content": null,
                "tool_calls": [{
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "fx__echo", "arguments": json!({"text": ARGUMENT_CANARY}).to_string()},
                }],
            },
            "finish_reason": "tool_calls",
        }],
    });
    fixture.route("/v1/chat/completions", Reply::json(call.to_string()));
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion(ANSWER_CANARY)),
    );
    fixture
}

pub(crate) fn config(fixture: &Fixture) -> String {
    format!(
        r#"{{:yetibot {{:ai {{:providers [{{:name "local" :url "{}" :key "{KEY_CANARY}" :model "m1"}}]
                           :mcp {{:servers [{{:name "fx" :command "{}" :env {{"FIXTURE_SECRET" "{ENV_CANARY}"}} :tools ["echo"]}}]}}}}}}}}"#,
        fixture.url("/v1"),
        crate::mcp_fixture()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trace_logging_of_a_tool_using_request_leaks_nothing_and_is_json() {
    let fixture = tool_using_fixture().await;
    let out = yetibot(
        config(&fixture),
        vec![("RUST_LOG", "trace")],
        vec![
            "--log-format".into(),
            "json".into(),
            "run".into(),
            format!("ai Please echo this for me: {PROMPT_CANARY}"),
        ],
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("{ANSWER_CANARY}\n")
    );
    // The request really went through the tool: the echo result reached the model.
    let requests = fixture.requests();
    assert_eq!(requests.len(), 2);
    assert!(String::from_utf8_lossy(&requests[1].body).contains(ARGUMENT_CANARY));
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(
        lines.iter().any(|l| l.contains("running one command line")),
        "logging is on for run: {stderr}"
    );
    for line in &lines {
        let parsed: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert!(parsed.is_object(), "not a JSON object: {line}");
        for canary in [
            KEY_CANARY,
            ENV_CANARY,
            PROMPT_CANARY,
            ARGUMENT_CANARY,
            ANSWER_CANARY,
        ] {
            assert!(!line.contains(canary), "{canary} logged: {line}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_keeps_standard_error_empty_by_default() {
    let fixture = tool_using_fixture().await;
    let out = yetibot(
        config(&fixture),
        vec![],
        vec!["run".into(), format!("ai Echo {PROMPT_CANARY}")],
    )
    .await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_human_format_is_the_default_and_an_unknown_format_is_refused() {
    let out = crate::run(&[], &["--log-format", "xml", "run", "echo hi"]);
    assert_eq!(out.status.code(), Some(64), "a usage error");
    assert!(out.stdout.is_empty());
    let out = crate::run(&[("RUST_LOG", "debug")], &["run", "echo hi"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hi\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("running one command line"), "{stderr}");
    assert!(
        !stderr.trim_start().starts_with('{'),
        "human lines, not JSON: {stderr}"
    );
    assert!(
        !stderr.contains('\u{1b}'),
        "no colour when stderr is a pipe"
    );
}
