//! Shared helpers: building providers and clients, and checking that errors are safe.

use std::time::Duration;

use yetibot_ai_providers::{Client, ClientOptions, Error, Provider, ProviderConfig, ProviderSet};

/// A key no error message may ever contain.
pub(crate) const KEY: &str = "sk-test-SUPERSECRET-0123456789";
/// A marker placed in provider bodies; no error message may contain it.
pub(crate) const BODY_MARKER: &str = "BODY-MARKER-should-never-leak";

pub(crate) fn config(name: &str, url: &str) -> ProviderConfig {
    ProviderConfig {
        name: Some(name.into()),
        url: Some(url.into()),
        model: Some("test-model".into()),
        ..ProviderConfig::default()
    }
}

pub(crate) fn provider(config: ProviderConfig) -> Provider {
    let set = ProviderSet::from_config(None, &[config]).expect("valid config");
    set.default_provider().expect("one provider").clone()
}

pub(crate) fn keyed(name: &str, url: &str) -> Provider {
    provider(ProviderConfig {
        key: Some(KEY.into()),
        ..config(name, url)
    })
}

pub(crate) fn client() -> Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    Client::new(ClientOptions::default()).expect("client")
}

pub(crate) fn client_with_read_timeout(timeout: Duration) -> Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    Client::new(ClientOptions {
        read_timeout: timeout,
        ..ClientOptions::default()
    })
    .expect("client")
}

/// Asserts the error text carries neither the key, nor a body marker, nor header text.
pub(crate) fn assert_safe(error: &Error) {
    for text in [
        error.to_string(),
        format!("{error:?}"),
        error.user_message(),
    ] {
        assert!(!text.contains(KEY), "key leaked: {text}");
        assert!(!text.contains(BODY_MARKER), "body leaked: {text}");
        assert!(
            !text.to_lowercase().contains("bearer"),
            "header leaked: {text}"
        );
        assert!(!text.contains("/tmp"), "path leaked: {text}");
    }
}
