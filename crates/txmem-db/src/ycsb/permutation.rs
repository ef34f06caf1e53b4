//! A keyed permutation of `0..n` that spreads popular zipfian ranks over
//! the key space.

/// A pseudo-random permutation of `0..n`: a few rounds of multiplying by
/// an odd constant, adding a constant and folding the high half into the
/// low half (each a bijection modulo a power of two) over the smallest
/// power of two `≥ n`, repeated until the value lands below `n` (at most
/// 2 steps on average). It is a scatter, not a cipher: it only has to move
/// the popular zipfian ranks apart, and it costs a few cycles.
///
/// As the key space grows (inserts) within the same power of two, the
/// permutation changes only for the few values whose walk passed through
/// the new keys, so the popular keys stay popular.
#[derive(Clone, Copy, Debug)]
pub struct Permutation {
    n: u64,
    mask: u64,
    shift: u32,
}

/// The rounds' multipliers (odd) and increments.
const ROUNDS: [(u64, u64); 3] = [
    (0x9E37_79B9_7F4A_7C15, 0x632B_E59B_D9B4_E019),
    (0xD6E8_FEB8_6659_FD93, 0x8CB9_2BA7_2F3D_8DD7),
    (0xBF58_476D_1CE4_E5B9, 0x94D0_49BB_1331_11EB),
];

impl Permutation {
    /// The permutation of `0..n` (`n ≥ 1`).
    pub fn new(n: u64) -> Permutation {
        let bits = (64 - n.saturating_sub(1).leading_zeros()).max(2);
        Permutation {
            n,
            mask: if bits == 64 {
                u64::MAX
            } else {
                (1 << bits) - 1
            },
            shift: bits.div_ceil(2),
        }
    }

    /// The image of `x < n`.
    #[inline]
    pub fn apply(&self, mut x: u64) -> u64 {
        debug_assert!(x < self.n);
        loop {
            for (mul, add) in ROUNDS {
                x = x.wrapping_mul(mul).wrapping_add(add) & self.mask;
                x ^= x >> self.shift;
            }
            if x < self.n {
                return x;
            }
        }
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
