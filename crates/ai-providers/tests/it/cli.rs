//! The ai-cli example, run as a process against the fixture. Plain `cargo test -p
//! yetibot-ai-providers` builds the example first; selecting only `--test it` reuses the last build.

use std::path::PathBuf;
use std::process::{Command, Output};

use provider_fixture::{Fixture, Reply};
use serde_json::{Value, json};

fn cli_path() -> PathBuf {
    // The test binary lives in target/<profile>/deps; examples in target/<profile>/examples.
    let exe = std::env::current_exe().expect("test binary path");
    let profile = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("profile dir");
    profile
        .join("examples")
        .join(format!("ai-cli{}", std::env::consts::EXE_SUFFIX))
}

async fn cli(args: Vec<String>, key: Option<&'static str>) -> Output {
    tokio::task::spawn_blocking(move || {
        let mut command = Command::new(cli_path());
        command.args(args).env_remove("AI_CLI_KEY");
        if let Some(key) = key {
            command.env("AI_CLI_KEY", key);
        }
        command.output().expect("run ai-cli")
    })
    .await
    .expect("join")
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| (*s).to_owned()).collect()
}

#[tokio::test]
async fn models_prints_one_id_per_line() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/models",
        Reply::json(r#"{"data":[{"id":"b"},{"id":"a"}]}"#),
    );
    let url = fixture.url("/v1");
    let out = cli(strings(&["models", "--url", &url]), Some("cli-key")).await;
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "a\nb\n");
    assert_eq!(
        fixture.requests()[0]
            .headers
            .get("authorization")
            .expect("auth"),
        "Bearer cli-key"
    );
}

#[tokio::test]
async fn ask_streams_events_then_a_final_line() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route("/v1/chat/completions", Reply::sse_events([
        json!({"choices": [{"delta": {"content": "Hi"}, "finish_reason": null}]}).to_string(),
        json!({"choices": [{"delta": {}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}).to_string(),
        "[DONE]".to_owned(),
    ]));
    let url = fixture.url("/v1");
    let args = strings(&[
        "ask",
        "--url",
        &url,
        "--api",
        "chat-completions",
        "--model",
        "m",
        "--stream",
        "say",
        "hi",
    ]);
    let out = cli(args, None).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    assert_eq!(lines[0], json!({"event": "text-delta", "text": "Hi"}));
    let last = lines.last().expect("final line");
    assert_eq!(last["answer"], "Hi");
    assert_eq!(last["usage"]["input_tokens"], 1);
    let body: Value = serde_json::from_slice(&fixture.requests()[0].body).expect("json");
    assert_eq!(body["messages"][0]["content"], "say hi");
}

#[tokio::test]
async fn provider_errors_exit_1_and_usage_errors_exit_2() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/models",
        Reply::status_json(429, "{\"secret\":\"body\"}").header("retry-after", "7"),
    );
    let url = fixture.url("/v1");
    let out = cli(strings(&["models", "--url", &url]), Some("cli-key")).await;
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("rate-limited: "), "{err}");
    assert!(!err.contains("cli-key") && !err.contains("body"));
    let out = cli(strings(&["ask", "--url", &url]), None).await;
    assert_eq!(out.status.code(), Some(2));
    let out = cli(strings(&["frobnicate"]), None).await;
    assert_eq!(out.status.code(), Some(2));
}

#[tokio::test]
async fn models_follows_the_listing_kind_and_key_file() {
    use provider_fixture::script;
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/client/v4/accounts/abc/ai/models/search",
        Reply::json(script::cloudflare_page(1, &["@cf/b", "@cf/a"], 2)),
    );
    let key_file = std::env::temp_dir().join(format!("ai-cli-it-{}", std::process::id()));
    std::fs::write(&key_file, "file-key\n").expect("key file");
    let url = fixture.url("/client/v4/accounts/abc/ai/v1");
    let path = key_file.to_string_lossy().into_owned();
    let args = strings(&[
        "models",
        "--url",
        &url,
        "--listing",
        "cloudflare",
        "--key-file",
        &path,
    ]);
    let out = cli(args, Some("env-key-not-used")).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "@cf/a\n@cf/b\n");
    let request = &fixture.requests()[0];
    assert_eq!(
        request.headers.get("authorization").expect("auth"),
        "Bearer file-key"
    );
    assert_eq!(request.query.as_deref(), Some("page=1&per_page=100"));
    let _ = std::fs::remove_file(key_file);
}

#[tokio::test]
async fn ask_with_the_tool_probe_reports_a_real_call() {
    let fixture = Fixture::start().await.expect("fixture");
    let reply = json!({"choices": [{"message": {"content": null, "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": yetibot_ai_providers::PROBE_TOOL, "arguments": "{\"status\":\"ok\"}"}}]}, "finish_reason": "tool_calls"}]});
    fixture.route("/v1/chat/completions", Reply::json(reply.to_string()));
    let url = fixture.url("/v1");
    let args = strings(&[
        "ask",
        "--url",
        &url,
        "--api",
        "chat-completions",
        "--model",
        "m",
        "--tool-probe",
        "probe",
    ]);
    let out = cli(args, None).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last: Value = serde_json::from_str(stdout.lines().last().expect("line")).expect("json");
    assert_eq!(last["tool_call"], true);
    assert_eq!(
        last["tool_calls"][0]["name"],
        yetibot_ai_providers::PROBE_TOOL
    );
}
