//! An insert that reports its key absent (a set's `insert`, a map's
//! `insert` and `insert_if_absent`) records no read, so that inserts of
//! distinct keys never conflict; but what it reports is an observation,
//! and in the opaque modes it must agree with the attempt's earlier reads.
//!
//! The interleaving, forced on the first attempt: T reads a box; another
//! transaction removes the key and writes the box, and commits; T inserts
//! the key. Reporting "absent" next to the box's old value would be a view
//! no serial order gives (the removal and the write are one commit), so T
//! must abort there and, on its retry, see both changes.
//!
//! The second test has T insert another key first, into the same B-tree
//! leaf: T's own change moves the leaf's version, which T may then take as
//! consistent without revalidating, but only while the leaf stays at
//! exactly that version. The removal moves it again, and the insert after
//! it must still be checked.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::thread;

use txmem::{atomically, Opacity, TBTreeMap, TBox, THashMap, TListSet, TSet, TxOptions};

/// The interleaving above; with `before`, T inserts that key first.
fn scenario<S: TSet<u64>>(
    name: &str,
    make: impl Fn() -> S,
    mode: Opacity,
    before: Option<u64>,
) -> Result<(), String> {
    let set = make();
    atomically(|tx| set.insert(tx, 7));
    let flag = TBox::new(0u32);
    let first = AtomicBool::new(true);
    let seen = Mutex::new(Vec::new());
    TxOptions::new().opacity(mode).run(|tx| {
        let f = flag.get(tx)?;
        if let Some(k) = before {
            set.insert(tx, k)?;
        }
        if first.swap(false, Ordering::Relaxed) {
            thread::scope(|s| {
                s.spawn(|| {
                    atomically(|tx| {
                        assert!(set.remove(tx, &7)?);
                        flag.set(tx, 1)
                    })
                });
            });
        }
        let inserted = set.insert(tx, 7)?;
        // A side effect that survives the abort: what this attempt saw.
        seen.lock().unwrap().push((f, inserted));
        Ok(())
    });
    let seen = seen.into_inner().unwrap();
    // Box 0 goes with the key present (not inserted); box 1 with it absent.
    match seen.iter().find(|&&(f, inserted)| inserted != (f == 1)) {
        Some(&(f, inserted)) => Err(format!(
            "{name}, {mode:?}, first inserting {before:?}: an attempt saw the box at {f} and the key {}",
            if inserted { "absent" } else { "present" }
        )),
        None => Ok(()),
    }
}

#[test]
fn an_insert_reporting_absence_agrees_with_earlier_reads() {
    let mut failures = Vec::new();
    for mode in [Opacity::Tl2, Opacity::Revalidate] {
        let results = [
            scenario("TListSet", TListSet::new, mode, None),
            scenario("THashMap", THashMap::<u64, ()>::new, mode, None),
            scenario("TBTreeMap", TBTreeMap::<u64, ()>::new, mode, None),
        ];
        failures.extend(results.into_iter().filter_map(Result::err));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn an_insert_after_an_own_insert_into_a_leaf_changed_since_is_checked() {
    let mut failures = Vec::new();
    for mode in [Opacity::Tl2, Opacity::Revalidate] {
        let results = [
            scenario("TBTreeMap", TBTreeMap::<u64, ()>::new, mode, Some(5)),
            scenario("TListSet", TListSet::new, mode, Some(5)),
            scenario("THashMap", THashMap::<u64, ()>::new, mode, Some(5)),
        ];
        failures.extend(results.into_iter().filter_map(Result::err));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
