//! One provider's stored model IDs: every distinct ID once, length-prefixed, back to back in a
//! single byte arena, plus the sorted lookup keys that [`crate::index::Index`] merges in.

use crate::bounds::{Bounds, Tally};
use crate::index::Layout;

/// The distinct, non-empty model IDs of one complete listing, in one exactly sized arena:
/// each ID is its length (LEB128, one byte below 128) followed by its bytes. The arena is at
/// most 4 GiB, so that 32-bit offsets reach every ID.
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    bytes: Box<[u8]>,
    len: usize,
}

/// The listing does not fit the bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OverLimit;

impl Catalog {
    /// Stores the distinct non-empty IDs of `ids` and returns them with their lookup keys
    /// (provider bits still zero), sorted; or reports that they exceed `bounds` (or the 4 GiB
    /// arena, whatever the bounds say). `hash` must be the function that lookups use.
    ///
    /// Cost is linear in the listing (one hash per ID, and an expected constant number of
    /// probes of a keyed-hash table to drop duplicates) plus sorting the keys of at most
    /// `bounds.ids_per_provider` distinct IDs. It stops at the first ID past a bound and
    /// accepts any strings in any number without panicking.
    pub(crate) fn build(
        ids: &[String],
        bounds: Bounds,
        layout: Layout,
        hash: impl Fn(&str) -> u64,
    ) -> Result<(Self, Vec<u64>), OverLimit> {
        // Empty strings are not model IDs; dropping them invents nothing.
        let listed = || ids.iter().filter(|id| !id.is_empty());
        // Room for what can be kept: the bounds stop anything larger before it is stored.
        let most = listed().count().min(bounds.ids_per_provider);
        let most_bytes = listed()
            .map(|id| id.len().saturating_add(prefix_len(id.len())))
            .fold(0usize, usize::saturating_add)
            .min(bounds.catalog_bytes.saturating_add(most.saturating_mul(2)));
        let mut bytes = Vec::with_capacity(most_bytes);
        let mut starts: Vec<u32> = Vec::with_capacity(most);
        let mut hashes = Vec::with_capacity(most);
        let mut seen = Seen::new(most);
        let mut tally = Tally::default();
        for id in listed() {
            if id.len() > bounds.id_bytes {
                return Err(OverLimit);
            }
            let hash = hash(id);
            let Some(slot) = seen.vacant_slot(hash, |k| {
                starts.get(k).map(|&s| id_at(&bytes, s as usize)) == Some(id.as_bytes())
            }) else {
                continue;
            };
            if !tally.admit(&bounds, id.len()) {
                return Err(OverLimit);
            }
            let start = u32::try_from(bytes.len()).map_err(|_| OverLimit)?;
            push_prefix(&mut bytes, id.len());
            bytes.extend_from_slice(id.as_bytes());
            seen.fill(slot, hash, starts.len());
            starts.push(start);
            hashes.push(hash);
        }
        if u32::try_from(bytes.len()).is_err() {
            return Err(OverLimit);
        }
        let mut keys: Vec<u64> = hashes
            .iter()
            .zip(&starts)
            .map(|(&hash, &start)| layout.key(hash, 0, start))
            .collect();
        keys.sort_unstable();
        let catalog = Self {
            bytes: bytes.into_boxed_slice(),
            len: starts.len(),
        };
        Ok((catalog, keys))
    }

    /// The ID stored at `offset` (empty if none starts there, which a key never produces).
    pub(crate) fn id_at(&self, offset: u32) -> &[u8] {
        id_at(&self.bytes, offset as usize)
    }

    /// How many distinct IDs are stored.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.bytes.len()
    }
}

/// The ID whose length prefix starts at `start` in `bytes`.
fn id_at(bytes: &[u8], start: usize) -> &[u8] {
    let mut len = 0usize;
    let mut at = start;
    for shift in (0..usize::BITS).step_by(7) {
        let Some(&byte) = bytes.get(at) else {
            return &[];
        };
        at += 1;
        len |= usize::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return bytes.get(at..at.saturating_add(len)).unwrap_or_default();
        }
    }
    &[]
}

/// Bytes of the LEB128 length prefix of an ID of `len` bytes.
pub(crate) fn prefix_len(len: usize) -> usize {
    (usize::BITS - len.leading_zeros()).div_ceil(7).max(1) as usize
}

fn push_prefix(bytes: &mut Vec<u8>, mut len: usize) {
    while len >= 0x80 {
        bytes.push((len & 0x7f) as u8 | 0x80);
        len >>= 7;
    }
    bytes.push(len as u8);
}

/// The table that drops duplicate IDs while a listing is stored; it lives only as long as
/// [`Catalog::build`]. Open addressing with linear probing over 4-byte slots: 0 is empty,
/// anything else is `tag << index_bits | (k + 1)`, the position `k` of the ID among those kept
/// and, in the bits left over, the top of its hash, so that a probe passing other IDs rarely
/// reads their bytes.
#[derive(Debug)]
struct Seen {
    slots: Box<[u32]>,
    /// Bits of a slot that hold `k + 1`.
    index_bits: u32,
}

