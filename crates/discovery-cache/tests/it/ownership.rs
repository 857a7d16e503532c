//! `owner_of` for every state a provider's catalog can be in.

use std::time::Duration;

use tokio::time::Instant;
use yetibot_discovery_cache::{
    Bounds, DiscoveryCache, Observation, Ownership, ProviderListing, Status, Uncertainty,
};

fn listing(name: &str) -> ProviderListing {
    ProviderListing {
        name: name.into(),
        fingerprint: format!("https://{name}.example/v1 standard"),
    }
}

fn cache(names: &[&str]) -> (DiscoveryCache, u64) {
    let cache = DiscoveryCache::new(Bounds::default());
    let listings: Vec<_> = names.iter().map(|n| listing(n)).collect();
    let generation = cache.configure(&listings).expect("configure");
    (cache, generation)
}

fn ids(list: &[&str]) -> Observation {
    Observation::Complete(list.iter().map(|s| (*s).to_owned()).collect())
}

fn check(cache: &DiscoveryCache, model: &str, now: Instant, expect: Ownership) {
    assert_eq!(cache.owner_of(model, now), expect, "owner_of({model})");
}

#[test]
fn unique_collision_and_not_advertised() {
    let now = Instant::now();
    let (c, g) = cache(&["a", "b", "c"]);
    c.record(g, "a", ids(&["gpt-4o", "shared"]), now);
    c.record(g, "b", ids(&["llama3.2", "shared", "tri"]), now);
    c.record(g, "c", ids(&["tri", "shared"]), now);
    check(&c, "gpt-4o", now, Ownership::Unique("a".into()));
    check(&c, "llama3.2", now, Ownership::Unique("b".into()));
    check(
        &c,
        "tri",
        now,
        Ownership::Collision(vec!["b".into(), "c".into()]),
    );
    check(
        &c,
        "shared",
        now,
        Ownership::Collision(vec!["a".into(), "b".into(), "c".into()]),
    );
    check(&c, "nope", now, Ownership::NotAdvertised);
    // Exact and case-sensitive: no prefixes, no case folding.
    check(&c, "GPT-4o", now, Ownership::NotAdvertised);
    check(&c, "gpt-4", now, Ownership::NotAdvertised);
    check(&c, "llama3", now, Ownership::NotAdvertised);
}

#[test]
fn every_provider_must_be_fresh_and_complete() {
    let now = Instant::now();
    let (c, g) = cache(&["a", "b"]);
    check(&c, "m", now, Ownership::Uncertain(Uncertainty::ColdStart));
    c.record(g, "a", ids(&["m"]), now);
    check(&c, "m", now, Ownership::Uncertain(Uncertainty::ColdStart));
    c.record(g, "b", Observation::Failed, now);
    check(&c, "m", now, Ownership::Uncertain(Uncertainty::Failed));
    let big: Vec<String> = (0..8_193).map(|i| format!("m{i}")).collect();
    c.record(g, "b", Observation::Complete(big), now);
    check(&c, "m", now, Ownership::Uncertain(Uncertainty::OverLimit));
    c.record(g, "b", ids(&["x"]), now);
    check(&c, "m", now, Ownership::Unique("a".into()));
    // Five minutes of monotonic time is still fresh; a moment more is stale.
    check(
        &c,
        "m",
        now + Duration::from_secs(300),
        Ownership::Unique("a".into()),
    );
    check(
        &c,
        "m",
        now + Duration::from_secs(301),
        Ownership::Uncertain(Uncertainty::Stale),
    );
}

#[test]
fn a_configuration_change_voids_old_observations() {
    let now = Instant::now();
    let (c, g) = cache(&["a", "b"]);
    c.record(g, "a", ids(&["m"]), now);
    c.record(g, "b", ids(&["n"]), now);
    check(&c, "m", now, Ownership::Unique("a".into()));
    // Same set: same generation, observations kept.
    assert_eq!(c.configure(&[listing("a"), listing("b")]).expect("same"), g);
    check(&c, "m", now, Ownership::Unique("a".into()));
    // A changed listing setting starts a new generation.
    let mut moved = listing("b");
    moved.fingerprint = "https://elsewhere.example/v1 standard".into();
    let g2 = c.configure(&[listing("a"), moved]).expect("changed");
    assert!(g2 > g);
    check(&c, "m", now, Ownership::Uncertain(Uncertainty::ColdStart));
    // A listing that started under the old generation is discarded when it lands.
    assert!(!c.record(g, "a", ids(&["m"]), now));
    assert!(!c.record(g, "b", ids(&["n"]), now));
    check(&c, "m", now, Ownership::Uncertain(Uncertainty::ColdStart));
    assert!(c.record(g2, "a", ids(&["m"]), now));
    assert!(c.record(g2, "b", ids(&["m"]), now));
    check(
        &c,
        "m",
        now,
        Ownership::Collision(vec!["a".into(), "b".into()]),
    );
}

