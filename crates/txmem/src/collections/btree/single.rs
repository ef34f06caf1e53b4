//! Single-operation writes: an insert, an overwrite or a removal of one key
//! outside any transaction, committed as a transaction of its own.
//!
//! [`TBTreeMap::change_now`] runs the commit of a transaction that writes
//! one key, without the transaction:
//!
//! 1. descend to the key's leaf, as a lookup does;
//! 2. decide what to write from the committed value, before anything is
//!    locked (the caller's closure never runs under a lock);
//! 3. a present key: overwrite or remove its entry, locked at the state the
//!    lookup saw (`node::single`, shared with the hash map); the removal
//!    takes the entry out of its leaf as a committed removal does;
//! 4. an absent key: take a share of the size counter's stripe, then place
//!    a new entry into the leaf exactly as a transactional insert places
//!    its placeholder (`place`: in place at the end, a copy, or a split),
//!    but with the entry's state already locked, so no one reads it as
//!    committed or writes it before step 5; any failure so far releases
//!    what was taken and starts over, so it never waits holding a lock;
//! 5. draw the commit version (`tx::commit_version`) and publish: the
//!    entry's state past it, without the inserting flag, and the size.
//!
//! Step 4 and 5 are a one-insert transaction's placement and commit, run
//! back to back: every word the insert changes is locked or invisible
//! (the placeholder) before the clock is read, so a transaction sees the
//! insert whole or not at all. A closed irrevocability gate at step 5
//! abandons the entry as an aborted transaction abandons its placeholder
//! (unlinked, still marked inserting, so readers that met it stay valid)
//! and waits for the gate.

use crossbeam_epoch::Guard;

use crate::clock;
use crate::collections::node::single::{
    overwrite_node_now, remove_node_now, wake_after_single, Change, KeyArg,
};
use crate::collections::node::{NodeCollection, DELETED, INSERTING};
use crate::collections::struct_wait;
use crate::tx::{assert_outside_transaction, commit_version};
use crate::version::TVersion;
use crate::wait;

use super::storage::{deref, EPtr, Entry, LeafPos};
use super::TBTreeMap;

