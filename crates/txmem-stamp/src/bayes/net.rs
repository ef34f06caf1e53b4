//! The input (a random generating network and records sampled from it),
//! the score, and the checks on a learned network.
//!
//! Variables are binary and numbered `0..vars` with `vars <= 64`, so a set
//! of variables (a parent set, a record's values) is a `u64` bitmask.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// The most variables an input may have: sets are `u64` bitmasks.
pub const MAX_VARS: usize = 64;

/// The most parents the generator gives a variable (its table has
/// `2^parents` rows).
pub const MAX_GENERATED_PARENTS: usize = 16;

/// Relative tolerance when comparing a recorded score with a recomputed
/// one (they are sums of the same terms in different orders).
pub const SCORE_TOLERANCE: f64 = 1e-9;

/// A generated input: the generating network and its sampled records.
#[derive(Clone, Debug, PartialEq)]
pub struct Dataset {
    /// Number of variables.
    pub vars: usize,
    /// The generating network: `parents[v]` is `v`'s parent set (every
    /// parent numbered below `v`, so the network is acyclic).
    pub parents: Vec<u64>,
    /// `tables[v][j]`: the probability that `v` is 1 when its parents'
    /// values, packed in increasing variable order, are `j`.
    pub tables: Vec<Vec<f64>>,
    /// The records: bit `v` of a record is variable `v`'s value.
    pub records: Vec<u64>,
    /// The score's per-parameter penalty multiplier (STAMP's `-i`).
    pub insert_penalty: f64,
}

/// Packs the bits of `values` selected by `mask` into the low bits of the
/// result, in increasing bit order (a parent configuration's row number).
#[inline]
pub fn gather(values: u64, mask: u64) -> usize {
    let (mut out, mut m, mut i) = (0usize, mask, 0);
    while m != 0 {
        let b = m.trailing_zeros();
        out |= (((values >> b) & 1) as usize) << i;
        i += 1;
        m &= m - 1;
    }
    out
}

impl Dataset {
    /// Generates a network over `vars` variables, each earlier variable
    /// becoming a parent of a later one with `percent`% chance (at most
    /// `max_parents` per variable), random probability tables, and
    /// `records` samples of it, all from `seed`.
    ///
    /// # Panics
    /// If `vars` is over [`MAX_VARS`] or `max_parents` over
    /// [`MAX_GENERATED_PARENTS`].
    pub fn generate(
        vars: usize,
        records: usize,
        max_parents: usize,
        percent: u32,
        insert_penalty: f64,
        seed: u64,
    ) -> Dataset {
        assert!(vars <= MAX_VARS, "bayes: at most {MAX_VARS} variables");
        assert!(
            max_parents <= MAX_GENERATED_PARENTS,
            "bayes: at most {MAX_GENERATED_PARENTS} generated parents"
        );
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut parents = vec![0u64; vars];
        for (v, set) in parents.iter_mut().enumerate() {
            for u in 0..v {
                if (set.count_ones() as usize) < max_parents && rng.random_range(0..100) < percent {
                    *set |= 1 << u;
                }
            }
        }
        let tables: Vec<Vec<f64>> = parents
            .iter()
            .map(|p| {
                (0..1usize << p.count_ones())
                    .map(|_| rng.random())
                    .collect()
            })
            .collect();
        // Variables in index order are a topological order: parents first.
        let records = (0..records)
            .map(|_| {
                let mut r = 0u64;
                for v in 0..vars {
                    if rng.random::<f64>() < tables[v][gather(r, parents[v])] {
                        r |= 1 << v;
                    }
                }
                r
            })
            .collect();
        Dataset {
            vars,
            parents,
            tables,
            records,
            insert_penalty,
        }
    }

