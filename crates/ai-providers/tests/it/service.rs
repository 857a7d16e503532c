//! `Client::call_service` against the provider fixture: the request it sends (method,
//! content type, bearer), the bounds it keeps (no body in errors, the reply bound), and how
//! its errors tell a request that never left and one the service refused from one whose
//! outcome is unknown.

use provider_fixture::{End, Fixture, Reply};
use yetibot_ai_providers::{Category, ServiceBody, ServiceCall};
use yetibot_redaction::Secret;

use crate::support::{BODY_MARKER, KEY, assert_safe, client};

#[tokio::test]
async fn a_form_post_and_a_get_go_out_as_asked_and_come_back_whole() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route("/form", Reply::json(r#"{"ok":true}"#));
    fixture.route("/read", Reply::json(r#"[1,2,3]"#));
    let client = client();
    let url = fixture.url("/form");
    let call = ServiceCall::post(
        "Imgflip",
        &url,
        ServiceBody::Form(b"username=bot&text0=a+b".to_vec()),
        1024,
    );
    assert_eq!(
        client.call_service(call).await.expect("reply"),
        br#"{"ok":true}"#
    );
    let token = Secret::new(KEY.to_owned());
    let url = fixture.url("/read");
    let reply = client
        .call_service(ServiceCall::get("Wise", &url, 1024).bearer(&token))
        .await
        .expect("reply");
    assert_eq!(reply, b"[1,2,3]");
    let requests = fixture.requests();
    assert_eq!(requests[0].method, "POST");
    assert_eq!(
        requests[0]
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("application/x-www-form-urlencoded")
    );
    assert!(requests[0].headers.get("authorization").is_none());
    assert_eq!(&requests[0].body[..], b"username=bot&text0=a+b");
    assert_eq!(requests[1].method, "GET");
    assert_eq!(
        requests[1]
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok()),
        Some(format!("Bearer {KEY}").as_str())
    );
}

#[tokio::test]
async fn errors_carry_no_body_and_say_whether_the_request_left_or_was_refused() {
    let fixture = Fixture::start().await.expect("fixture");
    let body = format!(r#"{{"error":{{"message":"{BODY_MARKER}"}}}}"#);
    for (path, status) in [
        ("/e400", 400),
        ("/e401", 401),
        ("/e403", 403),
        ("/e429", 429),
        ("/e500", 500),
    ] {
        fixture.route(path, Reply::status_json(status, body.clone()));
    }
    fixture.route(
        "/redirect",
        Reply::redirect(302, "https://elsewhere.example/"),
    );
    fixture.route("/cut", Reply::json(r#"{"partial":"#).ending(End::Abort));
    fixture.route("/big", Reply::json(format!("\"{}\"", "x".repeat(2048))));
    let client = client();
    for (path, refused) in [
        ("/e400", true),
        ("/e401", true),
        ("/e403", true),
        ("/e429", true),
        ("/redirect", true),
        ("/e500", false),
        ("/cut", false),
        ("/big", false),
    ] {
        let url = fixture.url(path);
        let error = client
            .call_service(ServiceCall::get("Svc", &url, 1024))
            .await
            .expect_err(path);
        assert_safe(&error);
        assert_eq!(error.refused(), refused, "{path}: {error}");
        assert!(!error.never_sent(), "{path}: {error}");
    }
    assert_eq!(fixture.count("/e500"), 1, "not retried");
    // Nothing listens: the request never left.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr")
    };
    let url = format!("http://{closed}/x");
    let error = client
        .call_service(ServiceCall::get("Svc", &url, 1024))
        .await
        .expect_err("unreachable");
    assert!(error.never_sent(), "{error}");
    assert_eq!(error.category(), Category::Unreachable);
}
