//! Transport rules: no redirects, no retries, closed error categories, bounds, deadlines.

use std::time::Duration;

use provider_fixture::{End, Fixture, Reply};
use serde_json::json;
use yetibot_ai_providers::{Category, Client, ClientOptions, TurnRequest};

use crate::support::{BODY_MARKER, assert_safe, client, client_with_read_timeout, keyed};

const MODELS: &str = r#"{"data":[{"id":"m"}]}"#;

async fn list_error(fixture: &Fixture, client: &Client) -> yetibot_ai_providers::Error {
    let p = keyed("p", &fixture.url("/v1"));
    let error = client.list_models(&p).await.expect_err("should fail");
    assert_safe(&error);
    error
}

#[tokio::test]
async fn redirects_are_errors_and_never_followed() {
    for status in [301, 302, 307, 308] {
        let fixture = Fixture::start().await.expect("fixture");
        fixture.route(
            "/v1/models",
            Reply::redirect(status, &fixture.url("/elsewhere")),
        );
        fixture.route("/elsewhere", Reply::json(MODELS));
        let error = list_error(&fixture, &client()).await;
        assert_eq!(error.category(), Category::Redirect);
        assert!(error.to_string().contains(&status.to_string()));
        assert_eq!(fixture.count("/elsewhere"), 0);
        assert_eq!(fixture.count("/v1/models"), 1);
    }
}

#[tokio::test]
async fn failures_are_never_retried() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/chat/completions",
        Reply::status_json(500, format!("{{\"trace\":\"{BODY_MARKER}\"}}")),
    );
    let p = keyed("p", &fixture.url("/v1"));
    let error = client()
        .turn(&p, &TurnRequest::prompt("hi"), &mut |_| {})
        .await
        .expect_err("500");
    assert_eq!(error.category(), Category::HttpStatus);
    assert_eq!(
        error.to_string(),
        "provider p answered HTTP 500 (Internal Server Error)"
    );
    assert!(!error.is_unknown_outcome());
    assert_safe(&error);
    assert_eq!(fixture.count("/v1/chat/completions"), 1);
}

#[tokio::test]
async fn rate_limits_keep_a_bounded_numeric_retry_after() {
    let check = |header: Option<&'static str>, expect: Option<u64>| async move {
        let fixture = Fixture::start().await.expect("fixture");
        let mut reply = Reply::status_json(429, BODY_MARKER);
        if let Some(h) = header {
            reply = reply.header("retry-after", h);
        }
        fixture.route("/v1/models", reply);
        let error = list_error(&fixture, &client()).await;
        assert_eq!(error.category(), Category::RateLimited);
        assert_eq!(error.retry_after_secs(), expect, "{header:?}");
        assert_eq!(fixture.requests().len(), 1);
    };
    check(Some("30"), Some(30)).await;
    check(None, None).await;
    check(Some("Wed, 21 Oct 2015 07:28:00 GMT"), None).await;
    check(Some("99999999999"), None).await;
}

#[tokio::test]
async fn forbidden_is_access_denied() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route("/v1/models", Reply::status_json(403, BODY_MARKER));
    let error = list_error(&fixture, &client()).await;
    assert_eq!(error.category(), Category::AccessDenied);
}

#[tokio::test]
async fn a_closed_port_is_unreachable() {
    let addr = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr")
    };
    let p = keyed("p", &format!("http://{addr}/v1"));
    let error = client().list_models(&p).await.expect_err("closed port");
    assert_eq!(error.category(), Category::Unreachable);
    assert!(!error.is_unknown_outcome());
    assert_safe(&error);
}

#[tokio::test]
async fn oversized_json_is_refused() {
    let fixture = Fixture::start().await.expect("fixture");
    let big = format!("{{\"data\":[],\"pad\":\"{}\"}}", "x".repeat(2048));
    fixture.route("/v1/models", Reply::json(big));
    let small = Client::new(ClientOptions {
        max_listing_bytes: 1024,
        ..ClientOptions::default()
    })
    .expect("client");
    let error = list_error(&fixture, &small).await;
    assert_eq!(error.category(), Category::TooLarge);
}

#[tokio::test]
async fn malformed_json_is_a_category_not_a_body_echo() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route("/v1/models", Reply::json(format!("not json {BODY_MARKER}")));
    let error = list_error(&fixture, &client()).await;
    assert_eq!(error.category(), Category::Malformed);
}

#[tokio::test]
async fn a_stalled_body_hits_the_read_deadline() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/models",
        Reply::sse_chunks(["{\"data\":"]).ending(End::Stall),
    );
    let error = list_error(
        &fixture,
        &client_with_read_timeout(Duration::from_millis(200)),
    )
    .await;
    assert_eq!(error.category(), Category::Timeout);
    assert!(error.is_unknown_outcome());
    assert_eq!(fixture.requests().len(), 1);
}

#[tokio::test]
async fn an_aborted_body_is_a_lost_connection_not_malformed_bytes() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route("/v1/models", Reply::json("{\"data\":[").ending(End::Abort));
    let error = list_error(&fixture, &client()).await;
    assert_eq!(error.category(), Category::ConnectionLost);
    assert!(
        error
            .user_message()
            .starts_with("provider p lost the connection "),
        "{}",
        error.user_message()
    );
    assert!(error.is_unknown_outcome());
}

