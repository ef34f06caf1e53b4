//! The simulator's seeded pseudo-random generator, identical on every host: SplitMix64 as
//! `rand_xoshiro` keeps it, with the draws the simulator needs; and [`hash64`], the same
//! generator's first output used as a hash.

use rand_xoshiro::rand_core::{Rng, SeedableRng};

/// SplitMix64: fast, seedable, and bit-for-bit reproducible (the standard generator's
/// sequence, from `rand_xoshiro`).
///
/// ```
/// use txmem_sim::engine::rng::SplitMix64;
/// let mut a = SplitMix64::new(7);
/// let mut b = SplitMix64::new(7);
/// assert_eq!(a.next_u64(), b.next_u64());
/// assert!(a.range_inclusive(1, 10) >= 1);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitMix64 {
    inner: rand_xoshiro::SplitMix64,
}

impl SplitMix64 {
    /// A generator seeded with `seed` (its state starts at `seed`).
    pub fn new(seed: u64) -> Self {
        SplitMix64 {
            inner: rand_xoshiro::SplitMix64::seed_from_u64(seed),
        }
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.inner.next_u64()
    }

    /// Uniform in `0..n` (`n > 0`), by multiply-shift.
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in `lo..=hi`.
    pub fn range_inclusive(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
}

/// A well-mixed 64-bit value of `x`: the first output of [`SplitMix64`] seeded with `x`. A
/// bijection whose every output bit depends on every input bit, for hashing addresses and
/// making data whose values a check can recompute.
///
/// ```
/// use txmem_sim::engine::rng::{hash64, SplitMix64};
/// assert_eq!(hash64(5), SplitMix64::new(5).next_u64());
/// assert_ne!(hash64(1), hash64(2));
/// ```
#[inline]
pub fn hash64(x: u64) -> u64 {
    SplitMix64::new(x).next_u64()
}
