//! The background refresh loop that the binary runs explicitly: every 30 seconds it lists
//! each due provider through a caller-supplied function, at most one listing per provider
//! at a time, backing off exponentially after failures.

use std::future::Future;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use tokio::time::{Instant, MissedTickBehavior};

use crate::cache::{DiscoveryCache, Observation};

/// How often due providers are refreshed.
pub const REFRESH_EVERY: Duration = Duration::from_secs(30);
/// The longest wait after repeated failures.
pub const MAX_BACKOFF: Duration = Duration::from_secs(10 * 60);

/// The wait before the next listing of a provider with `failures` consecutive failures:
/// 30 s after a success, then 60 s, 2 min, 4 min, 8 min, and 10 min from the fifth failure on.
#[must_use]
pub fn next_delay(failures: u32) -> Duration {
    if failures == 0 {
        return REFRESH_EVERY;
    }
    let factor = 1u64 << failures.min(10);
    REFRESH_EVERY
        .saturating_mul(u32::try_from(factor).unwrap_or(u32::MAX))
        .min(MAX_BACKOFF)
}

/// Lists one provider's model IDs. Implementations resolve the provider's credential inside
/// the call, use only its configured listing endpoint, never send prompts, never follow
/// redirects and never retry. A failure is just [`Observation::Failed`] because the cache
/// keeps no details; a listing that had to leave IDs out (a bound, a page cap) must say so
/// with [`Observation::Incomplete`] rather than pass the rest off as the whole catalog.
pub trait Lister {
    /// Lists `provider`'s advertised model IDs.
    fn list(&self, provider: &str) -> impl Future<Output = Observation> + Send;
}

/// Fills a [`DiscoveryCache`] until stopped. Nothing runs until [`Refresher::run`] is
/// awaited, and everything stops when that future is dropped or `stop` completes: no task is
/// spawned.
#[derive(Debug)]
pub struct Refresher<L> {
    cache: DiscoveryCache,
    lister: L,
}

impl<L: Lister + Sync> Refresher<L> {
    /// A refresher for `cache` that lists through `lister`.
    pub fn new(cache: DiscoveryCache, lister: L) -> Self {
        Self { cache, lister }
    }

    /// Lists every provider that is due now, concurrently, records what each listing
    /// observed and returns once all have answered: one round of [`Refresher::run`], for a
    /// program that reads the catalogs on demand (a one-shot command) instead of keeping
    /// them fresh in the background.
    pub async fn refresh_due(&self) {
        let (generation, due) = self.cache.take_due(Instant::now());
        let mut running: FuturesUnordered<_> = due
            .into_iter()
            .map(|provider| async move {
                let result = self.lister.list(&provider).await;
                (provider, result)
            })
            .collect();
        while let Some((provider, result)) = running.next().await {
            let now = Instant::now();
            self.cache.record(generation, &provider, result, now);
            self.cache.schedule(generation, &provider, next_delay, now);
        }
    }

    /// Runs until `stop` completes. The first refresh of every provider starts at once.
    pub async fn run(&self, stop: impl Future<Output = ()>) {
        let mut tick = tokio::time::interval(REFRESH_EVERY);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut running = FuturesUnordered::new();
        let mut stop = std::pin::pin!(stop);
        loop {
            tokio::select! {
                () = &mut stop => return,
                _ = tick.tick() => {
                    let (generation, due) = self.cache.take_due(Instant::now());
                    for provider in due {
                        let lister = &self.lister;
                        running.push(async move {
                            let result = lister.list(&provider).await;
                            (generation, provider, result)
                        });
                    }
                }
                Some((generation, provider, result)) = running.next(), if !running.is_empty() => {
                    let now = Instant::now();
                    self.cache.record(generation, &provider, result, now);
                    self.cache.schedule(generation, &provider, next_delay, now);
                }
            }
        }
    }
}
