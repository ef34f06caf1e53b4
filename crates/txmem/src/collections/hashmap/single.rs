//! Single-operation writes: an insert, an overwrite or a removal of one key
//! outside any transaction, committed as a transaction of its own.
//!
//! A program whose update touches one key (a cache fill, a set's insert, a
//! counter per key) needs no read set, no write set and nothing to roll
//! back: it needs the commit protocol of a transaction that writes one node
//! (and the size), run directly. [`THashMap::change_now`] is that protocol:
//!
//! 1. find the key's node, or the bucket it would go in, as a transactional
//!    lookup does (`probe`, settling pending unlinks);
//! 2. decide what to write from the committed value, *before* anything is
//!    locked (the caller's closure never runs under a lock);
//! 3. lock what the write changes at the word the lookup saw: the node's
//!    state (overwrite, removal) or the bucket (a new node), so any commit
//!    in between sends the operation back to step 1; take a share of the
//!    size counter's stripe if the count changes (one attempt: on failure
//!    everything is released and the operation starts over, so it never
//!    waits while holding a lock);
//! 4. draw the commit version after locking (`tx::commit_version`), as a
//!    one-item commit does; a closed irrevocability gate releases
//!    everything and waits;
//! 5. install: the value, the new node or the deleted mark, the bucket word
//!    and the stripe, each at least at the commit version; wake `retry`ers.
//!
//! Because it locks every word it changes before it reads the clock, and
//! publishes versions above the clock value it read, a transaction sees
//! such a write whole or not at all, exactly as it sees a transaction's
//! commit (the argument of `tx::commit::version_past`).

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};
use std::sync::atomic::{AtomicPtr, Ordering};

use crate::clock;
use crate::collections::node::single::{
    overwrite_node_now, remove_node_now, wake_after_single, Change, KeyArg,
};
use crate::collections::node::{DELETED, INSERTING};
use crate::collections::struct_wait;
use crate::tx::{assert_outside_transaction, commit_version};
use crate::types::cell::ValueCell;
use crate::version::TVersion;
use crate::wait;

use super::probe::Probe;
use super::table::{Node, Table};
use super::THashMap;

