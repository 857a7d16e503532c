//! The loaded configuration's credentials feed redaction: every inline credential of the
//! example file is found in raw, JSON-escaped and unicode-escaped text.

use std::path::Path;

use yetibot_bin::config;

fn example() -> config::Config {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../config/config.example.edn");
    let text = std::fs::read_to_string(&path).expect("example file");
    config::load(Some((&path, &text)), &[]).expect("example loads")
}

#[test]
fn every_configured_credential_is_redacted_in_every_form() {
    let config = example();
    let secrets = &config.secrets;
    for credential in [
        "YOUR_API_KEY",
        "YOUR_XAI_API_KEY",
        "Bearer YOUR_TAVILY_API_KEY",
        "READ_TOKEN_PLACEHOLDER",
        "WRITE_TOKEN_PLACEHOLDER",
        "YOUR_IMGFLIP_PASSWORD",
        "YOUR_DB_PASSWORD",
        "postgresql://yetibot:YOUR_DB_PASSWORD@localhost:5432/yetibot",
    ] {
        let raw = format!("tool said: {credential}.");
        assert!(secrets.contains_secret(&raw), "{credential}");
        assert_eq!(secrets.redact_text(&raw), "tool said: [redacted].");
        let json = serde_json::to_string(&serde_json::json!({ "out": credential })).expect("json");
        assert!(!secrets.redact_text(&json).contains(credential));
        let escaped: String = credential
            .chars()
            .map(|c| format!("\\u{:04x}", c as u32))
            .collect();
        assert!(
            secrets.contains_secret(&escaped),
            "{credential} as \\u escapes"
        );
        assert_eq!(secrets.redact_text(&escaped), "[redacted]");
    }
    // Key-file paths are not credentials to redact, and their files are never read here.
    assert!(!secrets.contains_secret("/run/secrets/opencode-zen-api-key"));
}

#[test]
fn environment_credentials_join_the_set() {
    let vars = vec![
        ("YETIBOT_AI_PROVIDERS_0_NAME".to_owned(), "p".to_owned()),
        (
            "YETIBOT_AI_PROVIDERS_0_URL".to_owned(),
            "https://api.example.com/v1".to_owned(),
        ),
        (
            "YETIBOT_AI_PROVIDERS_0_KEY".to_owned(),
            "sk-from-the-environment-42".to_owned(),
        ),
    ];
    let config = config::load(None, &vars).expect("loads");
    assert!(
        config
            .secrets
            .contains_secret("x sk-from-the-environment-42 y")
    );
}
