//! `intset`: integer sets in the style of TinySTM's intset benchmark.
//! Three structures (sorted linked list, hash set, ordered set), initial
//! sizes 256 and 4096, keys drawn from a range twice the size, update rates
//! 0/20/50% (an update is an insert or a remove with equal odds; the rest
//! are lookups).
//!
//! Files: [`workload`] (parameters, operation mix, checks of a set's keys)
//! is what every system shares; [`arena`] builds the structures from words
//! for the word-backed systems; [`typed`] adapts txmem's typed collections
//! and [`peers`] the sets of other crates.
//!
//! Systems: `txmem` (and `txmem-revalidate`, `txmem-no-opacity`) are txmem's
//! typed collections — `TListSet`, `THashMap`, `TBTreeMap` — which track one
//! abstract item per operation; `txmem-direct` runs each of their
//! operations as a transaction of its own outside `atomically` (lookups as
//! committed reads, updates as single-operation writes). `txmem-tarray` and `txmem-words` run the word arena through
//! a `TArray<u64>` and the untyped `TWords`: the typed-versus-untyped
//! comparison, where every `next` link walked is a tracked read. The set
//! peers are `dashmap` (with its default hasher, SipHash, and as
//! `dashmap-foldhash` with `THashMap`'s, foldhash), `crossbeam-skiplist`
//! and the std collection behind an `RwLock` (`rwlock-std`); the
//! `mutex`/`rwlock`/`fine-locks` rows run the arena's algorithm under locks.

pub mod arena;
pub mod peers;
pub mod typed;
pub mod workload;

use crate::harness::spec::Plan;
use crate::harness::suites::config::SuiteConfig;
use crate::harness::system::System;
use crate::harness::txmem_sys::{self, opacity_variants, Store};
use crate::harness::workload::add_rows;
use workload::{IntSet, Kind, SIZES, UPDATE_PERCENTS};

/// Every intset workload of the suite (or of the quick selection).
pub fn workloads(quick: bool, seed: u64) -> Vec<IntSet> {
    let mut out = Vec::new();
    for kind in Kind::ALL {
        for size in SIZES {
            for update_percent in UPDATE_PERCENTS {
                let picked = match kind {
                    Kind::List => size == 256,
                    _ => size == 4096,
                } && update_percent == 20;
                if quick && !picked {
                    continue;
                }
                out.push(IntSet {
                    kind,
                    size,
                    range: 2 * size,
                    update_percent,
                    seed,
                });
            }
        }
    }
    out
}

/// Adds the suite's rows: for each workload, txmem's collections, the set
/// peers, the word-backed systems and libitm.
pub fn plan(cfg: &SuiteConfig, plan: &mut Plan) {
    for set in workloads(cfg.quick, cfg.seed) {
        let name = set.name();
        collection_rows(cfg, plan, &set);
        peers::add(plan, set);
        add_rows(
            plan,
            "intset",
            &name,
            &cfg.word_systems(System::TxmemTarray),
            move || set,
        );
        cfg.add_libitm(
            plan,
            "intset",
            &name,
            &[
                "intset".to_string(),
                set.kind.name().to_string(),
                set.size.to_string(),
                set.range.to_string(),
                set.update_percent.to_string(),
                set.seed.to_string(),
            ],
        );
    }
}

/// Rows for txmem's own transactional collections: `txmem` (and its
/// opacity variants) is the typed collection for the structure, and every
/// set gets `txmem-direct`, whose operations run outside `atomically`.
fn collection_rows(cfg: &SuiteConfig, plan: &mut Plan, set: &IntSet) {
    for v in opacity_variants(System::Txmem, Store::TArray, cfg.quick) {
        let options = txmem_sys::options(&v, &cfg.policy);
        typed::add(plan, v.system, *set, options, false);
        if v.system == System::Txmem && !cfg.quick {
            typed::add(plan, System::TxmemDirect, *set, options, true);
        }
    }
}