impl<K, V, S> THashMap<K, V, S>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
    S: BuildHasher + Send + Sync + 'static,
{
    /// Inserts `key → value` as a transaction of its own, returning the old
    /// value if `key` was present (which it then overwrites), as
    /// [`insert`](Self::insert) does inside a transaction.
    ///
    /// A *single-operation transaction*: it commits at once and serializes
    /// with every transaction, for about the cost of a lock-based map's
    /// insert. Panics inside a transaction; there, use `insert`.
    /// Single-operation transactions are not counted in the statistics.
    ///
    /// ```
    /// use txmem::{atomically, THashMap};
    /// let m = THashMap::new();
    /// assert_eq!(m.insert_now("a", 1), None);
    /// assert_eq!(m.insert_now("a", 2), Some(1));
    /// assert_eq!(atomically(|tx| m.get(tx, "a")), Some(2));
    /// ```
    pub fn insert_now(&self, key: K, value: V) -> Option<V> {
        let mut value = Some(value);
        self.change_now(
            KeyArg::Owned(Some(key)),
            |_| Change::Put(()),
            |()| value.take().expect("installed once"),
            true,
        )
    }

    /// Inserts `key → value` if `key` is absent, as a transaction of its own;
    /// returns whether it did (see [`insert_now`](Self::insert_now)).
    ///
    /// ```
    /// use txmem::THashMap;
    /// let m = THashMap::new();
    /// assert!(m.insert_if_absent_now(7, "first"));
    /// assert!(!m.insert_if_absent_now(7, "second"));
    /// assert_eq!(m.load(&7), Some("first"));
    /// ```
    pub fn insert_if_absent_now(&self, key: K, value: V) -> bool {
        let mut value = Some(value);
        let mut inserted = false;
        self.change_now(
            KeyArg::Owned(Some(key)),
            |old| match old {
                Some(_) => Change::Keep,
                None => Change::Put(()),
            },
            |()| {
                inserted = true;
                value.take().expect("installed once")
            },
            false,
        );
        inserted
    }

    /// Removes `key` as a transaction of its own, returning its value if it
    /// was present (see [`insert_now`](Self::insert_now)).
    ///
    /// ```
    /// use txmem::THashMap;
    /// let m = THashMap::new();
    /// m.insert_now("a", 1);
    /// assert_eq!(m.remove_now("a"), Some(1));
    /// assert_eq!(m.remove_now("a"), None);
    /// assert_eq!(m.load_len(), 0);
    /// ```
    pub fn remove_now<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.change_now(
            KeyArg::Borrowed(key),
            |_| Change::<()>::Remove,
            |()| unreachable!("a removal stores no value"),
            true,
        )
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
    /// use txmem::THashMap;
    /// let hits: THashMap<&str, u64> = THashMap::new();
    /// for page in ["/", "/about", "/"] {
    ///     hits.update_now(page, |n| Some(n.copied().unwrap_or(0) + 1));
    /// }
    /// assert_eq!(hits.load("/"), Some(2));
    /// // Returning `None` removes the key.
    /// assert_eq!(hits.update_now("/about", |_| None), None);
    /// assert_eq!(hits.load_len(), 1);
    /// ```
    pub fn update_now(&self, key: K, mut f: impl FnMut(Option<&V>) -> Option<V>) -> Option<V> {
        let mut new = None;
        self.change_now(
            KeyArg::Owned(Some(key)),
            |old| match f(old) {
                Some(v) => Change::Put(v),
                None => Change::Remove,
            },
            |v| {
                new = Some(v.clone());
                v
            },
            false,
        );
        new
    }

    /// The single-operation write protocol of the module docs. `decide`
    /// maps the committed value to a [`Change`] (it may run several times);
    /// `make` builds the value to store from the last decision (it runs at
    /// most once, under the lock). Returns the old value of an overwritten
    /// or removed key if `want_old`.
    fn change_now<Q, P>(
        &self,
        mut key: KeyArg<'_, K, Q>,
        mut decide: impl FnMut(Option<&V>) -> Change<P>,
        mut make: impl FnMut(P) -> V,
        want_old: bool,
    ) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        assert_outside_transaction();
        let h = self.hash(key.get());
        let guard = crossbeam_epoch::pin();
        let mut spins = 0;
        loop {
            let p = self.probe(h, key.get(), true);
            // SAFETY: found under the pin (`guard`); nodes are freed only
            // through the epoch after they are unlinked.
            let node = unsafe { p.node.as_ref() };
            let seen = node.map_or(0, |n| n.state.load());
            if TVersion::is_locked(seen) {
                struct_wait(&mut spins);
                continue;
            }
            // A placeholder is another transaction's insert in flight: the
            // key is absent until it commits.
            let present = node.filter(|_| seen & (INSERTING | DELETED) == 0);
            let change = match present {
                Some(n) => n.value.with(|v| decide(Some(v))),
                None => decide(None),
            };
            let done = match (present, change) {
                (Some(n), Change::Keep) => {
                    // The value `decide` saw was committed at `seen`.
                    if n.state.load() != seen {
                        continue;
                    }
                    return None;
                }
                (None, Change::Keep | Change::Remove) => {
                    // The probe saw the bucket without the key, or with an
                    // uncommitted insert of it only.
                    return None;
                }
                (None, Change::Put(_)) if node.is_some() => {
                    // Another transaction is inserting the key: wait for it
                    // to commit or abort, then decide again.
                    struct_wait(&mut spins);
                    continue;
                }
                (Some(n), Change::Put(v)) => {
                    overwrite_node_now(self, n, seen, || make(v), want_old)
                }
                (Some(n), Change::Remove) => remove_node_now(self, n, seen, want_old, &guard),
                (None, Change::Put(v)) => {
                    // SAFETY: `p.table` came from `probe` under the pin.
                    let table = unsafe { &*p.table };
                    match self.link_now(table, &p, h, key.take(), || make(v)) {
                        Ok(()) => return None,
                        Err(k) => {
                            key.give_back(k);
                            None
                        }
                    }
                }
            };
            match done {
                Some(old) => return old,
                None => struct_wait(&mut spins),
            }
        }
    }

    /// Links a new committed node for `key` holding `value()` at the head of
    /// the bucket `p` probed in `table`, if the bucket's word is still the
    /// one the probe saw; hands the key back to start over.
    fn link_now(
        &self,
        table: &Table<K, V>,
        p: &Probe<K, V>,
        h: u64,
        key: K,
        value: impl FnOnce() -> V,
    ) -> Result<(), K> {
        let b = table.bucket(p.idx);
        if !b.version.try_lock_at(p.word) {
            return Err(key);
        }
        if !self.size.try_share() {
            b.version.unlock_unchanged(p.word);
            return Err(key);
        }
        let Some(cv) = commit_version() else {
            self.size.drop_share();
            b.version.unlock_unchanged(p.word);
            clock::wait_irrevocable_open();
            return Err(key);
        };
        let wake = wait::waiters_present();
        let node = Box::into_raw(Box::new(Node {
            state: TVersion::new(),
            hash: h,
            key,
            value: ValueCell::new(value()),
            next: AtomicPtr::new(b.head.load(Ordering::Relaxed)),
        }));
        // SAFETY: not yet shared. Committed from the start: its version is
        // the commit version (a fresh word is version 0, unlocked).
        unsafe { &*node }
            .state
            .unlock_to(TVersion::next_after(TVersion::new().load(), cv));
        b.head.store(node, Ordering::Release);
        b.version.unlock_to(TVersion::next_after(p.word, cv));
        self.size.install_share(1, cv);
        wake_after_single(self, wake);
        if Self::samples_load(h, p.walked) && self.over_loaded_now(table) {
            self.grow(table);
        }
        Ok(())
    }
}
