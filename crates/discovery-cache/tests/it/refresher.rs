//! The refresh loop on tokio's paused clock: timing, backoff, one listing per provider at a
//! time, and generations.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;
use yetibot_discovery_cache::limits::{MAX_BACKOFF, REFRESH_EVERY};
use yetibot_discovery_cache::{
    Bounds, DiscoveryCache, Lister, Observation, Ownership, ProviderListing, Refresher,
    Uncertainty, next_delay,
};

/// Lists from a script; records when each provider was listed.
#[derive(Clone, Default)]
struct Script {
    fail: Arc<Mutex<Vec<String>>>,
    /// Providers whose catalog the lister could not deliver whole.
    cut: Arc<Mutex<Vec<String>>>,
    calls: Arc<Mutex<HashMap<String, Vec<Instant>>>>,
    /// Providers whose listing waits for `release`.
    hold: Arc<Mutex<Vec<String>>>,
    release: Arc<Notify>,
}

impl Script {
    fn calls(&self, provider: &str) -> Vec<Instant> {
        self.calls
            .lock()
            .expect("test lock")
            .get(provider)
            .cloned()
            .unwrap_or_default()
    }
}

impl Lister for Script {
    async fn list(&self, provider: &str) -> Observation {
        self.calls
            .lock()
            .expect("test lock")
            .entry(provider.to_owned())
            .or_default()
            .push(Instant::now());
        let held = self
            .hold
            .lock()
            .expect("test lock")
            .iter()
            .any(|p| p == provider);
        if held {
            self.release.notified().await;
        }
        if self
            .fail
            .lock()
            .expect("test lock")
            .iter()
            .any(|p| p == provider)
        {
            Observation::Failed
        } else if self
            .cut
            .lock()
            .expect("test lock")
            .iter()
            .any(|p| p == provider)
        {
            Observation::Incomplete
        } else {
            Observation::Complete(vec![format!("{provider}-model")])
        }
    }
}

fn listing(name: &str) -> ProviderListing {
    ProviderListing {
        name: name.into(),
        fingerprint: name.into(),
    }
}

/// Runs the refresher in the background of the test until the returned sender fires.
fn start(
    cache: &DiscoveryCache,
    script: &Script,
) -> (oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let refresher = Refresher::new(cache.clone(), script.clone());
    let handle = tokio::spawn(async move {
        refresher
            .run(async {
                let _ = stop_rx.await;
            })
            .await;
    });
    (stop_tx, handle)
}

/// Lets the runtime run everything that is ready, advancing the paused clock by `by`.
async fn advance(by: Duration) {
    tokio::time::advance(by).await;
    for _ in 0..8 {
        tokio::task::yield_now().await;
    }
}

#[test]
fn backoff_grows_and_is_capped() {
    assert_eq!(next_delay(0), REFRESH_EVERY);
    let delays: Vec<u64> = (1..=7).map(|n| next_delay(n).as_secs()).collect();
    assert_eq!(delays, [60, 120, 240, 480, 600, 600, 600]);
    assert_eq!(next_delay(u32::MAX), MAX_BACKOFF);
}

#[tokio::test(start_paused = true)]
async fn cold_start_then_fresh_then_refreshed_every_30_seconds() {
    let cache = DiscoveryCache::new(Bounds::default());
    cache.configure(&[listing("a"), listing("b")]).unwrap();
    let script = Script::default();
    let start_at = Instant::now();
    assert_eq!(
        cache.owner_of("a-model", Instant::now()),
        Ownership::Uncertain(Uncertainty::ColdStart),
        "constructing and configuring start nothing"
    );
    assert!(script.calls("a").is_empty());
    let (stop, handle) = start(&cache, &script);
    advance(Duration::ZERO).await;
    assert_eq!(
        cache.owner_of("a-model", Instant::now()),
        Ownership::Unique("a".into())
    );
    advance(Duration::from_secs(30)).await;
    advance(Duration::from_secs(30)).await;
    let times: Vec<u64> = script
        .calls("a")
        .iter()
        .map(|t| (*t - start_at).as_secs())
        .collect();
    assert_eq!(times, [0, 30, 60]);
    stop.send(()).unwrap();
    handle.await.unwrap();
    // Once stopped, nothing refreshes and observations age into staleness.
    advance(Duration::from_secs(301)).await;
    assert_eq!(script.calls("a").len(), 3);
    assert_eq!(
        cache.owner_of("a-model", Instant::now()),
        Ownership::Uncertain(Uncertainty::Stale)
    );
}

