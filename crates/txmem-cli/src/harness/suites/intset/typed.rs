//! intset rows for txmem's typed collections: `TListSet<u64>` (list),
//! `THashMap<u64, ()>` (hash) and `TBTreeMap<u64, ()>` (ordered). Same
//! operation mix and initial contents as the word-arena rows. The
//! `txmem-direct` rows run every operation as a transaction of its own
//! outside `atomically`: lookups as the collection's committed read of one
//! key (`load_contains`), updates as single-operation writes (`insert_now`,
//! `remove_now`; direct for the maps, a transaction for the list): what a
//! program pays whose operations need no atomicity with each other. The
//! check reads the committed keys and compares them (and
//! the collection's own size counter) with the initial size plus the
//! committed net inserts.

use rand::rngs::SmallRng;
use txmem::{TBTreeMap, THashMap, TListSet, TSet, TxOptions};

use crate::harness::spec::{AbortCounting, Instance, Plan, Tally};
use crate::harness::suites::intset::workload::{record, IntSet, Kind, OpKind};
use crate::harness::system::System;

struct Typed<S> {
    set: S,
    /// The type's name, for messages.
    ty: &'static str,
    /// Whether the set lists its keys in order (checked by the verification).
    sorted: bool,
    w: IntSet,
    options: TxOptions,
    /// Operations outside `atomically` (the `txmem-direct` rows).
    direct: bool,
}

impl<S: TSet<u64>> Typed<S> {
    fn new(set: S, ty: &'static str, w: IntSet, options: TxOptions, direct: bool) -> Self {
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
            ty,
            sorted: w.kind != Kind::Hash,
            w,
            options,
            direct,
        }
    }
}

impl<S: TSet<u64>> Instance for Typed<S> {
    #[inline]
    fn op(&self, rng: &mut SmallRng, tally: &mut Tally) {
        let (op, key) = self.w.draw(rng);
        let k = key as u64;
        let set = &self.set;
        if self.direct {
            let changed = match op {
                OpKind::Contains => set.load_contains(&k),
                OpKind::Insert => set.insert_now(k),
                OpKind::Remove => set.remove_now(&k),
            };
            record(tally, op, changed);
            return;
        }
        let changed = self.options.run(|tx| match op {
            OpKind::Contains => set.contains(tx, &k),
            OpKind::Insert => set.insert(tx, k),
            OpKind::Remove => set.remove(tx, &k),
        });
        record(tally, op, changed);
    }

    fn verify(&self, total: &Tally) -> Result<(), String> {
        let keys: Vec<usize> = self.keys().into_iter().map(|k| k as usize).collect();
        self.w.check_keys(&keys, self.sorted, total)?;
        let counted = self.set.load_len();
        if counted != keys.len() {
            return Err(format!(
                "{} size counter says {counted}, but it holds {} keys",
                self.ty,
                keys.len()
            ));
        }
        Ok(())
    }

    fn sabotage(&self) {
        if let Some(&k) = self.keys().first() {
            self.options.run(|tx| self.set.remove(tx, &k));
        }
    }

    fn abort_counting(&self) -> AbortCounting {
        AbortCounting::TxmemStats
    }
}

impl<S: TSet<u64>> Typed<S> {
    /// The committed keys (every worker has stopped).
    fn keys(&self) -> Vec<u64> {
        self.options.run(|tx| self.set.to_vec(tx))
    }
}

type MakeFn = fn(&'static str, IntSet, TxOptions, bool) -> Box<dyn Instance>;

/// Adds the typed-collection row named `system` for `w`; with `direct`,
/// its operations run outside `atomically`.
pub fn add(plan: &mut Plan, system: System, w: IntSet, options: TxOptions, direct: bool) {
    let name = w.name();
    let (ty, make): (&str, MakeFn) = match w.kind {
        Kind::List => ("TListSet<u64>", |ty, w, o, d| {
            Box::new(Typed::new(TListSet::new(), ty, w, o, d))
        }),
        Kind::Hash => ("THashMap<u64, ()>", |ty, w, o, d| {
            let set = THashMap::<u64, ()>::with_capacity(w.size);
            Box::new(Typed::new(set, ty, w, o, d))
        }),
        Kind::Ordered => ("TBTreeMap<u64, ()>", |ty, w, o, d| {
            Box::new(Typed::new(TBTreeMap::new(), ty, w, o, d))
        }),
    };
    let reads = if direct {
        ", single-operation lookups and updates"
    } else {
        ""
    };
    let note = format!(
        "txmem {ty}, opacity {}{reads}",
        options.opacity_mode().name()
    );
    plan.case("intset", &name, system, &note, move || {
        make(ty, w, options, direct)
    });
}
