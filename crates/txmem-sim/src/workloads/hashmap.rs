//! RW-LE's hashmap sensitivity study (§5.1, Figs 3–7): `buckets` sorted singly-linked lists in
//! simulated memory, all behind one reader-writer lock (any [`LockKind`](crate::locks::LockKind)).
//!
//! The map holds `buckets * items_per_bucket` keys, drawn from a range twice that size.
//! `total_ops` operations are split evenly over the threads (the first `total_ops % threads`
//! threads make one more). Each is, with probability `write_pct`%, an update (a write
//! section), otherwise a lookup of a random key (a read section: hash to a bucket, walk its
//! list). As in the authors' benchmark, a thread's updates alternate: an insert of a random
//! key, then the removal of that same key, so the size stays stable. 200 items per bucket put
//! HTM under capacity pressure (a walk touches ~100 nodes, past POWER8's 64-line capacity);
//! 50 do not. [`Scenario`] names the seed's four configurations.
//!
//! Every node has a cache line of its own and nodes are laid out in the (random) order their
//! keys were drawn, so neighbours in a list are on unrelated lines, as after `malloc`s in
//! random key order. Removed nodes are never reused: an uninstrumented RW-LE reader may still
//! be walking one, and the seed's reclamation is not what the study measures.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

use super::{RunResult, WorkloadConfig, WorkloadError};
use crate::config::SimConfig;
use crate::cpu::Cpu;
use crate::engine::rng::SplitMix64;
use crate::locks::{AnyLock, LockStats, RwLockAlgo};
use crate::simulation::executor::Sim;

/// RW-LE's four hashmap configurations (Figs 3–6): capacity pressure (items per bucket) by
/// contention (buckets).
///
/// Low contention uses 1,000 buckets where the seed uses 100,000: at one 128-byte line per
/// node the seed's maps would need 0.6–2.5 GB of simulated memory. With 80 threads on 1,000
/// lists two operations still rarely meet, and each list is as long as the seed's, so
/// capacity pressure is the seed's too.
///
/// ```
/// use txmem_sim::workloads::hashmap::Scenario;
/// let s: Scenario = "lc-lc".parse().unwrap();
/// assert_eq!((s.figure(), s.buckets(), s.items_per_bucket()), (6, 1000, 50));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// High capacity pressure, high contention (Fig 3): one list of 200 items.
    HcHc,
    /// High capacity pressure, low contention (Fig 4): many lists of 200 items.
    HcLc,
    /// Low capacity pressure, high contention (Fig 5): one list of 50 items.
    LcHc,
    /// Low capacity pressure, low contention (Fig 6): many lists of 50 items.
    LcLc,
}

impl Scenario {
    /// Every scenario, in figure order.
    pub const ALL: [Scenario; 4] = [
        Scenario::HcHc,
        Scenario::HcLc,
        Scenario::LcHc,
        Scenario::LcLc,
    ];

    /// The name: capacity pressure, then contention (`hc-lc`: high capacity, low contention).
    pub fn name(self) -> &'static str {
        match self {
            Scenario::HcHc => "hc-hc",
            Scenario::HcLc => "hc-lc",
            Scenario::LcHc => "lc-hc",
            Scenario::LcLc => "lc-lc",
        }
    }

    /// The seed's figure.
    pub fn figure(self) -> u32 {
        match self {
            Scenario::HcHc => 3,
            Scenario::HcLc => 4,
            Scenario::LcHc => 5,
            Scenario::LcLc => 6,
        }
    }

    /// Bucket lists (`workload.buckets`).
    pub fn buckets(self) -> u64 {
        match self {
            Scenario::HcHc | Scenario::LcHc => 1,
            Scenario::HcLc | Scenario::LcLc => 1000,
        }
    }

    /// Initial items per bucket (`workload.items_per_bucket`).
    pub fn items_per_bucket(self) -> u64 {
        match self {
            Scenario::HcHc | Scenario::HcLc => 200,
            Scenario::LcHc | Scenario::LcLc => 50,
        }
    }
}

impl std::str::FromStr for Scenario {
    type Err = String;

    fn from_str(s: &str) -> Result<Scenario, String> {
        Scenario::ALL
            .into_iter()
            .find(|x| x.name() == s)
            .ok_or_else(|| {
                format!("unknown scenario `{s}` (expected hc-hc, hc-lc, lc-hc or lc-lc)")
            })
    }
}

/// The end of a list (no node lives at address 0: the bucket heads are allocated first).
const NIL: u64 = 0;
/// Offset of a node's `next` word (its key is at 0).
const NEXT: u64 = 8;

