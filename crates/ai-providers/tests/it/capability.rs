//! Capability flags derived by the config mapping, and the placeholder rule.

use yetibot_ai_providers::{
    AuthKind, ContextWindowSource, ModelListing, OutputTokenParam, ProviderConfig, ProviderSet,
    is_placeholder_key,
};

use crate::support::{config, provider};

fn flags(url: &str, api: Option<&str>, key: Option<&str>) -> yetibot_ai_providers::Capabilities {
    provider(ProviderConfig {
        api: api.map(str::to_owned),
        key: key.map(Into::into),
        ..config("p", url)
    })
    .capabilities()
    .clone()
}

#[test]
fn listing_kind_follows_the_origin() {
    let check = |url: &str, expect: ModelListing| {
        assert_eq!(flags(url, None, None).listing, expect, "{url}")
    };
    check(
        "http://localhost:11434/v1/",
        ModelListing::Standard {
            url: "http://localhost:11434/v1/models".into(),
        },
    );
    check(
        "https://opencode.ai/inference/openai/v1",
        ModelListing::Separate {
            url: "https://opencode.ai/inference/v1/models".into(),
        },
    );
    // The legacy Zen origin keeps its own models endpoint; plain HTTP is not adapted.
    check(
        "https://opencode.ai/zen/v1",
        ModelListing::Standard {
            url: "https://opencode.ai/zen/v1/models".into(),
        },
    );
    check(
        "http://opencode.ai/inference/openai/v1",
        ModelListing::Standard {
            url: "http://opencode.ai/inference/openai/v1/models".into(),
        },
    );
    let account = "0123456789abcdef0123456789abcdef";
    check(
        &format!("https://api.cloudflare.com/client/v4/accounts/{account}/ai/v1"),
        ModelListing::CloudflareSearch {
            url: format!(
                "https://api.cloudflare.com/client/v4/accounts/{account}/ai/models/search"
            ),
        },
    );
    // A malformed account ID is not guessed at.
    check(
        "https://api.cloudflare.com/client/v4/accounts/nothex/ai/v1",
        ModelListing::Standard {
            url: "https://api.cloudflare.com/client/v4/accounts/nothex/ai/v1/models".into(),
        },
    );
}

#[test]
fn output_token_field_follows_api_and_endpoint() {
    let cf = "https://api.cloudflare.com/client/v4/accounts/0123456789abcdef0123456789abcdef/ai/v1";
    assert_eq!(
        flags("http://x.test/v1", None, None).output_tokens,
        OutputTokenParam::MaxCompletionTokens
    );
    assert_eq!(
        flags(cf, None, None).output_tokens,
        OutputTokenParam::MaxTokens
    );
    assert_eq!(
        flags("http://x.test/v1", Some("responses"), None).output_tokens,
        OutputTokenParam::MaxOutputTokens
    );
    assert_eq!(OutputTokenParam::MaxTokens.field(), "max_tokens");
}

#[test]
fn ollama_context_detection_follows_its_default_port() {
    for url in [
        "http://localhost:11434/v1",
        "http://gpu-box.internal:11434/v1",
        "https://10.0.0.7:11434/v1",
    ] {
        assert_eq!(
            flags(url, None, None).context_window,
            ContextWindowSource::OllamaApi,
            "{url}"
        );
    }
    for url in [
        "http://localhost:8000/v1",
        "https://ollama.example/v1",
        "https://api.openai.com/v1",
    ] {
        assert_eq!(
            flags(url, None, None).context_window,
            ContextWindowSource::Listing,
            "{url}"
        );
    }
}

#[test]
fn max_turns_is_sent_only_with_native_tools() {
    let with = provider(ProviderConfig {
        api: Some("responses".into()),
        native_tools: Some(vec!["web_search".into()]),
        ..config("p", "http://x.test/v1")
    });
    assert!(with.capabilities().sends_max_turns);
    assert!(!flags("http://x.test/v1", Some("responses"), None).sends_max_turns);
}

#[test]
fn auth_kind_and_placeholders() {
    assert_eq!(flags("http://x.test/v1", None, None).auth, AuthKind::None);
    assert_eq!(
        flags("http://x.test/v1", None, Some("sk-real")).auth,
        AuthKind::InlineKey
    );
    assert_eq!(
        flags(
            "http://x.test/v1",
            None,
            Some("REPLACE_WITH_OPENCODE_ZEN_API_KEY")
        )
        .auth,
        AuthKind::Placeholder
    );
    for key in [
        "REPLACE_WITH_KEY",
        "YOUR_API_KEY",
        "your_xai_api_key",
        "YOUR-TOKEN",
        "CHANGEME",
        "<api-key>",
    ] {
        assert!(is_placeholder_key(key), "{key}");
    }
    for key in ["sk-abc", "xai-123", "csk-YOUR_", "replace"] {
        assert!(!is_placeholder_key(key), "{key}");
    }
}

#[test]
fn derived_flags_do_not_depend_on_the_name() {
    let a = flags("http://x.test/v1", None, None);
    let b = provider(config("grok", "http://x.test/v1"))
        .capabilities()
        .clone();
    let c = provider(config("cloudflare", "http://x.test/v1"))
        .capabilities()
        .clone();
    assert_eq!(a, b);
    assert_eq!(a, c);
}

#[test]
fn billing_follows_the_origin() {
    use yetibot_ai_providers::Billing;
    let check = |url: &str, expect: Billing| {
        assert_eq!(flags(url, None, None).billing, expect, "{url}");
    };
    check(
        "https://opencode.ai/inference/openai/v1",
        Billing::ZenCredits,
    );
    check("https://opencode.ai/zen/v1", Billing::ZenCredits);
    check("https://api.x.ai/v1", Billing::XaiTicks);
    check(
        "https://api.cloudflare.com/client/v4/accounts/0123456789abcdef0123456789abcdef/ai/v1",
        Billing::WorkersAi,
    );
    // A look-alike over plain HTTP, or another host, reports nothing known.
    check("http://api.x.ai/v1", Billing::Unknown);
    check("http://localhost:11434/v1", Billing::Unknown);
}

#[test]
fn a_provider_can_be_replaced_by_name_with_adjusted_capabilities() {
    let configs = [
        config("a", "https://a.example/v1"),
        config("zen", "https://opencode.ai/inference/openai/v1"),
    ];
    let mut set = ProviderSet::from_config(Some("zen"), &configs).expect("valid");
    let zen = set.get("zen").expect("zen").clone();
    let mut caps = zen.capabilities().clone();
    caps.listing = ModelListing::Separate {
        url: "http://127.0.0.1:1/inference/v1/models".into(),
    };
    let replaced = set.replace(zen.with_capabilities(caps.clone()));
    assert!(replaced.is_some());
    assert_eq!(set.get("zen").map(|p| p.capabilities()), Some(&caps));
    assert_eq!(set.default_provider().map(|p| p.name()), Some("zen"));
    assert_eq!(set.providers()[1].name(), "zen", "the position is kept");
    let stranger = ProviderSet::from_config(None, &[config("b", "https://b.example/v1")])
        .expect("valid")
        .default_provider()
        .expect("b")
        .clone();
    assert!(set.replace(stranger).is_none());
    assert!(set.get("b").is_none(), "an unknown name changes nothing");
}
