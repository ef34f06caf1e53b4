//! A history checker for the collections (Elle's list-append method).
//!
//! Random transactions run from several threads on one collection; every
//! attempt records every value it read and everything it wrote. Values are
//! unique, so the versions of each object can be recovered (see
//! `interpret.rs`), and the committed transactions form a
//! dependency graph (`ww`, `wr`, `rw` edges) that must be acyclic: a cycle
//! is a serializability violation, reported with its transactions, edges,
//! keys and values (`graph.rs`). In the opaque modes the aborted
//! attempts join the graph as read-only transactions: a cycle through one
//! of them is an opacity violation. So is a read that no version fits
//! (an element seen absent by a transaction that the order puts between
//! its insert and its removal), and so are the anomalies that need no
//! graph: a value no committed transaction wrote, a committed write that
//! got lost, a transaction contradicting its own writes, a `len` that
//! disagrees with the enumeration just before it.
//!
//! One test per collection and opacity mode; the contention policies vary
//! across them. The `broken_*` tests show that the check catches a
//! transaction that reads through a committed-read path (invisible to
//! validation), with the interleaving forced.

mod graph;
mod interpret;
mod record;
mod workload;

use std::thread;

use graph::ViolationKind;
use record::{record, Attempt};
use txmem::{Backoff, ContentionPolicy, Opacity, TBTreeMap, THashMap, TList, TListSet, TxOptions};
use workload::{analyse, check_cell, Cell, Map, Pending, Queue, Registers, Set, Workload};

/// Transactions per thread in each cell (four threads), sized for a
/// debug build on two cores: the whole file takes about 20 s there.
const TXS: usize = 1500;

fn cell(mode: Opacity, policy: ContentionPolicy, seed: u64) -> Cell {
    Cell {
        mode,
        policy,
        threads: 4,
        txs_per_thread: TXS,
        seed,
        read_only: false,
    }
}

const BACKOFF: ContentionPolicy = ContentionPolicy::Backoff(Backoff::DEFAULT);
const LINEAR: ContentionPolicy = ContentionPolicy::Backoff(Backoff::Linear {
    step: 64,
    max: 1 << 14,
});
const HOURGLASS: ContentionPolicy = ContentionPolicy::Hourglass { threshold: 8 };

macro_rules! cells {
    ($($name:ident: $workload:expr, $mode:ident, $policy:expr, $seed:expr;)*) => {
        $(
            #[test]
            fn $name() {
                check_cell($workload, cell(Opacity::$mode, $policy, $seed));
            }
        )*
    };
}

cells! {
    tbox_tl2: Registers::boxes(3), Tl2, BACKOFF, 1;
    tbox_revalidate: Registers::boxes(3), Revalidate, ContentionPolicy::Karma, 2;
    tbox_none: Registers::boxes(3), None, ContentionPolicy::Immediate, 3;
    tarray_tl2: Registers::array(4), Tl2, ContentionPolicy::Timestamp, 4;
    tarray_revalidate: Registers::array(4), Revalidate, HOURGLASS, 5;
    tarray_none: Registers::array(4), None, LINEAR, 6;
    word_tbox_tl2: Registers::word_boxes(3), Tl2, BACKOFF, 41;
    word_tbox_revalidate: Registers::word_boxes(3), Revalidate, ContentionPolicy::Timestamp, 42;
    word_tbox_none: Registers::word_boxes(3), None, ContentionPolicy::Immediate, 43;
    word_tarray_tl2: Registers::word_array(4, false), Tl2, HOURGLASS, 44;
    word_tarray_revalidate: Registers::word_array(4, false), Revalidate, ContentionPolicy::Karma, 45;
    word_tarray_none: Registers::word_array(4, false), None, LINEAR, 46;
    thashmap_tl2: Map::new(THashMap::new()), Tl2, ContentionPolicy::Immediate, 7;
    thashmap_revalidate: Map::new(THashMap::new()), Revalidate, BACKOFF, 8;
    thashmap_none: Map::new(THashMap::new()), None, ContentionPolicy::Karma, 9;
    tbtreemap_tl2: Map::new(TBTreeMap::with_fanout(4)), Tl2, HOURGLASS, 10;
    tbtreemap_revalidate: Map::new(TBTreeMap::with_fanout(4)), Revalidate, ContentionPolicy::Timestamp, 11;
    tbtreemap_none: Map::new(TBTreeMap::with_fanout(4)), None, BACKOFF, 12;
    tlistset_tl2: Set::new(TListSet::new()), Tl2, LINEAR, 13;
    tlistset_revalidate: Set::new(TListSet::new()), Revalidate, ContentionPolicy::Immediate, 14;
    tlistset_none: Set::new(TListSet::new()), None, HOURGLASS, 15;
    tlist_tl2: Set::new(TList::new()), Tl2, ContentionPolicy::Karma, 16;
    tlist_revalidate: Set::new(TList::new()), Revalidate, BACKOFF, 17;
    tlist_none: Set::new(TList::new()), None, ContentionPolicy::Timestamp, 18;
    tqueue_tl2: Queue::default(), Tl2, BACKOFF, 19;
    tqueue_revalidate: Queue::default(), Revalidate, LINEAR, 20;
    tqueue_none: Queue::default(), None, ContentionPolicy::Karma, 21;
}

