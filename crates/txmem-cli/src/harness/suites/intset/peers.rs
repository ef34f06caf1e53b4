//! Set peers for `intset` that are not built from words: concurrent sets
//! from other crates (`dashmap` for the hash workload, `crossbeam-skiplist`
//! for the ordered one) and the std collection behind one `std::sync::RwLock`
//! (`rwlock-std`: a `HashSet`, a `BTreeSet`, or a sorted `Vec` for the
//! list). These are the peers the typed collections are measured against;
//! the `mutex`/`rwlock` rows instead run the word arena's algorithm under a
//! lock.

use std::collections::{BTreeSet, HashSet};
use std::sync::RwLock;

use rand::rngs::SmallRng;

use crate::harness::spec::{AbortCounting, Instance, Plan, Tally};
use crate::harness::suites::intset::workload::{record, IntSet, Kind, OpKind};
use crate::harness::system::System;

/// What the benchmark needs from a set.
trait PeerSet: Default + Send + Sync + 'static {
    /// Keys come out in order (checked by the verification).
    const SORTED: bool;
    /// `insert` and `remove` say exactly whether they changed the set, so
    /// the check can count the keys against the net inserts.
    const EXACT: bool = true;
    fn contains(&self, k: u64) -> bool;
    fn insert(&self, k: u64) -> bool;
    fn remove(&self, k: u64) -> bool;
    fn keys(&self) -> Vec<u64>;
}

impl<S> PeerSet for dashmap::DashSet<u64, S>
where
    S: std::hash::BuildHasher + Clone + Default + Send + Sync + 'static,
{
    const SORTED: bool = false;
    fn contains(&self, k: u64) -> bool {
        dashmap::DashSet::contains(self, &k)
    }
    fn insert(&self, k: u64) -> bool {
        dashmap::DashSet::insert(self, k)
    }
    fn remove(&self, k: u64) -> bool {
        dashmap::DashSet::remove(self, &k).is_some()
    }
    fn keys(&self) -> Vec<u64> {
        self.iter().map(|k| *k).collect()
    }
}

/// `crossbeam-skiplist`'s set. Its `insert` replaces an existing entry, so
/// an insert first tests for the key; under races that answer (and
/// `remove`'s) is not exact: a key inserted by one thread may be reported
/// new by another (even `get_or_insert`, tested with a per-call value,
/// was off by about 700 in 4M racing operations on 128 keys). The row's check
/// therefore tests order and distinct keys but not their count, and its
/// figure counts operations, not exact effects.
impl PeerSet for crossbeam_skiplist::SkipSet<u64> {
    const SORTED: bool = true;
    const EXACT: bool = false;
    fn contains(&self, k: u64) -> bool {
        crossbeam_skiplist::SkipSet::contains(self, &k)
    }
    fn insert(&self, k: u64) -> bool {
        if crossbeam_skiplist::SkipSet::contains(self, &k) {
            return false;
        }
        crossbeam_skiplist::SkipSet::insert(self, k);
        true
    }
    fn remove(&self, k: u64) -> bool {
        crossbeam_skiplist::SkipSet::remove(self, &k).is_some()
    }
    fn keys(&self) -> Vec<u64> {
        self.iter().map(|e| *e).collect()
    }
}

/// The std collections behind one reader-writer lock.
macro_rules! locked_std_set {
    ($set:ty, $sorted:expr, |$s:ident, $k:ident| contains $contains:expr, insert $insert:expr, remove $remove:expr, keys $keys:expr) => {
        impl PeerSet for RwLock<$set> {
            const SORTED: bool = $sorted;
            fn contains(&self, $k: u64) -> bool {
                let $s = self.read().expect("a benchmark thread panicked");
                $contains
            }
            fn insert(&self, $k: u64) -> bool {
                let mut $s = self.write().expect("a benchmark thread panicked");
                $insert
            }
            fn remove(&self, $k: u64) -> bool {
                let mut $s = self.write().expect("a benchmark thread panicked");
                $remove
            }
            fn keys(&self) -> Vec<u64> {
                let $s = self.read().expect("a benchmark thread panicked");
                $keys
            }
        }
    };
}