/// Walks the list whose first link is at `head` to the first node with a key at least `key`.
/// Returns the address of the link pointing at that node, the node (or [`NIL`]) and its key.
async fn find(cpu: &Cpu, head: u64, key: u64) -> (u64, u64, u64) {
    let mut link = head;
    let mut cur = cpu.load(link).await;
    while cur != NIL {
        let k = cpu.load(cur).await;
        if k >= key {
            return (link, cur, k);
        }
        link = cur + NEXT;
        cur = cpu.load(link).await;
    }
    (link, NIL, 0)
}

/// Inserts `key` in node `node` (a fresh one) unless present; true if it did.
async fn insert(cpu: &Cpu, head: u64, key: u64, node: u64) -> bool {
    let (link, cur, k) = find(cpu, head, key).await;
    if cur != NIL && k == key {
        return false;
    }
    cpu.store(node, key).await;
    cpu.store(node + NEXT, cur).await;
    cpu.store(link, node).await;
    true
}

/// Unlinks `key`'s node if present; true if it did.
async fn remove(cpu: &Cpu, head: u64, key: u64) -> bool {
    let (link, cur, k) = find(cpu, head, key).await;
    if cur == NIL || k != key {
        return false;
    }
    let next = cpu.load(cur + NEXT).await;
    cpu.store(link, next).await;
    true
}

/// Runs the hashmap on CPUs `0..threads` under `w.lock`; checks every list afterwards (sorted,
/// no duplicates, every key in its bucket, each bucket's size changed by exactly its successful
/// inserts minus removes).
pub fn run_rwle_hashmap(cfg: &SimConfig, w: &WorkloadConfig) -> Result<RunResult, WorkloadError> {
    let threads = super::lock_threads(cfg, w)?;
    let (l, per) = (w.buckets, w.items_per_bucket);
    if l == 0 || per == 0 || w.write_pct > 100 {
        return Err(WorkloadError::Check(
            "buckets and items_per_bucket must be at least 1, write_pct at most 100".into(),
        ));
    }
    let population = l * per;
    let range = 2 * population;
    let ops_of = |t: usize| super::share(w.total_ops, threads, t);
    let lb = cfg.line_bytes;
    // A thread inserts on at most every other update.
    let pool = ops_of(0) / 2 + 1;
    let head_lines = (l * 8).div_ceil(lb);
    let lines = head_lines + population + threads as u64 * pool + 64;
    let start = Instant::now();
    let mut sim = super::sim_with_lines(cfg, lines)?;
    let heads = sim.alloc_lines(head_lines);
    let nodes = sim.alloc_lines(population);
    let pools = sim.alloc_lines(threads as u64 * pool);
    let lock = AnyLock::new(w.lock, &mut sim, threads, w.rwle_split_lock);

    // Populate: `population` distinct keys of `0..range` (a partial Fisher-Yates shuffle);
    // the j-th key drawn lives in node j.
    let mut rng = SplitMix64::new(cfg.seed ^ 0x5eed_4a54_4d41_5000);
    let mut keys: Vec<u64> = (0..range).collect();
    for j in 0..population as usize {
        let r = j + rng.below(range - j as u64) as usize;
        keys.swap(j, r);
    }
    let mut by_bucket: Vec<Vec<(u64, u64)>> = vec![Vec::new(); l as usize];
    for (j, &k) in keys[..population as usize].iter().enumerate() {
        by_bucket[(k % l) as usize].push((k, nodes + j as u64 * lb));
    }
    drop(keys);
    for (b, list) in by_bucket.iter_mut().enumerate() {
        list.sort_unstable();
        let mut next = NIL;
        for &(k, node) in list.iter().rev() {
            sim.write(node, k);
            sim.write(node + NEXT, next);
            next = node;
        }
        sim.write(heads + b as u64 * 8, next);
    }
    let initial: Vec<i64> = by_bucket.iter().map(|v| v.len() as i64).collect();
    drop(by_bucket);

    let delta = Rc::new(RefCell::new(vec![0i64; l as usize]));
    let total = Rc::new(RefCell::new(LockStats::default()));
    let write_pct = w.write_pct;
    for t in 0..threads {
        let (mut lock, delta, total) = (lock.clone(), delta.clone(), total.clone());
        let mut free = pools + t as u64 * pool * lb;
        let n = ops_of(t);
        sim.spawn(t, move |cpu| async move {
            // The key this thread inserted last, which its next update removes.
            let mut inserted: Option<u64> = None;
            for _ in 0..n {
                let draw = cpu.random_below(range);
                if cpu.random_below(100) < write_pct {
                    let (key, removal) = match inserted.take() {
                        Some(k) => (k, true),
                        None => (draw, false),
                    };
                    let head = heads + (key % l) * 8;
                    // The section's value is what counts: the lock returns it once, from the
                    // run that took effect, however many speculative attempts preceded it.
                    let changed = if !removal {
                        let node = free;
                        let ok = lock
                            .write(&cpu, move |cpu| async move {
                                insert(&cpu, head, key, node).await
                            })
                            .await;
                        if ok {
                            free += lb;
                        }
                        inserted = Some(key);
                        i64::from(ok)
                    } else {
                        let ok = lock
                            .write(
                                &cpu,
                                move |cpu| async move { remove(&cpu, head, key).await },
                            )
                            .await;
                        -i64::from(ok)
                    };
                    delta.borrow_mut()[(key % l) as usize] += changed;
                } else {
                    let head = heads + (draw % l) * 8;
                    lock.read(&cpu, move |cpu| async move { find(&cpu, head, draw).await })
                        .await;
                }
            }
            *total.borrow_mut() += lock.stats();
        });
    }
    let run = super::run_checked(&mut sim, start, |sim| {
        check(sim, heads, l, &initial, &delta.borrow())
    })?;
    let locks = total.borrow().clone();
    Ok(RunResult { locks, ..run })
}

