//! What a YCSB run loads and runs: the workload letter (its operation mix),
//! the table's size and layout, the key distribution and the number of
//! operations per transaction.

use std::fmt;
use std::str::FromStr;

/// The six core workloads of YCSB, by the mix of operations each runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mix {
    /// Update heavy: 50% reads, 50% updates.
    A,
    /// Read mostly: 95% reads, 5% updates.
    B,
    /// Read only: 100% reads.
    C,
    /// Read latest: 95% reads (of recently inserted records by default),
    /// 5% inserts.
    D,
    /// Short ranges: 95% scans of up to `max_scan_len` records, 5% inserts.
    E,
    /// Read-modify-write: 50% reads, 50% read-modify-writes.
    F,
}

/// One YCSB operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// Read every field of one record.
    Read,
    /// Write every field of one record without reading it (a blind write).
    Update,
    /// Read one record and write it back changed.
    ReadModifyWrite,
    /// Insert a record under a fresh key.
    Insert,
    /// Read every field of up to `max_scan_len` records in key order.
    Scan,
}

impl Op {
    /// The operation's name in reports (also the name of the transaction
    /// kind it gives a transaction, see [`Mix::kinds`]).
    pub const fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Update => "update",
            Op::ReadModifyWrite => "read-modify-write",
            Op::Insert => "insert",
            Op::Scan => "scan",
        }
    }
}

impl Mix {
    /// Every workload, A to F.
    pub const ALL: [Mix; 6] = [Mix::A, Mix::B, Mix::C, Mix::D, Mix::E, Mix::F];

    /// The workload's letter, lower case (`"a"` … `"f"`).
    pub const fn letter(self) -> &'static str {
        match self {
            Mix::A => "a",
            Mix::B => "b",
            Mix::C => "c",
            Mix::D => "d",
            Mix::E => "e",
            Mix::F => "f",
        }
    }

    /// The operations the workload runs with their percentages (summing
    /// to 100), the main operation first.
    pub const fn proportions(self) -> &'static [(Op, u32)] {
        match self {
            Mix::A => &[(Op::Read, 50), (Op::Update, 50)],
            Mix::B => &[(Op::Read, 95), (Op::Update, 5)],
            Mix::C => &[(Op::Read, 100)],
            Mix::D => &[(Op::Read, 95), (Op::Insert, 5)],
            Mix::E => &[(Op::Scan, 95), (Op::Insert, 5)],
            Mix::F => &[(Op::Read, 50), (Op::ReadModifyWrite, 50)],
        }
    }

    /// The operations a transaction of this workload is counted under, in
    /// the order of [`Workload::kinds`](crate::Workload::kinds). A
    /// transaction counts as its writing operation if it has one (`update`,
    /// `insert`, `read-modify-write`), else as its reading one (`read`,
    /// `scan`); with one operation per transaction that is simply the
    /// operation.
    pub const fn kind_ops(self) -> &'static [Op] {
        match self {
            Mix::A | Mix::B => &[Op::Read, Op::Update],
            Mix::C => &[Op::Read],
            Mix::D => &[Op::Read, Op::Insert],
            Mix::E => &[Op::Scan, Op::Insert],
            Mix::F => &[Op::Read, Op::ReadModifyWrite],
        }
    }

    /// The names of [`kind_ops`](Self::kind_ops).
    pub const fn kinds(self) -> &'static [&'static str] {
        match self {
            Mix::A | Mix::B => &["read", "update"],
            Mix::C => &["read"],
            Mix::D => &["read", "insert"],
            Mix::E => &["scan", "insert"],
            Mix::F => &["read", "read-modify-write"],
        }
    }

    /// YCSB's request distribution for the workload: `latest` for D,
    /// `zipfian` for the others.
    pub const fn default_distribution(self) -> Distribution {
        match self {
            Mix::D => Distribution::Latest,
            _ => Distribution::Zipfian,
        }
    }

    /// The index the workload needs by default: ordered for E (its scans
    /// walk keys in order), hashed for the others (see [`Index`]).
    pub const fn default_index(self) -> Index {
        match self {
            Mix::E => Index::Ordered,
            _ => Index::Hash,
        }
    }

    /// True if the workload inserts records (the key space grows).
    pub const fn inserts(self) -> bool {
        matches!(self, Mix::D | Mix::E)
    }
}

impl fmt::Display for Mix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.letter())
    }
}

impl FromStr for Mix {
    type Err = String;
    fn from_str(s: &str) -> Result<Mix, String> {
        Mix::ALL
            .into_iter()
            .find(|m| m.letter().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| format!("unknown YCSB workload `{s}` (expected a, b, c, d, e or f)"))
    }
}

/// How keys are chosen for reads, updates, read-modify-writes and the
/// first key of scans.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Distribution {
    /// Zipfian over the records, scrambled so that the popular records are
    /// spread over the key space rather than being the first keys loaded
    /// (YCSB's `zipfian`).
    Zipfian,
    /// Every record equally likely.
    Uniform,
    /// Zipfian by recency: the most recently inserted record is the most
    /// popular (YCSB's `latest`).
    Latest,
}

