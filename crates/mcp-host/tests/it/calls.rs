//! Tool calls over stdio: outcomes, bounds and redaction.

use yetibot_mcp_host::limits::MAX_RESULT_CHARS;
use yetibot_mcp_host::{CallOutcome, Error, Session, ToolId, UnknownReason};
use yetibot_redaction::Secret;

use crate::support::{host, stdio_config};

const SECRET: &str = "s3cr3t-\"quoted\"-value";

async fn open(timeout_ms: i64) -> (yetibot_mcp_host::Host, Session) {
    let mut config = stdio_config("fx", &[]);
    config.env = Some(
        [("FIXTURE_SECRET".to_owned(), Secret::new(SECRET))]
            .into_iter()
            .collect(),
    );
    let host = host(&[config], timeout_ms);
    let session = host.open(&["fx"]).await.expect("opens");
    (host, session)
}

fn id(name: &str) -> ToolId {
    ToolId::new("fx", name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outcomes_success_tool_error_and_media() {
    let (_host, session) = open(10_000).await;
    let echo = session
        .call(&id("echo"), r#"{"text": "hello"}"#)
        .await
        .expect("sent");
    assert!(matches!(&echo, CallOutcome::Success(o) if o.untrusted_text() == "hello"));

    let fail = session.call(&id("fail"), "{}").await.expect("sent");
    assert!(matches!(&fail, CallOutcome::ToolError(o) if o.untrusted_text() == "it failed"));

    let image = session.call(&id("image"), "").await.expect("sent");
    let output = image.output().expect("answered");
    assert_eq!(output.media_omitted(), 2);
    assert!(
        output
            .untrusted_text()
            .starts_with("caption\n[image omitted")
    );
    assert!(!output.untrusted_text().contains("iVBORw0KGgo"));

    let big = session.call(&id("big"), "{}").await.expect("sent");
    let output = big.output().expect("answered");
    assert!(output.truncated());
    assert_eq!(output.untrusted_text().chars().count(), MAX_RESULT_CHARS);
    assert_eq!(big.to_json()["outcome"], "success");
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_are_redacted_raw_and_json_escaped() {
    let (_host, session) = open(10_000).await;
    let outcome = session.call(&id("secret"), "{}").await.expect("sent");
    let text = outcome
        .output()
        .expect("answered")
        .untrusted_text()
        .to_owned();
    assert!(!text.contains("s3cr3t"), "{text}");
    assert_eq!(
        text.matches(yetibot_redaction::REDACTED).count(),
        2,
        "{text}"
    );
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_secrets_are_redacted_too() {
    let servers =
        yetibot_mcp_host::ServerSet::from_config(&[stdio_config("fx", &[])], Some(10_000))
            .expect("ok");
    let provider_key = Secret::new("provider-key-0123456789");
    let options = yetibot_mcp_host::HostOptions::new().with_host_secrets([&provider_key]);
    let host = yetibot_mcp_host::Host::new(servers, options).expect("host");
    let session = host.open(&["fx"]).await.expect("opens");
    let outcome = session
        .call(&id("echo"), r#"{"text": "key=provider-key-0123456789"}"#)
        .await
        .expect("sent");
    assert_eq!(
        outcome.output().map(|o| o.untrusted_text()),
        Some("key=[redacted]")
    );
    session.close().await;
}

/// The binary builds one set from the whole configuration and hands it to every crate; the
/// host redacts that set's values (including the bare token of a `Bearer` value, which the
/// redaction crate derives) on top of its servers' own credentials.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_configured_set_is_used_as_given() {
    let servers =
        yetibot_mcp_host::ServerSet::from_config(&[stdio_config("fx", &[])], Some(10_000))
            .expect("ok");
    let configured = yetibot_redaction::Secrets::from_secrets([&Secret::new(
        "Bearer configured-token-0123456789",
    )])
    .expect("secrets");
    let options = yetibot_mcp_host::HostOptions::new().with_secrets(configured);
    let host = yetibot_mcp_host::Host::new(servers, options).expect("host");
    let session = host.open(&["fx"]).await.expect("opens");
    let outcome = session
        .call(&id("echo"), r#"{"text": "t=configured-token-0123456789"}"#)
        .await
        .expect("sent");
    assert_eq!(
        outcome.output().map(|o| o.untrusted_text()),
        Some("t=[redacted]")
    );
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hang_times_out_as_unknown_and_the_session_still_closes() {
    let (_host, session) = open(300).await;
    let outcome = session.call(&id("hang"), "{}").await.expect("sent");
    assert_eq!(outcome, CallOutcome::Unknown(UnknownReason::Timeout));
    assert!(outcome.is_unknown());
    let pid = session.process_ids()[0];
    session.close().await;
    assert!(crate::support::process_ended(pid));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_mid_call_is_unknown() {
    let (_host, session) = open(10_000).await;
    let outcome = session.call(&id("crash"), "{}").await.expect("sent");
    assert!(outcome.is_unknown(), "{outcome:?}");
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_calls_are_rejected_before_sending() {
    let (_host, session) = open(10_000).await;
    let long = format!(r#"{{"text": "{}"}}"#, "a".repeat(17_000));
    for (tool, args) in [
        ("echo", long.as_str()),
        ("echo", "[1, 2]"),
        ("echo", "not json"),
        ("nope", "{}"),
    ] {
        let error = session.call(&id(tool), args).await.expect_err("rejected");
        assert!(error.is_rejected_before_send(), "{error}");
    }
    let error = session
        .call(&ToolId::new("other", "echo"), "{}")
        .await
        .expect_err("rejected");
    assert!(matches!(error, Error::UnknownTool { .. }));
    // The session is still usable afterwards.
    let outcome = session
        .call(&id("echo"), r#"{"text":"ok"}"#)
        .await
        .expect("sent");
    assert_eq!(outcome.output().map(|o| o.untrusted_text()), Some("ok"));
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_client_capabilities_are_advertised() {
    let (_host, session) = open(10_000).await;
    let outcome = session
        .call(&id("client_capabilities"), "{}")
        .await
        .expect("sent");
    let text = outcome.output().expect("answered").untrusted_text();
    let capabilities: serde_json::Value = serde_json::from_str(text).expect("JSON");
    for capability in ["sampling", "roots", "elicitation"] {
        assert!(capabilities.get(capability).is_none(), "{text}");
    }
    session.close().await;
}

/// Checks the fixture's record: one `hang` call, then exactly one cancellation naming that
/// call's request ID (same JSON type) with a reason.
pub(crate) fn assert_hang_was_cancelled(log: &crate::support::TempFile) {
    let lines = log.lines();
    let hung: Vec<&serde_json::Value> = lines.iter().filter_map(|l| l.get("hang")).collect();
    assert_eq!(hung.len(), 1, "{lines:?}");
    let cancelled: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|l| l.get("requestId").is_some())
        .collect();
    assert_eq!(cancelled.len(), 1, "{lines:?}");
    assert_eq!(&cancelled[0]["requestId"], hung[0], "{lines:?}");
    assert!(
        cancelled[0]["reason"]
            .as_str()
            .is_some_and(|r| !r.is_empty()),
        "{lines:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hung_call_sends_notifications_cancelled() {
    let log = crate::support::TempFile::new("cancel-stdio");
    let host = host(&[stdio_config("fx", &["--cancel-log", &log.arg()])], 1_000);
    let session = host.open(&["fx"]).await.expect("opens");
    let outcome = session.call(&id("hang"), "{}").await.expect("sent");
    assert_eq!(outcome, CallOutcome::Unknown(UnknownReason::Timeout));
    session.close().await;
    assert_hang_was_cancelled(&log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn result_display_text_has_no_escapes_while_the_model_text_is_unchanged() {
    let (_host, session) = open(10_000).await;
    let hostile = "ok\u{1b}[2J\u{1b}]8;;https://x\u{7}link\u{200b}\u{202e}";
    let arguments = serde_json::json!({ "text": hostile }).to_string();
    let outcome = session.call(&id("echo"), &arguments).await.expect("sent");
    let output = outcome.output().expect("answered");
    assert_eq!(output.untrusted_text(), hostile);
    assert_eq!(output.display_text(), "oklink");
    assert_eq!(outcome.to_json()["text"], "oklink");
    session.close().await;
}
