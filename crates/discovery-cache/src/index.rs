//! The lookup index shared by every provider: one sorted array of 64-bit keys, one per stored
//! (provider, ID) pair, and a directory over the keys' top bits. A question costs one hash
//! and a search of a handful of keys, however many providers there are.
//!
//! A key is the ID's hash with its low bits replaced by the provider's position and the ID's
//! offset in that provider's arena. Sorting by key groups every provider's copy of an ID (they
//! share the hash), in configuration order; a provider's keys are found by their provider
//! bits alone, so replacing a catalog needs no hashing of the old one.

use crate::bounds::Bounds;
use crate::catalog::prefix_len;

/// How a key splits into hash bits, provider bits and offset bits, fixed by the bounds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Layout {
    offset_bits: u32,
    /// Provider and offset bits together; the hash keeps the `64 - ref_bits` above.
    ref_bits: u32,
}

impl Layout {
    /// The layout for `bounds`. Offsets stay below the largest arena the bounds allow (and
    /// below 2^32, see [`crate::catalog::Catalog`]); providers below `bounds.providers`, which
    /// [`crate::DiscoveryCache::configure`] keeps at most 2^32.
    pub(crate) fn new(bounds: Bounds) -> Self {
        let ids = bounds.ids_per_provider.min(bounds.catalog_bytes);
        let arena = bounds
            .catalog_bytes
            .saturating_add(ids.saturating_mul(prefix_len(bounds.id_bytes)))
            .min(u32::MAX as usize);
        let providers = bounds.providers.saturating_sub(1).min(u32::MAX as usize);
        let offset_bits = bits(arena);
        Self {
            offset_bits,
            ref_bits: offset_bits + bits(providers),
        }
    }

    /// The key of the ID hashed to `hash`, stored by `provider` at `offset`.
    pub(crate) fn key(self, hash: u64, provider: usize, offset: u32) -> u64 {
        (hash & !self.ref_mask()) | ((provider as u64) << self.offset_bits) | u64::from(offset)
    }

    /// The key's provider and offset.
    fn split(self, key: u64) -> (usize, u32) {
        let offset_mask = (1u64 << self.offset_bits) - 1;
        let reference = key & self.ref_mask();
        // Both parts were put in from a usize and a u32.
        (
            (reference >> self.offset_bits) as usize,
            (reference & offset_mask) as u32,
        )
    }

    fn ref_mask(self) -> u64 {
        u64::MAX.checked_shr(64 - self.ref_bits).unwrap_or(0)
    }
}

/// Bits needed to write `n`.
fn bits(n: usize) -> u32 {
    usize::BITS - n.leading_zeros()
}

/// Every stored (provider, ID) pair as a key, sorted, with a directory: `dir[b]` is the first
/// key whose top `dir_bits` bits are at least `b`, so keys of bucket `b` are
/// `keys[dir[b]..dir[b + 1]]`. About four keys share a bucket.
#[derive(Debug, Default)]
pub(crate) struct Index {
    keys: Box<[u64]>,
    dir: Box<[u32]>,
    dir_bits: u32,
}

impl Index {
    /// Replaces the keys of `provider`, `old` of them, with `new` (sorted, provider bits
    /// zero). Costs one pass over the index, none when the provider had and gets no keys.
    pub(crate) fn replace(&mut self, layout: Layout, provider: usize, old: usize, new: &[u64]) {
        if old == 0 && new.is_empty() {
            return;
        }
        let mine = layout.key(0, provider, 0);
        let len = (self.keys.len().saturating_sub(old)).saturating_add(new.len());
        let mut keys = Vec::with_capacity(len);
        let mut rest = self
            .keys
            .iter()
            .copied()
            .filter(|&k| layout.split(k).0 != provider)
            .peekable();
        let mut added = new.iter().map(|&k| k | mine).peekable();
        loop {
            let next = match (rest.peek(), added.peek()) {
                (Some(a), Some(b)) if a <= b => rest.next(),
                (_, Some(_)) => added.next(),
                (Some(_), None) => rest.next(),
                (None, None) => break,
            };
            keys.extend(next);
        }
        self.keys = keys.into_boxed_slice();
        self.index(layout);
    }