impl Seen {
    /// An empty table for up to `n` IDs: at most two-thirds full, and always with an empty
    /// slot, so that every probe ends.
    fn new(n: usize) -> Self {
        let len = n.saturating_add(n / 2).saturating_add(1);
        Self {
            slots: vec![0; len].into_boxed_slice(),
            // Room for `k + 1` with `k < n`; arena offsets are 32-bit, so n never needs more.
            index_bits: (usize::BITS - n.leading_zeros()).min(u32::BITS),
        }
    }

    /// The tag and the home slot of `hash`, from its high and low halves.
    fn place(&self, hash: u64) -> (u64, usize) {
        let tag = (hash >> 32) >> self.index_bits;
        // Multiply-shift maps the low half onto the table without a division; the result is
        // below the table length.
        let home = ((u128::from(hash & 0xffff_ffff) * self.slots.len() as u128) >> 32) as usize;
        (tag, home)
    }

    /// The empty slot where the ID hashed to `hash` goes, or `None` if `is(k)` says that the
    /// ID kept at position `k` is the same one.
    fn vacant_slot(&self, hash: u64, is: impl Fn(usize) -> bool) -> Option<usize> {
        let (tag, mut at) = self.place(hash);
        let mask = (1u64 << self.index_bits) - 1;
        loop {
            // Homes and successors stay below the table length.
            let slot = u64::from(self.slots[at]);
            if slot == 0 {
                return Some(at);
            }
            // A filled slot holds `k + 1 >= 1` in its masked bits.
            if slot >> self.index_bits == tag && is((slot & mask) as usize - 1) {
                return None;
            }
            at += 1;
            if at == self.slots.len() {
                at = 0;
            }
        }
    }

    /// Records position `k` of the ID hashed to `hash` in the empty `slot`.
    fn fill(&mut self, slot: usize, hash: u64, k: usize) {
        let (tag, _) = self.place(hash);
        // The tag has `32 - index_bits` bits and `k + 1` fits in `index_bits`: 32 in all.
        self.slots[slot] = ((tag << self.index_bits) | (k as u64 + 1)) as u32;
    }
}

#[cfg(test)]
mod tests {
    use std::hash::{BuildHasher, RandomState};

    use super::{Catalog, OverLimit, prefix_len};
    use crate::bounds::Bounds;
    use crate::index::Layout;

    fn build(ids: &[String], bounds: Bounds) -> Result<Catalog, OverLimit> {
        let keys = RandomState::new();
        Catalog::build(ids, bounds, Layout::new(bounds), |id| keys.hash_one(id))
            .map(|(catalog, _)| catalog)
    }

    #[test]
    fn ids_of_every_prefix_length_read_back() {
        let bounds = Bounds {
            id_bytes: 20_000,
            catalog_bytes: 100_000,
            ..Bounds::default()
        };
        let ids: Vec<String> = [1, 127, 128, 512, 16_383, 16_384]
            .iter()
            .map(|&n| "é".repeat(n / 2) + &"x".repeat(n % 2))
            .collect();
        let (catalog, keys) =
            Catalog::build(&ids, bounds, Layout::new(bounds), |_| 0).expect("within bounds");
        assert_eq!(catalog.len(), ids.len());
        let expected_bytes: usize = ids.iter().map(|id| id.len() + prefix_len(id.len())).sum();
        assert_eq!(catalog.heap_bytes(), expected_bytes);
        let mut offset = 0u32;
        for id in &ids {
            assert_eq!(catalog.id_at(offset), id.as_bytes());
            offset += u32::try_from(id.len() + prefix_len(id.len())).expect("small");
        }
        assert!(keys.is_sorted());
        assert_eq!(catalog.id_at(offset), b"", "past the end");
    }

    #[test]
    fn duplicates_and_empty_ids_are_kept_once_or_not_at_all() {
        let ids: Vec<String> = ["a", "", "a", "b", "a", ""].map(String::from).to_vec();
        let catalog = build(&ids, Bounds::default()).expect("fits");
        assert_eq!(catalog.len(), 2);
        assert_eq!(
            catalog.heap_bytes(),
            4,
            "two one-byte IDs with one-byte prefixes"
        );
        // 9,000 copies of one ID are one ID, within every bound.
        let many = vec!["m".to_owned(); 9_000];
        assert_eq!(build(&many, Bounds::default()).expect("one ID").len(), 1);
    }

    #[test]
    fn each_bound_stops_the_listing() {
        let b = Bounds::default();
        let at = |n: usize, len: usize| -> Vec<String> {
            (0..n).map(|i| format!("{i:0>len$}")).collect()
        };
        assert_eq!(build(&at(8_192, 32), b).map(|c| c.len()), Ok(8_192));
        assert_eq!(build(&at(8_193, 8), b).map(|c| c.len()), Err(OverLimit));
        assert_eq!(build(&at(1, 512), b).map(|c| c.len()), Ok(1));
        assert_eq!(build(&at(1, 513), b).map(|c| c.len()), Err(OverLimit));
        assert_eq!(build(&at(514, 511), b).map(|c| c.len()), Err(OverLimit));
    }
}
