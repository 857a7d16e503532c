//! Model discovery end to end: the binary's lister over `yetibot-ai-providers` against the
//! provider fixture, recorded in the discovery cache, consulted by routing.

use provider_fixture::{Fixture, Reply};
use serde_json::json;
use tokio::time::Instant;
use yetibot_ai_providers::limits::MAX_MODELS;
use yetibot_ai_providers::{
    Client, ClientOptions, ProviderConfig, ProviderSet, RouteError, RouteRequest, RuntimeDefaults,
    route,
};
use yetibot_bin::discovery::{ProviderLister, listings};
use yetibot_discovery_cache::{Bounds, DiscoveryCache, Lister, Ownership, Uncertainty};

fn models(ids: impl IntoIterator<Item = String>) -> Reply {
    let data: Vec<_> = ids.into_iter().map(|id| json!({ "id": id })).collect();
    Reply::json(json!({ "data": data }).to_string())
}

/// Provider `a` lists 8,193 models including `zz`, one more than a catalog may hold, so its
/// listing is cut to the bound; provider `b` lists `zz`. The cut list used to be recorded as
/// `a`'s whole catalog (without `zz`, which sorts last), making `b` the unique owner of `zz`,
/// so a paid prompt for `--model zz` went to a provider chosen on half the facts.
#[tokio::test]
async fn over_limit_catalog_never_routes_a_model_to_another_provider() {
    let fixture = Fixture::start().await.expect("fixture");
    let many = (0..MAX_MODELS)
        .map(|i| format!("m-{i:05}"))
        .chain(["zz".to_owned()]);
    fixture.route("/a/v1/models", models(many));
    fixture.route("/b/v1/models", models(["zz".to_owned()]));
    let config = |name: &str| ProviderConfig {
        name: Some(name.into()),
        url: Some(fixture.url(&format!("/{name}/v1"))),
        ..ProviderConfig::default()
    };
    let providers = ProviderSet::from_config(None, &[config("a"), config("b")]).expect("config");
    let cache = DiscoveryCache::new(Bounds::default());
    let generation = cache.configure(&listings(&providers)).expect("listings");
    let lister = ProviderLister::new(
        Client::new(ClientOptions::default()).expect("client"),
        providers.clone(),
    );
    for name in ["a", "b"] {
        let observation = lister.list(name).await;
        assert!(cache.record(generation, name, observation, Instant::now()));
    }

    let now = Instant::now();
    assert_eq!(
        cache.owner_of("zz", now),
        Ownership::Uncertain(Uncertainty::OverLimit)
    );
    let routed = route(
        &providers,
        &RuntimeDefaults::default(),
        |model| cache.owner_of(model, now),
        RouteRequest {
            provider: None,
            pinned: None,
            model: Some("zz"),
        },
    );
    assert_eq!(
        routed,
        Err(RouteError::Uncertain {
            model: "zz".into(),
            reason: Uncertainty::OverLimit,
        })
    );
}
