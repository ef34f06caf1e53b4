//! The cache: a transactional hash map of items, per-thread LRU queues,
//! memory accounting with a hard limit, and the maintenance that evicts and
//! reclaims expired items.
//!
//! # Transactions instead of locks
//!
//! memcached guards its hash table, LRU lists, slab classes and statistics
//! with locks. Here every request runs as one txmem transaction over:
//!
//! * the map, a [`THashMap`] from key to an immutable [`Item`] (a write
//!   replaces the item, so readers never see one change);
//! * its *shard*: each thread has one, holding an LRU queue ([`TQueue`]) of
//!   the keys it inserted and [`TCounter`]s of the bytes and items it
//!   accounts for. Counter updates commute, and a thread writes only its
//!   own shard, so requests of different threads conflict only when they
//!   touch the same key.
//!
//! No request takes a lock or runs irrevocably. Recency is a hint kept
//! outside transactions ([`Item::mark_fetched`]), as memcached keeps it.
//!
//! # Memory
//!
//! Each item costs its key, its value and [`ITEM_OVERHEAD`]; each LRU entry
//! its key and [`ENTRY_OVERHEAD`]; the map's bucket array [`BUCKET_BYTES`]
//! a bucket. Before a write, [`Store::admit`] evicts
//! until the new item fits under the limit (the request's own thread does
//! it, so a flood of writes cannot outrun eviction); a write that brings
//! the total over the high-water mark wakes the maintenance thread through
//! a commit handler, which evicts down to the low-water mark in the
//! background so that requests rarely have to.
//!
//! Eviction is CLOCK over the LRU queues: the entry at a queue's head is
//! popped; an item read since the entry was queued gets a second chance (the
//! entry is queued again), an expired one is reclaimed, any other evicted.
//! Overwrites do not queue a new entry; a key deleted and inserted again
//! may have two, and an entry whose key is gone is dropped when it reaches
//! the head.

mod clock;
mod garbage;
mod item;
mod ops;
mod view;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

use bytes::Bytes;
use txmem::{TCounter, THashMap, TQueue, TxOptions, TxResult};

pub use clock::{Clock, RELATIVE_LIMIT};
pub use garbage::release_garbage;
use garbage::trim_heap;
pub use item::{live_value_bytes, next_cas, Item, ITEM_OVERHEAD};
pub use ops::{parse_counter, Arith, Counted, Deleted, Mode, Write, Written};
pub use view::StoreTx;

/// Bytes charged to the memory limit for an LRU entry beyond its key.
pub const ENTRY_OVERHEAD: usize = 48;

/// Bytes of the map's bucket array per bucket (a version word and a
/// pointer).
pub const BUCKET_BYTES: usize = 16;

/// The largest key memcached accepts.
pub const MAX_KEY_LEN: usize = 250;

/// The least time between two returns of free memory to the system.
const TRIM_PERIOD: Duration = Duration::from_millis(100);

/// Server time's units per second.
const NANOS_PER_SECOND: u64 = 1_000_000_000;

/// LRU entries per shard a write refused for want of memory looks at for
/// dead items first, when eviction is off.
const CRAWL_ON_REFUSAL: usize = 1000;

/// The store's settings.
#[derive(Clone, Debug)]
pub struct StoreConfig {
    /// The memory limit in bytes (items and LRU entries).
    pub memory_limit: usize,
    /// The largest value accepted, in bytes.
    pub max_item_size: usize,
    /// Shards (one per thread that writes; threads beyond share).
    pub shards: usize,
    /// How transactions run: contention policy, serialization.
    pub options: TxOptions,
    /// Evict to make room; if false, a write that does not fit is refused
    /// (memcached's `-M`).
    pub evict: bool,
    /// Items carry CAS identifiers; without (memcached's `-C`) every item's
    /// is 0 and a client's `cas` matches none.
    pub cas: bool,
    /// A flush hides everything stored in the second it takes effect,
    /// even after it (memcached's behaviour without CAS identifiers, `-C`,
    /// which tells writes apart by the second only).
    pub coarse_flush: bool,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            memory_limit: 64 << 20,
            max_item_size: 1 << 20,
            shards: 4,
            options: TxOptions::new().serialize_after(None),
            evict: true,
            cas: true,
            coarse_flush: false,
        }
    }
}

/// Why a write was refused before it ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// The value is larger than the item size limit.
    TooLarge,
    /// Nothing could be evicted to make room (the item is larger than the
    /// memory limit, or every entry is in use by other writers).
    OutOfMemory,
}

/// An LRU entry: a key this shard inserted, and when it was queued.
#[derive(Clone, Debug)]
struct Entry {
    key: Bytes,
    queued: u64,
}

