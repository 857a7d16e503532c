//! Properties: bounds hold for arbitrary catalogs, and `Unique` needs every provider fresh
//! and complete. (The exact answers, under hash collisions too, are checked beside the cache
//! in `src/cache.rs`, where a colliding hash can be put in.)

use std::time::Duration;

use proptest::prelude::*;
use tokio::time::Instant;
use yetibot_discovery_cache::{
    Bounds, DiscoveryCache, Observation, Ownership, ProviderListing, Status,
};

/// Small bounds so that arbitrary catalogs cross them often.
fn bounds() -> Bounds {
    Bounds {
        providers: 4,
        ids_per_provider: 6,
        id_bytes: 5,
        catalog_bytes: 16,
    }
}

#[derive(Debug, Clone)]
enum Observed {
    Never,
    Failed,
    Incomplete,
    Listed(Vec<String>, u64),
}

fn observed() -> impl Strategy<Value = Observed> {
    prop_oneof![
        1 => Just(Observed::Never),
        1 => Just(Observed::Failed),
        1 => Just(Observed::Incomplete),
        4 => (prop::collection::vec("[a-cé]{0,4}", 0..9), 0u64..400).prop_map(|(ids, age)| Observed::Listed(ids, age)),
    ]
}

proptest! {
    #[test]
    fn ownership_is_sound(providers in prop::collection::vec(observed(), 1..5), model in "[a-c]{1,3}") {
        let cache = DiscoveryCache::new(bounds());
        let listings: Vec<ProviderListing> = (0..providers.len())
            .map(|i| ProviderListing { name: format!("p{i}"), fingerprint: String::new() })
            .collect();
        let generation = cache.configure(&listings).expect("within bounds");
        let now = Instant::now() + Duration::from_secs(1_000);
        for (i, p) in providers.iter().enumerate() {
            match p {
                Observed::Never => {}
                Observed::Failed => { cache.record(generation, &format!("p{i}"), Observation::Failed, now); }
                Observed::Incomplete => { cache.record(generation, &format!("p{i}"), Observation::Incomplete, now); }
                Observed::Listed(ids, age) => {
                    cache.record(generation, &format!("p{i}"), Observation::Complete(ids.clone()), now - Duration::from_secs(*age));
                }
            }
        }
        // Bounds hold for whatever was stored.
        let b = bounds();
        for (snapshot, p) in cache.snapshot().iter().zip(&providers) {
            prop_assert!(snapshot.models <= b.ids_per_provider);
            if snapshot.status == Status::Complete {
                let Observed::Listed(ids, _) = p else {
                    return Err(TestCaseError::fail("complete without a listing"));
                };
                let distinct: std::collections::BTreeSet<&String> = ids.iter().filter(|s| !s.is_empty()).collect();
                prop_assert_eq!(snapshot.models, distinct.len());
            } else {
                prop_assert_eq!(snapshot.models, 0);
            }
        }
        let all_fresh_complete = providers.iter().all(|p| match p {
            Observed::Listed(ids, age) => {
                let distinct: std::collections::BTreeSet<&String> = ids.iter().filter(|s| !s.is_empty()).collect();
                let bytes: usize = distinct.iter().map(|s| s.len()).sum();
                *age <= 300
                    && distinct.len() <= b.ids_per_provider
                    && distinct.iter().all(|s| s.len() <= b.id_bytes)
                    && bytes <= b.catalog_bytes
            }
            _ => false,
        });
        match cache.owner_of(&model, now) {
            Ownership::Unique(owner) => {
                prop_assert!(all_fresh_complete, "Unique while some provider was not fresh and complete");
                let owners: Vec<usize> = providers.iter().enumerate().filter_map(|(i, p)| match p {
                    Observed::Listed(ids, _) if ids.contains(&model) => Some(i),
                    _ => None,
                }).collect();
                prop_assert_eq!(owners.len(), 1);
                prop_assert_eq!(owner, format!("p{}", owners[0]));
            }
            Ownership::Collision(list) => { prop_assert!(all_fresh_complete); prop_assert!(list.len() >= 2); }
            Ownership::NotAdvertised => prop_assert!(all_fresh_complete),
            Ownership::Uncertain(_) => prop_assert!(!all_fresh_complete),
        }
    }
}
