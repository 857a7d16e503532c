//! Key files and placeholders: resolved per request, never leaked, never sent when fake.

use std::path::PathBuf;

use provider_fixture::{Fixture, Reply};
use yetibot_ai_providers::{Category, ProviderConfig, TurnRequest};

use crate::support::{KEY, assert_safe, client, config, provider};

fn key_file(name: &str, content: &[u8]) -> PathBuf {
    let path = std::env::temp_dir().join(format!("ai-providers-it-{}-{name}", std::process::id()));
    std::fs::write(&path, content).expect("write key file");
    path
}

fn with_key_file(url: &str, path: &std::path::Path) -> yetibot_ai_providers::Provider {
    provider(ProviderConfig {
        key_file: Some(path.to_string_lossy().into_owned()),
        ..config("kf", url)
    })
}

const MODELS: &str = r#"{"data":[{"id":"b"},{"id":"a"}]}"#;

#[tokio::test]
async fn a_key_file_is_read_per_request_and_trimmed() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route("/v1/models", Reply::json(MODELS));
    let path = key_file("good", format!("  {KEY}\n").as_bytes());
    let p = with_key_file(&fixture.url("/v1"), &path);
    client().list_models(&p).await.expect("listing");
    let auth = fixture.requests()[0].headers.get("authorization").cloned();
    assert_eq!(auth.expect("auth header"), format!("Bearer {KEY}").as_str());
    // The file is read again by the next request: a rotated key takes effect.
    std::fs::write(&path, b"rotated-key").expect("rewrite");
    client().list_models(&p).await.expect("listing");
    assert_eq!(
        fixture.requests()[1]
            .headers
            .get("authorization")
            .expect("auth"),
        "Bearer rotated-key"
    );
    let _ = std::fs::remove_file(path);
}

#[tokio::test]
async fn unusable_key_files_fail_closed_before_sending() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route("/v1/models", Reply::json(MODELS));
    let cases = [
        ("blank", key_file("blank", b"   \n")),
        (
            "spaces",
            key_file("spaces", format!("{KEY} more").as_bytes()),
        ),
        ("big", key_file("big", &vec![b'a'; 8193])),
        ("binary", key_file("binary", &[0xff, 0xfe, 0x00])),
        (
            "missing",
            std::env::temp_dir().join("ai-providers-it-does-not-exist"),
        ),
        ("directory", std::env::temp_dir()),
    ];
    for (label, path) in cases {
        let p = with_key_file(&fixture.url("/v1"), &path);
        let error = client().list_models(&p).await.expect_err(label);
        assert_eq!(error.category(), Category::Credential, "{label}");
        assert_eq!(error.to_string(), "credential unavailable for provider kf");
        assert_safe(&error);
        if label != "directory" && label != "missing" {
            let _ = std::fs::remove_file(path);
        }
    }
    assert_eq!(fixture.requests().len(), 0);
}

#[tokio::test]
async fn placeholder_keys_list_without_auth_and_refuse_prompts() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route("/v1/models", Reply::json(MODELS));
    let p = provider(ProviderConfig {
        key: Some("REPLACE_WITH_OPENCODE_ZEN_API_KEY".into()),
        ..config("zen", &fixture.url("/v1"))
    });
    let list = client().list_models(&p).await.expect("listing");
    assert_eq!(list.ids().collect::<Vec<_>>(), ["a", "b"]);
    assert!(fixture.requests()[0].headers.get("authorization").is_none());
    let error = client()
        .turn(&p, &TurnRequest::prompt("hi"), &mut |_| {})
        .await
        .expect_err("placeholder prompt");
    assert_eq!(error.category(), Category::Setup);
    assert!(error.to_string().contains("placeholder"));
    assert!(!error.to_string().contains("REPLACE_WITH"));
    assert_eq!(fixture.count("/v1/chat/completions"), 0);
}

#[tokio::test]
async fn a_placeholder_in_a_key_file_is_not_sent_either() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route("/v1/models", Reply::json(MODELS));
    let path = key_file("placeholder", b"YOUR_API_KEY\n");
    let p = with_key_file(&fixture.url("/v1"), &path);
    client().list_models(&p).await.expect("listing");
    assert!(fixture.requests()[0].headers.get("authorization").is_none());
    let error = client()
        .turn(&p, &TurnRequest::prompt("hi"), &mut |_| {})
        .await
        .expect_err("prompt");
    assert_eq!(error.category(), Category::Setup);
    assert_eq!(fixture.requests().len(), 1);
    let _ = std::fs::remove_file(path);
}

