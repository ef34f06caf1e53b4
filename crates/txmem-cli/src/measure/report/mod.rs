//! The report of a run and its renderings: terminal table, JSON (the stable
//! contract read by other tools), CSV (the same columns), Markdown and SVG
//! plot.

pub mod csv;
pub mod json;
pub mod markdown;
pub mod svg;
pub mod table;

use hdrhistogram::Histogram;
use serde::Serialize;

use txmem_elide::stats::AbortCounts;

use crate::harness::kinds::KindTally;
use crate::harness::peers::locks::ElisionCounts;
use crate::harness::spec::Skip;
use crate::measure::host::Host;
use crate::measure::placement;
use crate::measure::runner::{Measured, Status};
use crate::measure::stats::median;

/// Everything needed to rerun and compare a measurement.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The command that measured it, for the table's and the Markdown's
    /// first line (`txmem bench micro`, `txmem db ycsb`).
    #[serde(skip)]
    pub title: String,
    /// What a row's operation is, for column headers: `ops` (`txmem
    /// bench`) or `txn` (`txmem db`).
    #[serde(skip)]
    pub unit: &'static str,
    /// The suite's name.
    pub suite: String,
    /// The txmem-cli package's version.
    pub version: String,
    /// Where it ran.
    pub machine: Host,
    /// Every setting needed to rerun it.
    pub settings: serde_json::Value,
    /// One row per (workload, system, threads).
    pub results: Vec<ResultRow>,
    /// Rows that could not run here, with the reason.
    pub skipped: Vec<Skip>,
    /// UTC time the run started.
    pub date: String,
    /// True if Ctrl-C stopped the run: results hold what finished.
    pub interrupted: bool,
}

/// One row. The first eight fields are the contract; never rename them.
#[derive(Clone, Debug, Serialize)]
pub struct ResultRow {
    /// Workload name.
    pub workload: String,
    /// System name.
    pub system: String,
    /// Thread count.
    pub threads: usize,
    /// Median over repeats; `null` when the row failed its check.
    pub ops_per_sec: Option<f64>,
    /// Lowest ops/s of a repeat.
    pub ops_per_sec_min: Option<f64>,
    /// Highest ops/s of a repeat.
    pub ops_per_sec_max: Option<f64>,
    /// Completed repeats.
    pub repeats: usize,
    /// `null` where the system does not report aborts.
    pub aborts_per_commit: Option<f64>,
    /// This row's throughput over the `txmem` row's at the same workload and
    /// threads: the median of the per-round ratios when both rows completed
    /// the same repeats (they ran round-robin, so repeat *i* of each ran at
    /// nearly the same time and saw the machine at the same speed); the
    /// ratio of the medians otherwise.
    pub ratio_to_txmem: Option<f64>,
    /// `ok`, `failed` or `interrupted`.
    pub status: &'static str,
    /// Why the row failed.
    pub error: Option<String>,
    /// Suite name.
    pub suite: String,
    /// Every repeat's ops/s.
    pub samples: Vec<f64>,
    /// Committed operations over the timed repeats.
    pub commits: u64,
    /// Aborted attempts over the timed repeats, where the system reports them.
    pub aborts: Option<u64>,
    /// What the system is (implementation, options).
    pub note: String,
    /// The thread-to-thread cache-line round trip (ns) timed before each
    /// round of this row's workload and thread count (`null` where the
    /// probe gave no figure); absent at one thread. Round *i*'s figure goes
    /// with repeat *i* of every row that completed all rounds.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub round_trip_ns: Vec<Option<f64>>,
    /// Elided-lock rows only (absent elsewhere): how their sections ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elision: Option<ElisionRow>,
    /// Rows of workloads whose transactions come in kinds (`txmem db`),
    /// absent elsewhere: the latency of all the row's timed transactions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ns: Option<Latency>,
    /// Rows of workloads whose transactions come in kinds, absent
    /// elsewhere: one entry per kind (empty for a failed row).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<KindRow>,
}

/// Latency percentiles of a sample of transactions, in nanoseconds (from
/// a histogram with 3 significant digits).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Latency {
    /// Transactions timed (one in
    /// [`LATENCY_STRIDE`](crate::harness::kinds::LATENCY_STRIDE) per thread).
    pub samples: u64,
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Longest.
    pub max: u64,
}

