//! The STMBench7-like object graph (RW-LE Fig 8); see the parent module for what it models.

use std::cell::RefCell;
use std::rc::Rc;

use super::{field, read, spawn_threads, write, Checker, Tally};
use crate::config::SimConfig;
use crate::cpu::Cpu;
use crate::locks::{AnyLock, LockStats};
use crate::simulation::executor::Sim;
use crate::workloads::{WorkloadConfig, WorkloadError};

/// Complex assemblies (1 + 3 + 9), base assemblies, composite parts, atomic parts per
/// composite part, connections per atomic part.
const COMPLEX: u64 = 13;
const BASE: u64 = 27;
const COMPOSITES: u64 = 100;
const ATOMS: u64 = 20;
const LINKS: u64 = 3;
/// Every atomic part keeps `x + y` equal to this (a swap preserves it; a torn swap does not).
const XY: u64 = 1_000_000;

#[derive(Clone, Copy)]
pub(super) struct Stmbench7 {
    lb: u64,
    complex: u64,
    base: u64,
    composites: u64,
    atoms: u64,
}

impl Stmbench7 {
    /// Composite part `c`: its header line (document follows it).
    fn composite(&self, c: u64) -> u64 {
        self.composites + 2 * c * self.lb
    }
    fn atom(&self, c: u64, a: u64) -> u64 {
        self.atoms + (c * ATOMS + a) * self.lb
    }

    pub(super) fn build(
        cfg: &SimConfig,
        w: &WorkloadConfig,
        threads: usize,
        total: &Rc<RefCell<LockStats>>,
        tally: &Rc<RefCell<Tally>>,
    ) -> Result<(Sim, Checker), WorkloadError> {
        let lines = COMPLEX + BASE + 2 * COMPOSITES + COMPOSITES * ATOMS + 64;
        let mut sim = crate::workloads::sim_with_lines(cfg, lines)?;
        let lb = cfg.line_bytes;
        let g = Stmbench7 {
            lb,
            complex: sim.alloc_lines(COMPLEX),
            base: sim.alloc_lines(BASE),
            composites: sim.alloc_lines(2 * COMPOSITES),
            atoms: sim.alloc_lines(COMPOSITES * ATOMS),
        };
        // The structure is fixed (no structural modifications): drawn once from the seed.
        let mut rng = crate::engine::rng::SplitMix64::new(cfg.seed ^ 0x57b7);
        for i in 0..COMPLEX {
            // Complex assembly i's children: 3i+1..3i+3 (complex, then base assemblies).
            for k in 0..3 {
                sim.write(field(g.complex + i * lb, k), 3 * i + 1 + k);
            }
        }
        for b in 0..BASE {
            for k in 0..3 {
                sim.write(field(g.base + b * lb, k), rng.below(COMPOSITES));
            }
        }
        for c in 0..COMPOSITES {
            sim.write(g.composite(c), c); // id
            sim.write(g.composite(c) + lb, c * 7); // document text hash
            for a in 0..ATOMS {
                let at = g.atom(c, a);
                let x = rng.below(XY);
                sim.write(at, x);
                sim.write(field(at, 1), XY - x);
                sim.write(field(at, 2), 0); // build date
                for k in 0..LINKS {
                    sim.write(field(at, 3 + k), (a + 1 + rng.below(ATOMS - 1)) % ATOMS);
                }
            }
        }
        let lock = AnyLock::new(w.lock, &mut sim, threads, w.rwle_split_lock);
        let tl = tally.clone();
        spawn_threads(&mut sim, w, threads, &lock, total, move |cpu, lock, upd| {
            let tl = tl.clone();
            async move {
                let pick = cpu.random_below(2);
                match (upd, pick) {
                    (false, 0) => {
                        let b = cpu.random_below(BASE);
                        read(&cpu, &lock, |cpu| async move { g.traverse(&cpu, b).await }).await;
                    }
                    (false, _) => {
                        let (c, a) = (cpu.random_below(COMPOSITES), cpu.random_below(ATOMS));
                        read(&cpu, &lock, |cpu| async move { g.query(&cpu, c, a).await }).await;
                    }
                    (true, 0) => {
                        let c = cpu.random_below(COMPOSITES);
                        write(&cpu, &lock, |cpu| async move { g.swap_all(&cpu, c).await }).await;
                    }
                    (true, _) => {
                        let (c, a) = (cpu.random_below(COMPOSITES), cpu.random_below(ATOMS));
                        write(&cpu, &lock, |cpu| async move {
                            let at = g.atom(c, a);
                            let d = cpu.load(field(at, 2)).await;
                            cpu.store(field(at, 2), d + 1).await;
                        })
                        .await;
                        tl.borrow_mut().bumps += 1;
                    }
                }
            }
        });
        Ok((sim, Box::new(move |sim, tally| g.check(sim, tally))))
    }

    /// A short traversal: from the root down to base assembly `b` (complex assemblies
    /// 0, 1 + b/9, 4 + b/3), then its composite parts' documents and atomic graphs.
    async fn traverse(&self, cpu: &Cpu, b: u64) -> u64 {
        let lb = self.lb;
        let mut sum = 0;
        for i in [0, 1 + b / 9, 4 + b / 3] {
            sum += cpu.load(self.complex + i * lb).await;
        }
        for k in 0..3 {
            let c = cpu.load(field(self.base + b * lb, k)).await;
            sum += cpu.load(self.composite(c)).await;
            sum += cpu.load(self.composite(c) + lb).await;
            for a in 0..ATOMS {
                let at = self.atom(c, a);
                sum = sum.wrapping_add(cpu.load(at).await);
                sum = sum.wrapping_add(cpu.load(field(at, 1)).await);
            }
        }
        sum
    }

    /// A query: atomic part `a` of composite `c` and the parts it connects to.
    async fn query(&self, cpu: &Cpu, c: u64, a: u64) -> u64 {
        let at = self.atom(c, a);
        let mut sum = cpu.load(field(at, 2)).await;
        for k in 0..LINKS {
            let to = cpu.load(field(at, 3 + k)).await % ATOMS;
            sum += cpu.load(field(self.atom(c, to), 2)).await;
        }
        sum
    }

    /// Swaps the coordinates of every atomic part of composite `c`.
    async fn swap_all(&self, cpu: &Cpu, c: u64) {
        for a in 0..ATOMS {
            let at = self.atom(c, a);
            let (x, y) = (cpu.load(at).await, cpu.load(field(at, 1)).await);
            cpu.store(at, y).await;
            cpu.store(field(at, 1), x).await;
        }
    }

    fn check(&self, sim: &Sim, t: &Tally) -> Result<(), String> {
        let mut dates = 0;
        for c in 0..COMPOSITES {
            for a in 0..ATOMS {
                let at = self.atom(c, a);
                let (x, y) = (sim.read(at), sim.read(field(at, 1)));
                if x + y != XY {
                    return Err(format!("atomic part {a} of {c}: x + y = {}", x + y));
                }
                dates += sim.read(field(at, 2));
            }
        }
        if dates != t.bumps {
            return Err(format!(
                "build dates advanced {dates} times, expected {}",
                t.bumps
            ));
        }
        Ok(())
    }
}