impl Entry {
    fn cost(&self) -> usize {
        self.key.len() + ENTRY_OVERHEAD
    }
}

/// One thread's LRU queue and accounting.
struct Shard {
    lru: TQueue<Entry>,
    bytes: TCounter,
    items: TCounter,
    total_items: TCounter,
    evictions: TCounter,
    evicted_unfetched: TCounter,
    reclaimed: TCounter,
    expired_unfetched: TCounter,
}

impl Shard {
    fn new() -> Shard {
        Shard {
            lru: TQueue::new(),
            bytes: TCounter::new(0),
            items: TCounter::new(0),
            total_items: TCounter::new(0),
            evictions: TCounter::new(0),
            evicted_unfetched: TCounter::new(0),
            reclaimed: TCounter::new(0),
            expired_unfetched: TCounter::new(0),
        }
    }
}

/// Counts over the whole store, for `stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Items stored now (expired ones not yet reclaimed included).
    pub curr_items: u64,
    /// Bytes charged to the memory limit.
    pub bytes: u64,
    /// Items ever stored.
    pub total_items: u64,
    /// Items evicted to make room.
    pub evictions: u64,
    /// Evicted items that were never read.
    pub evicted_unfetched: u64,
    /// Expired items reclaimed (by eviction or the crawler).
    pub reclaimed: u64,
    /// Reclaimed expired items that were never read.
    pub expired_unfetched: u64,
    /// LRU entries queued (live and stale).
    pub lru_entries: u64,
}

/// What one CLOCK step did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// The queue was empty.
    Empty,
    /// The entry's key was gone; the entry was dropped.
    Stale,
    /// The item was read recently: it was queued again.
    SecondChance,
    /// The item was alive and kept (crawling).
    Kept,
    /// An expired item was reclaimed.
    Reclaimed,
    /// A live item was evicted.
    Evicted,
}

/// The cache (see the [module docs](self)).
pub struct Store {
    /// Keyed with foldhash: SipHash's cost showed in profiles of gets,
    /// and a per-process random seed keeps flooding by chosen keys hard.
    map: THashMap<Bytes, Arc<Item>, foldhash::fast::RandomState>,
    shards: Box<[Shard]>,
    clock: Clock,
    /// Items stored at or before this time are invalid once it has passed
    /// (`flush_all`); 0 for none.
    flush_at: AtomicU64,
    config: StoreConfig,
    maintainer: OnceLock<Thread>,
    /// Items stored with an expiry time, plus flushes: while zero, nothing
    /// can die and the crawler has nothing to do.
    mortal: AtomicU64,
    /// Writes refused for want of memory without eviction (`-M`).
    no_memory: AtomicU64,
}

static NEXT_THREAD: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static THREAD_INDEX: usize = NEXT_THREAD.fetch_add(1, Ordering::Relaxed);
}

/// A small number naming the calling thread (its shard, its counters).
pub(crate) fn thread_index() -> usize {
    THREAD_INDEX.with(|i| *i)
}

impl Store {
    /// An empty store.
    pub fn new(config: StoreConfig) -> Store {
        let shards = (0..config.shards.max(1)).map(|_| Shard::new()).collect();
        Store {
            map: THashMap::with_hasher(foldhash::fast::RandomState::default()),
            shards,
            clock: Clock::new(),
            flush_at: AtomicU64::new(0),
            config,
            maintainer: OnceLock::new(),
            mortal: AtomicU64::new(0),
            no_memory: AtomicU64::new(0),
        }
    }

    /// Writes refused for want of memory while eviction is off
    /// (`store_no_memory`).
    pub fn no_memory(&self) -> u64 {
        self.no_memory.load(Ordering::Relaxed)
    }

