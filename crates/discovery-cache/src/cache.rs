//! The observations themselves: per provider, the advertised model IDs, when they were
//! seen and whether the listing succeeded; and the exact-ID ownership question asked of them.

use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

use crate::bounds::Bounds;
use crate::catalog::Catalog;
use crate::error::Error;
use crate::index::{Index, Layout};

/// How long a successful observation counts, in monotonic time.
pub const FRESH_FOR: Duration = Duration::from_secs(5 * 60);

/// One configured provider as the cache sees it: its name, and a fingerprint of every setting
/// that changes what its listing returns (base URL, listing kind, credential reference). A
/// changed fingerprint voids its observations.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ProviderListing {
    /// The provider's name.
    pub name: String,
    /// Opaque text that changes whenever the listing-relevant settings change.
    pub fingerprint: String,
}

/// What one listing of a provider's catalog produced, as its [`crate::Lister`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observation {
    /// Every model ID the provider advertises. Duplicates and empty strings are ignored; a
    /// catalog over the [`Bounds`] is recorded as [`Status::OverLimit`].
    Complete(Vec<String>),
    /// The listing succeeded but the lister could not deliver the whole catalog: it dropped
    /// IDs at a bound of its own, stopped at a page cap, or skipped entries it could not read.
    /// Recorded as [`Status::OverLimit`] with no IDs kept, because the IDs left out may be
    /// exactly the ones that would make another provider's claim a collision.
    Incomplete,
    /// The listing failed.
    Failed,
}

/// The state of one provider's catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// No listing has finished since the configuration (generation) began.
    NeverObserved,
    /// The last listing returned a complete catalog within the bounds.
    Complete,
    /// The last listing failed.
    Failed,
    /// The last listing exceeded a bound or was incomplete; it can never establish
    /// ownership.
    OverLimit,
}

/// Why ownership cannot be decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Uncertainty {
    /// A provider has not been observed yet (start-up or a configuration change).
    ColdStart,
    /// A provider's observation is older than [`FRESH_FOR`].
    Stale,
    /// A provider's last listing failed.
    Failed,
    /// A provider's catalog exceeded a bound, or its lister could not deliver all of it.
    OverLimit,
    /// The configured provider set is empty or larger than the bounds allow.
    IncompleteSet,
}

impl Uncertainty {
    /// A short explanation for the chat user.
    #[must_use]
    pub fn user_message(self) -> &'static str {
        match self {
            Self::ColdStart => "model catalogs have not been read yet",
            Self::Stale => "a model catalog is out of date",
            Self::Failed => "a provider's model catalog could not be read",
            Self::OverLimit => {
                "a provider's model catalog is too large or incomplete to use for routing"
            }
            Self::IncompleteSet => "not every configured provider can be observed",
        }
    }
}

/// Who advertises an exact model ID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ownership {
    /// Exactly this provider, and every provider's catalog is fresh and complete.
    Unique(String),
    /// Several providers advertise it.
    Collision(Vec<String>),
    /// No provider advertises it (every catalog fresh and complete).
    NotAdvertised,
    /// The catalogs cannot settle it.
    Uncertain(Uncertainty),
}

/// A provider's last observation, for inspection (`ai providers`, diagnostics).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The provider's name.
    pub name: String,
    /// Its catalog's state.
    pub status: Status,
    /// How many IDs it advertised (0 unless complete).
    pub models: usize,
    /// When the last listing finished.
    pub observed_at: Option<Instant>,
}

/// Bounded observations of every configured provider's model IDs. Cloning shares the cache.
///
/// Constructing it starts nothing; [`crate::Refresher`] fills it when the caller runs it. It
/// holds IDs and their status only: no credentials, clients, headers or handles.
///
/// Each provider's distinct IDs sit once in one byte arena; a single sorted index of 64-bit
/// keys (hash bits, provider, arena offset) covers every provider, so
/// [`DiscoveryCache::owner_of`] hashes the question once and searches a handful of keys. The
/// hash is keyed per cache, so a provider cannot choose IDs that crowd one place of the index.
#[derive(Debug, Clone)]
pub struct DiscoveryCache {
    inner: Arc<Mutex<State>>,
    bounds: Bounds,
    layout: Layout,
    hashing: Hashing,
}

