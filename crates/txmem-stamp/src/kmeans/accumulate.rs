//! Where the threads add their points: the new centres' running totals
//! (per cluster, a count and a sum per dimension), one transaction per
//! point, as STAMP's kmeans does.
//!
//! The typed variant keeps each total in a [`TCounter`]: adds commute, so
//! two threads adding points to the same cluster never conflict. The words
//! variant keeps them in [`TWords`], where each add reads the word and
//! writes it back, so they do (the word STM's view of the same code).

use crossbeam_utils::CachePadded;
use txmem::{atomically, TCounter, TWords, WordAddr};

/// Running totals that points are added to, from several threads.
pub trait Totals: Sync {
    /// Adds point `p` to cluster `k`'s totals, atomically.
    fn add(&self, k: usize, p: &[i64]);

    /// Every cluster's count and sums (`sums[k * dims + d]`), read once no
    /// thread is adding, and resets them to zero.
    fn drain(&mut self) -> (Vec<i64>, Vec<i64>);
}

/// Totals in txmem's `TCounter`s (typed).
pub struct Counters {
    dims: usize,
    /// One cache line per cluster's count: every transaction writes one,
    /// and neighbouring clusters' counts on one line made the threads'
    /// commits take the line from each other.
    counts: Vec<CachePadded<TCounter>>,
    sums: Vec<TCounter>,
}

impl Counters {
    /// Zeroed totals for `clusters` clusters of `dims` dimensions.
    pub fn new(clusters: usize, dims: usize) -> Self {
        Counters {
            dims,
            counts: (0..clusters)
                .map(|_| CachePadded::new(TCounter::new(0)))
                .collect(),
            sums: (0..clusters * dims).map(|_| TCounter::new(0)).collect(),
        }
    }
}

impl Totals for Counters {
    fn add(&self, k: usize, p: &[i64]) {
        let sums = &self.sums[k * self.dims..(k + 1) * self.dims];
        atomically(|tx| {
            self.counts[k].add(tx, 1)?;
            for (sum, &x) in sums.iter().zip(p) {
                sum.add(tx, x)?;
            }
            Ok(())
        });
    }

    fn drain(&mut self) -> (Vec<i64>, Vec<i64>) {
        let out = (
            self.counts.iter().map(|c| c.load()).collect(),
            self.sums.iter().map(TCounter::load).collect(),
        );
        *self = Counters::new(self.counts.len(), self.dims);
        out
    }
}

/// Totals in txmem's untyped word STM: cluster `k`'s count at word
/// `k * (dims + 1)`, its sums in the `dims` words after.
pub struct Words {
    dims: usize,
    clusters: usize,
    mem: TWords,
    base: WordAddr,
}

impl Words {
    /// Zeroed totals for `clusters` clusters of `dims` dimensions.
    pub fn new(clusters: usize, dims: usize) -> Self {
        let n = clusters * (dims + 1);
        let mem = TWords::new(n);
        let base = mem.alloc(n);
        Words {
            dims,
            clusters,
            mem,
            base,
        }
    }
}

impl Totals for Words {
    fn add(&self, k: usize, p: &[i64]) {
        let first = self.base.offset(k * (self.dims + 1));
        let mem = &self.mem;
        atomically(|tx| {
            let count = mem.read(tx, first)?;
            mem.write(tx, first, count.wrapping_add(1))?;
            for (d, &x) in p.iter().enumerate() {
                let a = first.offset(1 + d);
                let sum = mem.read(tx, a)?;
                mem.write(tx, a, sum.wrapping_add(x as u64))?;
            }
            Ok(())
        });
    }

    fn drain(&mut self) -> (Vec<i64>, Vec<i64>) {
        let stride = self.dims + 1;
        let word = |i: usize| self.mem.load(self.base.offset(i)) as i64;
        let counts = (0..self.clusters).map(|k| word(k * stride)).collect();
        let sums = (0..self.clusters)
            .flat_map(|k| (1..stride).map(move |d| k * stride + d))
            .map(word)
            .collect();
        *self = Words::new(self.clusters, self.dims);
        (counts, sums)
    }
}
