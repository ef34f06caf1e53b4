//! Structure maintenance: locking the bucket that holds a hash (through
//! migrated buckets), the load-factor estimate, growing the table by
//! migrating buckets one at a time, and checking a recorded bucket read
//! against the buckets that cover it after resizes.

use std::hash::{BuildHasher, Hash};
use std::ptr;
use std::sync::atomic::Ordering;

use crate::collections::node::SIZE_KEY;
use crate::collections::size::SizeCounter;
use crate::collections::struct_wait;
use crate::tx::Transaction;
use crate::version::{TVersion, LOCK_BIT, USER_BITS};

use super::table::{Bucket, Table, LOAD_SHIFT, LONG_CHAIN, MOVED};
use super::THashMap;

impl<K, V, S> THashMap<K, V, S>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
    S: BuildHasher + Send + Sync + 'static,
{
    /// Locks the bucket that currently holds hash `h` (following moved
    /// buckets), waiting as long as needed. Returns it and its word.
    pub(super) fn lock_bucket_for(&self, h: u64) -> (&Bucket<K, V>, u64) {
        let mut t = self.current();
        let mut spins = 0;
        loop {
            let b = t.bucket(h);
            let w = b.version.load();
            if TVersion::is_locked(w) {
                struct_wait(&mut spins);
                continue;
            }
            if w & MOVED != 0 {
                t = t.next_table();
                continue;
            }
            if b.version.try_lock_at(w) {
                return (b, w);
            }
        }
    }

    /// Whether an insert of hash `h` that walked `walked` nodes checks the
    /// load factor: about one insert in 16, by bits of the hash, and every
    /// insert into a long chain (see the module docs).
    #[inline]
    pub(super) fn samples_load(h: u64, walked: u32) -> bool {
        (h ^ (h >> 32)) & 15 == 0 || walked >= LONG_CHAIN
    }

    /// Whether the table `t` holds more keys than its load factor allows
    /// (and no resize of it has started), by the estimate of the module
    /// docs: the committed count plus this transaction's pending change.
    #[inline(never)]
    pub(super) fn over_loaded<'env>(&'env self, tx: &Transaction<'env>, t: &Table<K, V>) -> bool {
        let room = (t.buckets.len() >> LOAD_SHIFT) as i64;
        let committed = self.size.estimate();
        // The pending change is at most the number of items (each key the
        // transaction added has its own node item): look it up only when
        // that bound does not already settle the question.
        if committed + tx.len() as i64 <= room {
            return false;
        }
        let pending = tx
            .find_item(self, SIZE_KEY)
            .map_or(0, |id| SizeCounter::pending(tx.item_ref(id)));
        committed + pending > room && t.next.load(Ordering::Relaxed).is_null()
    }

    /// [`over_loaded`](Self::over_loaded) for a single-operation insert,
    /// which has no pending change beyond the one it just installed.
    #[inline(never)]
    pub(super) fn over_loaded_now(&self, t: &Table<K, V>) -> bool {
        let room = (t.buckets.len() >> LOAD_SHIFT) as i64;
        self.size.estimate() > room && t.next.load(Ordering::Relaxed).is_null()
    }

    /// Doubles the table `t` (if no other resize runs). Migrates every
    /// bucket, then publishes the new table and retires the old one.
    pub(super) fn grow(&self, t: &Table<K, V>) {
        if self
            .resizing
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return;
        }
        if !ptr::eq(self.current(), t) || !t.next.load(Ordering::Acquire).is_null() {
            self.resizing.store(false, Ordering::Release);
            return;
        }
        let new = Box::into_raw(Table::<K, V>::new(t.log2 + 1));
        t.next.store(new, Ordering::Release);
        // SAFETY: just allocated; published through `t.next` but its
        // buckets are reached only through moved old buckets, which we set
        // after filling them.
        let nt = unsafe { &*new };
        let half = 1u64 << t.log2;
        for idx in 0..half {
            let b = t.bucket(idx);
            let w = loop {
                if let Some(w) = b.version.lock_bounded() {
                    break w;
                }
                std::thread::yield_now();
            };
            let (lo, hi) = (nt.bucket(idx), nt.bucket(idx + half));
            let mut cur = b.head.load(Ordering::Relaxed);
            while !cur.is_null() {
                // SAFETY: chain nodes are live while the bucket is locked.
                let n = unsafe { &*cur };
                let next = n.next.load(Ordering::Relaxed);
                let dst = if n.hash & half == 0 { lo } else { hi };
                n.next
                    .store(dst.head.load(Ordering::Relaxed), Ordering::Release);
                dst.head.store(cur, Ordering::Release);
                cur = next;
            }
            let plain = w & !(LOCK_BIT | USER_BITS);
            lo.version.unlock_to(plain);
            hi.version.unlock_to(plain);
            b.version.unlock_to(plain | MOVED);
        }
        // The old table's pointer as the map held it (from `Box::into_raw`),
        // not `t`'s: a pointer derived from a shared reference may not free
        // the allocation. Only the resizer writes `table`, so it is `t`.
        let old = self.table.swap(new, Ordering::Release);
        let guard = crossbeam_epoch::pin();
        // SAFETY: the map no longer points to the old table; operations
        // pinned earlier may still follow it (to its `next`), so free it
        // through the epoch. Dropping a table frees its bucket array only,
        // never nodes (they were all moved).
        unsafe {
            guard.defer_unchecked(move || drop(Box::from_raw(old)));
        }
        self.resizing.store(false, Ordering::Release);
    }

    /// Checks a bucket read: every bucket that now covers the recorded
    /// index range must still hold the recorded word.
    pub(super) fn check_range(t: &Table<K, V>, idx: u64, log2: u32, recorded: u64) -> bool {
        if t.log2 <= log2 {
            let w = t.bucket(idx).version.load_seqcst();
            if w & MOVED != 0 && !TVersion::is_locked(w) {
                return Self::check_range(t.next_table(), idx, log2, recorded);
            }
            return w == recorded;
        }
        // The table grew since the read: the range covers several buckets.
        let step = 1u64 << log2;
        let mut j = idx & (step - 1);
        while j <= t.mask {
            if !Self::check_range(t, j, t.log2, recorded) {
                return false;
            }
            j += step;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use crate::atomically;

    use super::super::THashMap;

    /// A hasher whose bits that sample the load factor never match (the
    /// low four bits of `h ^ (h >> 32)` are always 1), so that only inserts
    /// into long chains check it.
    #[derive(Default)]
    struct NeverSampled(u64);

    impl std::hash::Hasher for NeverSampled {
        fn finish(&self) -> u64 {
            self.0
        }
        fn write(&mut self, _: &[u8]) {
            unreachable!("u64 keys only")
        }
        fn write_u64(&mut self, k: u64) {
            self.0 = (k << 4) | 1;
        }
    }

    /// Growth does not depend on the hash sample alone: inserts into long
    /// chains check the load factor too.
    #[test]
    fn a_map_grows_when_the_hash_sample_never_fires() {
        let m: THashMap<u64, u64, std::hash::BuildHasherDefault<NeverSampled>> =
            THashMap::with_hasher(Default::default());
        for k in 0..1000 {
            assert!(atomically(|tx| m.insert_if_absent(tx, k, k)));
        }
        // (This hasher leaves most buckets of a small table empty; chains
        // reach four nodes long before the load factor would.)
        assert!(m.bucket_count() >= 256, "{} buckets", m.bucket_count());
        assert_eq!(m.load(&999), Some(999));
    }

    /// One transaction's own inserts count towards the load factor before
    /// it commits.
    #[test]
    fn a_map_grows_inside_one_large_transaction() {
        let m: THashMap<u64, u64> = THashMap::new();
        let start = m.bucket_count();
        atomically(|tx| {
            for k in 0..2048 {
                m.insert_if_absent(tx, k, k)?;
            }
            Ok(())
        });
        assert!(m.bucket_count() >= 1024, "{} buckets", m.bucket_count());
        assert!(start < 1024);
        assert_eq!(m.load_len(), 2048);
    }
}