#[derive(Debug, Default)]
struct State {
    generation: u64,
    set_ok: bool,
    entries: Vec<Entry>,
    index: Index,
    /// When every provider's last listing was complete, the oldest of them: then one
    /// comparison with the clock settles freshness for all.
    settled: Option<Instant>,
}

/// The hash of model IDs.
#[derive(Debug, Clone)]
enum Hashing {
    /// SipHash with keys drawn per cache, so that nobody outside can predict collisions.
    Keyed(RandomState),
    /// A fixed function, for tests that need collisions.
    #[cfg(test)]
    Fixed(fn(&str) -> u64),
}

impl Hashing {
    fn hash(&self, id: &str) -> u64 {
        match self {
            Self::Keyed(state) => state.hash_one(id),
            #[cfg(test)]
            Self::Fixed(hash) => hash(id),
        }
    }
}

#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) listing: ProviderListing,
    pub(crate) status: Status,
    pub(crate) catalog: Catalog,
    pub(crate) observed_at: Option<Instant>,
    pub(crate) failures: u32,
    pub(crate) next_attempt: Option<Instant>,
    pub(crate) in_flight: bool,
}

impl DiscoveryCache {
    /// An empty cache with these bounds.
    #[must_use]
    pub fn new(bounds: Bounds) -> Self {
        Self::with_hashing(bounds, Hashing::Keyed(RandomState::new()))
    }

    fn with_hashing(bounds: Bounds, hashing: Hashing) -> Self {
        Self {
            inner: Arc::new(Mutex::new(State::default())),
            bounds,
            layout: Layout::new(bounds),
            hashing,
        }
    }

    /// The bounds in force.
    #[must_use]
    pub fn bounds(&self) -> Bounds {
        self.bounds
    }

    /// Sets the configured providers. When the set or any fingerprint differs from the current
    /// one, a new generation begins and every old observation stops counting (results of
    /// listings started before are discarded when they arrive). Returns the generation.
    ///
    /// # Errors
    ///
    /// [`Error::TooManyProviders`] past the bound; the cache then answers
    /// [`Uncertainty::IncompleteSet`] until a valid set is configured.
    pub fn configure(&self, providers: &[ProviderListing]) -> Result<u64, Error> {
        let mut state = self.lock();
        let same = state.set_ok
            && state.entries.len() == providers.len()
            && state
                .entries
                .iter()
                .zip(providers)
                .all(|(e, p)| e.listing == *p);
        if same {
            return Ok(state.generation);
        }
        state.generation += 1;
        state.index = Index::default();
        state.settled = None;
        // Provider positions are 32-bit inside the index, whatever the bounds say.
        let limit = self.bounds.providers.min(u32::MAX as usize);
        let too_many = providers.len() > limit;
        state.set_ok = !too_many && !providers.is_empty();
        state.entries = if too_many {
            Vec::new()
        } else {
            providers
                .iter()
                .map(|listing| Entry {
                    listing: listing.clone(),
                    status: Status::NeverObserved,
                    catalog: Catalog::default(),
                    observed_at: None,
                    failures: 0,
                    next_attempt: None,
                    in_flight: false,
                })
                .collect()
        };
        if too_many {
            return Err(Error::TooManyProviders {
                count: providers.len(),
                limit,
            });
        }
        Ok(state.generation)
    }

    /// The current configuration generation.
    #[must_use]
    pub fn generation(&self) -> u64 {
        self.lock().generation
    }