/// Cells where half the transactions are declared read-only: their
/// snapshot attempts (unlogged reads, checked against the clock only) must
/// be as serializable, and in the opaque modes as opaque, as any other.
macro_rules! read_only_cells {
    ($($name:ident: $workload:expr, $mode:ident, $policy:expr, $seed:expr;)*) => {
        $(
            #[test]
            fn $name() {
                let cell = Cell { read_only: true, ..cell(Opacity::$mode, $policy, $seed) };
                check_cell($workload, cell);
            }
        )*
    };
}

read_only_cells! {
    tbox_read_only_tl2: Registers::boxes(3), Tl2, BACKOFF, 31;
    tarray_read_only_none: Registers::array(4), None, ContentionPolicy::Immediate, 32;
    word_tbox_read_only_tl2: Registers::word_boxes(3), Tl2, LINEAR, 47;
    word_tarray_history_read_only_tl2: Registers::word_array(4, true), Tl2, BACKOFF, 48;
    word_tarray_history_read_only_revalidate: Registers::word_array(4, true), Revalidate, ContentionPolicy::Immediate, 49;
    thashmap_read_only_tl2: Map::new(THashMap::new()), Tl2, LINEAR, 33;
    tbtreemap_read_only_revalidate: Map::new(TBTreeMap::with_fanout(4)), Revalidate, BACKOFF, 34;
    tlistset_read_only_tl2: Set::new(TListSet::new()), Tl2, HOURGLASS, 35;
    tqueue_read_only_none: Queue::default(), None, ContentionPolicy::Karma, 36;
}

const MODES: [Opacity; 3] = [Opacity::Tl2, Opacity::Revalidate, Opacity::None];

/// Runs the `victim` transaction on this thread (thread 0) and, in its
/// first attempt only, at the point where it calls the hook, the
/// `other` transaction on another thread (thread 1) to its commit.
/// Returns both transactions' attempts.
fn forced(
    mode: Opacity,
    other: impl FnOnce() -> Vec<Attempt> + Send,
    victim: impl FnOnce(&mut dyn FnMut()) -> Vec<Attempt>,
) -> Vec<Attempt> {
    let mut other = Some(other);
    let mut theirs = Vec::new();
    let mine = victim(&mut || {
        if let Some(other) = other.take() {
            theirs = thread::scope(|s| {
                s.spawn(other)
                    .join()
                    .expect("the other transaction panicked")
            });
        }
    });
    assert!(!theirs.is_empty(), "{mode:?}: the hook never ran");
    assert_eq!(
        mine.len(),
        1,
        "{mode:?}: the victim must commit in the attempt that saw the other commit"
    );
    mine.into_iter().chain(theirs).collect()
}

