//! Lookup cost and memory of `yetibot-discovery-cache` at its bounds: 32 providers of 8,192
//! model IDs each, with a plain `HashMap<String, usize>` probe over the same IDs in the same
//! run for scale.
//!
//! `owner_of_hit` asks for IDs that exactly one provider advertises (the answer is
//! `Unique`), `owner_of_miss` for IDs that none does (`NotAdvertised`); both cycle through
//! 4,096 queries spread over every provider so that the caches of the CPU see a realistic
//! spread rather than one hot entry.
//!
//! Before the timings it prints the cache's memory against the raw ID bytes, for IDs of 32
//! bytes (the bounds' average: 256 KiB over 8,192 IDs) and of 15 bytes, as
//! `DiscoveryCache::memory_bytes` reports it: the size of every buffer the cache holds. A
//! counting global allocator would need `unsafe` (`GlobalAlloc` is an unsafe trait), which
//! the workspace forbids, and would also count the harness's own allocations; checked once
//! against such an allocator outside the workspace, the two agree to the byte.
//!
//! ```text
//! cargo bench -p benches --bench discovery
//! ```

use std::collections::HashMap;
use std::io::Write as _;

use divan::Bencher;
use tokio::time::Instant;
use yetibot_discovery_cache::{Bounds, DiscoveryCache, Observation, Ownership, ProviderListing};

fn main() {
    memory_report();
    divan::main();
}

/// Prints the cache's memory for full catalogs of 32-byte and 15-byte IDs.
fn memory_report() {
    let mut out = std::io::stdout().lock();
    for (name, id) in [
        ("32-byte IDs", catalog_id as fn(usize, usize) -> String),
        ("15-byte IDs", short_id),
    ] {
        let fixture = Fixture::new(id);
        let raw: usize = fixture.map.keys().map(String::len).sum();
        let held = fixture.cache.memory_bytes();
        let _ = writeln!(
            out,
            "memory, {PROVIDERS} providers x {IDS} {name}: {held} bytes held for {raw} raw ID \
             bytes ({:.2}x)",
            held as f64 / raw as f64
        );
    }
}

const PROVIDERS: usize = 32;
const IDS: usize = 8_192;
const QUERIES: usize = 4_096;

#[divan::bench(sample_count = 200, sample_size = 256)]
fn owner_of_hit(bencher: Bencher) {
    lookups(bencher, |f| &f.hits, |f, id| f.cache.owner_of(id, f.now));
}

#[divan::bench(sample_count = 200, sample_size = 256)]
fn owner_of_miss(bencher: Bencher) {
    lookups(bencher, |f| &f.misses, |f, id| f.cache.owner_of(id, f.now));
}

#[divan::bench(sample_count = 200, sample_size = 256)]
fn hash_map_hit(bencher: Bencher) {
    lookups(bencher, |f| &f.hits, |f, id| f.map.get(id).copied());
}

#[divan::bench(sample_count = 200, sample_size = 256)]
fn hash_map_miss(bencher: Bencher) {
    lookups(bencher, |f| &f.misses, |f, id| f.map.get(id).copied());
}

/// Times `ask` over a full fixture, one question per iteration, cycling through `queries`.
fn lookups<T>(
    bencher: Bencher,
    queries: fn(&Fixture) -> &[String],
    ask: impl Fn(&Fixture, &str) -> T,
) {
    let fixture = Fixture::new(catalog_id);
    let queries = queries(&fixture);
    let mut k = 0;
    bencher
        .with_inputs(|| {
            k = (k + 1) % queries.len();
            queries[k].as_str()
        })
        .bench_local_refs(|id| ask(&fixture, id));
}

/// A short model ID of provider `p`: 15 bytes, like `p07/model-01234`.
fn short_id(p: usize, i: usize) -> String {
    format!("p{p:02}/model-{i:05}")
}

/// A model ID of provider `p` as long as the bounds allow on average (256 KiB over 8,192
/// IDs): 32 bytes, like `@cf/acme-07/model-01234-instruct`.
fn catalog_id(p: usize, i: usize) -> String {
    format!("@cf/acme-{p:02}/model-{i:05}-instruct")
}

/// A full cache, the same IDs in a hash map, and queries that hit and miss.
struct Fixture {
    cache: DiscoveryCache,
    now: Instant,
    map: HashMap<String, usize>,
    hits: Vec<String>,
    misses: Vec<String>,
}

impl Fixture {
    fn new(id: fn(usize, usize) -> String) -> Self {
        let cache = DiscoveryCache::new(Bounds::default());
        let listings: Vec<ProviderListing> = (0..PROVIDERS)
            .map(|p| ProviderListing {
                name: format!("provider-{p:02}"),
                fingerprint: String::new(),
            })
            .collect();
        let generation = cache
            .configure(&listings)
            .expect("32 providers fit the bounds");
        let now = Instant::now();
        let mut map = HashMap::new();
        for (p, listing) in listings.iter().enumerate() {
            let ids: Vec<String> = (0..IDS).map(|i| id(p, i)).collect();
            for one in &ids {
                map.insert(one.clone(), p);
            }
            cache.record(generation, &listing.name, Observation::Complete(ids), now);
        }
        // The provider turns over with every query and the odd multiplier scatters the IDs.
        let pick = |k: usize| (k % PROVIDERS, k.wrapping_mul(2_654_435_761) % IDS);
        let hits: Vec<String> = (0..QUERIES)
            .map(|k| {
                let (p, i) = pick(k);
                id(p, i)
            })
            .collect();
        let misses: Vec<String> = hits.iter().map(|h| format!("{h}x")).collect();
        for (hit, miss) in hits.iter().zip(&misses) {
            assert!(matches!(cache.owner_of(hit, now), Ownership::Unique(_)));
            assert_eq!(cache.owner_of(miss, now), Ownership::NotAdvertised);
        }
        Self {
            cache,
            now,
            map,
            hits,
            misses,
        }
    }
}