    /// Records a finished listing of `provider` made under `generation`, at monotonic time
    /// `now`. A result from an older generation, or for a provider no longer configured, is
    /// ignored and `false` is returned.
    ///
    /// The listing is hashed, deduplicated and checked against the bounds before the cache is
    /// locked, in time linear in its length (plus sorting at most
    /// [`Bounds::ids_per_provider`] keys); under the lock, one pass over the shared index
    /// swaps the provider's keys.
    pub fn record(
        &self,
        generation: u64,
        provider: &str,
        observation: Observation,
        now: Instant,
    ) -> bool {
        let (status, catalog, keys) = match observation {
            Observation::Complete(ids) => {
                match Catalog::build(&ids, self.bounds, self.layout, |id| self.hashing.hash(id)) {
                    Ok((catalog, keys)) => (Status::Complete, catalog, keys),
                    Err(_) => (Status::OverLimit, Catalog::default(), Vec::new()),
                }
            }
            Observation::Incomplete => (Status::OverLimit, Catalog::default(), Vec::new()),
            Observation::Failed => (Status::Failed, Catalog::default(), Vec::new()),
        };
        let mut state = self.lock();
        if state.generation != generation {
            return false;
        }
        let Some(position) = state
            .entries
            .iter()
            .position(|e| e.listing.name == provider)
        else {
            return false;
        };
        let state = &mut *state;
        let entry = &mut state.entries[position];
        state
            .index
            .replace(self.layout, position, entry.catalog.len(), &keys);
        entry.in_flight = false;
        entry.observed_at = Some(now);
        entry.status = status;
        entry.catalog = catalog;
        entry.failures = if status == Status::Failed {
            entry.failures.saturating_add(1)
        } else {
            0
        };
        state.settled = state.entries.iter().try_fold(now, |oldest, e| {
            (e.status == Status::Complete)
                .then_some(e.observed_at)
                .flatten()
                .map(|at| at.min(oldest))
        });
        true
    }

    /// Who advertises exactly `model_id` (case-sensitive, no prefixes or guesses), at
    /// monotonic time `now`. `Unique` requires a fresh, complete observation of every
    /// configured provider.
    #[must_use]
    pub fn owner_of(&self, model_id: &str, now: Instant) -> Ownership {
        let state = self.lock();
        if !state.set_ok {
            return Ownership::Uncertain(Uncertainty::IncompleteSet);
        }
        let uncertain = match state.settled {
            Some(oldest) if now.saturating_duration_since(oldest) <= FRESH_FOR => None,
            Some(_) => Some(Uncertainty::Stale),
            None => state.entries.iter().find_map(|e| e.uncertainty(now)),
        };
        if let Some(reason) = uncertain {
            return Ownership::Uncertain(reason);
        }
        let hash = self.hashing.hash(model_id);
        let mut owners = state
            .index
            .candidates(self.layout, hash)
            .filter_map(|(position, offset)| state.entries.get(position).map(|e| (e, offset)))
            .filter(|(e, offset)| e.catalog.id_at(*offset) == model_id.as_bytes())
            .map(|(e, _)| e.listing.name.clone());
        match (owners.next(), owners.next()) {
            (None, _) => Ownership::NotAdvertised,
            (Some(one), None) => Ownership::Unique(one),
            (Some(first), Some(second)) => {
                Ownership::Collision([first, second].into_iter().chain(owners).collect())
            }
        }
    }

