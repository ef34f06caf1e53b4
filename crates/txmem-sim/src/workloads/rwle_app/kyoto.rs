//! The Kyoto-Cabinet-"wicked"-like database (RW-LE Fig 9); see the parent module for what it
//! models.

use std::cell::RefCell;
use std::rc::Rc;

use super::{field, read, spawn_threads, write, Checker, Tally};
use crate::config::SimConfig;
use crate::cpu::Cpu;
use crate::elision::{spin_lock, spin_unlock};
use crate::locks::{AnyLock, LockStats};
use crate::simulation::executor::Sim;
use crate::workloads::{WorkloadConfig, WorkloadError};
use txmem_htm::LOCK_BUSY_CODE;

/// Slots, buckets per slot, initial records per bucket.
const KSLOTS: u64 = 16;
const KBUCKETS: u64 = 64;
const KRECORDS: u64 = 8;
/// A tree node's fields: key, value, left, right.
const KEY: u64 = 0;
const VAL: u64 = 1;
const LEFT: u64 = 2;
const RIGHT: u64 = 3;

#[derive(Clone, Copy)]
pub(super) struct Kyoto {
    lb: u64,
    /// Per slot: its mutex line, then its header (record count) line.
    slots: u64,
    /// Per slot and bucket, on a line of its own: the tree's root.
    roots: u64,
    range: u64,
}

impl Kyoto {
    fn mutex(&self, s: u64) -> u64 {
        self.slots + 2 * s * self.lb
    }
    fn header(&self, s: u64) -> u64 {
        self.mutex(s) + self.lb
    }
    fn root(&self, key: u64) -> u64 {
        let s = key % KSLOTS;
        let b = (key / KSLOTS) % KBUCKETS;
        self.roots + (s * KBUCKETS + b) * self.lb
    }

    pub(super) fn build(
        cfg: &SimConfig,
        w: &WorkloadConfig,
        threads: usize,
        total: &Rc<RefCell<LockStats>>,
        tally: &Rc<RefCell<Tally>>,
    ) -> Result<(Sim, Checker), WorkloadError> {
        let population = KSLOTS * KBUCKETS * KRECORDS;
        let pool = crate::workloads::share(w.total_ops, threads, 0) + 1;
        let lines = 2 * KSLOTS + KSLOTS * KBUCKETS + population + threads as u64 * pool + 64;
        let mut sim = crate::workloads::sim_with_lines(cfg, lines)?;
        let lb = cfg.line_bytes;
        let k = Kyoto {
            lb,
            slots: sim.alloc_lines(2 * KSLOTS),
            roots: sim.alloc_lines(KSLOTS * KBUCKETS),
            range: 2 * population,
        };
        let nodes = sim.alloc_lines(population);
        let pools = sim.alloc_lines(threads as u64 * pool);
        // Initial records: distinct random keys, inserted on the host.
        let mut rng = crate::engine::rng::SplitMix64::new(cfg.seed ^ 0x6b79);
        let mut keys: Vec<u64> = (0..k.range).collect();
        for j in 0..population as usize {
            let r = j + rng.below(k.range - j as u64) as usize;
            keys.swap(j, r);
            let node = nodes + j as u64 * lb;
            sim.write(field(node, KEY), keys[j]);
            sim.write(field(node, VAL), 0);
            let mut link = k.root(keys[j]);
            loop {
                let cur = sim.read(link);
                if cur == 0 {
                    sim.write(link, node);
                    break;
                }
                let side = if keys[j] < sim.read(field(cur, KEY)) {
                    LEFT
                } else {
                    RIGHT
                };
                link = field(cur, side);
            }
        }
        let lock = AnyLock::new(w.lock, &mut sim, threads, w.rwle_split_lock);
        let tl = tally.clone();
        // Per thread, the nodes of its pool that inserts have linked.
        let used = Rc::new(RefCell::new(vec![0u64; threads]));
        spawn_threads(
            &mut sim,
            w,
            threads,
            &lock,
            total,
            move |cpu, lock, whole| {
                let (tl, used) = (tl.clone(), used.clone());
                async move {
                    if whole {
                        let s = cpu.random_below(KSLOTS);
                        write(
                            &cpu,
                            &lock,
                            |cpu| async move { k.count_slot(&cpu, s).await },
                        )
                        .await;
                        return;
                    }
                    let key = cpu.random_below(k.range);
                    if cpu.random_below(2) == 0 {
                        read(&cpu, &lock, |cpu| async move { k.get(&cpu, key).await }).await;
                    } else {
                        // A fresh node for an insert, taken from this thread's pool only if used.
                        let me = cpu.core();
                        let node = pools + (me as u64 * pool + used.borrow()[me]) * lb;
                        let inserted =
                            read(
                                &cpu,
                                &lock,
                                |cpu| async move { k.set(&cpu, key, node).await },
                            )
                            .await;
                        used.borrow_mut()[me] += u64::from(inserted);
                        tl.borrow_mut().bumps += 1;
                    }
                }
            },
        );
        Ok((sim, Box::new(move |sim, tally| k.check(sim, tally))))
    }

