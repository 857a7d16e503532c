//! The bounded command cache behind the buttons: each answered command's text, requester,
//! place, tracked replies and tool snapshot, plus which run of each command message is the
//! newest. Buttons and revisions outlive neither an eviction nor a restart.

use std::collections::{HashMap, HashSet, VecDeque};

use yetibot_chat_adapters::{Author, Place, Posted, StatusCard};

/// The most commands whose buttons stay live.
pub const DEFAULT_CACHE_CAPACITY: usize = 512;

/// Identifies one command message: where it is and its platform ID.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    pub(crate) place: Place,
    pub(crate) message_id: String,
}

/// Where a command's rerun stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Rerun {
    /// Nothing pending.
    Idle,
    /// A confirmation card is shown; its buttons carry `token`.
    Confirming { token: String, card: Posted },
    /// A confirmed rerun is running.
    Running,
}

/// One answered command.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// The command line as the requester sent it (prefix included).
    pub(crate) text: String,
    /// Who sent it: the only one who may run it again.
    pub(crate) requester: Author,
    /// The files attached to the message, which a rerun reads again.
    pub(crate) attachments: Vec<yetibot_conversation::Attachment>,
    /// The replies posted for it, replaced by a rerun or an edit's new answer.
    pub(crate) posted: Option<Posted>,
    /// The last tool snapshot of an AI answer, for Show details.
    pub(crate) details: Option<StatusCard>,
    /// The token of the answer's buttons.
    pub(crate) token: String,
    pub(crate) rerun: Rerun,
}

/// The newest run of one command message.
#[derive(Debug, Clone, Copy)]
struct RunState {
    /// The message revision it runs.
    revision: u32,
    /// Its generation: newer than every earlier run's.
    generation: u64,
    /// How many runs of the message are still going (an obsolete one finishes without
    /// publishing, but it is still going until then).
    in_flight: u32,
}

/// The cache: entries by key, and tokens (answer buttons and confirmation cards) to keys.
#[derive(Debug)]
pub(crate) struct Cache {
    capacity: usize,
    entries: HashMap<Key, Entry>,
    order: VecDeque<Key>,
    tokens: HashMap<String, Key>,
    /// The newest run of each command message, and the order they arrived in, so the map
    /// stays bounded (a run still in flight is never forgotten).
    runs: HashMap<Key, RunState>,
    run_order: VecDeque<Key>,
    /// Confirmation tokens already pressed, newest last, at most `capacity`: a second
    /// press is told the button was used rather than that it expired.
    used: HashSet<String>,
    used_order: VecDeque<String>,
    next: u64,
    /// This run's mark in every token.
    instance: u64,
}

/// Why a run was not started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// A new message seen before: a platform's replay.
    Replayed,
    /// An edit older than one already running or run.
    Superseded,
}

impl Cache {
    /// A cache of `capacity` commands whose button tokens carry `instance`, a number that
    /// differs between runs of the bot, so that a button posted before a restart never
    /// matches a command of this run.
    pub(crate) fn new(capacity: usize, instance: u64) -> Self {
        Self {
            instance,
            capacity: capacity.max(1),
            entries: HashMap::new(),
            order: VecDeque::new(),
            tokens: HashMap::new(),
            runs: HashMap::new(),
            run_order: VecDeque::new(),
            used: HashSet::new(),
            used_order: VecDeque::new(),
            next: 0,
        }
    }

    /// A fresh token: unique in this process, and unlike any of another run's.
    pub(crate) fn token(&mut self) -> String {
        self.next += 1;
        format!("c{:016x}-{}", self.instance, self.next)
    }

    /// Starts a run of `key` at message `revision`, atomically with the checks that decide
    /// whether it may run: a new message (`first`) seen before is a replay, and a revision
    /// older than the newest one started is superseded (edits can arrive out of order).
    /// Returns the run's generation, newer than every earlier run's.
    pub(crate) fn begin(&mut self, key: &Key, revision: u32, first: bool) -> Result<u64, Refused> {
        if let Some(state) = self.runs.get(key) {
            if first {
                return Err(Refused::Replayed);
            }
            if revision < state.revision {
                return Err(Refused::Superseded);
            }
        }
        self.next += 1;
        let generation = self.next;
        match self.runs.get_mut(key) {
            Some(state) => {
                state.revision = revision;
                state.generation = generation;
                state.in_flight = state.in_flight.saturating_add(1);
            }
            None => {
                self.runs.insert(
                    key.clone(),
                    RunState {
                        revision,
                        generation,
                        in_flight: 1,
                    },
                );
                self.run_order.push_back(key.clone());
                self.forget_old_runs();
            }
        }
        Ok(generation)
    }

    /// Forgets the oldest finished runs past four times the capacity (runs of messages
    /// that answered nothing are tracked too, for replays).
    fn forget_old_runs(&mut self) {
        let mut kept = VecDeque::new();
        while self.run_order.len() + kept.len() > self.capacity * 4 {
            let Some(old) = self.run_order.pop_front() else {
                break;
            };
            if self.runs.get(&old).is_some_and(|s| s.in_flight > 0) {
                kept.push_back(old);
            } else {
                self.runs.remove(&old);
            }
        }
        while let Some(key) = kept.pop_back() {
            self.run_order.push_front(key);
        }
    }

    /// Marks one run of `key` finished.
    pub(crate) fn finish(&mut self, key: &Key) {
        if let Some(state) = self.runs.get_mut(key) {
            state.in_flight = state.in_flight.saturating_sub(1);
        }
    }

    /// Whether `generation` is still the newest run of `key`.
    pub(crate) fn is_current(&self, key: &Key, generation: u64) -> bool {
        self.runs
            .get(key)
            .is_some_and(|s| s.generation == generation)
    }