/// The checker must report a cycle of the two committed transactions
/// (thread 0's and thread 1's), naming `expect` in its edges.
fn assert_cycle_found<W: Workload>(w: &W, attempts: &[Attempt], mode: Opacity, expect: &[&str]) {
    let (h, found) = analyse(w, attempts, mode);
    let cycle = found
        .iter()
        .find(|v| v.kind == ViolationKind::Cycle && !v.involves_aborted(&h))
        .unwrap_or_else(|| panic!("{mode:?}: no committed cycle found; found {found:#?}"));
    let threads: Vec<usize> = cycle.txs.iter().map(|&t| h.txs[t].thread).collect();
    assert_eq!(threads.len(), 2, "{mode:?}: {}", cycle.text);
    assert!(
        threads.contains(&0) && threads.contains(&1),
        "{mode:?}: {}",
        cycle.text
    );
    for e in expect {
        assert!(
            cycle.text.contains(e),
            "{mode:?}: expected `{e}` in\n{}",
            cycle.text
        );
    }
}

#[test]
fn broken_tbox_read_is_caught() {
    // The victim reads box 0 through `load` (untracked), the other
    // transaction appends to both boxes and commits, the victim reads box
    // 1 properly and commits: it saw box 0 before the other and box 1
    // after it.
    for mode in MODES {
        let w = Registers::boxes(2);
        let opts = TxOptions::new().opacity(mode);
        let attempts = forced(
            mode,
            || {
                record(&opts, 1, 0, |tx, ev| {
                    w.append(tx, 0, 10, ev)?;
                    w.append(tx, 1, 11, ev)
                })
            },
            |hook| {
                record(&opts, 0, 0, |tx, ev| {
                    w.read_committed(0, ev);
                    hook();
                    w.read(tx, 1, ev)
                })
            },
        );
        assert_cycle_found(
            &w,
            &attempts,
            mode,
            &["-rw->", "box 0 = []", "-wr->", "box 1 = [11]"],
        );
    }
}

#[test]
fn broken_map_reads_are_caught() {
    // As for boxes: the victim finds key a absent through `load`, the
    // other transaction inserts a and b, the victim finds b present.
    fn on<M: workload::MapStore>(make: fn() -> M) {
        for mode in MODES {
            let w = Map::new(make());
            let opts = TxOptions::new().opacity(mode);
            let attempts = forced(
                mode,
                || {
                    record(&opts, 1, 0, |tx, ev| {
                        w.create(tx, 100, 1, ev)?;
                        w.create(tx, 200, 2, ev)
                    })
                },
                |hook| {
                    record(&opts, 0, 0, |tx, ev| {
                        w.read_committed(100, ev);
                        hook();
                        w.read(tx, 200, ev)
                    })
                },
            );
            assert_cycle_found(&w, &attempts, mode, &["key 100 = absent", "key 200 = [2]"]);
        }
    }
    on(THashMap::new);
    on(|| TBTreeMap::with_fanout(4));
}

#[test]
fn broken_list_contains_is_caught() {
    for mode in MODES {
        let w = Set::new(TListSet::new());
        let opts = TxOptions::new().opacity(mode);
        let attempts = forced(
            mode,
            || {
                record(&opts, 1, 0, |tx, ev| {
                    w.insert(tx, 100, ev)?;
                    w.insert(tx, 200, ev)
                })
            },
            |hook| {
                record(&opts, 0, 0, |tx, ev| {
                    w.contains_committed(100, ev);
                    hook();
                    w.contains(tx, 200, ev)
                })
            },
        );
        assert_cycle_found(
            &w,
            &attempts,
            mode,
            &[
                "element 100 = absent (not yet inserted)",
                "element 200 = present",
            ],
        );
    }
}

#[test]
fn broken_queue_peek_is_caught() {
    // The victim peeks through a committed snapshot (nothing there), the
    // other transaction pushes 7, the victim peeks properly and sees 7.
    for mode in MODES {
        let w = Queue::default();
        let opts = TxOptions::new().opacity(mode);
        let attempts = forced(
            mode,
            || record(&opts, 1, 0, |tx, ev| w.push(tx, 7, &mut Pending::new(), ev)),
            |hook| {
                record(&opts, 0, 0, |tx, ev| {
                    w.peek_committed(tx, &Pending::new(), ev)?;
                    hook();
                    w.peek(tx, ev)
                })
            },
        );
        assert_cycle_found(
            &w,
            &attempts,
            mode,
            &[
                "the queue's tail = nothing pushed",
                "the queue's tail at 1 pushed (last 7) or later",
            ],
        );
    }
}