locked_std_set!(HashSet<u64>, false, |s, k|
    contains s.contains(&k),
    insert s.insert(k),
    remove s.remove(&k),
    keys s.iter().copied().collect());
locked_std_set!(BTreeSet<u64>, true, |s, k|
    contains s.contains(&k),
    insert s.insert(k),
    remove s.remove(&k),
    keys s.iter().copied().collect());
locked_std_set!(Vec<u64>, true, |s, k|
    contains s.binary_search(&k).is_ok(),
    insert match s.binary_search(&k) {
        Ok(_) => false,
        Err(i) => {
            s.insert(i, k);
            true
        }
    },
    remove match s.binary_search(&k) {
        Ok(i) => {
            s.remove(i);
            true
        }
        Err(_) => false,
    },
    keys s.clone());

/// A peer set running an intset workload.
struct Peer<S> {
    set: S,
    w: IntSet,
}

impl<S: PeerSet> Peer<S> {
    fn new(w: IntSet) -> Self {
        let set = S::default();
        for k in w.initial_keys() {
            set.insert(k as u64);
        }
        Peer { set, w }
    }
}

impl<S: PeerSet> Instance for Peer<S> {
    #[inline]
    fn op(&self, rng: &mut SmallRng, tally: &mut Tally) {
        let (op, key) = self.w.draw(rng);
        let k = key as u64;
        let changed = match op {
            OpKind::Contains => self.set.contains(k),
            OpKind::Insert => self.set.insert(k),
            OpKind::Remove => self.set.remove(k),
        };
        record(tally, op, changed);
    }

    fn verify(&self, total: &Tally) -> Result<(), String> {
        let keys: Vec<usize> = self.set.keys().into_iter().map(|k| k as usize).collect();
        if S::EXACT {
            self.w.check_keys(&keys, S::SORTED, total)
        } else {
            self.w.check_shape(&keys, S::SORTED)
        }
    }

    fn sabotage(&self) {
        // A key outside the range: caught by the check of every peer, even
        // one whose keys are not counted.
        self.set.insert(self.w.range as u64);
    }

    fn abort_counting(&self) -> AbortCounting {
        AbortCounting::Never
    }
}

/// Adds the set peers for workload `w`: `rwlock-std` for every structure,
/// `dashmap` for the hash set (with its default hasher and with
/// `THashMap`'s), `crossbeam-skiplist` for the ordered set.
pub fn add(plan: &mut Plan, w: IntSet) {
    let name = w.name();
    match w.kind {
        Kind::List => plan.case(
            "intset",
            &name,
            System::RwLockStd,
            "std sorted Vec<u64> behind std RwLock",
            move || Box::new(Peer::<RwLock<Vec<u64>>>::new(w)),
        ),
        Kind::Hash => {
            plan.case(
                "intset",
                &name,
                System::RwLockStd,
                "std HashSet<u64> (SipHash) behind std RwLock",
                move || Box::new(Peer::<RwLock<HashSet<u64>>>::new(w)),
            );
            plan.case(
                "intset",
                &name,
                System::Dashmap,
                "dashmap DashSet<u64> (sharded RwLocks, SipHash)",
                move || Box::new(Peer::<dashmap::DashSet<u64>>::new(w)),
            );
            plan.case(
                "intset",
                &name,
                System::DashmapFoldhash,
                "dashmap DashSet<u64> with foldhash (THashMap's default hasher)",
                move || Box::new(Peer::<dashmap::DashSet<u64, txmem::DefaultHashBuilder>>::new(w)),
            );
        }
        Kind::Ordered => {
            plan.case(
                "intset",
                &name,
                System::RwLockStd,
                "std BTreeSet<u64> behind std RwLock",
                move || Box::new(Peer::<RwLock<BTreeSet<u64>>>::new(w)),
            );
            plan.case(
                "intset",
                &name,
                System::CrossbeamSkiplist,
                "crossbeam-skiplist SkipSet<u64> (lock-free; checked for order only)",
                move || Box::new(Peer::<crossbeam_skiplist::SkipSet<u64>>::new(w)),
            );
        }
    }
}