    /// Takes the slot mutex of `key` for a read-mode operation: acquired for real outside a
    /// transaction, only read (elided, aborting if held) inside one.
    async fn enter(&self, cpu: &Cpu, key: u64) {
        let m = self.mutex(key % KSLOTS);
        if cpu.xtest() {
            if cpu.load(m).await != 0 {
                cpu.xabort(LOCK_BUSY_CODE).await;
            }
        } else {
            spin_lock(cpu, m).await;
        }
    }

    async fn leave(&self, cpu: &Cpu, key: u64) {
        if !cpu.xtest() {
            spin_unlock(cpu, self.mutex(key % KSLOTS)).await;
        }
    }

    /// Walks `key`'s tree: the link that points (or would point) at its node, and the node.
    async fn find(&self, cpu: &Cpu, key: u64) -> (u64, u64) {
        let mut link = self.root(key);
        loop {
            let cur = cpu.load(link).await;
            if cur == 0 {
                return (link, 0);
            }
            let k = cpu.load(field(cur, KEY)).await;
            if k == key {
                return (link, cur);
            }
            link = field(cur, if key < k { LEFT } else { RIGHT });
        }
    }

    async fn get(&self, cpu: &Cpu, key: u64) -> u64 {
        self.enter(cpu, key).await;
        let (_, node) = self.find(cpu, key).await;
        let v = if node == 0 {
            0
        } else {
            cpu.load(field(node, VAL)).await
        };
        self.leave(cpu, key).await;
        v
    }

    /// Adds one to `key`'s value, inserting it (in `fresh`) if absent; true if it inserted.
    async fn set(&self, cpu: &Cpu, key: u64, fresh: u64) -> bool {
        self.enter(cpu, key).await;
        let (link, node) = self.find(cpu, key).await;
        let inserted = if node == 0 {
            cpu.store(field(fresh, KEY), key).await;
            cpu.store(field(fresh, VAL), 1).await;
            cpu.store(field(fresh, LEFT), 0).await;
            cpu.store(field(fresh, RIGHT), 0).await;
            cpu.store(link, fresh).await;
            true
        } else {
            let v = cpu.load(field(node, VAL)).await;
            cpu.store(field(node, VAL), v + 1).await;
            false
        };
        self.leave(cpu, key).await;
        inserted
    }

    /// A whole-slot operation: walks every tree of slot `s` and stores its record count.
    async fn count_slot(&self, cpu: &Cpu, s: u64) -> u64 {
        let mut count = 0;
        let mut stack = Vec::new();
        for b in 0..KBUCKETS {
            stack.push(cpu.load(self.roots + (s * KBUCKETS + b) * self.lb).await);
            while let Some(n) = stack.pop() {
                if n == 0 {
                    continue;
                }
                count += 1;
                stack.push(cpu.load(field(n, LEFT)).await);
                stack.push(cpu.load(field(n, RIGHT)).await);
            }
        }
        cpu.store(self.header(s), count).await;
        count
    }

    fn check(&self, sim: &Sim, t: &Tally) -> Result<(), String> {
        let mut values = 0;
        for s in 0..KSLOTS {
            for b in 0..KBUCKETS {
                // In-order walk: keys ascending and in this bucket.
                let mut stack = Vec::new();
                let mut cur = sim.read(self.roots + (s * KBUCKETS + b) * self.lb);
                let mut prev: Option<u64> = None;
                let mut seen = 0u64;
                while cur != 0 || !stack.is_empty() {
                    while cur != 0 {
                        stack.push(cur);
                        cur = sim.read(field(cur, LEFT));
                    }
                    let n = stack.pop().expect("stack holds a node");
                    let key = sim.read(field(n, KEY));
                    if key % KSLOTS != s || (key / KSLOTS) % KBUCKETS != b {
                        return Err(format!("key {key} in slot {s} bucket {b}"));
                    }
                    if prev.is_some_and(|p| p >= key) {
                        return Err(format!("slot {s} bucket {b}: keys out of order at {key}"));
                    }
                    prev = Some(key);
                    values += sim.read(field(n, VAL));
                    seen += 1;
                    if seen > self.range {
                        return Err(format!("slot {s} bucket {b}: a cycle"));
                    }
                    cur = sim.read(field(n, RIGHT));
                }
            }
        }
        if values != t.bumps {
            return Err(format!("values sum to {values}, expected {} sets", t.bumps));
        }
        Ok(())
    }
}
