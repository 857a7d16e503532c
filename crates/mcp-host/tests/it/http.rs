//! Remote servers over Streamable HTTP: JSON and SSE bodies, headers, redirects, outcomes.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use yetibot_mcp_host::{CallOutcome, Error, Session, ToolId, UnknownReason};

use crate::support::{HttpFixture, host, http_config};

const TOKEN: &str = "tok-0123456789abcdef";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_and_sse_bodies_both_work() {
    for mode in [&["--json"][..], &[][..]] {
        let fixture = HttpFixture::start(mode).await;
        let host = host(&[http_config("web", &fixture.url, &[])], 10_000);
        let session = host.open(&["web"]).await.expect("opens");
        let outcome = session
            .call(&ToolId::new("web", "echo"), r#"{"text":"over http"}"#)
            .await
            .expect("sent");
        assert_eq!(
            outcome.output().map(|o| o.untrusted_text()),
            Some("over http")
        );
        session.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bearer_tokens_are_redacted_whole_and_bare() {
    let fixture = HttpFixture::start(&["--secret", TOKEN]).await;
    let bearer = format!("Bearer {TOKEN}");
    let host = host(
        &[http_config(
            "web",
            &fixture.url,
            &[("Authorization", bearer.as_str())],
        )],
        10_000,
    );
    let session = host.open(&["web"]).await.expect("opens");
    let outcome = session
        .call(&ToolId::new("web", "secret"), "{}")
        .await
        .expect("sent");
    let text = outcome.output().expect("answered").untrusted_text();
    assert!(!text.contains("0123456789abcdef"), "{text}");
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hang_and_crash_are_unknown_outcomes() {
    let fixture = HttpFixture::start(&[]).await;
    let host = host(&[http_config("web", &fixture.url, &[])], 300);
    let session = host.open(&["web"]).await.expect("opens");
    let outcome = session
        .call(&ToolId::new("web", "hang"), "{}")
        .await
        .expect("sent");
    assert_eq!(outcome, CallOutcome::Unknown(UnknownReason::Timeout));
    let outcome = session
        .call(&ToolId::new("web", "crash"), "{}")
        .await
        .expect("sent");
    assert!(outcome.is_unknown(), "{outcome:?}");
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_session_sees_the_current_catalog() {
    let fixture = HttpFixture::start(&["--json"]).await;
    let host = host(&[http_config("web", &fixture.url, &[])], 10_000);
    let first = host.open(&["web"]).await.expect("opens");
    let second = host.open(&["web"]).await.expect("opens");
    let has = |s: &yetibot_mcp_host::Session, name: &str| {
        s.catalog().get(&ToolId::new("web", name)).is_some()
    };
    assert!(has(&first, "generation_1"));
    assert!(has(&second, "generation_2"));
    first.close().await;
    second.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_are_not_followed_and_errors_stay_safe() {
    let fixture = HttpFixture::start(&[]).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds");
    let redirect_url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    let target = fixture.url.clone();
    let redirector = tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut buffer = vec![0u8; 65_536];
            let _ = stream.read(&mut buffer).await;
            let reply = format!(
                "HTTP/1.1 307 Temporary Redirect\r\nLocation: {target}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            let _ = stream.write_all(reply.as_bytes()).await;
        }
    });
    let host = host(
        &[http_config(
            "moved",
            &redirect_url,
            &[("X-Api-Key", "header-secret-value")],
        )],
        2_000,
    );
    let error = host.open(&["moved"]).await.expect_err("redirect refused");
    assert!(matches!(error, Error::Unavailable { .. }), "{error}");
    let message = error.to_string();
    assert!(!message.contains("header-secret-value"));
    assert!(!message.contains(&redirect_url));
    redirector.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_server_is_unavailable() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    drop(listener);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let host = host(&[http_config("down", &url, &[])], 2_000);
    let error = host.open(&["down"]).await.expect_err("nothing listens");
    assert_eq!(error.server(), Some("down"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_ends_the_remote_session() {
    let fixture = HttpFixture::start(&[]).await;
    let host = host(&[http_config("web", &fixture.url, &[])], 10_000);
    let first = host.open(&["web"]).await.expect("opens");
    first.close().await;
    let second = host.open(&["web"]).await.expect("opens");
    let outcome = second
        .call(&ToolId::new("web", "deleted_sessions"), "{}")
        .await
        .expect("sent");
    assert_eq!(outcome.output().map(|o| o.untrusted_text()), Some("1"));
    second.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_caller_still_ends_the_remote_session() {
    use futures_util::FutureExt as _;
    let fixture = HttpFixture::start(&[]).await;
    let host = host(&[http_config("web", &fixture.url, &[])], 10_000);
    let panicked =
        std::panic::AssertUnwindSafe(host.scoped(&["web"], async |session: &Session| {
            let _ = session.catalog();
            panic!("the caller fails while holding the session");
        }))
        .catch_unwind()
        .await;
    assert!(panicked.is_err(), "the panic reaches the caller");
    let deleted = host
        .scoped(&["web"], async |session: &Session| {
            let outcome = session
                .call(&ToolId::new("web", "deleted_sessions"), "{}")
                .await
                .expect("sent");
            outcome.output().map(|o| o.untrusted_text().to_owned())
        })
        .await
        .expect("opens");
    assert_eq!(
        deleted.as_deref(),
        Some("1"),
        "the panicked session was ended"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hung_call_sends_notifications_cancelled_over_http() {
    let log = crate::support::TempFile::new("cancel-http");
    let fixture = HttpFixture::start(&["--cancel-log", &log.arg()]).await;
    let host = host(&[http_config("web", &fixture.url, &[])], 1_000);
    let session = host.open(&["web"]).await.expect("opens");
    let outcome = session
        .call(&ToolId::new("web", "hang"), "{}")
        .await
        .expect("sent");
    assert_eq!(outcome, CallOutcome::Unknown(UnknownReason::Timeout));
    session.close().await;
    crate::calls::assert_hang_was_cancelled(&log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_variables_of_the_process_environment_are_ignored() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let fixture = HttpFixture::start(&[]).await;
    // A "proxy" that counts connections and answers none of them.
    let proxy = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds");
    let proxy_url = format!("http://{}", proxy.local_addr().expect("addr"));
    let connections = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&connections);
    let proxy_task = tokio::spawn(async move {
        while let Ok((stream, _)) = proxy.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            drop(stream);
        }
    });
    // The example CLI runs in a child process whose environment names the proxy; this test
    // process's own environment is left alone.
    let cli = crate::support::cli_bin();
    let mut command = tokio::process::Command::new(cli);
    command
        .args(["--http", &fixture.url, "--timeout-ms", "10000", "list"])
        .env_clear()
        .kill_on_drop(true);
    for name in [
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
    ] {
        command.env(name, &proxy_url);
    }
    let output = command.output().await.expect("the CLI runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains("`cli/echo` — "), "{stdout}");
    assert_eq!(connections.load(Ordering::SeqCst), 0);
    proxy_task.abort();
}
