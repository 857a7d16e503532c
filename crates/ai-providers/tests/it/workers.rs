//! Workers AI's model endpoint (`run_workers_model`) against the provider fixture: the
//! request it sends, the envelope it reads, and the bounds it keeps (no body in errors, the
//! whole-body deadline, the token file read per request).

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use provider_fixture::{End, Fixture, Reply};
use serde_json::{Value, json};
use yetibot_ai_providers::{Category, WORKERS_BODY_DEADLINE, WorkersAccount};

use crate::support::{BODY_MARKER, KEY, assert_safe, client};

const ACCOUNT: &str = "0123456789abcdef0123456789abcdef";
const PATH: &str =
    "/client/v4/accounts/0123456789abcdef0123456789abcdef/ai/run/@cf/cloudflare/clef";

/// A private key file holding the test key, in a directory removed on drop.
struct KeyFile(std::path::PathBuf);

impl KeyFile {
    fn new(name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("yetibot-workers-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("token");
        std::fs::write(&path, format!("{KEY}\n")).expect("key");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("mode");
        Self(path)
    }
}

impl Drop for KeyFile {
    fn drop(&mut self) {
        if let Some(dir) = self.0.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn account(fixture: &Fixture, key: &KeyFile) -> WorkersAccount {
    WorkersAccount::new(
        &fixture.url("/client/v4/"),
        ACCOUNT,
        &key.0,
        Some("my-gateway".into()),
    )
}

#[tokio::test]
async fn one_post_with_the_token_and_gateway_and_the_result_out_of_its_envelope() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        PATH,
        Reply::json(r#"{"result":{"model":"clef","answers":{"x":{"type":"noul","noul":0.5}}},"success":true,"errors":[]}"#),
    );
    let key = KeyFile::new("ok");
    let client = client();
    let account = account(&fixture, &key);
    let token = client.workers_token(&account).await.expect("token");
    let body = json!({"model": "clef", "state": "s", "questions": {}});
    let result = client
        .run_workers_model(&account, &token, "@cf/cloudflare/clef", &body)
        .await
        .expect("result");
    assert_eq!(result["answers"]["x"]["noul"], 0.5);
    let requests = fixture.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].method, "POST");
    let header = |name: &str| {
        requests[0]
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    assert_eq!(header("authorization"), Some(format!("Bearer {KEY}")));
    assert_eq!(header("cf-aig-gateway-id").as_deref(), Some("my-gateway"));
    let sent: Value = serde_json::from_slice(&requests[0].body).expect("JSON");
    assert_eq!(sent, body);
}

#[tokio::test]
async fn errors_carry_no_body_and_an_unusable_token_file_sends_nothing() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        PATH,
        Reply::status_json(
            400,
            format!(r#"{{"errors":[{{"message":"{BODY_MARKER}"}}]}}"#),
        ),
    );
    fixture.route(PATH, Reply::json(r#"{"success":false,"errors":[]}"#));
    let key = KeyFile::new("errors");
    let client = client();
    let account = account(&fixture, &key);
    let token = client.workers_token(&account).await.expect("token");
    let body = json!({});
    for category in [Category::HttpStatus, Category::ProviderFailed] {
        let error = client
            .run_workers_model(&account, &token, "@cf/cloudflare/clef", &body)
            .await
            .expect_err("refused");
        assert_eq!(error.category(), category);
        assert_safe(&error);
    }
    std::fs::set_permissions(&key.0, std::fs::Permissions::from_mode(0o666)).expect("mode");
    let error = client
        .workers_token(&account)
        .await
        .expect_err("others may write it");
    assert_eq!(error.category(), Category::Credential);
    assert_safe(&error);
    assert_eq!(fixture.requests().len(), 2);
}

/// A reply that trickles in, each piece within the read deadline, is not waited for past
/// the whole-body deadline.
#[tokio::test(start_paused = true)]
async fn a_trickling_body_ends_at_the_whole_body_deadline() {
    let fixture = Fixture::start().await.expect("fixture");
    let mut reply = Reply::json("");
    reply.chunks = ["{\"result\":", "{\"answers\":", "{}}", "}"]
        .into_iter()
        .map(|c| bytes::Bytes::from(c.to_owned()))
        .collect();
    fixture.route(PATH, reply.slow(Duration::from_secs(40)).ending(End::Close));
    let key = KeyFile::new("trickle");
    let client = client();
    let account = account(&fixture, &key);
    let token = client.workers_token(&account).await.expect("token");
    let started = tokio::time::Instant::now();
    let error = client
        .run_workers_model(&account, &token, "@cf/cloudflare/clef", &json!({}))
        .await
        .expect_err("too slow");
    assert_eq!(error.category(), Category::Timeout);
    assert!(error.is_unknown_outcome(), "the request was sent: {error}");
    let waited = started.elapsed();
    assert!(
        waited >= WORKERS_BODY_DEADLINE && waited < WORKERS_BODY_DEADLINE + Duration::from_secs(45),
        "{waited:?}"
    );
}