    /// The heap bytes the cache holds: its shared state, every provider's ID arena, the shared
    /// index, names and fingerprints, counted by the size of each buffer (what was asked of
    /// the allocator, not counting its own bookkeeping). Every buffer is sized to its
    /// contents, so this is what the observations cost, not what they once needed.
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        let state = self.lock();
        // The `Arc` holds two counts beside the state.
        let shared = 2 * size_of::<usize>()
            + size_of::<Mutex<State>>()
            + state.entries.capacity() * size_of::<Entry>()
            + state.index.heap_bytes();
        state.entries.iter().fold(shared, |total, e| {
            total
                + e.catalog.heap_bytes()
                + e.listing.name.capacity()
                + e.listing.fingerprint.capacity()
        })
    }

    /// Every provider's last observation.
    #[must_use]
    pub fn snapshot(&self) -> Vec<Snapshot> {
        self.lock()
            .entries
            .iter()
            .map(|e| Snapshot {
                name: e.listing.name.clone(),
                status: e.status,
                models: e.catalog.len(),
                observed_at: e.observed_at,
            })
            .collect()
    }

    /// Providers due for a refresh at `now` that are not already being refreshed; marks them
    /// in flight and returns them with the generation they belong to.
    pub(crate) fn take_due(&self, now: Instant) -> (u64, Vec<String>) {
        let mut state = self.lock();
        let generation = state.generation;
        let due = state
            .entries
            .iter_mut()
            .filter(|e| !e.in_flight && e.next_attempt.is_none_or(|t| t <= now))
            .map(|e| {
                e.in_flight = true;
                e.listing.name.clone()
            })
            .collect();
        (generation, due)
    }

    /// Schedules `provider`'s next refresh after a finished attempt.
    pub(crate) fn schedule(
        &self,
        generation: u64,
        provider: &str,
        next: impl Fn(u32) -> Duration,
        now: Instant,
    ) {
        let mut state = self.lock();
        if state.generation != generation {
            return;
        }
        if let Some(entry) = state
            .entries
            .iter_mut()
            .find(|e| e.listing.name == provider)
        {
            entry.in_flight = false;
            entry.next_attempt = Some(now + next(entry.failures));
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data behind; keep using it.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Entry {
    /// Why this provider's observation cannot take part in deciding ownership at `now`.
    fn uncertainty(&self, now: Instant) -> Option<Uncertainty> {
        match (self.status, self.observed_at) {
            (Status::NeverObserved, _) | (_, None) => Some(Uncertainty::ColdStart),
            (Status::Failed, _) => Some(Uncertainty::Failed),
            (Status::OverLimit, _) => Some(Uncertainty::OverLimit),
            (Status::Complete, Some(at)) if now.saturating_duration_since(at) > FRESH_FOR => {
                Some(Uncertainty::Stale)
            }
            (Status::Complete, Some(_)) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;

    /// Small bounds that arbitrary listings cross often, with room for IDs whose length
    /// prefix takes two bytes.
    fn bounds() -> Bounds {
        Bounds {
            providers: 4,
            ids_per_provider: 8,
            id_bytes: 140,
            catalog_bytes: 400,
        }
    }

    /// IDs that repeat often: ASCII, non-ASCII, empty, and longer than one prefix byte covers.
    fn id() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => "[ab]{0,3}",
            2 => "[é中🦀a]{1,3}",
            1 => "[ab]{127,130}",
            1 => "[ab]{139,141}",
        ]
    }

    #[derive(Debug, Clone)]
    enum Listed {
        Complete(Vec<String>),
        Incomplete,
        Failed,
    }

    fn listed() -> impl Strategy<Value = Listed> {
        prop_oneof![
            6 => prop::collection::vec(id(), 0..12).prop_map(Listed::Complete),
            1 => Just(Listed::Incomplete),
            1 => Just(Listed::Failed),
        ]
    }

    /// The keyed hash, and two that collide on purpose: every ID in one place of the index
    /// and of the duplicate table, and only a few places by length.
    fn hashing() -> impl Strategy<Value = Hashing> {
        prop_oneof![
            Just(Hashing::Keyed(RandomState::new())),
            Just(Hashing::Fixed(|_| 0)),
            Just(Hashing::Fixed(
                |id| (id.len() as u64 % 3).wrapping_mul(0x9e37_79b9_7f4a_7c15)
            )),
        ]
    }

    /// What `owner_of` must answer when each provider's last listing is `last` (all at the
    /// same moment), straight from the definitions.
    fn expected(last: &[Option<Listed>], model: &str) -> Ownership {
        let b = bounds();
        let mut sets = Vec::new();
        for listing in last {
            let set = match listing {
                None => return Ownership::Uncertain(Uncertainty::ColdStart),
                Some(Listed::Failed) => return Ownership::Uncertain(Uncertainty::Failed),
                Some(Listed::Incomplete) => return Ownership::Uncertain(Uncertainty::OverLimit),
                Some(Listed::Complete(ids)) => {
                    let set: BTreeSet<&str> = ids
                        .iter()
                        .map(String::as_str)
                        .filter(|s| !s.is_empty())
                        .collect();
                    let bytes: usize = set.iter().map(|s| s.len()).sum();
                    if set.len() > b.ids_per_provider
                        || set.iter().any(|s| s.len() > b.id_bytes)
                        || bytes > b.catalog_bytes
                    {
                        return Ownership::Uncertain(Uncertainty::OverLimit);
                    }
                    set
                }
            };
            sets.push(set);
        }
        let owners: Vec<String> = sets
            .iter()
            .enumerate()
            .filter(|(_, set)| set.contains(model))
            .map(|(i, _)| format!("p{i}"))
            .collect();
        match owners.as_slice() {
            [] => Ownership::NotAdvertised,
            [one] => Ownership::Unique(one.clone()),
            _ => Ownership::Collision(owners),
        }
    }

    proptest! {
        /// Whatever the listings, their order, duplicates or hash collisions, `owner_of`
        /// answers exactly what the definitions say, and the index holds exactly the stored
        /// IDs.
        #[test]
        fn owner_of_matches_the_definition(
            hashing in hashing(),
            providers in 1usize..5,
            steps in prop::collection::vec((0usize..4, listed()), 0..10),
            extra in prop::collection::vec(id(), 0..4),
        ) {
            let cache = DiscoveryCache::with_hashing(bounds(), hashing);
            let listings: Vec<ProviderListing> = (0..providers)
                .map(|i| ProviderListing { name: format!("p{i}"), fingerprint: String::new() })
                .collect();
            let generation = cache.configure(&listings).expect("within bounds");
            let now = Instant::now();
            let mut last: Vec<Option<Listed>> = vec![None; providers];
            for (provider, listing) in &steps {
                let observation = match listing {
                    Listed::Complete(ids) => Observation::Complete(ids.clone()),
                    Listed::Incomplete => Observation::Incomplete,
                    Listed::Failed => Observation::Failed,
                };
                let known = cache.record(generation, &format!("p{provider}"), observation, now);
                prop_assert_eq!(known, *provider < providers);
                if let Some(slot) = last.get_mut(*provider) {
                    *slot = Some(listing.clone());
                }
            }
            {
                let state = cache.lock();
                let stored: usize = state.entries.iter().map(|e| e.catalog.len()).sum();
                prop_assert_eq!(state.index.len(), stored);
            }
            let mut questions: Vec<&String> = extra.iter().collect();
            for (_, listing) in &steps {
                if let Listed::Complete(ids) = listing {
                    questions.extend(ids);
                }
            }
            for model in questions {
                prop_assert_eq!(cache.owner_of(model, now), expected(&last, model), "{:?}", model);
            }
        }
    }

    #[test]
    fn memory_stays_under_twice_the_id_bytes() {
        // 32 providers of 8,192 distinct 15-byte IDs: short IDs are the hardest case, since
        // the index costs the same per ID whatever its length.
        let cache = DiscoveryCache::new(Bounds::default());
        let listings: Vec<ProviderListing> = (0..32)
            .map(|p| ProviderListing {
                name: format!("p{p:02}"),
                fingerprint: String::new(),
            })
            .collect();
        let generation = cache.configure(&listings).expect("32 providers");
        let now = Instant::now();
        let mut raw = 0;
        for (p, listing) in listings.iter().enumerate() {
            let ids: Vec<String> = (0..8_192)
                .map(|i| format!("p{p:02}/model-{i:05}"))
                .collect();
            raw += ids.iter().map(String::len).sum::<usize>();
            assert!(cache.record(generation, &listing.name, Observation::Complete(ids), now));
        }
        assert_eq!(raw, 32 * 8_192 * 15);
        let held = cache.memory_bytes();
        assert!(held < 2 * raw, "{held} bytes held for {raw} bytes of IDs");
        assert_eq!(
            cache.owner_of("p31/model-08191", now),
            Ownership::Unique("p31".into())
        );
    }
}
