//! Mixing functions: a 64-bit bijective mixer, the hash map's hasher built
//! on it, and a keyed permutation of `0..n` that spreads popular zipfian
//! ranks over the key space.

use std::hash::{BuildHasher, Hasher};

/// splitmix64's finalizer: a bijection on `u64` whose every output bit
/// depends on every input bit.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The hasher of the hash index: record numbers through [`mix64`]. The
/// standard library's SipHash resists hash flooding, which keys drawn by
/// the workload itself cannot attempt, at several times the cost.
#[derive(Clone, Copy, Debug, Default)]
pub struct KeyHasher;

impl BuildHasher for KeyHasher {
    type Hasher = KeyState;
    #[inline]
    fn build_hasher(&self) -> KeyState {
        KeyState(0)
    }
}

/// The state of one [`KeyHasher`] hash.
#[derive(Clone, Copy, Debug)]
pub struct KeyState(u64);

impl Hasher for KeyState {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.0 = mix64(self.0 ^ n);
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }
}

/// A pseudo-random permutation of `0..n`: a balanced Feistel network over
/// the smallest domain of `4^h ≥ n` values, cycle-walked until it lands
/// below `n` (fewer than 4 steps on average, about 1 when `n` is just
/// under a power of 4).
///
/// As the key space grows (inserts), the permutation of `0..n` changes
/// only for the few values whose walk passed through the new keys, so the
/// popular keys stay popular.
#[derive(Clone, Copy, Debug)]
pub struct Permutation {
    n: u64,
    half_bits: u32,
    mask: u64,
}

/// Rounds of the Feistel network (3 make a pseudo-random permutation).
const ROUNDS: u64 = 3;

impl Permutation {
    /// The permutation of `0..n` (`n ≥ 1`).
    pub fn new(n: u64) -> Permutation {
        let mut half_bits = 1;
        while half_bits < 32 && (1u64 << (2 * half_bits)) < n {
            half_bits += 1;
        }
        Permutation {
            n,
            half_bits,
            mask: (1u64 << half_bits) - 1,
        }
    }

    /// The image of `x < n`.
    #[inline]
    pub fn apply(&self, mut x: u64) -> u64 {
        debug_assert!(x < self.n);
        loop {
            x = self.feistel(x);
            if x < self.n {
                return x;
            }
        }
    }

    #[inline]
    fn feistel(&self, x: u64) -> u64 {
        let (mut left, mut right) = (x >> self.half_bits, x & self.mask);
        for round in 1..=ROUNDS {
            let f = mix64(right ^ round.wrapping_mul(0xD6E8_FEB8_6659_FD93)) & self.mask;
            (left, right) = (right, left ^ f);
        }
        left << self.half_bits | right
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_permutation_is_a_bijection_of_its_range() {
        for n in [1u64, 2, 3, 5, 16, 17, 1000, 4096, 5000] {
            let p = Permutation::new(n);
            let mut seen = vec![false; n as usize];
            for x in 0..n {
                let y = p.apply(x);
                assert!(y < n, "n={n}: {x} -> {y}");
                assert!(!seen[y as usize], "n={n}: {y} twice");
                seen[y as usize] = true;
            }
        }
    }

    #[test]
    fn the_permutation_spreads_neighbours() {
        let p = Permutation::new(1_000_000);
        let first: Vec<u64> = (0..8).map(|x| p.apply(x)).collect();
        // The eight most popular ranks land far apart.
        for (i, a) in first.iter().enumerate() {
            for b in &first[i + 1..] {
                assert!(a.abs_diff(*b) > 100, "{first:?}");
            }
        }
    }

    #[test]
    fn growing_the_range_keeps_most_images() {
        let (a, b) = (Permutation::new(10_000), Permutation::new(10_100));
        let same = (0..10_000).filter(|&x| a.apply(x) == b.apply(x)).count();
        assert!(same > 9_800, "{same}");
    }
}
