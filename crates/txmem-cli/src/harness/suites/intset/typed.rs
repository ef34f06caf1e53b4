//! intset rows for txmem's typed collections: `TListSet<u64>` (list),
//! `THashMap<u64, ()>` (hash) and `TBTreeMap<u64, ()>` (ordered). Same
//! operation mix and initial contents as the word-arena rows. The
//! `txmem-direct` rows run lookups outside any transaction (the
//! collection's committed read of one key) and updates as transactions:
//! what a program pays whose lookups need no atomicity with other
//! operations. The check reads the committed keys and compares them (and
//! the collection's own size counter) with the initial size plus the
//! committed net inserts.

use rand::rngs::SmallRng;
use txmem::{TBTreeMap, THashMap, TListSet, Transaction, TxOptions, TxResult};

use crate::harness::spec::{AbortCounting, Instance, Plan, Tally};
use crate::harness::suites::intset::workload::{record, IntSet, Kind, OpKind};
use crate::harness::system::System;

/// The operations the benchmark needs from a transactional set.
trait TxSet: Send + Sync + 'static {
    const TYPE: &'static str;
    /// Keys come out in order (checked by the verification).
    const SORTED: bool;
    fn make(capacity: usize) -> Self;
    fn contains<'e>(&'e self, tx: &mut Transaction<'e>, k: u64) -> TxResult<bool>;
    fn insert<'e>(&'e self, tx: &mut Transaction<'e>, k: u64) -> TxResult<bool>;
    fn remove<'e>(&'e self, tx: &mut Transaction<'e>, k: u64) -> TxResult<bool>;
    /// Whether `k` is committed, outside any transaction.
    fn contains_committed(&self, k: u64) -> bool;
    /// Committed keys, outside any transaction.
    fn keys(&self) -> Vec<u64>;
    /// The collection's own committed size counter.
    fn len(&self) -> usize;
}

impl TxSet for TListSet<u64> {
    const TYPE: &'static str = "TListSet<u64>";
    const SORTED: bool = true;
    fn make(_: usize) -> Self {
        TListSet::new()
    }
    fn contains<'e>(&'e self, tx: &mut Transaction<'e>, k: u64) -> TxResult<bool> {
        TListSet::contains(self, tx, &k)
    }
    fn insert<'e>(&'e self, tx: &mut Transaction<'e>, k: u64) -> TxResult<bool> {
        TListSet::insert(self, tx, k)
    }
    fn remove<'e>(&'e self, tx: &mut Transaction<'e>, k: u64) -> TxResult<bool> {
        TListSet::remove(self, tx, &k)
    }
    fn contains_committed(&self, k: u64) -> bool {
        TListSet::contains_committed(self, &k)
    }
    fn keys(&self) -> Vec<u64> {
        self.snapshot()
    }
    fn len(&self) -> usize {
        self.load_len()
    }
}

impl TxSet for THashMap<u64, ()> {
    const TYPE: &'static str = "THashMap<u64, ()>";
    const SORTED: bool = false;
    fn make(capacity: usize) -> Self {
        THashMap::with_capacity(capacity)
    }
    fn contains<'e>(&'e self, tx: &mut Transaction<'e>, k: u64) -> TxResult<bool> {
        self.contains_key(tx, &k)
    }
    fn insert<'e>(&'e self, tx: &mut Transaction<'e>, k: u64) -> TxResult<bool> {
        THashMap::insert(self, tx, k, ())
    }
    fn remove<'e>(&'e self, tx: &mut Transaction<'e>, k: u64) -> TxResult<bool> {
        Ok(THashMap::remove(self, tx, &k)?.is_some())
    }
    fn contains_committed(&self, k: u64) -> bool {
        self.contains_key_committed(&k)
    }
    fn keys(&self) -> Vec<u64> {
        txmem::atomically(|tx| Ok(self.iter(tx)?.into_iter().map(|(k, ())| k).collect()))
    }
    fn len(&self) -> usize {
        self.load_len()
    }
}