impl Latency {
    /// The percentiles of `h`; `None` if it is empty.
    pub fn of(h: &Histogram<u64>) -> Option<Latency> {
        (!h.is_empty()).then(|| Latency {
            samples: h.len(),
            mean: h.mean(),
            p50: h.value_at_quantile(0.5),
            p90: h.value_at_quantile(0.9),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
        })
    }
}

/// What the transactions of one kind did over a row's timed repeats.
#[derive(Clone, Debug, Serialize)]
pub struct KindRow {
    /// The kind's name (e.g. `NewOrder`, `read`).
    pub kind: String,
    /// Committed transactions of this kind (roll-backs included).
    pub commits: u64,
    /// This kind's share of the row's commits.
    pub share: Option<f64>,
    /// Commits of this kind per second of the timed repeats together.
    pub commits_per_sec: Option<f64>,
    /// Aborted attempts of transactions of this kind.
    pub aborts: u64,
    /// `aborts / commits`.
    pub aborts_per_commit: Option<f64>,
    /// Transactions that rolled themselves back (TPC-C's invalid items).
    pub rolled_back: u64,
    /// Latency of this kind's timed transactions.
    pub latency_ns: Option<Latency>,
}

impl KindRow {
    fn new(name: &str, k: &KindTally, total_commits: u64, secs: f64) -> KindRow {
        let c = k.commits;
        KindRow {
            kind: name.to_string(),
            commits: c,
            share: (total_commits > 0).then(|| c as f64 / total_commits as f64),
            commits_per_sec: (secs > 0.0).then(|| c as f64 / secs),
            aborts: k.aborts,
            aborts_per_commit: (c > 0).then(|| k.aborts as f64 / c as f64),
            rolled_back: k.rolled_back,
            latency_ns: Latency::of(&k.latency),
        }
    }
}

/// The per-kind rows and the overall latency of a measured row.
fn kind_rows(m: &Measured) -> (Vec<KindRow>, Option<Latency>) {
    let tallies = m.kinds.kinds();
    if tallies.is_empty() {
        return (Vec::new(), None);
    }
    let total: u64 = tallies.iter().map(|k| k.commits).sum();
    let rows = m
        .kind_names
        .iter()
        .zip(tallies)
        .map(|(name, k)| KindRow::new(name, k, total, m.timed_secs))
        .collect();
    let mut all = tallies[0].latency.clone();
    for k in &tallies[1..] {
        all.add(&k.latency).expect("histograms of one bound add up");
    }
    (rows, Latency::of(&all))
}

/// How an elided lock's sections ran over a row's timed repeats.
#[derive(Clone, Debug, Serialize)]
pub struct ElisionRow {
    /// `rtm` where sections ran as hardware transactions, `none` where RTM
    /// is not usable and every section took the fallback lock.
    pub htm: &'static str,
    /// Critical sections: one per committed operation (`commits`).
    pub sections: u64,
    /// Sections that committed as hardware transactions.
    pub hw_commits: u64,
    /// `hw_commits / sections`.
    pub hw_commit_fraction: Option<f64>,
    /// Sections that ran under the fallback lock (`sections - hw_commits`).
    pub fallback_sections: u64,
    /// Hardware transactions started (each commits or aborts).
    pub hw_attempts: u64,
    /// Hardware aborts by cause: `conflict` (data), `capacity`, `lock_busy`
    /// (the fallback lock was held, the section waits for it), `explicit`,
    /// `debug`, `other` (interrupts, faults, ...).
    pub aborts: AbortCounts,
}

impl ElisionRow {
    fn new(e: &ElisionCounts, sections: u64) -> ElisionRow {
        ElisionRow {
            htm: if e.hardware { "rtm" } else { "none" },
            sections,
            hw_commits: e.hw_commits,
            hw_commit_fraction: (sections > 0).then(|| e.hw_commits as f64 / sections as f64),
            fallback_sections: sections.saturating_sub(e.hw_commits),
            hw_attempts: e.attempts,
            aborts: e.aborts,
        }
    }
}

/// The reference system every ratio is relative to.
pub const REFERENCE: &str = "txmem";