impl<K, V> TBTreeMap<K, V>
where
    K: Ord + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    /// Inserts `key → value` as a transaction of its own, returning the old
    /// value if `key` was present (which it then overwrites), as
    /// [`insert`](Self::insert) does inside a transaction.
    ///
    /// A *single-operation transaction*: it commits at once and serializes
    /// with every transaction, for about the cost of a lock-based map's
    /// insert plus the leaf copy of any insert here. Panics inside a
    /// transaction; there, use `insert`. Single-operation transactions are
    /// not counted in the statistics.
    ///
    /// ```
    /// use txmem::{atomically, TBTreeMap};
    /// let m = TBTreeMap::new();
    /// assert_eq!(m.insert_now(2, "b"), None);
    /// assert_eq!(m.insert_now(1, "a"), None);
    /// assert_eq!(m.insert_now(2, "B"), Some("b"));
    /// assert_eq!(atomically(|tx| m.to_vec(tx)), vec![(1, "a"), (2, "B")]);
    /// ```
    pub fn insert_now(&self, key: K, value: V) -> Option<V> {
        self.change_now(
            KeyArg::Owned(Some(key)),
            Some(value),
            |_, spare| Change::Put(spare.take().expect("the value is back")),
            true,
        )
    }

    /// Inserts `key → value` if `key` is absent, as a transaction of its own;
    /// returns whether it did (see [`insert_now`](Self::insert_now)).
    ///
    /// ```
    /// use txmem::TBTreeMap;
    /// let m = TBTreeMap::new();
    /// assert!(m.insert_if_absent_now(7, "first"));
    /// assert!(!m.insert_if_absent_now(7, "second"));
    /// assert_eq!(m.load(&7), Some("first"));
    /// ```
    pub fn insert_if_absent_now(&self, key: K, value: V) -> bool {
        // The last decision is the one that committed.
        let mut inserted = false;
        self.change_now(
            KeyArg::Owned(Some(key)),
            Some(value),
            |old, spare| {
                inserted = old.is_none();
                match old {
                    Some(_) => Change::Keep,
                    None => Change::Put(spare.take().expect("the value is back")),
                }
            },
            false,
        );
        inserted
    }

    /// Removes `key` as a transaction of its own, returning its value if it
    /// was present (see [`insert_now`](Self::insert_now)).
    ///
    /// ```
    /// use txmem::TBTreeMap;
    /// let m = TBTreeMap::new();
    /// m.insert_now("a", 1);
    /// assert_eq!(m.remove_now(&"a"), Some(1));
    /// assert_eq!(m.remove_now(&"a"), None);
    /// assert_eq!(m.load_len(), 0);
    /// ```
    pub fn remove_now(&self, key: &K) -> Option<V> {
        self.change_now(KeyArg::Borrowed(key), None, |_, _| Change::Remove, true)
    }

    /// Replaces the entry of `key` with `f(current value)` as a transaction
    /// of its own: `Some(v)` stores `v` (inserting the key if absent),
    /// `None` removes the key (if present). Returns what `f` returned.
    ///
    /// `f` runs before anything is locked and runs again if another writer
    /// commits to the key first, so it should be a pure function of its
    /// argument (like the closure of `AtomicU64::fetch_update`).
    ///
    /// ```
    /// use txmem::TBTreeMap;
    /// let hits: TBTreeMap<&str, u64> = TBTreeMap::new();
    /// for page in ["/", "/about", "/"] {
    ///     hits.update_now(page, |n| Some(n.copied().unwrap_or(0) + 1));
    /// }
    /// assert_eq!(hits.load(&"/"), Some(2));
    /// // Returning `None` removes the key.
    /// assert_eq!(hits.update_now("/about", |_| None), None);
    /// assert_eq!(hits.load_len(), 1);
    /// ```
    pub fn update_now(&self, key: K, mut f: impl FnMut(Option<&V>) -> Option<V>) -> Option<V> {
        let mut new = None;
        self.change_now(
            KeyArg::Owned(Some(key)),
            None,
            |old, _| {
                new = f(old);
                match &new {
                    Some(v) => Change::Put(v.clone()),
                    None => Change::Remove,
                }
            },
            false,
        );
        new
    }

    /// The single-operation write protocol of the module docs. `decide`
    /// maps the committed value to a [`Change`] (it may run several times);
    /// it is handed `spare`, which holds the caller's value at first and
    /// the value of a `Put` that did not commit afterwards. Returns the old
    /// value of an overwritten or removed key if `want_old`.
    fn change_now(
        &self,
        mut key: KeyArg<'_, K, K>,
        mut spare: Option<V>,
        mut decide: impl FnMut(Option<&V>, &mut Option<V>) -> Change<V>,
        want_old: bool,
    ) -> Option<V> {
        assert_outside_transaction();
        let guard = crossbeam_epoch::pin();
        let mut spins = 0;
        loop {
            let k = key.get();
            let pos = self.locate(|x| x <= k);
            // SAFETY: reached while pinned.
            let d = unsafe { deref(pos.data) };
            // SAFETY: reached while pinned; entries are freed only through
            // the epoch after they leave their leaf.
            let entry = d
                .keys()
                .binary_search(k)
                .ok()
                .map(|i| unsafe { deref(d.entries()[i]) });
            let seen = entry.map_or(0, |e| e.state.load());
            if TVersion::is_locked(seen) {
                struct_wait(&mut spins);
                continue;
            }
            // A placeholder is another transaction's insert in flight, a
            // deleted entry a committed removal on its way out: the key is
            // absent for now.
            let present = entry.filter(|_| seen & (INSERTING | DELETED) == 0);
            let change = match present {
                Some(e) => e.value.with(|v| decide(Some(v), &mut spare)),
                None => decide(None, &mut spare),
            };
            let done = match (present, change) {
                (Some(e), Change::Keep) => {
                    // The value `decide` saw was committed at `seen`.
                    if e.state.load() == seen {
                        return None;
                    }
                    None
                }
                (None, Change::Keep | Change::Remove) => return None,
                (None, Change::Put(v)) if entry.is_some() => {
                    // Wait for the other insert or the unlink, then decide
                    // again.
                    spare = Some(v);
                    None
                }
                (Some(e), Change::Put(v)) => {
                    spare = Some(v);
                    let value = || spare.take().expect("the decided value");
                    overwrite_node_now(self, e, seen, value, want_old)
                }
                (Some(e), Change::Remove) => remove_node_now(self, e, seen, want_old, &guard),
                (None, Change::Put(v)) => match self.link_now(&pos, key.take(), v, &guard) {
                    Ok(()) => return None,
                    Err((k, v)) => {
                        key.give_back(k);
                        spare = Some(v);
                        None
                    }
                },
            };
            match done {
                Some(old) => return old,
                None => struct_wait(&mut spins),
            }
        }
    }

    /// Inserts a committed entry `key → value` into the leaf of `pos` (read
    /// without the key), as step 4 and 5 of the module docs. Hands the key
    /// and value back to start over.
    fn link_now(&self, pos: &LeafPos<K, V>, key: K, value: V, guard: &Guard) -> Result<(), (K, V)> {
        if !self.size.try_share() {
            return Err((key, value));
        }
        let e = Entry::placeholder(key, value) as EPtr<K, V>;
        // SAFETY: ours alone until `place` publishes it.
        let state = &unsafe { deref(e) }.state;
        // Locked before it is shared: nobody else can lock it, and readers
        // that meet it wait for step 5 (as for a committing placeholder).
        let placeholder = state.load();
        assert!(state.try_lock_at(placeholder), "a fresh entry is unlocked");
        if self.place(pos, e, guard).is_none() {
            self.size.drop_share();
            // SAFETY: `place` did not publish `e`: it is still ours alone.
            return Err(unsafe { Entry::take_back(e) });
        }
        // SAFETY: published, but freed only through the epoch after it
        // leaves its leaf, which only its owner (this call) does.
        let entry = unsafe { deref(e) };
        let Some(cv) = commit_version() else {
            // The lock keeps the value unchanged; copies go back for the
            // next attempt, as the entry stays with its readers.
            let back = (entry.key.clone(), entry.value.with(V::clone));
            entry.state.unlock_unchanged(placeholder);
            self.size.drop_share();
            self.unlink(e, None, guard);
            clock::wait_irrevocable_open();
            return Err(back);
        };
        let wake = wait::waiters_present();
        entry
            .state
            .unlock_to(TVersion::next_after(placeholder, cv) & !INSERTING);
        self.size.install_share(1, cv);
        wake_after_single(self, wake);
        Ok(())
    }
}
