//! A bounded memory of recent keys, oldest forgotten first: what the adapter remembers about
//! messages, threads and replays without ever growing with the traffic it sees.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

/// At most `capacity` entries; inserting past it forgets the oldest key.
#[derive(Debug)]
pub(crate) struct Recent<K, V> {
    capacity: usize,
    map: HashMap<K, V>,
    order: VecDeque<K>,
}

impl<K: Hash + Eq + Clone, V> Recent<K, V> {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            map: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    pub(crate) fn get(&self, key: &K) -> Option<&V> {
        self.map.get(key)
    }

    pub(crate) fn contains(&self, key: &K) -> bool {
        self.map.contains_key(key)
    }

    /// Stores `value` under `key`; returns the value it replaced.
    pub(crate) fn insert(&mut self, key: K, value: V) -> Option<V> {
        let old = self.map.insert(key.clone(), value);
        if old.is_none() {
            self.order.push_back(key);
            while self.order.len() > self.capacity {
                if let Some(oldest) = self.order.pop_front() {
                    self.map.remove(&oldest);
                }
            }
        }
        old
    }

    pub(crate) fn remove(&mut self, key: &K) -> Option<V> {
        // The key stays in the order list until it ages out; a later insert of it is a new
        // entry, which can only make the bound stricter.
        self.map.remove(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_key_is_forgotten_first() {
        let mut recent = Recent::new(2);
        recent.insert(1, "a");
        recent.insert(2, "b");
        assert_eq!(recent.insert(2, "c"), Some("b"));
        recent.insert(3, "d");
        assert!(!recent.contains(&1));
        assert_eq!(recent.get(&2), Some(&"c"));
        assert_eq!(recent.remove(&3), Some("d"));
        assert!(!recent.contains(&3));
    }
}
