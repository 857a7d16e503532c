//! The observations themselves: per provider, the advertised model IDs, when they were
//! seen and whether the listing succeeded; and the exact-ID ownership question asked of them.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

use crate::bounds::Bounds;
use crate::error::Error;

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

/// The state of one provider's catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// No listing has finished since the configuration (generation) began.
    NeverObserved,
    /// The last listing returned a complete catalog within the bounds.
    Complete,
    /// The last listing failed.
    Failed,
    /// The last listing exceeded a bound; it can never establish ownership.
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
    /// A provider's catalog exceeded a bound.
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
            Self::OverLimit => "a provider's model catalog is too large to use for routing",
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
#[derive(Debug, Clone)]
pub struct DiscoveryCache {
    inner: Arc<Mutex<State>>,
    bounds: Bounds,
}

#[derive(Debug, Default)]
struct State {
    generation: u64,
    set_ok: bool,
    entries: Vec<Entry>,
}

#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) listing: ProviderListing,
    pub(crate) status: Status,
    pub(crate) ids: BTreeSet<String>,
    pub(crate) observed_at: Option<Instant>,
    pub(crate) failures: u32,
    pub(crate) next_attempt: Option<Instant>,
    pub(crate) in_flight: bool,
}

impl DiscoveryCache {
    /// An empty cache with these bounds.
    #[must_use]
    pub fn new(bounds: Bounds) -> Self {
        Self {
            inner: Arc::new(Mutex::new(State::default())),
            bounds,
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
        let too_many = providers.len() > self.bounds.providers;
        state.set_ok = !too_many && !providers.is_empty();
        state.entries = if too_many {
            Vec::new()
        } else {
            providers
                .iter()
                .map(|listing| Entry {
                    listing: listing.clone(),
                    status: Status::NeverObserved,
                    ids: BTreeSet::new(),
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
                limit: self.bounds.providers,
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
    /// `now`. `Err(())` records a failure. A result from an older generation, or for a
    /// provider no longer configured, is ignored and `false` is returned.
    pub fn record(
        &self,
        generation: u64,
        provider: &str,
        result: Result<Vec<String>, ()>,
        now: Instant,
    ) -> bool {
        let bounds = self.bounds;
        let mut state = self.lock();
        if state.generation != generation {
            return false;
        }
        let Some(entry) = state
            .entries
            .iter_mut()
            .find(|e| e.listing.name == provider)
        else {
            return false;
        };
        entry.in_flight = false;
        entry.observed_at = Some(now);
        match result {
            Ok(ids) => {
                // Empty strings are not model IDs; dropping them invents nothing.
                let ids: BTreeSet<String> = ids.into_iter().filter(|id| !id.is_empty()).collect();
                if bounds.admits(ids.iter().map(String::as_str)) {
                    entry.status = Status::Complete;
                    entry.ids = ids;
                } else {
                    entry.status = Status::OverLimit;
                    entry.ids = BTreeSet::new();
                }
                entry.failures = 0;
            }
            Err(()) => {
                entry.status = Status::Failed;
                entry.ids = BTreeSet::new();
                entry.failures = entry.failures.saturating_add(1);
            }
        }
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
        let mut owners = Vec::new();
        for entry in &state.entries {
            let uncertain = match (entry.status, entry.observed_at) {
                (Status::NeverObserved, _) | (_, None) => Some(Uncertainty::ColdStart),
                (Status::Failed, _) => Some(Uncertainty::Failed),
                (Status::OverLimit, _) => Some(Uncertainty::OverLimit),
                (Status::Complete, Some(at)) if now.saturating_duration_since(at) > FRESH_FOR => {
                    Some(Uncertainty::Stale)
                }
                (Status::Complete, Some(_)) => None,
            };
            if let Some(reason) = uncertain {
                return Ownership::Uncertain(reason);
            }
            if entry.ids.contains(model_id) {
                owners.push(entry.listing.name.clone());
            }
        }
        match owners.len() {
            0 => Ownership::NotAdvertised,
            1 => Ownership::Unique(owners.remove(0)),
            _ => Ownership::Collision(owners),
        }
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
                models: e.ids.len(),
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