impl Distribution {
    /// Every distribution.
    pub const ALL: [Distribution; 3] = [
        Distribution::Zipfian,
        Distribution::Uniform,
        Distribution::Latest,
    ];

    /// The name on the command line and in reports.
    pub const fn name(self) -> &'static str {
        match self {
            Distribution::Zipfian => "zipfian",
            Distribution::Uniform => "uniform",
            Distribution::Latest => "latest",
        }
    }

    /// True if the distribution has a skew parameter θ.
    pub const fn skewed(self) -> bool {
        !matches!(self, Distribution::Uniform)
    }
}

impl fmt::Display for Distribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Distribution {
    type Err = String;
    fn from_str(s: &str) -> Result<Distribution, String> {
        Distribution::ALL
            .into_iter()
            .find(|d| d.name() == s.trim())
            .ok_or_else(|| {
                format!("unknown key distribution `{s}` (expected zipfian, uniform or latest)")
            })
    }
}

/// The transactional map the records live in.
///
/// * `Hash`: a [`THashMap`](txmem::THashMap) keyed by the record number,
///   with a multiply-and-shift hasher. A point operation hashes once and
///   walks a chain of about one node, whatever the table's size, so it is
///   the cheapest index for workloads of point reads and writes (A–D, F).
/// * `Ordered`: a [`TBTreeMap`](txmem::TBTreeMap) keyed by a scrambled
///   record number, so that neighbouring keys in the tree are unrelated
///   records, as with YCSB's hashed key order. Its scans protect whole key
///   intervals against phantoms, which workload E needs; its point
///   operations descend a few levels of binary searches, so they cost more
///   than the hash map's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Index {
    /// A [`THashMap`](txmem::THashMap): point operations only.
    Hash,
    /// A [`TBTreeMap`](txmem::TBTreeMap): point operations and scans.
    Ordered,
}

impl Index {
    /// Every index.
    pub const ALL: [Index; 2] = [Index::Hash, Index::Ordered];

    /// The name on the command line and in reports.
    pub const fn name(self) -> &'static str {
        match self {
            Index::Hash => "hash",
            Index::Ordered => "ordered",
        }
    }

    /// The map type's name, for notes in reports.
    pub const fn map_type(self) -> &'static str {
        match self {
            Index::Hash => "THashMap",
            Index::Ordered => "TBTreeMap",
        }
    }
}

impl fmt::Display for Index {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Index {
    type Err = String;
    fn from_str(s: &str) -> Result<Index, String> {
        Index::ALL
            .into_iter()
            .find(|i| i.name() == s.trim())
            .ok_or_else(|| format!("unknown index `{s}` (expected hash or ordered)"))
    }
}

/// The default number of records (YCSB's benchmarks commonly load 1M–10M).
pub const DEFAULT_RECORDS: u64 = 1_000_000;
/// The default record size: YCSB's 10 fields of 10 bytes.
pub const DEFAULT_VALUE_SIZE: usize = 100;
/// YCSB's default skew of the zipfian distributions.
pub const DEFAULT_THETA: f64 = 0.99;
/// YCSB's default longest scan.
pub const DEFAULT_MAX_SCAN_LEN: usize = 100;
/// The most operations a transaction may hold.
pub const MAX_OPS_PER_TXN: usize = 1024;
/// The largest record accepted (1 MiB).
pub const MAX_VALUE_SIZE: usize = 1 << 20;
/// The most records a table may be loaded with.
pub const MAX_RECORDS: u64 = 1 << 32;

/// Everything a YCSB table and its workload are built from.
///
/// `Config::new(Mix::A)` gives YCSB's defaults for workload A: 1M records
/// of 100 bytes, zipfian keys with θ = 0.99, one operation per transaction.
/// STO's measurements use `ops_per_txn = 16`.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The operation mix.
    pub mix: Mix,
    /// Records loaded before the run (keys `0..record_count`).
    pub record_count: u64,
    /// Bytes per record (YCSB: field count × field length).
    pub value_size: usize,
    /// How keys are chosen; `None` takes the workload's default
    /// ([`Mix::default_distribution`]).
    pub distribution: Option<Distribution>,
    /// The skew θ of the zipfian and latest distributions, in (0, 1).
    pub theta: f64,
    /// Operations per transaction: 1 for classic YCSB, 16 in STO's
    /// variant.
    pub ops_per_txn: usize,
    /// The longest scan (workload E): scan lengths are uniform in
    /// `1..=max_scan_len`.
    pub max_scan_len: usize,
    /// The map the records live in; `None` takes the workload's default
    /// ([`Mix::default_index`]).
    pub index: Option<Index>,
    /// Threads that load the table (0: one per available CPU).
    pub load_threads: usize,
}