    /// The local score of `v` with parent set `parents`: the records'
    /// log-likelihood of `v` given its parents (maximum-likelihood
    /// tables, from counts over the records) minus a complexity penalty of
    /// `insert_penalty * ln(records) / 2` per free parameter (`2^|parents|`
    /// for a binary variable): BIC when the penalty is 1.
    pub fn local_score(&self, v: usize, parents: u64) -> f64 {
        let rows = 1usize << parents.count_ones();
        let mut counts = vec![0u32; 2 * rows];
        for &r in &self.records {
            counts[(gather(r, parents) << 1) | ((r >> v) & 1) as usize] += 1;
        }
        let mut ll = 0.0;
        for row in counts.chunks_exact(2) {
            let n = f64::from(row[0] + row[1]);
            for &c in row {
                if c > 0 {
                    let c = f64::from(c);
                    ll += c * (c / n).ln();
                }
            }
        }
        let n = self.records.len().max(1) as f64;
        ll - self.insert_penalty * 0.5 * n.ln() * rows as f64
    }

    /// The total score of a network: the sum of its local scores.
    pub fn score(&self, parents: &[u64]) -> f64 {
        parents
            .iter()
            .enumerate()
            .map(|(v, &p)| self.local_score(v, p))
            .sum()
    }
}

/// A learned network, as a variant leaves it.
#[derive(Clone, Debug, PartialEq)]
pub struct Learned {
    /// `parents[v]`: `v`'s parent set.
    pub parents: Vec<u64>,
    /// `children[u]`: `u`'s child set (the transpose of `parents`).
    pub children: Vec<u64>,
    /// The total score the run recorded (the sum of the local scores it
    /// stored as it inserted edges).
    pub score: f64,
}

/// The descendants of `from` in the network whose child sets are
/// `children` (`from` excluded unless on a cycle).
pub fn descendants(children: &[u64], from: usize) -> u64 {
    let (mut seen, mut stack) = (0u64, vec![from]);
    while let Some(x) = stack.pop() {
        let mut new = children[x] & !seen;
        seen |= new;
        while new != 0 {
            stack.push(new.trailing_zeros() as usize);
            new &= new - 1;
        }
    }
    seen
}

/// Checks a learned network against `data`: the sets are in range and
/// each other's transpose, no variable has more than `max_parents`
/// parents, the network is acyclic, the recorded score is the score
/// recomputed from the structure, and that score is at least `empty`
/// (the empty network's). `Err` says what is wrong.
pub fn verify(data: &Dataset, net: &Learned, max_parents: usize, empty: f64) -> Result<(), String> {
    let n = data.vars;
    if net.parents.len() != n || net.children.len() != n {
        return Err(format!(
            "bayes: {n} variables, sets for {}",
            net.parents.len()
        ));
    }
    let all = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
    for v in 0..n {
        let p = net.parents[v];
        if p & !all != 0 || p & (1 << v) != 0 {
            return Err(format!("bayes: variable {v} has parent set {p:#x}"));
        }
        if p.count_ones() as usize > max_parents {
            return Err(format!(
                "bayes: variable {v} has {} parents (at most {max_parents})",
                p.count_ones()
            ));
        }
        let transposed = (0..n)
            .filter(|&c| net.parents[c] & (1 << v) != 0)
            .fold(0u64, |m, c| m | 1 << c);
        if net.children[v] != transposed {
            return Err(format!(
                "bayes: variable {v}'s children {:#x} are not its children by parent sets {transposed:#x}",
                net.children[v]
            ));
        }
    }
    if let Some(v) = (0..n).find(|&v| descendants(&net.children, v) & (1 << v) != 0) {
        return Err(format!("bayes: variable {v} is on a cycle"));
    }
    let score = data.score(&net.parents);
    let tolerance = SCORE_TOLERANCE * score.abs().max(1.0);
    if (net.score - score).abs() > tolerance {
        return Err(format!(
            "bayes: recorded score {} but the structure scores {score}",
            net.score
        ));
    }
    if score < empty - tolerance {
        return Err(format!(
            "bayes: learned score {score} is below the empty network's {empty}"
        ));
    }
    Ok(())
}