#[tokio::test(start_paused = true)]
async fn failures_back_off_and_recover() {
    let cache = DiscoveryCache::new(Bounds::default());
    cache.configure(&[listing("a")]).unwrap();
    let script = Script::default();
    script.fail.lock().expect("test lock").push("a".into());
    let start_at = Instant::now();
    let (stop, handle) = start(&cache, &script);
    advance(Duration::ZERO).await;
    assert_eq!(
        cache.owner_of("a-model", Instant::now()),
        Ownership::Uncertain(Uncertainty::Failed)
    );
    for _ in 0..40 {
        advance(Duration::from_secs(30)).await;
    }
    let times: Vec<u64> = script
        .calls("a")
        .iter()
        .map(|t| (*t - start_at).as_secs())
        .collect();
    // Attempts at 0, then after 60, 120, 240, 480 and 600 s (rounded up to the 30 s tick).
    assert_eq!(times, [0, 60, 180, 420, 900]);
    script.fail.lock().expect("test lock").clear();
    for _ in 0..20 {
        advance(Duration::from_secs(30)).await;
    }
    assert_eq!(
        cache.owner_of("a-model", Instant::now()),
        Ownership::Unique("a".into())
    );
    stop.send(()).unwrap();
    handle.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn one_listing_per_provider_in_flight() {
    let cache = DiscoveryCache::new(Bounds::default());
    cache
        .configure(&[listing("slow"), listing("fast")])
        .unwrap();
    let script = Script::default();
    script.hold.lock().expect("test lock").push("slow".into());
    let (stop, handle) = start(&cache, &script);
    advance(Duration::ZERO).await;
    for _ in 0..6 {
        advance(Duration::from_secs(30)).await;
    }
    assert_eq!(
        script.calls("slow").len(),
        1,
        "a stalled listing is never started again"
    );
    assert_eq!(
        script.calls("fast").len(),
        7,
        "other providers keep refreshing meanwhile"
    );
    script.release.notify_waiters();
    advance(Duration::ZERO).await;
    assert_eq!(
        cache.owner_of("slow-model", Instant::now()),
        Ownership::Unique("slow".into())
    );
    advance(Duration::from_secs(30)).await;
    assert_eq!(script.calls("slow").len(), 2);
    stop.send(()).unwrap();
    script.release.notify_waiters();
    handle.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_configuration_change_mid_flight_discards_the_old_result() {
    let cache = DiscoveryCache::new(Bounds::default());
    cache.configure(&[listing("a")]).unwrap();
    let script = Script::default();
    script.hold.lock().expect("test lock").push("a".into());
    let (stop, handle) = start(&cache, &script);
    advance(Duration::ZERO).await;
    let mut changed = listing("a");
    changed.fingerprint = "moved".into();
    cache.configure(&[changed]).unwrap();
    script.hold.lock().expect("test lock").clear();
    script.release.notify_waiters();
    advance(Duration::ZERO).await;
    assert_eq!(
        cache.owner_of("a-model", Instant::now()),
        Ownership::Uncertain(Uncertainty::ColdStart),
        "the listing started before the change does not count"
    );
    advance(Duration::from_secs(30)).await;
    assert_eq!(
        cache.owner_of("a-model", Instant::now()),
        Ownership::Unique("a".into())
    );
    stop.send(()).unwrap();
    handle.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_incomplete_listing_settles_nothing_until_a_whole_one_lands() {
    let cache = DiscoveryCache::new(Bounds::default());
    cache.configure(&[listing("a"), listing("b")]).unwrap();
    let script = Script::default();
    script.cut.lock().expect("test lock").push("a".into());
    let (stop, handle) = start(&cache, &script);
    advance(Duration::ZERO).await;
    assert_eq!(
        cache.owner_of("b-model", Instant::now()),
        Ownership::Uncertain(Uncertainty::OverLimit),
        "A's catalog was cut, so B's model may be A's too"
    );
    advance(Duration::from_secs(30)).await;
    assert_eq!(
        script.calls("a").len(),
        2,
        "an incomplete listing is no failure: no backoff"
    );
    script.cut.lock().expect("test lock").clear();
    advance(Duration::from_secs(30)).await;
    assert_eq!(
        cache.owner_of("b-model", Instant::now()),
        Ownership::Unique("b".into())
    );
    stop.send(()).unwrap();
    handle.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn one_round_on_demand_reads_every_due_catalog_and_then_nothing_more() {
    let cache = DiscoveryCache::new(Bounds::default());
    cache.configure(&[listing("a"), listing("b")]).unwrap();
    let script = Script::default();
    script.fail.lock().expect("test lock").push("b".into());
    let refresher = Refresher::new(cache.clone(), script.clone());
    refresher.refresh_due().await;
    assert_eq!((script.calls("a").len(), script.calls("b").len()), (1, 1));
    // One provider failed, so nothing is unique yet; it is said, not guessed.
    assert_eq!(
        cache.owner_of("a-model", Instant::now()),
        Ownership::Uncertain(Uncertainty::Failed)
    );
    // Nothing is due again at once: a second round lists nobody.
    refresher.refresh_due().await;
    assert_eq!((script.calls("a").len(), script.calls("b").len()), (1, 1));
    // Once b answers, a's model has one owner.
    script.fail.lock().expect("test lock").clear();
    tokio::time::advance(next_delay(1)).await;
    refresher.refresh_due().await;
    assert_eq!(
        cache.owner_of("a-model", Instant::now()),
        Ownership::Unique("a".into())
    );
}
