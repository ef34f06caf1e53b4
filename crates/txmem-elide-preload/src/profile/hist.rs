//! A lock-free log-linear histogram of nanoseconds: four buckets per power of two, so a
//! percentile read from it is within 25% of the true sample.

use core::sync::atomic::{AtomicU64, Ordering};

/// Powers of two covered before values are clamped into the last bucket (2^44 ns is about
/// 4.9 hours).
const TOP_EXP: u32 = 44;
/// Buckets: 8 exact ones for 0..8 ns, then 4 per power of two from 2^3 to 2^TOP_EXP.
pub const BUCKETS: usize = 8 + 4 * (TOP_EXP as usize - 2);

/// Samples in nanoseconds.
pub(crate) struct Hist {
    buckets: [AtomicU64; BUCKETS],
    sum: AtomicU64,
    max: AtomicU64,
}

fn index(v: u64) -> usize {
    if v < 8 {
        return v as usize;
    }
    let e = (63 - v.leading_zeros()).min(TOP_EXP);
    let v = v.min((1 << (TOP_EXP + 1)) - 1);
    let sub = (v >> (e - 2)) & 3;
    8 + (e as usize - 3) * 4 + sub as usize
}

/// The smallest value of bucket `i`, and its width.
fn bounds(i: usize) -> (u64, u64) {
    if i < 8 {
        return (i as u64, 1);
    }
    let e = ((i - 8) / 4 + 3) as u32;
    let sub = ((i - 8) % 4) as u64;
    ((4 + sub) << (e - 2), 1 << (e - 2))
}

impl Hist {
    /// An empty histogram (a constant to initialize static arrays with).
    #[allow(clippy::declare_interior_mutable_const)]
    pub const NEW: Hist = Hist {
        buckets: [const { AtomicU64::new(0) }; BUCKETS],
        sum: AtomicU64::new(0),
        max: AtomicU64::new(0),
    };

    /// Adds one sample.
    #[inline]
    pub fn record(&self, ns: u64) {
        self.buckets[index(ns)].fetch_add(1, Ordering::Relaxed);
        self.sum.fetch_add(ns, Ordering::Relaxed);
        self.max.fetch_max(ns, Ordering::Relaxed);
    }

    /// Sum of the samples.
    pub fn sum(&self) -> u64 {
        self.sum.load(Ordering::Relaxed)
    }

    /// Largest sample.
    pub fn max(&self) -> u64 {
        self.max.load(Ordering::Relaxed)
    }

    /// The `q`-quantile (0..=1), as the middle of the bucket holding it (0 when empty).
    pub fn quantile(&self, q: f64) -> u64 {
        let counts: [u64; BUCKETS] =
            core::array::from_fn(|i| self.buckets[i].load(Ordering::Relaxed));
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return 0;
        }
        let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        for (i, c) in counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lo, w) = bounds(i);
                return (lo + w / 2).min(self.max());
            }
        }
        self.max()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_their_values() {
        for v in (0..5000u64).chain([1 << 20, 123_456_789, 1 << 40]) {
            let (lo, w) = bounds(index(v));
            assert!(lo <= v && v < lo + w, "{v} in [{lo}, {})", lo + w);
            assert!(lo < 8 || 4 * w <= lo, "width {w} at {lo}");
        }
        assert_eq!(index(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn quantiles_within_a_quarter() {
        let h = Hist::NEW;
        for v in 1..=1000u64 {
            h.record(v * 100);
        }
        for (q, want) in [(0.5, 50_000.0), (0.9, 90_000.0), (0.99, 99_000.0)] {
            let got = h.quantile(q) as f64;
            assert!((got - want).abs() / want < 0.25, "q{q}: {got} vs {want}");
        }
        assert_eq!(h.sum(), 100 * 500 * 1001);
        assert_eq!(h.max(), 100_000);
        let empty = Hist::NEW;
        assert_eq!(empty.quantile(0.5), 0);
    }
}
