//! The injected source of randomness for `random` and `shuffle`, and a small seeded
//! generator that implements it.
//!
//! The library never reads a clock or the operating system's randomness: the caller decides
//! where randomness comes from, so tests can be deterministic.

/// Supplies the random draws of `random` and `shuffle`.
pub trait RandomSource {
    /// A uniformly distributed index in `0..bound`; `bound` is at least 1.
    ///
    /// An answer of `bound` or more is reduced modulo `bound`, so a faulty source can skew
    /// the choice but never make a call fail.
    fn index_below(&mut self, bound: usize) -> usize;
}

impl<R: RandomSource + ?Sized> RandomSource for &mut R {
    fn index_below(&mut self, bound: usize) -> usize {
        (**self).index_below(bound)
    }
}

/// SplitMix64: a tiny, fast, seedable generator with good statistical quality.
///
/// It is not cryptographically secure, which the tool does not need: a uniformly random
/// member or order is all it promises. The same seed always gives the same draws.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator starting from `seed`.
    #[must_use]
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

impl RandomSource for SplitMix64 {
    fn index_below(&mut self, bound: usize) -> usize {
        let bound = bound.max(1) as u64;
        // Lemire's multiply-and-reject method: unbiased, and it rarely needs a second draw.
        let threshold = bound.wrapping_neg() % bound;
        loop {
            let product = u128::from(self.next_u64()) * u128::from(bound);
            if (product as u64) >= threshold {
                return (product >> 64) as usize;
            }
        }
    }
}

/// The index a source picks, guarded against out-of-range answers.
pub(crate) fn pick(source: &mut dyn RandomSource, bound: usize) -> usize {
    if bound == 0 {
        return 0;
    }
    source.index_below(bound) % bound
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Draws `draws` indexes below `bound` from a seeded generator and compares.
    fn check(seed: u64, bound: usize, expected: &[usize]) {
        let mut source = SplitMix64::new(seed);
        let got: Vec<usize> = expected.iter().map(|_| pick(&mut source, bound)).collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn seeded_draws_are_repeatable_and_in_range() {
        let mut a = SplitMix64::new(7);
        let mut b = SplitMix64::new(7);
        for bound in 1..200 {
            let x = a.index_below(bound);
            assert_eq!(x, b.index_below(bound));
            assert!(x < bound);
        }
        check(0, 1, &[0, 0, 0]);
    }

    #[test]
    fn draws_cover_every_index() {
        let mut source = SplitMix64::new(42);
        let mut seen = [0usize; 5];
        for _ in 0..5000 {
            seen[source.index_below(5)] += 1;
        }
        assert!(seen.iter().all(|&n| n > 800), "{seen:?}");
    }

    struct Broken;
    impl RandomSource for Broken {
        fn index_below(&mut self, bound: usize) -> usize {
            bound + 3
        }
    }

    #[test]
    fn faulty_sources_stay_in_range() {
        assert_eq!(pick(&mut Broken, 5), 3);
        assert_eq!(pick(&mut Broken, 0), 0);
    }
}