#[test]
fn the_provider_set_is_bounded() {
    let c = DiscoveryCache::new(Bounds::default());
    let many: Vec<_> = (0..33).map(|i| listing(&format!("p{i}"))).collect();
    assert!(c.configure(&many).is_err());
    check(
        &c,
        "m",
        Instant::now(),
        Ownership::Uncertain(Uncertainty::IncompleteSet),
    );
    let exactly: Vec<_> = (0..32).map(|i| listing(&format!("p{i}"))).collect();
    assert!(c.configure(&exactly).is_ok());
    let empty = DiscoveryCache::new(Bounds::default());
    check(
        &empty,
        "m",
        Instant::now(),
        Ownership::Uncertain(Uncertainty::IncompleteSet),
    );
}

#[test]
fn catalog_bounds_make_a_provider_over_limit() {
    let now = Instant::now();
    let (c, g) = cache(&["a"]);
    let long_id = "x".repeat(513);
    c.record(
        g,
        "a",
        Observation::Complete(vec!["ok".into(), long_id]),
        now,
    );
    check(&c, "ok", now, Ownership::Uncertain(Uncertainty::OverLimit));
    let at_limit: Vec<String> = (0..8_192).map(|i| format!("m{i}")).collect();
    c.record(g, "a", Observation::Complete(at_limit), now);
    check(&c, "m8191", now, Ownership::Unique("a".into()));
    // Duplicates and empty strings do not count against the bounds or become models.
    c.record(
        g,
        "a",
        Observation::Complete(vec!["m".into(), "m".into(), String::new()]),
        now,
    );
    assert_eq!(c.snapshot()[0].models, 1);
    check(&c, "", now, Ownership::NotAdvertised);
}

/// Provider A's catalog, one ID over the bound: 8,192 IDs that sort before `zz`, then `zz`.
fn over_the_bound_with_zz() -> Vec<String> {
    let mut ids: Vec<String> = (0..8_192).map(|i| format!("m{i:05}")).collect();
    ids.push("zz".into());
    ids
}

#[test]
fn over_limit_catalog_never_makes_another_provider_unique() {
    let now = Instant::now();
    let (c, g) = cache(&["a", "b"]);
    c.record(g, "a", Observation::Complete(over_the_bound_with_zz()), now);
    c.record(g, "b", ids(&["zz"]), now);
    check(&c, "zz", now, Ownership::Uncertain(Uncertainty::OverLimit));
    assert_eq!(c.snapshot()[0].status, Status::OverLimit);
}

#[test]
fn truncated_catalog_never_makes_another_provider_unique() {
    let now = Instant::now();
    let (c, g) = cache(&["a", "b"]);
    c.record(g, "b", ids(&["zz"]), now);
    // A's lister cut its 8,193 IDs to the 8,192 that fit the bounds, which dropped `zz`, and
    // says so. Whatever the cut kept, nothing about `zz` is settled.
    c.record(g, "a", Observation::Incomplete, now);
    check(&c, "zz", now, Ownership::Uncertain(Uncertainty::OverLimit));
    assert_eq!(c.snapshot()[0].status, Status::OverLimit);
    assert_eq!(
        c.snapshot()[0].models,
        0,
        "nothing of a cut catalog is kept"
    );
    // What was at stake: the cut list fits every bound, so passed off as the whole catalog
    // (all the old `Ok(ids)` could say) it is believed, and B becomes the owner of `zz`.
    let cut = over_the_bound_with_zz()[..8_192].to_vec();
    assert!(Bounds::default().admits(cut.iter().map(String::as_str)));
    c.record(g, "a", Observation::Complete(cut), now);
    check(&c, "zz", now, Ownership::Unique("b".into()));
}