impl ResultRow {
    fn from_measured(m: &Measured) -> ResultRow {
        let (kinds, latency_ns) = kind_rows(m);
        let (status, error) = match &m.status {
            Status::Ok => ("ok", None),
            Status::Failed(e) => ("failed", Some(e.clone())),
            Status::Interrupted => ("interrupted", None),
        };
        ResultRow {
            workload: m.workload.clone(),
            system: m.system.name().to_string(),
            threads: m.threads,
            ops_per_sec: m.median(),
            ops_per_sec_min: m.min(),
            ops_per_sec_max: m.max(),
            repeats: m.samples.len(),
            aborts_per_commit: if m.status == Status::Ok {
                m.aborts_per_commit()
            } else {
                None
            },
            ratio_to_txmem: None,
            status,
            error,
            suite: m.suite.to_string(),
            samples: m.samples.clone(),
            commits: m.ops,
            aborts: m.aborts,
            note: m.note.clone(),
            round_trip_ns: m.round_trips_ns.clone(),
            elision: m.elision.as_ref().map(|e| ElisionRow::new(e, m.ops)),
            latency_ns,
            kinds,
        }
    }
}

/// Builds result rows and fills in the ratios to txmem.
pub fn rows(measured: &[Measured]) -> Vec<ResultRow> {
    let mut rows: Vec<ResultRow> = measured.iter().map(ResultRow::from_measured).collect();
    let ratios: Vec<Option<f64>> = rows
        .iter()
        .map(|r| {
            rows.iter()
                .find(|b| {
                    b.system == REFERENCE && b.workload == r.workload && b.threads == r.threads
                })
                .and_then(|b| ratio(r, b))
        })
        .collect();
    for (r, x) in rows.iter_mut().zip(ratios) {
        r.ratio_to_txmem = x;
    }
    rows
}

/// `row`'s throughput over `base`'s (see [`ResultRow::ratio_to_txmem`]).
fn ratio(row: &ResultRow, base: &ResultRow) -> Option<f64> {
    let own = row.ops_per_sec?; // a failed row has no figure, so no ratio
    let paired = row.samples.len() == base.samples.len() && !row.samples.is_empty();
    if paired && base.samples.iter().all(|&b| b > 0.0) {
        let per_round: Vec<f64> = row
            .samples
            .iter()
            .zip(&base.samples)
            .map(|(a, b)| a / b)
            .collect();
        return median(&per_round);
    }
    let b = base.ops_per_sec.filter(|&b| b > 0.0)?;
    Some(own / b)
}

impl Report {
    /// True if any row failed its check.
    pub fn any_failed(&self) -> bool {
        self.results.iter().any(|r| r.status == "failed")
    }

    /// The header line on thread placement (see [`placement::summary`]):
    /// every round's round trip, each workload and thread count counted
    /// once (its rows share the figures).
    pub fn placement_line(&self) -> Option<String> {
        let mut seen = Vec::new();
        let mut all = Vec::new();
        for r in &self.results {
            if !r.round_trip_ns.is_empty() && !seen.contains(&(&r.workload, r.threads)) {
                seen.push((&r.workload, r.threads));
                all.extend(r.round_trip_ns.iter().flatten());
            }
        }
        placement::summary(&all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(system: &str, samples: &[f64]) -> ResultRow {
        ResultRow {
            workload: "w".into(),
            system: system.into(),
            threads: 2,
            ops_per_sec: median(samples),
            ops_per_sec_min: None,
            ops_per_sec_max: None,
            repeats: samples.len(),
            aborts_per_commit: None,
            ratio_to_txmem: None,
            status: "ok",
            error: None,
            suite: "s".into(),
            samples: samples.to_vec(),
            commits: 0,
            aborts: None,
            note: String::new(),
            round_trip_ns: Vec::new(),
            elision: None,
            latency_ns: None,
            kinds: Vec::new(),
        }
    }

    #[test]
    fn paired_repeats_give_the_median_of_per_round_ratios() {
        // The peer is twice as fast in rounds 1 and 3, and met a slow spell
        // of the machine in round 2. Its median (20) comes from round 1 and
        // txmem's (40) from round 2 or 3: the medians would say 0.5.
        let base = row("txmem", &[10.0, 40.0, 40.0]);
        let peer = row("peer", &[20.0, 5.0, 80.0]);
        assert_eq!(ratio(&peer, &base), Some(2.0));
        assert_eq!(ratio(&base, &base), Some(1.0));
    }

    #[test]
    fn unpaired_rows_give_the_ratio_of_medians() {
        let base = row("txmem", &[20.0, 10.0, 10.0]);
        let peer = row("peer", &[8.0, 4.0]);
        assert_eq!(ratio(&peer, &base), Some(6.0 / 10.0));
        let failed = ResultRow {
            ops_per_sec: None,
            ..row("peer", &[])
        };
        assert_eq!(ratio(&failed, &base), None);
    }
}
