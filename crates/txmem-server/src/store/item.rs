//! A stored value and its metadata, and the CAS identifiers items carry.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use bytes::Bytes;

/// Bytes charged to the memory limit for an item beyond its key and value:
/// the map node, the `Arc` and this struct, rounded up.
pub const ITEM_OVERHEAD: usize = 128;

/// How stale an item's last-access time may get before a read refreshes
/// it: 100 ms, far below the LRU's time scale.
pub const ACCESS_GRAIN: u64 = 100_000_000;

/// Bytes of value held by every item alive, stored or not: an item that a
/// write replaced or the store evicted stays alive until txmem's epochs let
/// it go (and while a reply still refers to it).
static LIVE_VALUE_BYTES: AtomicUsize = AtomicUsize::new(0);

/// Bytes of value held by every item alive (see [`Store::admit`](super::Store::admit)).
pub fn live_value_bytes() -> usize {
    LIVE_VALUE_BYTES.load(Ordering::Relaxed)
}

/// A stored value. Items are immutable once stored (a write replaces the
/// whole item in the map, so a reader holding one never sees it change),
/// except for the access marks, which readers set without a transaction.
#[derive(Debug)]
pub struct Item {
    /// The value.
    pub data: Bytes,
    /// The client's opaque flags.
    pub flags: u32,
    /// When the item expires, in server nanoseconds ([`Clock`](super::Clock));
    /// 0 for never.
    pub expires: u64,
    /// The item's CAS identifier: unique among the values ever stored.
    pub cas: u64,
    /// When the value was stored, in server nanoseconds (for `flush_all`).
    pub stored: u64,
    /// When the item was last read, in server nanoseconds (the LRU's
    /// recency and the meta protocol's `l` flag).
    last_access: AtomicU64,
    /// True once the item has been read (the meta protocol's `h` flag).
    fetched: AtomicBool,
    /// Marked stale by the meta protocol (`md` with `I`, `ms` with `I`):
    /// still served, but `mg` flags it (`X`) so a client recaches it.
    pub stale: bool,
    /// A client has been told to recache this item (the meta protocol's
    /// win token, `W`); later readers are told so (`Z`).
    pub win_sent: bool,
}

impl Item {
    /// A new item stored at `now` with identifier `cas`.
    pub fn new(data: Bytes, flags: u32, expires: u64, cas: u64, now: u64) -> Item {
        LIVE_VALUE_BYTES.fetch_add(data.len(), Ordering::Relaxed);
        Item {
            data,
            flags,
            expires,
            cas,
            stored: now,
            last_access: AtomicU64::new(now),
            fetched: AtomicBool::new(false),
            stale: false,
            win_sent: false,
        }
    }

    /// A copy with another value, flags or expiry, keeping the access marks
    /// and the meta protocol's stale and win marks (`cas` is the copy's
    /// identifier).
    pub fn revised(&self, data: Bytes, flags: u32, expires: u64, cas: u64, now: u64) -> Item {
        let mut item = Item::new(data, flags, expires, cas, now);
        item.last_access = AtomicU64::new(self.last_access());
        item.fetched = AtomicBool::new(self.was_fetched());
        item.stale = self.stale;
        item.win_sent = self.win_sent;
        item
    }

    /// Bytes this item, under `key_len` bytes of key, counts against the
    /// memory limit.
    pub fn cost(&self, key_len: usize) -> usize {
        key_len + self.data.len() + ITEM_OVERHEAD
    }

    /// True if the item has expired by `now`.
    pub fn expired(&self, now: u64) -> bool {
        self.expires != 0 && self.expires <= now
    }

    /// Records a read at `now`. Relaxed, racy stores: recency is a hint,
    /// and a lost update only makes the item look a little older. The time
    /// is refreshed at most every `ACCESS_GRAIN` nanoseconds, so that
    /// readers of a popular item do not keep writing its cache line.
    pub fn mark_fetched(&self, now: u64) {
        if self.last_access.load(Ordering::Relaxed) + ACCESS_GRAIN < now {
            self.last_access.store(now, Ordering::Relaxed);
        }
        if !self.fetched.load(Ordering::Relaxed) {
            self.fetched.store(true, Ordering::Relaxed);
        }
    }

    /// When the item was last read (or stored, if never read).
    pub fn last_access(&self) -> u64 {
        self.last_access.load(Ordering::Relaxed)
    }

    /// True if the item has been read since it was stored.
    pub fn was_fetched(&self) -> bool {
        self.fetched.load(Ordering::Relaxed)
    }
}

impl Drop for Item {
    fn drop(&mut self) {
        LIVE_VALUE_BYTES.fetch_sub(self.data.len(), Ordering::Relaxed);
    }
}

/// How many identifiers a thread takes from the shared counter at a time.
const CAS_BLOCK: u64 = 1 << 16;

static NEXT_CAS_BLOCK: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// This thread's next identifier and the end of its block.
    static CAS: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// A fresh CAS identifier: never 0, never issued before in this process.
/// Threads take blocks of identifiers from one counter, so issuing one
/// touches no shared cache line (identifiers are unique, not ordered).
pub fn next_cas() -> u64 {
    CAS.with(|c| {
        let (next, end) = c.get();
        let (next, end) = if next < end {
            (next, end)
        } else {
            let start = NEXT_CAS_BLOCK.fetch_add(CAS_BLOCK, Ordering::Relaxed);
            (start, start + CAS_BLOCK)
        };
        c.set((next + 1, end));
        next
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn cas_identifiers_are_unique_across_threads_and_blocks() {
        let ids: Vec<Vec<u64>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|_| s.spawn(|| (0..3 * CAS_BLOCK / 2).map(|_| next_cas()).collect()))
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut seen = HashSet::new();
        for id in ids.into_iter().flatten() {
            assert_ne!(id, 0);
            assert!(seen.insert(id), "identifier {id} issued twice");
        }
    }
}
