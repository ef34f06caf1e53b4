//! The table: records by record number in a transactional map, the hash
//! map or the B+ tree (see [`Index`]), loaded in parallel.

use std::sync::atomic::{AtomicU64, Ordering};

use txmem::{atomically, TBTreeMap, THashMap, Transaction, TxResult};

use super::config::Index;
use super::record::{Record, Stamp};
use crate::hash::{mix64, KeyHasher};

/// Records loaded per transaction.
const LOAD_BATCH: u64 = 256;

/// The records, under their record numbers.
// One table per workload: the size of the larger variant costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum Table {
    /// Keyed by the record number.
    Hash(THashMap<u64, Record, KeyHasher>),
    /// Keyed by the record number scrambled with [`mix64`] (a bijection),
    /// so that records next to each other in the tree are unrelated, as in
    /// YCSB's hashed key order: scans visit records of every age, and
    /// inserts spread over the whole tree instead of all landing in its
    /// rightmost leaf.
    Ordered(TBTreeMap<u64, Record>),
}

impl Table {
    /// An empty table of kind `index` with room for `capacity` records.
    pub fn new(index: Index, capacity: u64) -> Table {
        match index {
            Index::Hash => Table::Hash(THashMap::with_capacity_and_hasher(
                capacity as usize,
                KeyHasher,
            )),
            Index::Ordered => Table::Ordered(TBTreeMap::new()),
        }
    }

    /// Calls `f` with record `key` if it exists (no copy of the record).
    #[inline]
    pub fn read<'env, R>(
        &'env self,
        tx: &mut Transaction<'env>,
        key: u64,
        f: impl FnOnce(&Record) -> R,
    ) -> TxResult<Option<R>> {
        match self {
            Table::Hash(m) => m.get_with(tx, &key, f),
            Table::Ordered(m) => m.get_with(tx, &mix64(key), f),
        }
    }

    /// Writes `record` as record `key` without reading it.
    #[inline]
    pub fn write<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        key: u64,
        record: Record,
    ) -> TxResult<()> {
        match self {
            Table::Hash(m) => m.set(tx, key, record),
            Table::Ordered(m) => m.set(tx, mix64(key), record),
        }
    }

    /// Inserts `record` as record `key` if there is none; returns whether
    /// it did.
    #[inline]
    pub fn insert_if_absent<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        key: u64,
        record: Record,
    ) -> TxResult<bool> {
        match self {
            Table::Hash(m) => m.insert_if_absent(tx, key, record),
            Table::Ordered(m) => m.insert_if_absent(tx, mix64(key), record),
        }
    }

    /// Visits up to `len` records in the tree's order, starting at record
    /// `start`'s place in it, calling `f` with each record and whether it
    /// is filed under its own key. Returns the number visited. Only the
    /// ordered table scans.
    pub fn scan<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        start: u64,
        len: usize,
        mut f: impl FnMut(&Record, bool),
    ) -> TxResult<usize> {
        let Table::Ordered(m) = self else {
            panic!("only the ordered index scans (Config::validate refuses E on a hash index)")
        };
        let mut seen = 0;
        m.scan(tx, mix64(start).., |&at, record| {
            f(record, mix64(record.key()) == at);
            seen += 1;
            seen < len
        })?;
        Ok(seen)
    }

    /// The committed record `key`, outside any transaction.
    pub fn load(&self, key: u64) -> Option<Record> {
        match self {
            Table::Hash(m) => m.load(&key),
            Table::Ordered(m) => m.load(&mix64(key)),
        }
    }

    /// The committed number of records, outside any transaction.
    pub fn committed_len(&self) -> usize {
        match self {
            Table::Hash(m) => m.load_len(),
            Table::Ordered(m) => m.load_len(),
        }
    }

    /// Loads records `0..count` of `value_size` bytes on `threads`
    /// threads, in transactions of [`LOAD_BATCH`] inserts.
    pub fn load_records(&self, count: u64, value_size: usize, threads: usize) {
        let next = AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..threads.max(1) {
                s.spawn(|| loop {
                    let first = next.fetch_add(LOAD_BATCH, Ordering::Relaxed);
                    if first >= count {
                        break;
                    }
                    let keys = first..(first + LOAD_BATCH).min(count);
                    atomically(|tx| {
                        for key in keys.clone() {
                            let record = Record::new(key, Stamp::Version(0), value_size);
                            let fresh = self.insert_if_absent(tx, key, record)?;
                            assert!(fresh, "record {key} loaded twice");
                        }
                        Ok(())
                    });
                });
            }
        });
    }
}
