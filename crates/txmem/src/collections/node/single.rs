//! The parts of a map's single-operation writes (`insert_now`,
//! `remove_now`, `update_now`, …) that act on one committed node, shared by
//! [`THashMap`](crate::THashMap) and [`TBTreeMap`](crate::TBTreeMap): the
//! decision a write makes from the committed value, the overwrite and the
//! removal of a node, and the wake-up of `retry`ers.
//!
//! Each map finds the node its own way and links new nodes its own way;
//! what happens to a node found is the same for both. Every step follows
//! the commit of a transaction that writes one node: lock every word that
//! changes at the value read, draw the commit version after locking
//! (`tx::commit_version`), install, unlock past the commit version. A
//! transaction therefore sees such a write whole or not at all.

use std::borrow::Borrow;

use crossbeam_epoch::Guard;

use crate::clock;
use crate::tx::commit_version;
use crate::version::TVersion;
use crate::wait;

use super::map::MapNodes;
use super::DELETED;

/// The key of a single-operation write: owned by an operation that may
/// insert it (the new node takes it), borrowed by one that never does.
pub(in crate::collections) enum KeyArg<'a, K, Q: ?Sized> {
    Owned(Option<K>),
    Borrowed(&'a Q),
}

impl<K: Borrow<Q>, Q: ?Sized> KeyArg<'_, K, Q> {
    /// The key, to look up.
    pub(in crate::collections) fn get(&self) -> &Q {
        match self {
            KeyArg::Owned(k) => k
                .as_ref()
                .expect("the key is back between attempts")
                .borrow(),
            KeyArg::Borrowed(q) => q,
        }
    }

    /// The owned key, for a new node (handed back with
    /// [`give_back`](Self::give_back) if linking fails).
    pub(in crate::collections) fn take(&mut self) -> K {
        match self {
            KeyArg::Owned(k) => k.take().expect("taken once per attempt"),
            KeyArg::Borrowed(_) => unreachable!("only operations that own their key insert"),
        }
    }

    /// Returns the key [`take`](Self::take) handed out, for another attempt.
    pub(in crate::collections) fn give_back(&mut self, key: K) {
        *self = KeyArg::Owned(Some(key));
    }
}

/// What a single-operation write does to its key, decided from the
/// committed value.
pub(in crate::collections) enum Change<P> {
    /// Nothing (the operation only read the key).
    Keep,
    /// Store the value built from `P` (inserting the key if absent).
    Put(P),
    /// Remove the key (nothing if absent).
    Remove,
}

/// Stores `value()` into the committed node `n` of `map` if its state is
/// still `seen`: `Some(old value if wanted)`, or `None` to start over (then
/// `value` was not called).
pub(in crate::collections) fn overwrite_node_now<C: MapNodes>(
    map: &C,
    n: &C::Node,
    seen: u64,
    value: impl FnOnce() -> C::Value,
    want_old: bool,
) -> Option<Option<C::Value>> {
    let state = C::state(n);
    if !state.try_lock_at(seen) {
        return None;
    }
    let Some(cv) = commit_version() else {
        state.unlock_unchanged(seen);
        clock::wait_irrevocable_open();
        return None;
    };
    // Read after locking (see `wait`), as a commit does.
    let wake = wait::waiters_present();
    let cell = C::cell(n);
    // The lock is held: the committed value cannot change.
    let old = want_old.then(|| cell.with(C::Value::clone));
    let guard = std::cell::OnceCell::new();
    cell.store(value(), || guard.get_or_init(crossbeam_epoch::pin));
    state.unlock_to(TVersion::next_after(seen, cv));
    wake_after_single(map, wake);
    Some(old)
}