impl Config {
    /// YCSB's defaults for workload `mix`.
    pub fn new(mix: Mix) -> Config {
        Config {
            mix,
            record_count: DEFAULT_RECORDS,
            value_size: DEFAULT_VALUE_SIZE,
            distribution: None,
            theta: DEFAULT_THETA,
            ops_per_txn: 1,
            max_scan_len: DEFAULT_MAX_SCAN_LEN,
            index: None,
            load_threads: 0,
        }
    }

    /// The key distribution in force.
    pub fn distribution(&self) -> Distribution {
        self.distribution
            .unwrap_or_else(|| self.mix.default_distribution())
    }

    /// The index in force.
    pub fn index(&self) -> Index {
        self.index.unwrap_or_else(|| self.mix.default_index())
    }

    /// Checks that the settings make a workload, naming the first bad one.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=MAX_RECORDS).contains(&self.record_count) {
            return Err(format!(
                "record count {} out of range 1..={MAX_RECORDS}",
                self.record_count
            ));
        }
        if !(1..=MAX_VALUE_SIZE).contains(&self.value_size) {
            return Err(format!(
                "value size {} out of range 1..={MAX_VALUE_SIZE} bytes",
                self.value_size
            ));
        }
        if !(self.theta > 0.0 && self.theta < 1.0) {
            return Err(format!(
                "zipfian θ {} out of range (expected 0 < θ < 1)",
                self.theta
            ));
        }
        if !(1..=MAX_OPS_PER_TXN).contains(&self.ops_per_txn) {
            return Err(format!(
                "{} operations per transaction out of range 1..={MAX_OPS_PER_TXN}",
                self.ops_per_txn
            ));
        }
        if self.max_scan_len == 0 {
            return Err("the longest scan must be at least 1 record".to_string());
        }
        if self.mix == Mix::E && self.index() == Index::Hash {
            return Err(
                "workload e scans key ranges: it needs the ordered index, not hash".to_string(),
            );
        }
        Ok(())
    }

    /// A short name of the workload and its parameters for reports, e.g.
    /// `ycsb-a/records=1M/value=100B/zipfian=0.99/ops=16`.
    pub fn name(&self) -> String {
        let dist = self.distribution();
        let dist = if dist.skewed() {
            format!("{dist}={}", self.theta)
        } else {
            dist.to_string()
        };
        let mut name = format!(
            "ycsb-{}/records={}/value={}B/{dist}/ops={}",
            self.mix,
            short_count(self.record_count),
            self.value_size,
            self.ops_per_txn
        );
        if self.index() != self.mix.default_index() {
            name.push_str(&format!("/index={}", self.index()));
        }
        name
    }
}

/// `1000000` → `1M`, `4096` → `4096`, `250000` → `250k`.
fn short_count(n: u64) -> String {
    if n >= 1_000_000 && n.is_multiple_of(1_000_000) {
        format!("{}M", n / 1_000_000)
    } else if n >= 1000 && n.is_multiple_of(1000) {
        format!("{}k", n / 1000)
    } else {
        n.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mix_sums_to_100_and_names_its_kinds() {
        for mix in Mix::ALL {
            let total: u32 = mix.proportions().iter().map(|&(_, p)| p).sum();
            assert_eq!(total, 100, "{mix}");
            let names: Vec<&str> = mix.kind_ops().iter().map(|op| op.name()).collect();
            assert_eq!(names, mix.kinds(), "{mix}");
            for (op, _) in mix.proportions() {
                assert!(mix.kind_ops().contains(op), "{mix}: {op:?}");
            }
        }
    }

    #[test]
    fn parsing_and_validation_name_the_bad_value() {
        assert_eq!("A".parse::<Mix>(), Ok(Mix::A));
        assert!("g".parse::<Mix>().unwrap_err().contains("`g`"));
        assert!("zipf"
            .parse::<Distribution>()
            .unwrap_err()
            .contains("`zipf`"));
        assert!(Config::new(Mix::A).validate().is_ok());
        let bad = Config {
            theta: 1.0,
            ..Config::new(Mix::A)
        };
        assert!(bad.validate().unwrap_err().contains("θ 1"));
        let bad = Config {
            index: Some(Index::Hash),
            ..Config::new(Mix::E)
        };
        assert!(bad.validate().unwrap_err().contains("ordered"));
    }

    #[test]
    fn names_are_short() {
        let c = Config {
            ops_per_txn: 16,
            ..Config::new(Mix::A)
        };
        assert_eq!(c.name(), "ycsb-a/records=1M/value=100B/zipfian=0.99/ops=16");
        let c = Config {
            distribution: Some(Distribution::Uniform),
            record_count: 4096,
            index: Some(Index::Ordered),
            ..Config::new(Mix::C)
        };
        assert_eq!(
            c.name(),
            "ycsb-c/records=4096/value=100B/uniform/ops=1/index=ordered"
        );
    }
}
