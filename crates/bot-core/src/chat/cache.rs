//! The bounded command cache behind the buttons: each answered command's text, requester,
//! place, tracked replies and tool snapshot, plus which run of each command message is the
//! newest. Buttons and revisions outlive neither an eviction nor a restart.

use std::collections::{HashMap, VecDeque};

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
    /// The replies posted for it, replaced by a rerun or an edit's new answer.
    pub(crate) posted: Option<Posted>,
    /// The last tool snapshot of an AI answer, for Show details.
    pub(crate) details: Option<StatusCard>,
    /// The token of the answer's buttons.
    pub(crate) token: String,
    pub(crate) rerun: Rerun,
}

/// The cache: entries by key, and tokens (answer buttons and confirmation cards) to keys.
#[derive(Debug)]
pub(crate) struct Cache {
    capacity: usize,
    entries: HashMap<Key, Entry>,
    order: VecDeque<Key>,
    tokens: HashMap<String, Key>,
    /// The newest run of each command message, and the order they arrived in, so the map
    /// stays bounded.
    runs: HashMap<Key, u64>,
    run_order: VecDeque<Key>,
    next: u64,
}

impl Cache {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            entries: HashMap::new(),
            order: VecDeque::new(),
            tokens: HashMap::new(),
            runs: HashMap::new(),
            run_order: VecDeque::new(),
            next: 0,
        }
    }

    /// A fresh token (unique in this process).
    pub(crate) fn token(&mut self) -> String {
        self.next += 1;
        format!("c{}", self.next)
    }

    /// Whether this command message was seen before (a replayed event).
    pub(crate) fn seen(&self, key: &Key) -> bool {
        self.runs.contains_key(key)
    }

    /// Starts a run of `key`: its generation, newer than every earlier run's.
    pub(crate) fn start_run(&mut self, key: &Key) -> u64 {
        self.next += 1;
        let generation = self.next;
        if self.runs.insert(key.clone(), generation).is_none() {
            self.run_order.push_back(key.clone());
            // Four times the entries: runs of commands that answered nothing are tracked too.
            while self.run_order.len() > self.capacity * 4 {
                if let Some(old) = self.run_order.pop_front() {
                    self.runs.remove(&old);
                }
            }
        }
        generation
    }

    /// The newest run of `key`, if it has one.
    pub(crate) fn generation(&self, key: &Key) -> Option<u64> {
        self.runs.get(key).copied()
    }

    /// Whether `generation` is still the newest run of `key`.
    pub(crate) fn is_current(&self, key: &Key, generation: u64) -> bool {
        self.runs.get(key) == Some(&generation)
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
            posted: None,
            details: None,
            token,
            rerun: Rerun::Idle,
        }
    }

    #[test]
    fn entries_and_their_tokens_are_evicted_together() {
        let mut cache = Cache::new(2);
        for n in 0..3 {
            let token = cache.token();
            cache.put(key(n), entry(token));
        }
        assert!(cache.get(&key(0)).is_none());
        assert_eq!(cache.by_token("c1"), None);
        assert_eq!(cache.by_token("c3"), Some(key(2)));
    }

    #[test]
    fn only_the_newest_run_is_current_and_runs_stay_bounded() {
        let mut cache = Cache::new(1);
        let first = cache.start_run(&key(0));
        assert!(cache.seen(&key(0)));
        let second = cache.start_run(&key(0));
        assert!(!cache.is_current(&key(0), first));
        assert!(cache.is_current(&key(0), second));
        for n in 1..10 {
            cache.start_run(&key(n));
        }
        assert!(!cache.seen(&key(0)));
        assert!(cache.seen(&key(9)));
    }
}
