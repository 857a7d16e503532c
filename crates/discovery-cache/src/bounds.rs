//! The limits on what a catalog observation may hold.

/// Limits on the model IDs kept per provider. A catalog over any of them is recorded as
/// over-limit and can never make a model ID's owner unique.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Providers observed at most.
    pub providers: usize,
    /// Model IDs kept per provider.
    pub ids_per_provider: usize,
    /// UTF-8 bytes of one model ID.
    pub id_bytes: usize,
    /// UTF-8 bytes of all of one provider's IDs together.
    pub catalog_bytes: usize,
}

impl Default for Bounds {
    fn default() -> Self {
        Self {
            providers: 32,
            ids_per_provider: 8_192,
            id_bytes: 512,
            catalog_bytes: 256 * 1024,
        }
    }
}

impl Bounds {
    /// Whether a catalog of these IDs fits every per-provider bound.
    #[must_use]
    pub fn admits<'a>(&self, ids: impl IntoIterator<Item = &'a str>) -> bool {
        let mut tally = Tally::default();
        ids.into_iter().all(|id| tally.admit(self, id.len()))
    }
}

/// A running count of the IDs and bytes kept from one listing.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    count: usize,
    bytes: usize,
}

impl Tally {
    /// Counts one more ID of `len` bytes; whether everything counted so far fits `bounds`.
    pub(crate) fn admit(&mut self, bounds: &Bounds, len: usize) -> bool {
        self.count = self.count.saturating_add(1);
        self.bytes = self.bytes.saturating_add(len);
        len <= bounds.id_bytes
            && self.count <= bounds.ids_per_provider
            && self.bytes <= bounds.catalog_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::Bounds;

    #[test]
    fn each_bound_is_inclusive() {
        let b = Bounds::default();
        let long = "x".repeat(512);
        assert!(b.admits([long.as_str()]));
        let longer = "x".repeat(513);
        assert!(!b.admits([longer.as_str()]));
        let ids: Vec<String> = (0..8_192).map(|i| format!("m{i}")).collect();
        assert!(b.admits(ids.iter().map(String::as_str)));
        let ids: Vec<String> = (0..8_193).map(|i| format!("m{i}")).collect();
        assert!(!b.admits(ids.iter().map(String::as_str)));
        let big: Vec<String> = (0..600).map(|i| format!("{i:0>511}")).collect();
        assert!(
            !b.admits(big.iter().map(String::as_str)),
            "over 256 KiB in total"
        );
    }
}