/// Walks every bucket on the host and checks it against the counted inserts and removes.
fn check(sim: &Sim, heads: u64, l: u64, initial: &[i64], delta: &[i64]) -> Result<(), String> {
    for b in 0..l {
        let mut cur = sim.read(heads + b * 8);
        let mut prev: Option<u64> = None;
        let mut size = 0i64;
        while cur != NIL {
            let k = sim.read(cur);
            if k % l != b {
                return Err(format!("key {k} in bucket {b}"));
            }
            if prev.is_some_and(|p| p >= k) {
                return Err(format!("bucket {b} unsorted or duplicated at key {k}"));
            }
            prev = Some(k);
            size += 1;
            if size > initial[b as usize] + delta[b as usize].abs() + 1 {
                return Err(format!("bucket {b} too long (a cycle?)"));
            }
            cur = sim.read(cur + NEXT);
        }
        let want = initial[b as usize] + delta[b as usize];
        if size != want {
            return Err(format!("bucket {b} holds {size} keys, expected {want}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locks::LockKind;
    use crate::workloads::{run, WorkloadKind};

    fn config(lock: LockKind, write_pct: u64) -> (SimConfig, WorkloadConfig) {
        let sim = SimConfig {
            cores: 4,
            ..SimConfig::default()
        };
        let w = WorkloadConfig {
            kind: WorkloadKind::RwleHashmap,
            lock,
            buckets: 8,
            items_per_bucket: 20,
            write_pct,
            total_ops: 600,
            ..WorkloadConfig::default()
        };
        (sim, w)
    }

    #[test]
    fn every_lock_keeps_the_map_consistent_and_is_deterministic() {
        for lock in LockKind::ALL {
            for pct in [10, 90] {
                let (sim, w) = config(lock, pct);
                let a = run(&sim, &w).unwrap_or_else(|e| panic!("{}: {e}", lock.name()));
                assert!(!a.stats.timed_out);
                assert_eq!(a.locks.sections(), 600, "{}", lock.name());
                let b = run(&sim, &w).unwrap();
                assert_eq!(a.stats, b.stats, "{} at {pct}%", lock.name());
                assert_eq!(a.locks, b.locks, "{} at {pct}%", lock.name());
            }
        }
    }

    #[test]
    fn long_lists_overflow_htm_capacity() {
        // 200 items per bucket: TLE's walks outgrow the 64-line capacity and fall back.
        let (mut sim, mut w) = config(LockKind::Tle, 10);
        sim.cores = 2;
        w.items_per_bucket = 200;
        w.total_ops = 80;
        let r = run(&sim, &w).unwrap();
        assert!(r.locks.aborts.capacity > 0, "{:?}", r.locks);
        assert!(r.locks.locked_sections > 0, "{:?}", r.locks);
    }

    #[test]
    fn threads_selects_the_cpus_used() {
        let (sim, mut w) = config(LockKind::RwLeOpt, 10);
        w.threads = 2;
        let r = run(&sim, &w).unwrap();
        // The operations are split over the threads, whatever their number.
        assert_eq!(r.locks.sections(), 600);
        w.threads = 7;
        w.total_ops = 600;
        let mut big = sim.clone();
        big.cores = 8;
        let r = run(&big, &w).unwrap();
        assert_eq!(r.locks.sections(), 600);
        assert_eq!(r.stats.per_core.iter().filter(|c| c.mem_ops > 0).count(), 7);
        w.threads = 5;
        assert!(run(&sim, &w).is_err());
    }
}