#[tokio::test]
async fn each_key_goes_only_to_its_own_provider() {
    let one = Fixture::start().await.expect("fixture");
    let two = Fixture::start().await.expect("fixture");
    let three = Fixture::start().await.expect("fixture");
    for f in [&one, &two, &three] {
        f.route("/v1/models", Reply::json(MODELS));
    }
    let configs = [
        ProviderConfig {
            key: Some("key-one".into()),
            ..config("one", &one.url("/v1"))
        },
        ProviderConfig {
            key: Some("key-two".into()),
            ..config("two", &two.url("/v1"))
        },
        config("three", &three.url("/v1")),
    ];
    let set = yetibot_ai_providers::ProviderSet::from_config(None, &configs).expect("config");
    let results = client().list_all(&set).await;
    assert!(results.iter().all(|(_, r)| r.is_ok()));
    let auth = |f: &Fixture| {
        f.requests()
            .iter()
            .map(|r| {
                r.headers
                    .get("authorization")
                    .map(|v| v.to_str().unwrap_or_default().to_owned())
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(auth(&one), [Some("Bearer key-one".to_owned())]);
    assert_eq!(auth(&two), [Some("Bearer key-two".to_owned())]);
    assert_eq!(auth(&three), [None]);
}

/// A key file that is a FIFO with no writer used to hang the request forever (the open
/// waits for a writer); a device such as /dev/zero could be read without end. Both are
/// refused before anything is opened or sent.
#[tokio::test]
async fn key_file_fifo_or_device_is_refused_without_hanging() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route("/v1/models", Reply::json(MODELS));
    let fifo = std::env::temp_dir().join(format!("ai-providers-it-{}-fifo", std::process::id()));
    let _ = std::fs::remove_file(&fifo);
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    for path in [
        fifo.clone(),
        PathBuf::from("/dev/zero"),
        PathBuf::from("/dev/null"),
    ] {
        let p = with_key_file(&fixture.url("/v1"), &path);
        let error = client()
            .list_models(&p)
            .await
            .expect_err("not a regular file");
        assert_eq!(error.category(), Category::Credential, "{}", path.display());
        assert_safe(&error);
    }
    let _ = std::fs::remove_file(fifo);
    assert_eq!(fixture.requests().len(), 0);
}

/// A key file that its group or others may write lets them choose the credential: refused.
/// A symlink to a well-kept file is fine, since mounted secrets are symlinks.
#[cfg(unix)]
#[tokio::test]
async fn key_file_writable_by_group_or_others_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route("/v1/models", Reply::json(MODELS));
    for (label, mode) in [("group", 0o620), ("others", 0o602)] {
        let path = key_file(label, KEY.as_bytes());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
        let p = with_key_file(&fixture.url("/v1"), &path);
        let error = client().list_models(&p).await.expect_err(label);
        assert_eq!(error.category(), Category::Credential, "{label}");
        let _ = std::fs::remove_file(path);
    }
    assert_eq!(fixture.requests().len(), 0);

    let target = key_file("target", KEY.as_bytes());
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let link = std::env::temp_dir().join(format!("ai-providers-it-{}-link", std::process::id()));
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&target, &link).expect("symlink");
    let p = with_key_file(&fixture.url("/v1"), &link);
    client()
        .list_models(&p)
        .await
        .expect("a symlinked key file works");
    let _ = std::fs::remove_file(link);
    let _ = std::fs::remove_file(target);
}

/// Key-file tokens were promised to join a request's redaction set, but no API provided
/// them: the set a request uses now includes the token read for it.
#[tokio::test]
async fn request_secrets_include_the_key_file_token() {
    let fixture = Fixture::start().await.expect("fixture");
    let path = key_file("request-set", b"kf-token-0123456789abcdef\n");
    let p = with_key_file(&fixture.url("/v1"), &path);
    let configured = yetibot_redaction::Secrets::new(["configured-0123456789"]).expect("set");
    let secrets = client()
        .with_secrets(configured)
        .request_secrets(&p)
        .await
        .expect("request set");
    assert_eq!(
        secrets.redact_text("a kf-token-0123456789abcdef b configured-0123456789"),
        "a [redacted] b [redacted]"
    );
    let _ = std::fs::remove_file(path);
    assert_eq!(fixture.requests().len(), 0, "nothing is sent");
}