impl TxSet for TBTreeMap<u64, ()> {
    const TYPE: &'static str = "TBTreeMap<u64, ()>";
    const SORTED: bool = true;
    fn make(_: usize) -> Self {
        TBTreeMap::new()
    }
    fn contains<'e>(&'e self, tx: &mut Transaction<'e>, k: u64) -> TxResult<bool> {
        self.contains_key(tx, &k)
    }
    fn insert<'e>(&'e self, tx: &mut Transaction<'e>, k: u64) -> TxResult<bool> {
        TBTreeMap::insert(self, tx, k, ())
    }
    fn remove<'e>(&'e self, tx: &mut Transaction<'e>, k: u64) -> TxResult<bool> {
        Ok(TBTreeMap::remove(self, tx, &k)?.is_some())
    }
    fn contains_committed(&self, k: u64) -> bool {
        self.load(&k).is_some()
    }
    fn keys(&self) -> Vec<u64> {
        self.keys_committed()
    }
    fn len(&self) -> usize {
        self.load_len()
    }
}

struct Typed<S> {
    set: S,
    w: IntSet,
    options: TxOptions,
    /// Lookups outside any transaction (the `txmem-direct` rows).
    direct_reads: bool,
}

impl<S: TxSet> Typed<S> {
    fn new(w: IntSet, options: TxOptions, direct_reads: bool) -> Self {
        let set = S::make(w.size);
        // Untimed setup in modest transactions.
        for chunk in w.initial_keys().chunks(64) {
            options.run(|tx| {
                for &k in chunk {
                    set.insert(tx, k as u64)?;
                }
                Ok(())
            });
        }
        Typed {
            set,
            w,
            options,
            direct_reads,
        }
    }
}

impl<S: TxSet> Instance for Typed<S> {
    #[inline]
    fn op(&self, rng: &mut SmallRng, tally: &mut Tally) {
        let (op, key) = self.w.draw(rng);
        let k = key as u64;
        let set = &self.set;
        if self.direct_reads && op == OpKind::Contains {
            std::hint::black_box(set.contains_committed(k));
            record(tally, op, false);
            return;
        }
        let changed = self.options.run(|tx| match op {
            OpKind::Contains => set.contains(tx, k),
            OpKind::Insert => set.insert(tx, k),
            OpKind::Remove => set.remove(tx, k),
        });
        record(tally, op, changed);
    }

    fn verify(&self, total: &Tally) -> Result<(), String> {
        let keys: Vec<usize> = self.set.keys().into_iter().map(|k| k as usize).collect();
        self.w.check_keys(&keys, S::SORTED, total)?;
        if self.set.len() != keys.len() {
            return Err(format!(
                "{} size counter says {}, but it holds {} keys",
                S::TYPE,
                self.set.len(),
                keys.len()
            ));
        }
        Ok(())
    }

    #[cfg(feature = "test-hooks")]
    fn sabotage(&self) {
        if let Some(&k) = self.set.keys().first() {
            self.options.run(|tx| self.set.remove(tx, k));
        }
    }

    fn abort_counting(&self) -> AbortCounting {
        AbortCounting::TxmemStats
    }
}

type MakeFn = fn(IntSet, TxOptions, bool) -> Box<dyn Instance>;

/// Adds the typed-collection row named `system` for `w`; with
/// `direct_reads`, its lookups run outside any transaction.
pub fn add(plan: &mut Plan, system: System, w: IntSet, options: TxOptions, direct_reads: bool) {
    let name = w.name();
    let (ty, make): (&str, MakeFn) = match w.kind {
        Kind::List => (<TListSet<u64> as TxSet>::TYPE, |w, o, d| {
            Box::new(Typed::<TListSet<u64>>::new(w, o, d))
        }),
        Kind::Hash => (<THashMap<u64, ()> as TxSet>::TYPE, |w, o, d| {
            Box::new(Typed::<THashMap<u64, ()>>::new(w, o, d))
        }),
        Kind::Ordered => (<TBTreeMap<u64, ()> as TxSet>::TYPE, |w, o, d| {
            Box::new(Typed::<TBTreeMap<u64, ()>>::new(w, o, d))
        }),
    };
    let reads = if direct_reads {
        ", lookups outside transactions"
    } else {
        ""
    };
    let note = format!(
        "txmem {ty}, opacity {}{reads}",
        options.opacity_mode().name()
    );
    plan.case("intset", &name, system, &note, move || {
        make(w, options, direct_reads)
    });
}
