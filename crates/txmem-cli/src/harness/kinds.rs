//! Per-kind counts for workloads whose operations come in kinds (the
//! transactions of a database workload: TPC-C's NewOrder, Payment, …):
//! commits, aborted attempts, roll-backs and a latency histogram per
//! kind. Each thread fills its own [`KindTallies`]; the runner merges them.

use std::time::Duration;

use hdrhistogram::Histogram;

/// Latency is timed on one operation in this many per thread. A clock
/// read costs tens of nanoseconds, as much as a short transaction's work,
/// so timing every one would slow the run it measures; a fixed stride
/// keeps the sample unbiased (operations are drawn independently).
pub const LATENCY_STRIDE: u64 = 8;

/// Latencies above this (one minute, in nanoseconds) are recorded as this.
const LATENCY_MAX_NS: u64 = 60_000_000_000;

/// What the operations of one kind did.
#[derive(Clone, Debug)]
pub struct KindTally {
    /// Completed operations (committed transactions, roll-backs included).
    pub commits: u64,
    /// Aborted attempts (attempts beyond the first of each operation).
    pub aborts: u64,
    /// Operations that rolled themselves back on purpose.
    pub rolled_back: u64,
    /// Latency of the timed operations, in nanoseconds.
    pub latency: Histogram<u64>,
}

impl KindTally {
    fn new() -> KindTally {
        KindTally {
            commits: 0,
            aborts: 0,
            rolled_back: 0,
            latency: Histogram::new_with_bounds(1, LATENCY_MAX_NS, 3)
                .expect("valid histogram bounds"),
        }
    }
}

/// One thread's (or, merged, a run's) tallies of every kind; empty for
/// workloads without kinds.
#[derive(Clone, Debug, Default)]
pub struct KindTallies {
    kinds: Vec<KindTally>,
    /// Operations seen, for the latency stride.
    seen: u64,
}

impl KindTallies {
    /// Empty tallies of `kinds` kinds.
    pub fn new(kinds: usize) -> KindTallies {
        KindTallies {
            kinds: (0..kinds).map(|_| KindTally::new()).collect(),
            seen: 0,
        }
    }

    /// The tallies, by kind index.
    pub fn kinds(&self) -> &[KindTally] {
        &self.kinds
    }

    /// True if the next operation should be timed (one in
    /// [`LATENCY_STRIDE`]).
    #[inline]
    pub fn time_next(&mut self) -> bool {
        self.seen += 1;
        self.seen.is_multiple_of(LATENCY_STRIDE)
    }

    /// Records one operation of kind `kind` that took `attempts` attempts
    /// and, if it was timed, `latency`. A kind out of range is a bug in
    /// the workload, and panics.
    #[inline]
    pub fn record(
        &mut self,
        kind: usize,
        attempts: u32,
        rolled_back: bool,
        latency: Option<Duration>,
    ) {
        let n = self.kinds.len();
        let k = self.kinds.get_mut(kind).unwrap_or_else(|| {
            panic!("transaction kind {kind} out of range (the workload has {n})")
        });
        k.commits += 1;
        k.aborts += u64::from(attempts.saturating_sub(1));
        k.rolled_back += u64::from(rolled_back);
        if let Some(d) = latency {
            let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).max(1);
            k.latency.saturating_record(ns);
        }
    }

    /// Adds `other`'s counts (tallies of the same workload).
    pub fn merge(&mut self, other: &KindTallies) {
        if self.kinds.is_empty() {
            self.kinds = other.kinds.clone();
            return;
        }
        for (a, b) in self.kinds.iter_mut().zip(&other.kinds) {
            a.commits += b.commits;
            a.aborts += b.aborts;
            a.rolled_back += b.rolled_back;
            a.latency
                .add(&b.latency)
                .expect("histograms of one bound add up");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tallies_count_time_and_merge() {
        let mut a = KindTallies::new(2);
        let timed: Vec<bool> = (0..2 * LATENCY_STRIDE).map(|_| a.time_next()).collect();
        assert_eq!(timed.iter().filter(|&&t| t).count(), 2);
        a.record(0, 1, false, Some(Duration::from_micros(5)));
        a.record(1, 3, true, None);
        let mut b = KindTallies::default();
        b.merge(&a);
        b.merge(&a);
        let k = b.kinds();
        assert_eq!((k[0].commits, k[0].aborts, k[0].rolled_back), (2, 0, 0));
        assert_eq!((k[1].commits, k[1].aborts, k[1].rolled_back), (2, 4, 2));
        assert_eq!(k[0].latency.len(), 2);
        let p50 = k[0].latency.value_at_quantile(0.5);
        assert!((4990..=5010).contains(&p50), "{p50}");
    }
}
