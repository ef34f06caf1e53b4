//! Loads millions of keys into a `TBTreeMap` (and, for comparison, a
//! `THashMap`) and reports load time, lookup and scan speed, and memory per
//! key (resident, and live heap bytes from a counting allocator, which
//! leaves out what the allocator keeps from earlier phases): whether the
//! ordered map can serve as an index for TPC-C and YCSB. The same lookups
//! run against `crossbeam-skiplist` and a `BTreeMap` behind an `RwLock` for
//! scale.
//!
//! usage: `[BTREE_FANOUT=n] btree_scale [KEYS] [BATCH]` (defaults:
//! 2,000,000 keys inserted in transactions of 1,000 random inserts each)
//!
//! ```text
//! cargo run --release -p txmem --example btree_scale -- 4000000
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::RwLock;

use txmem::{atomically, TBTreeMap, THashMap, Transaction, TxResult};

/// The global allocator, counting the bytes currently allocated: resident
/// growth can reuse memory freed by earlier phases (the probe list, the
/// epoch collector's garbage), so live heap bytes are the fair per-key
/// measure (allocator headers and fragmentation not included).
struct Counting;

static HEAP: AtomicIsize = AtomicIsize::new(0);

// SAFETY: delegates every call to the system allocator unchanged; only
// counts sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        HEAP.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract is passed through.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HEAP.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract is passed through.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        HEAP.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: the caller's contract is passed through.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Live heap bytes, after letting the epoch collector free what it can.
fn heap_bytes() -> f64 {
    for _ in 0..64 {
        crossbeam_epoch::pin().flush();
    }
    HEAP.load(Ordering::Relaxed) as f64
}

/// A permutation of `0..n` (multiplication by an odd constant modulo a power
/// of two, then skipping values ≥ n), so keys arrive in random order.
fn shuffled(n: u64) -> impl Iterator<Item = u64> {
    let m = n.next_power_of_two().max(2);
    (0..m)
        .map(move |i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) & (m - 1))
        .filter(move |&k| k < n)
}

/// The process's resident set size in MiB (Linux; 0 elsewhere).
fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Inserts `keys` in transactions of `batch` inserts each; returns the time taken.
fn load<'env>(
    keys: &[u64],
    batch: usize,
    insert: impl Fn(&mut Transaction<'env>, u64) -> TxResult<bool>,
) -> Duration {
    let t = Instant::now();
    for chunk in keys.chunks(batch) {
        atomically(|tx| {
            for &k in chunk {
                insert(tx, k)?;
            }
            Ok(())
        });
    }
    t.elapsed()
}

/// Mean time of `contains` over `probes`, and how many were present.
fn lookup_ns(probes: &[u64], contains: impl Fn(u64) -> bool) -> (f64, usize) {
    let t = Instant::now();
    let found = probes.iter().filter(|&&k| contains(k)).count();
    (t.elapsed().as_nanos() as f64 / probes.len() as f64, found)
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("usage: btree_scale [KEYS] [BATCH]"))
        .collect();
    let n = args.first().copied().unwrap_or(2_000_000);
    let batch = args.get(1).copied().unwrap_or(1_000).max(1) as usize;
    let keys: Vec<u64> = shuffled(n).collect();
    // Probes: half present, half absent, in random order.
    let probes: Vec<u64> = keys
        .iter()
        .take(1_000_000)
        .map(|k| k * 2 % (2 * n))
        .collect();

    // `BTREE_FANOUT=n` tries another node size (default: the map's).
    let fanout = std::env::var("BTREE_FANOUT")
        .ok()
        .and_then(|f| f.parse().ok())
        .unwrap_or(txmem::collections::btree::DEFAULT_FANOUT);
    let base = rss_mib();
    let heap_base = heap_bytes();
    let map = TBTreeMap::with_fanout(fanout);
    let load_time = load(&keys, batch, |tx, k| map.insert_if_absent(tx, k, k));
    let rss = rss_mib() - base;
    let heap = heap_bytes() - heap_base;
    assert_eq!(map.load_len(), n as usize, "every key was inserted once");

    let (get_ns, found) = lookup_ns(&probes, |k| atomically(|tx| map.contains_key(tx, &k)));

    let t = Instant::now();
    let scanned = atomically(|tx| {
        let mut count = 0u64;
        map.scan(tx, n / 2.., |_, _| {
            count += 1;
            count < 100_000
        })?;
        Ok(count)
    });
    let scan_ns = t.elapsed().as_nanos() as f64 / scanned as f64;
    println!(
        "TBTreeMap (fanout {fanout}): {n} keys loaded in {:.2} s ({:.0} ns/insert, batches of \
         {batch}); +{rss:.0} MiB resident ({:.0} B/key; live heap {:.0} B/key); contains_key \
         {get_ns:.0} ns ({found} of {} present); scan {scanned} keys in one transaction, \
         {scan_ns:.0} ns/key",
        load_time.as_secs_f64(),
        load_time.as_nanos() as f64 / n as f64,
        rss * 1048576.0 / n as f64,
        heap / n as f64,
        probes.len(),
    );
    drop(map);

    // The same probes against peers, for scale (not transactional).
    let peer = crossbeam_skiplist::SkipMap::new();
    keys.iter().for_each(|&k| drop(peer.insert(k, k)));
    let (peer_ns, _) = lookup_ns(&probes, |k| peer.contains_key(&k));
    drop(peer);
    let btree = RwLock::new(keys.iter().map(|&k| (k, k)).collect::<BTreeMap<u64, u64>>());
    let (btree_ns, _) = lookup_ns(&probes, |k| btree.read().contains_key(&k));
    drop(btree);
    println!(
        "same probes: crossbeam-skiplist contains_key {peer_ns:.0} ns, \
         RwLock<BTreeMap> {btree_ns:.0} ns"
    );

    let base = rss_mib();
    let map = THashMap::new();
    let load_time = load(&keys, batch, |tx, k| map.insert_if_absent(tx, k, k));
    let rss = rss_mib() - base;
    println!(
        "THashMap: {n} keys loaded in {:.2} s ({:.0} ns/insert); +{rss:.0} MiB resident",
        load_time.as_secs_f64(),
        load_time.as_nanos() as f64 / n as f64,
    );
}