    /// The newest run's generation and revision of `key`, if it ever ran.
    pub(crate) fn current(&self, key: &Key) -> Option<(u64, u32)> {
        self.runs.get(key).map(|s| (s.generation, s.revision))
    }

    /// Whether a run of `key` is still going.
    pub(crate) fn in_flight(&self, key: &Key) -> bool {
        self.runs.get(key).is_some_and(|s| s.in_flight > 0)
    }

    pub(crate) fn get(&self, key: &Key) -> Option<&Entry> {
        self.entries.get(key)
    }

    pub(crate) fn get_mut(&mut self, key: &Key) -> Option<&mut Entry> {
        self.entries.get_mut(key)
    }

    /// The command a button token belongs to.
    pub(crate) fn by_token(&self, token: &str) -> Option<Key> {
        self.tokens.get(token).cloned()
    }

    /// Adds a token for `key` (a confirmation card's).
    pub(crate) fn bind_token(&mut self, token: String, key: &Key) {
        self.tokens.insert(token, key.clone());
    }

    /// Forgets a token.
    pub(crate) fn unbind_token(&mut self, token: &str) {
        self.tokens.remove(token);
    }

    /// Forgets a confirmation token that was just pressed, remembering (boundedly) that it
    /// was used.
    pub(crate) fn consume_token(&mut self, token: &str) {
        self.tokens.remove(token);
        if self.used.insert(token.to_owned()) {
            self.used_order.push_back(token.to_owned());
            while self.used_order.len() > self.capacity {
                if let Some(old) = self.used_order.pop_front() {
                    self.used.remove(&old);
                }
            }
        }
    }

    /// Whether `token` is a confirmation that was already pressed.
    pub(crate) fn was_used(&self, token: &str) -> bool {
        self.used.contains(token)
    }

    /// Takes back a pending confirmation whose card was deleted (a delete reaction), so the
    /// command does not stay "waiting" with no card to press.
    pub(crate) fn forget_card(&mut self, message_id: &str) {
        let mut freed = Vec::new();
        for entry in self.entries.values_mut() {
            if let Rerun::Confirming { token, card } = &entry.rerun
                && card.ids.iter().any(|id| id == message_id)
            {
                freed.push(token.clone());
                entry.rerun = Rerun::Idle;
            }
        }
        for token in freed {
            self.tokens.remove(&token);
        }
    }

    /// Stores or replaces `key`'s entry, evicting the oldest past the capacity.
    pub(crate) fn put(&mut self, key: Key, entry: Entry) {
        self.tokens.insert(entry.token.clone(), key.clone());
        if self.entries.insert(key.clone(), entry).is_none() {
            self.order.push_back(key);
        }
        while self.order.len() > self.capacity {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            if let Some(entry) = self.entries.remove(&old) {
                self.tokens.remove(&entry.token);
                if let Rerun::Confirming { token, .. } = &entry.rerun {
                    self.tokens.remove(token);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use yetibot_conversation::AdapterKind;

    fn key(n: u32) -> Key {
        Key {
            place: Place {
                adapter: AdapterKind::Web,
                connection: "local".into(),
                room: "general".into(),
                room_name: None,
                thread: None,
            },
            message_id: format!("m{n}"),
        }
    }

    fn entry(token: String) -> Entry {
        Entry {
            text: "!echo".into(),
            requester: Author {
                id: "u".into(),
                name: "u".into(),
                is_bot: false,
            },
            attachments: Vec::new(),
            posted: None,
            details: None,
            token,
            rerun: Rerun::Idle,
        }
    }

    #[test]
    fn entries_and_their_tokens_are_evicted_together() {
        let mut cache = Cache::new(2, 7);
        let tokens: Vec<String> = (0..3)
            .map(|n| {
                let token = cache.token();
                cache.put(key(n), entry(token.clone()));
                token
            })
            .collect();
        assert_eq!(tokens[2], "c0000000000000007-3");
        assert!(cache.get(&key(0)).is_none());
        assert_eq!(cache.by_token(&tokens[0]), None);
        assert_eq!(cache.by_token(&tokens[2]), Some(key(2)));
    }

    #[test]
    fn only_the_newest_revision_runs_and_replays_are_refused_atomically() {
        let mut cache = Cache::new(1, 7);
        let first = cache.begin(&key(0), 0, true).expect("new");
        assert_eq!(cache.begin(&key(0), 0, true), Err(Refused::Replayed));
        let edit = cache.begin(&key(0), 2, false).expect("edit");
        assert!(!cache.is_current(&key(0), first));
        assert!(cache.is_current(&key(0), edit));
        // Revision 1 arrives after revision 2: it never runs.
        assert_eq!(cache.begin(&key(0), 1, false), Err(Refused::Superseded));
        assert!(cache.in_flight(&key(0)));
        cache.finish(&key(0));
        cache.finish(&key(0));
        assert!(!cache.in_flight(&key(0)));
    }

    #[test]
    fn runs_stay_bounded_but_one_in_flight_is_never_forgotten() {
        let mut cache = Cache::new(1, 7);
        cache.begin(&key(0), 0, true).expect("running");
        for n in 1..10 {
            cache.begin(&key(n), 0, true).expect("new");
            cache.finish(&key(n));
        }
        assert!(cache.in_flight(&key(0)), "still tracked while running");
        assert_eq!(cache.begin(&key(0), 0, true), Err(Refused::Replayed));
        assert_eq!(
            cache.current(&key(1)),
            None,
            "old finished runs are forgotten"
        );
        assert!(cache.current(&key(9)).is_some());
    }
}
