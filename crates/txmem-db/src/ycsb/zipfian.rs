//! The zipfian generator of Gray et al. ("Quickly generating billion-record
//! synthetic databases", SIGMOD 1994), the method YCSB's
//! `ZipfianGenerator` uses: rank `r` (counting from 0) of `n` items is
//! drawn with probability `1 / ((r + 1)^θ · ζ(n, θ))`, where
//! `ζ(n, θ) = Σ_{i=1..n} 1/i^θ`.
//!
//! A draw costs one uniform number and, for ranks past the first two, one
//! power. The normalizing constant `ζ(n, θ)` is a sum over all `n` items;
//! when the item count grows (YCSB's D and E insert records) only the new
//! terms are added, so a generator follows a growing table at the cost of
//! the items added.

use rand::Rng;

/// A zipfian distribution over ranks `0..n` with skew θ ∈ (0, 1).
#[derive(Clone, Debug, PartialEq)]
pub struct Zipfian {
    n: u64,
    theta: f64,
    /// `1 / (1 - θ)`.
    alpha: f64,
    /// `ζ(n, θ)`.
    zeta_n: f64,
    /// `ζ(2, θ)`.
    zeta_2: f64,
    /// Gray et al.'s η for the current `n`.
    eta: f64,
    /// `1 + 0.5^θ`: below this (times `ζ(n, θ)`), the draw is rank 1.
    two_ranks: f64,
}

/// `Σ_{i=from+1..=to} 1/i^θ`: the terms of `ζ(to, θ)` past `ζ(from, θ)`.
pub fn zeta_terms(from: u64, to: u64, theta: f64) -> f64 {
    (from + 1..=to).map(|i| (i as f64).powf(-theta)).sum()
}

impl Zipfian {
    /// The distribution over `n ≥ 1` items with skew `theta` in (0, 1).
    ///
    /// Computing `ζ(n, θ)` takes time linear in `n` (a few milliseconds per
    /// million items); clone a generator rather than building it again.
    pub fn new(n: u64, theta: f64) -> Zipfian {
        assert!(n >= 1, "a zipfian distribution needs at least one item");
        assert!(
            theta > 0.0 && theta < 1.0,
            "zipfian θ must be in (0, 1), not {theta}"
        );
        let mut z = Zipfian {
            n,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zeta_n: zeta_terms(0, n, theta),
            zeta_2: zeta_terms(0, 2, theta),
            eta: 0.0,
            two_ranks: 1.0 + 0.5f64.powf(theta),
        };
        z.eta = z.eta_for_n();
        z
    }

    fn eta_for_n(&self) -> f64 {
        (1.0 - (2.0 / self.n as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta_2 / self.zeta_n)
    }

    /// The number of items.
    pub fn items(&self) -> u64 {
        self.n
    }

    /// The skew θ.
    pub fn theta(&self) -> f64 {
        self.theta
    }

    /// The normalizing constant `ζ(n, θ)`.
    pub fn zeta(&self) -> f64 {
        self.zeta_n
    }

    /// The probability of rank `rank` in the zipfian distribution. Ranks 0
    /// and 1 are drawn with exactly this probability; later ranks come
    /// from Gray et al.'s approximation of the inverse distribution
    /// function, which gives rank 2 up to about 20% more (at θ = 0.99)
    /// and converges to the distribution for later ranks.
    pub fn probability(&self, rank: u64) -> f64 {
        if rank >= self.n {
            return 0.0;
        }
        ((rank + 1) as f64).powf(-self.theta) / self.zeta_n
    }

    /// Changes the number of items to `n ≥ 1`. Growing adds the new terms
    /// of `ζ` (time linear in the items added); shrinking sums `ζ` again.
    pub fn resize(&mut self, n: u64) {
        assert!(n >= 1, "a zipfian distribution needs at least one item");
        if n == self.n {
            return;
        }
        if n > self.n {
            self.zeta_n += zeta_terms(self.n, n, self.theta);
        } else {
            self.zeta_n = zeta_terms(0, n, self.theta);
        }
        self.n = n;
        self.eta = self.eta_for_n();
    }

    /// The rank drawn for the uniform number `u` in [0, 1).
    #[inline]
    pub fn rank_for(&self, u: f64) -> u64 {
        let uz = u * self.zeta_n;
        if uz < 1.0 {
            return 0;
        }
        if uz < self.two_ranks {
            return 1.min(self.n - 1);
        }
        let r = self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha);
        (r as u64).min(self.n - 1)
    }

    /// Draws a rank in `0..n`.
    #[inline]
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        self.rank_for(rng.random::<f64>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growing_adds_terms_to_the_same_constant() {
        let mut z = Zipfian::new(1000, 0.99);
        z.resize(5000);
        let fresh = Zipfian::new(5000, 0.99);
        assert!((z.zeta() - fresh.zeta()).abs() < 1e-9 * fresh.zeta());
        assert!((z.eta - fresh.eta).abs() < 1e-9);
        z.resize(10);
        assert_eq!(z, Zipfian::new(10, 0.99));
    }

    #[test]
    fn small_ranges_stay_in_range() {
        for n in [1, 2, 3] {
            let z = Zipfian::new(n, 0.5);
            for u in [0.0, 0.3, 0.6, 0.999_999] {
                assert!(z.rank_for(u) < n, "n={n} u={u}");
            }
        }
    }
}