#[test]
fn operation_futures_are_send() {
    fn assert_send<T: Send>(_: &T) {}
    let client = client();
    let p = keyed("p", "http://127.0.0.1:9/v1");
    let request = TurnRequest::prompt("hi");
    let mut on_event = |_| {};
    assert_send(&client.turn(&p, &request, &mut on_event));
    assert_send(&client.list_models(&p));
    assert_send(&client.probe(&p, None));
}

/// A JSON body dripping one byte every 100 seconds never trips the read deadline; the
/// whole-request ceiling (ten minutes by default) ends it.
#[tokio::test(start_paused = true)]
async fn a_json_body_dripping_bytes_hits_the_whole_request_ceiling() {
    let fixture = Fixture::start().await.expect("fixture");
    let body = r#"{"data":[{"id":"a"},{"id":"b"}]}"#;
    let chunks: Vec<String> = body.chars().map(String::from).collect();
    fixture.route(
        "/v1/models",
        Reply::sse_chunks(chunks).slow(Duration::from_secs(100)),
    );
    let started = tokio::time::Instant::now();
    let error = list_error(&fixture, &client()).await;
    assert_eq!(error.category(), Category::Timeout);
    assert!(error.to_string().contains("whole request"), "{error}");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(600) && waited < Duration::from_secs(605),
        "{waited:?}"
    );
}

/// A published document (a release feed) comes through the same bounded transport: no
/// credential, no redirect, the byte bound, and errors that name only the given label.
#[tokio::test]
async fn public_documents_are_read_bounded_without_credentials() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route("/feed.json", Reply::json(r#"{"notes":[]}"#));
    fixture.route("/big.json", Reply::json("x".repeat(2_000)));
    fixture.route(
        "/moved.json",
        Reply::redirect(302, &fixture.url("/feed.json")),
    );
    fixture.route("/gone.json", Reply::status_json(404, BODY_MARKER));
    let client = client();
    let body = client
        .fetch_document("release feed", &fixture.url("/feed.json"), 1_000)
        .await
        .expect("document");
    assert_eq!(body, br#"{"notes":[]}"#);
    let big = client
        .fetch_document("release feed", &fixture.url("/big.json"), 1_000)
        .await
        .expect_err("too large");
    assert_eq!(big.category(), Category::TooLarge);
    let moved = client
        .fetch_document("release feed", &fixture.url("/moved.json"), 1_000)
        .await
        .expect_err("redirect");
    assert_eq!(moved.category(), Category::Redirect);
    let gone = client
        .fetch_document("release feed", &fixture.url("/gone.json"), 1_000)
        .await
        .expect_err("404");
    assert_eq!(gone.category(), Category::HttpStatus);
    for error in [&big, &moved, &gone] {
        assert_safe(error);
        assert!(error.to_string().contains("release feed"), "{error}");
        assert!(!error.to_string().contains("127.0.0.1"), "{error}");
    }
    assert_eq!(
        fixture.count("/feed.json"),
        1,
        "the redirect was not followed"
    );
    assert!(
        fixture
            .requests()
            .iter()
            .all(|r| r.method == "GET" && !r.headers.contains_key("authorization"))
    );
}

#[tokio::test]
async fn a_status_error_shows_what_the_provider_said_bounded_clean_and_redacted() {
    let check = |body: String, expected: &'static str| async move {
        let fixture = Fixture::start().await.expect("fixture");
        fixture.route("/v1/chat/completions", Reply::status_json(400, body));
        let error = client()
            .turn(
                &keyed("p", &fixture.url("/v1")),
                &TurnRequest::prompt("hi"),
                &mut |_| {},
            )
            .await
            .expect_err("400");
        assert_eq!(error.category(), Category::HttpStatus);
        assert_eq!(error.to_string(), expected);
        assert!(!error.to_string().contains(crate::support::KEY), "{error}");
        assert_eq!(fixture.count("/v1/chat/completions"), 1, "never resent");
    };
    // LiteLLM's shape: the reason, not just the status.
    check(
        json!({"error": {"message": "Invalid model name passed in model=gpt-x", "code": "400"}})
            .to_string(),
        "provider p answered HTTP 400 (Bad Request): Invalid model name passed in model=gpt-x",
    )
    .await;
    // A credential the provider echoes is redacted, control characters and line breaks go.
    check(
        json!({"error": {"message": format!("bad key {}\n\u{1b}[31mretry\u{7}", crate::support::KEY)}})
            .to_string(),
        "provider p answered HTTP 400 (Bad Request): bad key [redacted] [31mretry",
    )
    .await;
    // Only a code: the code.
    check(
        json!({"error": {"code": "model_not_found"}}).to_string(),
        "provider p answered HTTP 400 (Bad Request): model_not_found",
    )
    .await;
    // Text that is not JSON, or JSON without a message, is never shown.
    check(
        format!("<html>{}</html>", crate::support::BODY_MARKER),
        "provider p answered HTTP 400 (Bad Request)",
    )
    .await;
    // A long account is cut to 300 characters.
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/chat/completions",
        Reply::status_json(400, json!({"message": "é".repeat(5000)}).to_string()),
    );
    let error = client()
        .turn(
            &keyed("p", &fixture.url("/v1")),
            &TurnRequest::prompt("hi"),
            &mut |_| {},
        )
        .await
        .expect_err("400");
    let detail = error
        .to_string()
        .split_once("): ")
        .map(|(_, d)| d.to_owned())
        .expect("a detail");
    assert_eq!(
        detail.chars().count(),
        301,
        "300 characters and the ellipsis"
    );
}