/// Removes the committed node `np` of `map` if its state is still `seen`,
/// as a transaction's removal commits (marked deleted, unlinked, the count
/// decreased): `Some(old value if wanted)`, or `None` to start over.
pub(in crate::collections) fn remove_node_now<C: MapNodes>(
    map: &C,
    np: *const C::Node,
    seen: u64,
    want_old: bool,
    guard: &Guard,
) -> Option<Option<C::Value>> {
    // SAFETY: the caller found the node while pinned (`guard`); nodes are
    // freed only through the epoch after they are unlinked.
    let n = unsafe { &*np };
    let state = C::state(n);
    if !state.try_lock_at(seen) {
        return None;
    }
    let size = map.size();
    if !size.try_share() {
        state.unlock_unchanged(seen);
        return None;
    }
    let Some(cv) = commit_version() else {
        size.drop_share();
        state.unlock_unchanged(seen);
        clock::wait_irrevocable_open();
        return None;
    };
    let wake = wait::waiters_present();
    let old = want_old.then(|| C::cell(n).with(C::Value::clone));
    state.unlock_to(TVersion::next_after(seen, cv) | DELETED);
    size.install_share(-1, cv);
    map.unlink(np, Some(cv), guard);
    wake_after_single(map, wake);
    Some(old)
}

/// Wakes the transactions blocked in `retry` on `map`, if
/// `wait::waiters_present` said after locking that there were any.
#[inline]
pub(in crate::collections) fn wake_after_single<C>(map: &C, wake: bool) {
    if wake {
        wait::wake_readers_of(std::iter::once(map as *const C as usize));
    }
}

#[cfg(test)]
mod tests {
    use crate::{atomically, TBTreeMap, THashMap, TMap};

    /// Two threads insert and remove keys of their own and count into
    /// shared keys, through single-operation writes, while transactions
    /// read everything (Miri checks the nodes handed back, placed and
    /// retired: a removal retires the node it found through a reference).
    /// An `ordered` map's reads come back in key order.
    fn single_operation_writes_race_with_a_reader<M: TMap<u32, u32>>(m: M, n: u32, ordered: bool) {
        const COUNTERS: u32 = 1_000_000;
        std::thread::scope(|s| {
            for t in 0..2u32 {
                let m = &m;
                s.spawn(move || {
                    for i in 0..n {
                        let own = 2 * i + t;
                        assert_eq!(m.insert_now(own, i), None);
                        m.update_now(COUNTERS + i % 5, |v| Some(v.copied().unwrap_or(0) + 1));
                        if i % 3 == 0 {
                            assert_eq!(m.remove_now(&own), Some(i));
                        }
                    }
                });
            }
            s.spawn(|| {
                for _ in 0..4 {
                    let (mut all, len) = atomically(|tx| Ok((m.to_vec(tx)?, m.len(tx)?)));
                    assert_eq!(all.len(), len);
                    let in_order = all.windows(2).all(|w| w[0].0 < w[1].0);
                    assert!(in_order || !ordered, "a scan out of key order");
                    all.sort_unstable();
                    assert!(all.windows(2).all(|w| w[0].0 < w[1].0), "a key twice");
                }
            });
        });
        let counted: u32 = (0..5).map(|k| m.load(&(COUNTERS + k)).unwrap_or(0)).sum();
        assert_eq!(counted, 2 * n, "an increment was lost");
        let mut want: Vec<u32> = (0..2 * n).filter(|k| (k / 2) % 3 != 0).collect();
        want.extend((0..5).map(|k| COUNTERS + k));
        let mut keys: Vec<u32> = atomically(|tx| m.to_vec(tx))
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        keys.sort_unstable();
        assert_eq!(keys, want);
        assert_eq!(m.load_len(), want.len());
        for k in (0..2 * n).filter(|k| (k / 2) % 3 != 0) {
            assert_eq!(m.load(&k), Some(k / 2));
        }
    }

    /// A fanout small enough to split leaves often (fewer keys under Miri).
    #[test]
    fn btree_single_operation_writes_race_with_a_reader() {
        let n = if cfg!(miri) { 12 } else { 400 };
        single_operation_writes_race_with_a_reader(TBTreeMap::with_fanout(4), n, true);
    }

    #[test]
    fn hashmap_single_operation_writes_race_with_a_reader() {
        let n = if cfg!(miri) { 12 } else { 400 };
        single_operation_writes_race_with_a_reader(THashMap::new(), n, false);
    }
}