    /// The (provider, offset) of every stored ID whose hash matches `hash` in its top bits, in
    /// provider order. The caller compares the bytes.
    pub(crate) fn candidates(
        &self,
        layout: Layout,
        hash: u64,
    ) -> impl Iterator<Item = (usize, u32)> + '_ {
        let top = hash & !layout.ref_mask();
        let bucket = self.bucket(top);
        let from = bucket.partition_point(|&k| k < top);
        bucket[from..]
            .iter()
            .take_while(move |&&k| k & !layout.ref_mask() == top)
            .map(move |&k| layout.split(k))
    }

    /// How many pairs are stored.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    /// The heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        size_of::<u64>() * self.keys.len() + size_of::<u32>() * self.dir.len()
    }

    /// The keys that can share `top`'s hash bits.
    fn bucket(&self, top: u64) -> &[u64] {
        if self.dir_bits == 0 {
            return &self.keys;
        }
        let b = (top >> (64 - self.dir_bits)) as usize;
        match (self.dir.get(b), self.dir.get(b + 1)) {
            (Some(&from), Some(&to)) => self.keys.get(from as usize..to as usize).unwrap_or(&[]),
            _ => &self.keys,
        }
    }

    /// Rebuilds the directory for the current keys.
    fn index(&mut self, layout: Layout) {
        let len = self.keys.len();
        // About four keys per bucket, from hash bits only (never provider or offset bits, which
        // would split one hash over several buckets), and 32-bit positions.
        let wanted = if len >= 8 { bits(len / 4) - 1 } else { 0 };
        self.dir_bits = if u32::try_from(len).is_ok() {
            wanted.min(64 - layout.ref_bits)
        } else {
            0
        };
        if self.dir_bits == 0 {
            self.dir = Box::default();
            return;
        }
        let buckets = 1usize << self.dir_bits;
        let mut dir = Vec::with_capacity(buckets + 1);
        let mut at = 0usize;
        for b in 0..=buckets {
            while self
                .keys
                .get(at)
                .is_some_and(|&k| ((k >> (64 - self.dir_bits)) as usize) < b)
            {
                at += 1;
            }
            // At most `len`, which fits a u32.
            dir.push(at as u32);
        }
        self.dir = dir.into_boxed_slice();
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{Index, Layout};
    use crate::bounds::Bounds;

    #[test]
    fn keys_split_back_into_provider_and_offset() {
        let layout = Layout::new(Bounds::default());
        let key = layout.key(u64::MAX, 31, 278_000);
        assert_eq!(layout.split(key), (31, 278_000));
        assert_eq!(
            key & !layout.ref_mask(),
            !layout.ref_mask(),
            "the hash keeps the top bits"
        );
    }

    #[test]
    fn any_bounds_give_a_layout_that_fits_64_bits() {
        for bounds in [
            Bounds {
                providers: usize::MAX,
                ids_per_provider: usize::MAX,
                id_bytes: usize::MAX,
                catalog_bytes: usize::MAX,
            },
            Bounds {
                providers: 0,
                ids_per_provider: 0,
                id_bytes: 0,
                catalog_bytes: 0,
            },
        ] {
            let layout = Layout::new(bounds);
            assert!(layout.ref_bits <= 64);
            let key = layout.key(u64::MAX, 0, 0);
            assert_eq!(layout.split(key), (0, 0));
            let mut index = Index::default();
            index.replace(layout, 0, 0, &[key, key]);
            assert_eq!(index.candidates(layout, u64::MAX).count(), 2);
        }
    }

    proptest! {
        /// The directory finds exactly the keys whose hash bits match, for any keys of any
        /// providers, including keys that share their hash bits.
        #[test]
        fn candidates_are_exactly_the_matching_keys(
            stored in prop::collection::vec((0usize..32, 0u64..64, 0u32..1_000), 0..300),
            questions in prop::collection::vec(0u64..64, 1..20),
        ) {
            let layout = Layout::new(Bounds::default());
            // Few distinct hashes, spread over the top bits, so that they collide often.
            let hash = |h: u64| h.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let mut index = Index::default();
            for provider in 0..32 {
                let mut keys: Vec<u64> = stored
                    .iter()
                    .filter(|(p, _, _)| *p == provider)
                    .map(|&(_, h, offset)| layout.key(hash(h), 0, offset))
                    .collect();
                keys.sort_unstable();
                keys.dedup();
                index.replace(layout, provider, 0, &keys);
            }
            for h in questions {
                let found: Vec<(usize, u32)> = index.candidates(layout, hash(h)).collect();
                let mut want: Vec<(usize, u32)> = stored
                    .iter()
                    .filter(|(_, x, _)| *x == h)
                    .map(|&(p, _, offset)| (p, offset))
                    .collect();
                want.sort_unstable();
                want.dedup();
                prop_assert_eq!(found, want);
            }
            // Replacing a provider's keys drops its old ones.
            let before = index.len();
            let old = stored.iter().filter(|(p, _, _)| *p == 0).map(|(_, h, o)| (h, o)).collect::<std::collections::BTreeSet<_>>().len();
            index.replace(layout, 0, old, &[]);
            prop_assert_eq!(index.len(), before - old);
            prop_assert!(index.candidates(layout, hash(0)).all(|(p, _)| p != 0));
        }
    }
}
