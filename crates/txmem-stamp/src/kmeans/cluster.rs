//! [`ClusterTotals`]: one cluster's running totals as an application-defined
//! transactional object (kmeans' `typed-plus` variant).
//!
//! With a `TCounter` per total, adding a point to a cluster writes
//! `dims + 1` items, and commit locks and installs each. The additions of
//! a point are one operation on one object, though, and they commute with
//! every other addition: so a cluster's totals here are one object with one
//! version, and adding a point records a single pending delta vector, which
//! commit applies under the one lock. Nothing is read, so nothing is
//! validated: concurrent additions to a cluster commit one after the
//! other, meeting only over the lock for the moment of an install.

use std::sync::atomic::{AtomicI64, Ordering};

use crossbeam_utils::CachePadded;
use txmem::{atomically, Commit, Item, LockOutcome, TObject, TVersion, Transaction, TxResult};

use super::accumulate::Totals;

/// One cluster's count and per-dimension sums.
#[derive(Debug)]
pub struct ClusterTotals {
    version: TVersion,
    /// `[count, sum_0, .., sum_{dims-1}]`, written only under `version`'s
    /// lock, read once no transaction runs.
    totals: Box<[AtomicI64]>,
}

impl ClusterTotals {
    /// Zeroed totals of `dims` dimensions.
    pub fn new(dims: usize) -> ClusterTotals {
        ClusterTotals {
            version: TVersion::new(),
            totals: (0..=dims).map(|_| AtomicI64::new(0)).collect(),
        }
    }

    /// Adds point `p` (one more member, its coordinates to the sums): a
    /// write without a read.
    pub fn add<'env>(&'env self, tx: &mut Transaction<'env>, p: &[i64]) -> TxResult<()> {
        let id = tx.item(self, 0);
        let item = tx.item_mut(id);
        let mut delta = item
            .write_value::<Vec<i64>>()
            .cloned()
            .unwrap_or_else(|| vec![0; self.totals.len()]);
        delta[0] += 1;
        for (d, &x) in delta[1..].iter_mut().zip(p) {
            *d += x;
        }
        item.set_write(delta);
        Ok(())
    }

    /// The count and the sums, as committed (call once no transaction runs).
    pub fn load(&self) -> (i64, Vec<i64>) {
        let t: Vec<i64> = self
            .totals
            .iter()
            .map(|a| a.load(Ordering::Acquire))
            .collect();
        (t[0], t[1..].to_vec())
    }
}

impl TObject for ClusterTotals {
    fn lock(&self, item: &mut Item, commit: &Commit<'_>) -> LockOutcome {
        commit.lock_version(&self.version, item)
    }

    fn check(&self, _item: &Item, _commit: &Commit<'_>) -> bool {
        true // additions read nothing
    }

    fn install(&self, item: &mut Item, commit: &Commit<'_>) {
        let delta = item.write_value::<Vec<i64>>().expect("an addition");
        // The lock is held: no other installer runs, so load-add-store is
        // exact.
        for (a, &d) in self.totals.iter().zip(delta) {
            a.store(a.load(Ordering::Relaxed) + d, Ordering::Release);
        }
        self.version
            .unlock_to(TVersion::next_after(item.read_version(), commit.version()));
    }

    fn unlock(&self, item: &mut Item) {
        self.version.unlock_unchanged(item.read_version());
    }
}

/// Totals as one [`ClusterTotals`] per cluster, each on cache lines of its
/// own.
pub struct Clusters {
    dims: usize,
    clusters: Vec<CachePadded<ClusterTotals>>,
}

impl Clusters {
    /// Zeroed totals for `clusters` clusters of `dims` dimensions.
    pub fn new(clusters: usize, dims: usize) -> Clusters {
        Clusters {
            dims,
            clusters: (0..clusters)
                .map(|_| CachePadded::new(ClusterTotals::new(dims)))
                .collect(),
        }
    }
}

impl Totals for Clusters {
    fn add(&self, k: usize, p: &[i64]) {
        let c = &self.clusters[k];
        atomically(|tx| c.add(tx, p));
    }

    fn drain(&mut self) -> (Vec<i64>, Vec<i64>) {
        let mut counts = Vec::with_capacity(self.clusters.len());
        let mut sums = Vec::with_capacity(self.clusters.len() * self.dims);
        for c in &self.clusters {
            let (n, s) = c.load();
            counts.push(n);
            sums.extend(s);
        }
        *self = Clusters::new(self.clusters.len(), self.dims);
        (counts, sums)
    }
}
