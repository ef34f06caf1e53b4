//! Key choosers: which record an operation touches, drawn from YCSB's
//! request distributions over the records that exist.

use rand::Rng;

use super::config::Distribution;
use super::permutation::Permutation;
use super::zipfian::Zipfian;

/// Draws record numbers in `0..n` by one of YCSB's distributions. Each
/// worker keeps its own chooser and grows it as records are inserted.
#[derive(Clone, Debug)]
pub struct KeyChooser {
    distribution: Distribution,
    /// The ranks of the skewed distributions (`None` for uniform).
    zipfian: Option<Zipfian>,
    /// Spreads zipfian ranks over the records (YCSB's "scrambled" zipfian).
    spread: Permutation,
    n: u64,
}

impl KeyChooser {
    /// A chooser over `zipfian.items()` records (the zipfian is ignored
    /// for the uniform distribution).
    pub fn new(distribution: Distribution, zipfian: &Zipfian) -> KeyChooser {
        let n = zipfian.items();
        KeyChooser {
            distribution,
            zipfian: distribution.skewed().then(|| zipfian.clone()),
            spread: Permutation::new(n),
            n,
        }
    }

    /// The number of records it draws from.
    #[cfg(test)]
    pub fn records(&self) -> u64 {
        self.n
    }

    /// Draws from `0..n` from now on (`n` grows as records are inserted;
    /// the zipfian constant is extended incrementally).
    pub fn resize(&mut self, n: u64) {
        if n == self.n {
            return;
        }
        self.n = n;
        if let Some(z) = &mut self.zipfian {
            z.resize(n);
        }
        if self.distribution == Distribution::Zipfian {
            self.spread = Permutation::new(n);
        }
    }

    /// A record number in `0..n`:
    ///
    /// * zipfian: a zipfian rank, mapped through a fixed permutation of the
    ///   records, so the most popular records are scattered over the key
    ///   space (YCSB scrambles its ranks with a hash for the same reason);
    /// * uniform: every record alike;
    /// * latest: a zipfian rank counted back from the newest record.
    #[inline]
    pub fn next<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        match (self.distribution, &self.zipfian) {
            (Distribution::Zipfian, Some(z)) => self.spread.apply(z.sample(rng)),
            (Distribution::Latest, Some(z)) => self.n - 1 - z.sample(rng),
            _ => rng.random_range(0..self.n),
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    use super::*;

    fn counts(chooser: &KeyChooser, draws: usize) -> Vec<u64> {
        let mut rng = SmallRng::seed_from_u64(7);
        let mut counts = vec![0u64; chooser.records() as usize];
        for _ in 0..draws {
            counts[chooser.next(&mut rng) as usize] += 1;
        }
        counts
    }

    #[test]
    fn scrambled_zipfian_keeps_the_skew_and_spreads_the_hot_keys() {
        let z = Zipfian::new(10_000, 0.99);
        let chooser = KeyChooser::new(Distribution::Zipfian, &z);
        let draws = 200_000;
        let c = counts(&chooser, draws);
        let hottest = (0..c.len()).max_by_key(|&k| c[k]).unwrap();
        let share = c[hottest] as f64 / draws as f64;
        let want = z.probability(0);
        assert!((share - want).abs() < 0.1 * want, "{share} vs {want}");
        assert_ne!(hottest, 0, "rank 0 is not key 0");
        let mut top: Vec<usize> = (0..c.len()).collect();
        top.sort_by_key(|&k| std::cmp::Reverse(c[k]));
        let spread = top[..10].iter().max().unwrap() - top[..10].iter().min().unwrap();
        assert!(
            spread > 1000,
            "the ten hottest keys cluster: {:?}",
            &top[..10]
        );
    }

    #[test]
    fn latest_prefers_the_newest_records_and_follows_inserts() {
        let z = Zipfian::new(1000, 0.99);
        let mut chooser = KeyChooser::new(Distribution::Latest, &z);
        let c = counts(&chooser, 50_000);
        assert!(c[999] > c[998] && c[998] > c[500], "{:?}", &c[990..]);
        chooser.resize(1500);
        let c = counts(&chooser, 50_000);
        assert!(c[1499] > 3000, "{}", c[1499]);
    }

    #[test]
    fn uniform_covers_every_record() {
        let z = Zipfian::new(100, 0.99);
        let c = counts(&KeyChooser::new(Distribution::Uniform, &z), 100_000);
        assert!(c.iter().all(|&n| (700..1300).contains(&n)), "{c:?}");
    }
}
