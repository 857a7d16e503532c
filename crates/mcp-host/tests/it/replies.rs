//! Replies are matched to requests by exact ID, type included, against a raw JSON-RPC peer
//! that answers `tools/call` with the request's number written as a string.

use yetibot_mcp_host::{CallOutcome, Host, ToolId, UnknownReason};

use crate::support::{HttpFixture, host, http_config, stdio_config};

fn echo() -> ToolId {
    ToolId::new("raw", "echo")
}

async fn call_echo(host: &Host) -> CallOutcome {
    let session = host.open(&["raw"]).await.expect("opens");
    let outcome = session.call(&echo(), "{}").await.expect("sent");
    session.close().await;
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reply_with_string_id_is_not_taken_as_the_answer() {
    let only_forged = host(&[stdio_config("raw", &["--raw", "string-id"])], 1_000);
    assert_eq!(
        call_echo(&only_forged).await,
        CallOutcome::Unknown(UnknownReason::Timeout)
    );
    let forged_then_real = host(
        &[stdio_config("raw", &["--raw", "string-id-then-real"])],
        10_000,
    );
    let outcome = call_echo(&forged_then_real).await;
    assert_eq!(
        outcome.output().map(|o| o.untrusted_text()),
        Some("genuine"),
        "{outcome:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reply_with_string_id_is_not_taken_as_the_answer_over_http() {
    for mode in ["string-id", "string-id-then-real"] {
        let fixture = HttpFixture::start(&["--raw", mode]).await;
        let host = host(&[http_config("raw", &fixture.url, &[])], 1_000);
        let outcome = call_echo(&host).await;
        // An SSE body with the forged reply first may end the request's stream in rmcp's
        // HTTP worker before the genuine one is read; either way the forged text is never
        // the answer.
        assert!(
            outcome
                .output()
                .is_none_or(|o| o.untrusted_text() == "genuine"),
            "{mode}: {outcome:?}"
        );
        if mode == "string-id" {
            assert!(outcome.is_unknown(), "{mode}: {outcome:?}");
        }
    }
}

/// A result `rmcp`'s types refuse (an embedded resource with neither `text` nor `blob`, as
/// the Go SDK sends an empty file) still reaches a host-side call whole, and a model-side call
/// as a result rather than an unknown outcome.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_file_resource_is_a_result_not_a_malformed_reply() {
    let host = host(&[stdio_config("raw", &["--raw", "empty-file"])], 10_000);
    let session = host.open(&["raw"]).await.expect("opens");
    let reply = session
        .call_for_host(&echo(), serde_json::Map::new())
        .await
        .expect("sent");
    let yetibot_mcp_host::HostReply::Result(result) = reply else {
        panic!("{reply:?}");
    };
    assert_eq!(result["content"][1]["type"], "resource");
    assert!(result["content"][1]["resource"].get("text").is_none());
    let outcome = session.call(&echo(), "{}").await.expect("sent");
    assert!(matches!(outcome, CallOutcome::Success(_)), "{outcome:?}");
    session.close().await;
}
