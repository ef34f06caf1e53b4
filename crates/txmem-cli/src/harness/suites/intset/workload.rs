//! The intset workload itself, whichever system runs it: its parameters,
//! the initial contents, the operation mix and the checks of a set's keys
//! after a run.

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use crate::harness::spec::Tally;

/// Initial set sizes.
pub const SIZES: [usize; 2] = [256, 4096];
/// Percentages of operations that are updates.
pub const UPDATE_PERCENTS: [u32; 3] = [0, 20, 50];
/// The structure a workload builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A sorted linked list.
    List,
    /// A hash set.
    Hash,
    /// An ordered set (skip list or B-tree).
    Ordered,
}

impl Kind {
    /// Every structure.
    pub const ALL: [Kind; 3] = [Kind::List, Kind::Hash, Kind::Ordered];

    /// The name in workload names.
    pub fn name(self) -> &'static str {
        match self {
            Kind::List => "list",
            Kind::Hash => "hash",
            Kind::Ordered => "ordered",
        }
    }
}

/// Parameters of one intset workload.
#[derive(Clone, Copy, Debug)]
pub struct IntSet {
    /// The structure.
    pub kind: Kind,
    /// Initial number of keys.
    pub size: usize,
    /// Keys are drawn from `0..range`.
    pub range: usize,
    /// Percentage of operations that are updates (the rest are lookups).
    pub update_percent: u32,
    /// Seed of the initial contents (the same for every system).
    pub seed: u64,
}

impl IntSet {
    /// The workload's name in reports, e.g.
    /// `intset/hash/size=4096/range=8192/update=20%`.
    pub fn name(&self) -> String {
        format!(
            "intset/{}/size={}/range={}/update={}%",
            self.kind.name(),
            self.size,
            self.range,
            self.update_percent
        )
    }

    /// The initial keys: `size` distinct keys from the range, sorted.
    pub fn initial_keys(&self) -> Vec<usize> {
        let mut all: Vec<usize> = (0..self.range).collect();
        all.shuffle(&mut SmallRng::seed_from_u64(self.seed));
        let mut keys = all[..self.size].to_vec();
        keys.sort_unstable();
        keys
    }
}

impl IntSet {
    /// The next operation: a uniform key; an update (insert or remove, even
    /// odds) with probability `update_percent`, else a lookup.
    #[inline]
    pub fn draw(&self, rng: &mut SmallRng) -> (OpKind, usize) {
        let key = rng.random_range(0..self.range);
        let op = if rng.random_range(0..100) < self.update_percent {
            if rng.random::<bool>() {
                OpKind::Insert
            } else {
                OpKind::Remove
            }
        } else {
            OpKind::Contains
        };
        (op, key)
    }

    /// Checks committed keys (any order) against the expected count; in
    /// order if `sorted`.
    pub fn check_keys(&self, keys: &[usize], sorted: bool, total: &Tally) -> Result<(), String> {
        self.check_shape(keys, sorted)?;
        let expected = self.size as i64 + total.delta;
        if keys.len() as i64 != expected {
            return Err(format!(
                "set holds {} keys, expected {expected} (initial {} + net inserts {})",
                keys.len(),
                self.size,
                total.delta
            ));
        }
        Ok(())
    }

    /// Checks that committed keys are in the key range and distinct (and in
    /// order if `sorted`), without counting them.
    pub fn check_shape(&self, keys: &[usize], sorted: bool) -> Result<(), String> {
        if let Some(k) = keys.iter().find(|&&k| k >= self.range) {
            return Err(format!("key {k} outside the key range"));
        }
        if sorted {
            if let Some(w) = keys.windows(2).find(|w| w[0] >= w[1]) {
                return Err(format!("keys not strictly increasing at {}", w[1]));
            }
        } else {
            let mut v = keys.to_vec();
            v.sort_unstable();
            if let Some(w) = v.windows(2).find(|w| w[0] == w[1]) {
                return Err(format!("key {} present twice", w[0]));
            }
        }
        Ok(())
    }
}

/// Counts an operation and its effect on the set size.
#[inline]
pub fn record(tally: &mut Tally, op: OpKind, changed: bool) {
    match (op, changed) {
        (OpKind::Insert, true) => tally.delta += 1,
        (OpKind::Remove, true) => tally.delta -= 1,
        _ => {}
    }
    tally.ops += 1;
}

/// What one operation does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// A lookup.
    Contains,
    /// Insert if absent.
    Insert,
    /// Remove if present.
    Remove,
}
