//! The hash table's storage: key nodes, buckets (a version word and a
//! chain), tables of buckets with their link to the table they migrate to,
//! the sizing constants, and the item keys of bucket reads.

use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

use crate::types::cell::ValueCell;
use crate::version::TVersion;

/// Bucket flag: the bucket was migrated to the next table.
pub(super) const MOVED: u64 = 0b010;

pub(super) const INITIAL_LOG2: u32 = 4;

/// The table grows once it holds more than `buckets >> LOAD_SHIFT` keys
/// (see the module docs).
pub(super) const LOAD_SHIFT: u32 = 1;

/// An insert into a chain of at least this many nodes always checks the
/// load factor (see the module docs).
pub(super) const LONG_CHAIN: u32 = 4;

pub(in crate::collections) struct Node<K, V> {
    pub(super) state: TVersion,
    pub(super) hash: u64,
    pub(super) key: K,
    pub(super) value: ValueCell<V>,
    pub(super) next: AtomicPtr<Node<K, V>>,
}

pub(super) struct Bucket<K, V> {
    pub(super) version: TVersion,
    pub(super) head: AtomicPtr<Node<K, V>>,
}

pub(super) struct Table<K, V> {
    pub(super) log2: u32,
    pub(super) mask: u64,
    pub(super) buckets: Box<[Bucket<K, V>]>,
    /// The table this one is being migrated to (null until a resize starts).
    pub(super) next: AtomicPtr<Table<K, V>>,
}

impl<K, V> Table<K, V> {
    pub(super) fn new(log2: u32) -> Box<Self> {
        let n = 1usize << log2;
        Box::new(Table {
            log2,
            mask: (n as u64) - 1,
            buckets: (0..n)
                .map(|_| Bucket {
                    version: TVersion::new(),
                    head: AtomicPtr::new(ptr::null_mut()),
                })
                .collect(),
            next: AtomicPtr::new(ptr::null_mut()),
        })
    }

    #[inline]
    pub(super) fn bucket(&self, idx: u64) -> &Bucket<K, V> {
        let i = (idx & self.mask) as usize;
        debug_assert!(i < self.buckets.len());
        // SAFETY: `buckets` has `1 << log2` entries and `mask` is
        // `(1 << log2) - 1` (both set in `new`, never changed), so
        // `idx & mask` is in bounds.
        unsafe { self.buckets.get_unchecked(i) }
    }

    #[inline]
    pub(super) fn next_table(&self) -> &Table<K, V> {
        let p = self.next.load(Ordering::Acquire);
        assert!(!p.is_null(), "txmem: moved bucket without a next table");
        // SAFETY: a bucket is flagged moved only after `next` is published,
        // and tables are retired only after the map stops pointing to them;
        // callers are pinned.
        unsafe { &*p }
    }
}

#[inline]
pub(super) fn bucket_key(idx: u64, log2: u32) -> u64 {
    (idx << 9) | ((log2 as u64) << 3) | 1
}

#[inline]
pub(super) fn decode_bucket_key(key: u64) -> (u64, u32) {
    (key >> 9, ((key >> 3) & 63) as u32)
}