    /// The store's settings.
    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    /// The store's clock.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    fn shard(&self) -> &Shard {
        &self.shards[thread_index() % self.shards.len()]
    }

    /// Runs `f` as one transaction over the store (retried until it
    /// commits, with the configured contention policy). The call site is
    /// the caller's, so `stats txmem` reports each request type apart.
    #[track_caller]
    pub fn transact<'s, R>(&'s self, f: impl FnMut(&mut StoreTx<'_, 's>) -> TxResult<R>) -> R {
        self.run(self.config.options, f)
    }

    /// As [`transact`](Self::transact), for a request that only reads
    /// (a hint: a write in `f` is still correct, only slower).
    #[track_caller]
    pub fn read<'s, R>(&'s self, f: impl FnMut(&mut StoreTx<'_, 's>) -> TxResult<R>) -> R {
        self.run(self.config.options.read_only(true), f)
    }

    #[track_caller]
    fn run<'s, R>(
        &'s self,
        options: TxOptions,
        mut f: impl FnMut(&mut StoreTx<'_, 's>) -> TxResult<R>,
    ) -> R {
        options.run(|tx| {
            let now = self.clock.now();
            f(&mut StoreTx {
                store: self,
                tx,
                now,
                wake: false,
            })
        })
    }

    /// Invalidates every item stored before `delay` seconds from now, once
    /// that time comes (`flush_all [delay]`).
    pub fn flush_all(&self, delay: i64) {
        let at = if delay <= 0 {
            self.clock.now()
        } else {
            self.clock.deadline(delay)
        };
        self.flush_at.store(at, Ordering::Release);
        self.mortal.fetch_add(1, Ordering::Relaxed);
    }

    /// True if `item` is no longer visible at `now` (expired or flushed).
    fn dead(&self, item: &Item, now: u64) -> bool {
        if item.expired(now) {
            return true;
        }
        let f = self.flush_at.load(Ordering::Acquire);
        if f == 0 || f > now {
            return false;
        }
        if self.config.coarse_flush {
            item.stored / NANOS_PER_SECOND <= f / NANOS_PER_SECOND
        } else {
            item.stored <= f
        }
    }

    /// Bytes charged to the memory limit now: the items and LRU entries
    /// (committed counts), and the map's bucket array, which grows with
    /// the number of keys (never shrinking: a table sized for a flood of
    /// small items keeps its share of the limit).
    pub fn used(&self) -> usize {
        let entries = self
            .shards
            .iter()
            .map(|s| s.bytes.load())
            .sum::<i64>()
            .max(0) as usize;
        entries + self.map.bucket_count() * BUCKET_BYTES
    }

    fn high_water(&self) -> usize {
        self.config.memory_limit / 16 * 15
    }

    fn low_water(&self) -> usize {
        self.config.memory_limit / 8 * 7
    }

    /// Checks that a value of `value_len` bytes under a key of `key_len`
    /// may be stored, evicting (in this thread) until it fits under the
    /// memory limit.
    pub fn admit(&self, key_len: usize, value_len: usize) -> Result<(), Refused> {
        if value_len > self.config.max_item_size {
            return Err(Refused::TooLarge);
        }
        let cost = key_len + value_len + ITEM_OVERHEAD + key_len + ENTRY_OVERHEAD;
        if cost > self.config.memory_limit {
            return Err(Refused::OutOfMemory);
        }
        if !self.config.evict {
            // Only what is dead may go.
            if self.used() + cost > self.config.memory_limit {
                self.crawl(CRAWL_ON_REFUSAL);
            }
            if self.used() + cost > self.config.memory_limit {
                self.no_memory.fetch_add(1, Ordering::Relaxed);
                return Err(Refused::OutOfMemory);
            }
            return Ok(());
        }
        if self.evict_until(self.config.memory_limit - cost) {
            self.wait_for_garbage();
            Ok(())
        } else {
            Err(Refused::OutOfMemory)
        }
    }

    /// Evicts until at most `target` bytes are used; false if the queues
    /// ran dry first.
    fn evict_until(&self, target: usize) -> bool {
        let start = thread_index();
        let n = self.shards.len();
        let mut dry = 0;
        let mut chances = 0u32;
        let mut k = 0;
        while self.used() > target {
            let shard = &self.shards[(start + k) % n];
            // After a run of second chances, evict regardless: every item
            // may have been read recently.
            match self.clock_step(shard, chances >= 64, false) {
                Step::Empty => {
                    dry += 1;
                    k += 1;
                    if dry > n {
                        return false;
                    }
                }
                Step::SecondChance => chances += 1,
                Step::Stale => {}
                Step::Evicted | Step::Reclaimed | Step::Kept => {
                    dry = 0;
                    chances = 0;
                }
            }
        }
        true
    }

    /// Pops the entry at the head of `shard`'s queue and decides its item's
    /// fate; `crawl` keeps live items (re-queued with their queue time),
    /// `force` evicts live items even if they were read recently.
    fn clock_step(&self, shard: &Shard, force: bool, crawl: bool) -> Step {
        let now = self.clock.now();
        self.config.options.run(|tx| {
            let Some(entry) = shard.lru.try_pop(tx)? else {
                return Ok(Step::Empty);
            };
            let mine = self.shard();
            mine.bytes.add(tx, -(entry.cost() as i64))?;
            let Some(item) = self.map.get(tx, &entry.key[..])? else {
                return Ok(Step::Stale);
            };
            let dead = self.dead(&item, now);
            if !dead && (crawl || (!force && item.last_access() > entry.queued)) {
                let queued = if crawl { entry.queued } else { now };
                mine.bytes.add(tx, entry.cost() as i64)?;
                mine.lru.push(
                    tx,
                    Entry {
                        key: entry.key.clone(),
                        queued,
                    },
                )?;
                return Ok(if crawl {
                    Step::Kept
                } else {
                    Step::SecondChance
                });
            }
            self.map.remove(tx, &entry.key[..])?;
            mine.items.add(tx, -1)?;
            mine.bytes.add(tx, -(item.cost(entry.key.len()) as i64))?;
            let unfetched = !item.was_fetched();
            if dead {
                mine.reclaimed.add(tx, 1)?;
                if unfetched {
                    mine.expired_unfetched.add(tx, 1)?;
                }
                Ok(Step::Reclaimed)
            } else {
                mine.evictions.add(tx, 1)?;
                if unfetched {
                    mine.evicted_unfetched.add(tx, 1)?;
                }
                Ok(Step::Evicted)
            }
        })
    }

    /// One round of background maintenance: evicts down to the low-water
    /// mark if above the high-water mark, then crawls up to `budget` LRU
    /// entries per shard, reclaiming expired (or flushed) items, if any item
    /// with an expiry time was ever stored or anything flushed. Returns the
    /// number of items reclaimed or evicted.
    pub fn maintain(&self, budget: usize) -> usize {
        let before = self.stats();
        self.evict_if_high();
        if self.mortal.load(Ordering::Relaxed) > 0 {
            self.crawl(budget);
        }
        let after = self.stats();
        (after.reclaimed + after.evictions - before.reclaimed - before.evictions) as usize
    }

    /// Evicts down to the low-water mark if above the high-water mark.
    fn evict_if_high(&self) {
        if self.config.evict && self.used() > self.high_water() {
            self.evict_until(self.low_water());
        }
    }

    /// Looks at up to `budget` LRU entries per shard, reclaiming what is
    /// dead and queueing the rest again (keeping their queue times).
    fn crawl(&self, budget: usize) {
        for shard in self.shards.iter() {
            // Each entry is looked at once per round at most.
            let len = shard.lru.load_len().min(budget);
            for _ in 0..len {
                if self.clock_step(shard, false, true) == Step::Empty {
                    break;
                }
            }
        }
    }

    /// Registers the thread to wake when a write passes the high-water
    /// mark (the maintenance thread calls this once).
    fn set_maintainer(&self, thread: Thread) {
        let _ = self.maintainer.set(thread);
    }

    /// Runs maintenance until `stop` is set: eviction each time a write
    /// wakes the thread and at least every `period`; a crawl every
    /// `period` while crawls find dead items, backing off (doubling, up to
    /// 64 periods) while they find none: a crawl costs a transaction per
    /// entry, which a cache of long-lived items should not pay every
    /// second.
    pub fn run_maintainer(&self, stop: &AtomicBool, period: Duration, budget: usize) {
        self.set_maintainer(std::thread::current());
        let mut gap = period;
        let mut next_crawl = Instant::now();
        let mut next_trim = Instant::now();
        while !stop.load(Ordering::Acquire) {
            let evicted = self.stats().evictions;
            self.evict_if_high();
            // Freed values are handed back to the system: the allocator
            // keeps freed memory for reuse, and a flood of large values
            // leaves it in pieces too small for the next ones. (At most
            // ten times a second: a trim walks the whole heap.)
            if self.stats().evictions != evicted && Instant::now() >= next_trim {
                release_garbage();
                trim_heap();
                next_trim = Instant::now() + TRIM_PERIOD;
            }
            if Instant::now() >= next_crawl && self.mortal.load(Ordering::Relaxed) > 0 {
                let before = self.stats().reclaimed;
                self.crawl(budget);
                gap = if self.stats().reclaimed > before {
                    period
                } else {
                    (gap * 2).min(period * 64)
                };
                next_crawl = Instant::now() + gap;
            }
            std::thread::park_timeout(period);
        }
    }

    fn wake_maintainer(&self) {
        if let Some(t) = self.maintainer.get() {
            t.unpark();
        }
    }

    /// Counts summed over the shards (committed values). A shard's count
    /// may be negative (a thread removing what another inserted); the sums
    /// are not.
    pub fn stats(&self) -> StoreStats {
        let sum = |f: fn(&Shard) -> &TCounter| -> u64 {
            self.shards.iter().map(|s| f(s).load()).sum::<i64>().max(0) as u64
        };
        StoreStats {
            curr_items: sum(|s| &s.items),
            bytes: sum(|s| &s.bytes),
            total_items: sum(|s| &s.total_items),
            evictions: sum(|s| &s.evictions),
            evicted_unfetched: sum(|s| &s.evicted_unfetched),
            reclaimed: sum(|s| &s.reclaimed),
            expired_unfetched: sum(|s| &s.expired_unfetched),
            lru_entries: self.shards.iter().map(|s| s.lru.load_len() as u64).sum(),
        }
    }
}

#[cfg(test)]
mod tests;
