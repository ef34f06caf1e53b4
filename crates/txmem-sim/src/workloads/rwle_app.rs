//! RW-LE's application benchmarks (§5.2, Figs 8–10) as simulated programs: a TPC-C-like
//! store, an STMBench7-like object graph and a Kyoto-Cabinet-"wicked"-like database, each
//! behind one reader-writer lock (any [`LockKind`](crate::locks::LockKind)).
//!
//! What the seed's results hinge on is kept: the size of the read and write sections against
//! the 64-line transactional capacity, which sections take the lock in read mode and which in
//! write mode, and (Kyoto) the per-slot mutexes nested inside the reader-writer lock. The data
//! live in simulated memory, one record per cache line; every parameter of an operation is
//! drawn before its section starts, so a speculative retry repeats the same operation, and the
//! value a section returns (counted on the host) comes from the run that took effect.
//!
//! * [`App::Tpcc`] — 4 warehouses × 10 districts × 100 customers, 1,000 items. Updates
//!   (`write_pct`%) are new-order (5–15 items: a district's order counter, the stock rows,
//!   an order and its lines; about 35 lines written), payment (warehouse, district, customer)
//!   and delivery (ten districts' newest orders, credited to their customers), 50:45:5. Reads
//!   are order-status (a customer's last order and its lines) and stock-level (the last 20
//!   orders of a district, their lines and each line's stock row: about 400 lines, past any
//!   transaction's capacity), half each.
//! * [`App::Stmbench7`] — a tree of assemblies (1 → 3 → 9 complex assemblies → 27 base
//!   assemblies), each base assembly using 3 of 100 composite parts, each composite part a
//!   document and a graph of 20 atomic parts with 3 connections each. Reads are a short
//!   traversal (a base assembly's composite parts, their documents and atomic graphs: about
//!   65 lines) or a query (one atomic part and its connections); updates swap the
//!   coordinates of every atomic part of one composite part (20 lines written) or advance one
//!   atomic part's build date. Long traversals and structural modifications are off, as in
//!   the seed.
//! * [`App::Kyoto`] — 16 slots, each a mutex and 64 buckets of binary search trees of
//!   records. Read-mode operations are gets and sets of one record: they take the outer lock
//!   in read mode and the record's slot mutex inside it (RW-LE elides only the outer lock;
//!   under HLE the inner mutex is elided too: a speculative section only reads it). Write-mode
//!   operations (`write_pct`%: the seed's 10%, 5% and under 1%) walk every tree of one slot
//!   and store its record count, as a whole-database operation would.
//!
//! Each run checks its data afterwards: TPC-C's year-to-date totals, balances, order
//! counters and stock against the operations counted; STMBench7's coordinate invariant and
//! build dates; Kyoto's trees (ordered, every key in its bucket) and values against the sets.

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::{RunResult, WorkloadConfig, WorkloadError};
use crate::config::SimConfig;
use crate::cpu::Cpu;
use crate::elision::{spin_lock, spin_unlock};
use crate::engine::executor::Sim;
use crate::locks::{AnyLock, LockStats, RwLockAlgo};
use txmem_htm::LOCK_BUSY_CODE;

/// Which application `rwle-app` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum App {
    /// TPC-C-like (Fig 10).
    Tpcc,
    /// STMBench7-like (Fig 8).
    Stmbench7,
    /// Kyoto Cabinet "wicked"-like (Fig 9).
    Kyoto,
}

impl App {
    /// Every application.
    pub const ALL: [App; 3] = [App::Tpcc, App::Stmbench7, App::Kyoto];

    /// The kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            App::Tpcc => "tpcc",
            App::Stmbench7 => "stmbench7",
            App::Kyoto => "kyoto",
        }
    }
}

/// Word `i` of the record (cache line) at `line`.
fn field(line: u64, i: u64) -> u64 {
    line + 8 * i
}

/// Host-side tallies of what committed sections did, per application.
#[derive(Default)]
struct Tally {
    /// TPC-C: payments' amounts, deliveries' credits, order lines' quantities, new orders.
    paid: u64,
    credited: u64,
    ordered: u64,
    new_orders: u64,
    /// STMBench7: build-date advances. Kyoto: successful sets.
    bumps: u64,
}

/// Runs `w.app` on CPUs `0..threads` under `w.lock`; checks its data afterwards.
pub fn run_rwle_app(cfg: &SimConfig, w: &WorkloadConfig) -> Result<RunResult, WorkloadError> {
    let threads = super::lock_threads(cfg, w)?;
    if w.write_pct > 100 {
        return Err(WorkloadError::Check("write_pct must be at most 100".into()));
    }
    let start = Instant::now();
    let total = Rc::new(RefCell::new(LockStats::default()));
    let tally = Rc::new(RefCell::new(Tally::default()));
    let (mut sim, check): (Sim, Checker) = match w.app {
        App::Tpcc => Tpcc::build(cfg, w, threads, &total, &tally)?,
        App::Stmbench7 => Stmbench7::build(cfg, w, threads, &total, &tally)?,
        App::Kyoto => Kyoto::build(cfg, w, threads, &total, &tally)?,
    };
    let run = super::run_checked(&mut sim, start, |sim| check(sim, &tally.borrow()))?;
    let locks = total.borrow().clone();
    Ok(RunResult { locks, ..run })
}

type Checker = Box<dyn Fn(&Sim, &Tally) -> Result<(), String>>;

/// Spawns the threads: each makes its share of `w.total_ops` operations, a write with
/// probability `write_pct`%, through `op(cpu, lock, write)`, then adds its lock's statistics
/// to `total`.
fn spawn_threads<F, Fut>(
    sim: &mut Sim,
    w: &WorkloadConfig,
    threads: usize,
    lock: &AnyLock,
    total: &Rc<RefCell<LockStats>>,
    op: F,
) where
    F: Fn(Cpu, Rc<RefCell<AnyLock>>, bool) -> Fut + Clone + 'static,
    Fut: Future<Output = ()> + 'static,
{
    for t in 0..threads {
        let n = super::share(w.total_ops, threads, t);
        let (lock, total, op, write_pct) = (
            Rc::new(RefCell::new(lock.clone())),
            total.clone(),
            op.clone(),
            w.write_pct,
        );
        sim.spawn(t, move |cpu| async move {
            for _ in 0..n {
                let write = cpu.random_below(100) < write_pct;
                op(cpu.clone(), lock.clone(), write).await;
            }
            *total.borrow_mut() += lock.borrow().stats();
        });
    }
}

// The lock handle is owned by one simulated thread and borrowed across its awaits only by
// that thread's single task, so the RefCell is never borrowed twice.
#[allow(clippy::await_holding_refcell_ref)]
async fn read<F, Fut, T>(cpu: &Cpu, lock: &RefCell<AnyLock>, section: F) -> T
where
    F: FnMut(Cpu) -> Fut,
    Fut: Future<Output = T>,
{
    lock.borrow_mut().read(cpu, section).await
}

#[allow(clippy::await_holding_refcell_ref)]
async fn write<F, Fut, T>(cpu: &Cpu, lock: &RefCell<AnyLock>, section: F) -> T
where
    F: FnMut(Cpu) -> Fut,
    Fut: Future<Output = T>,
{
    lock.borrow_mut().write(cpu, section).await
}

// ---------------------------------------------------------------------------------------
// TPC-C-like.

/// Warehouses, districts per warehouse, customers per district, items.
const W: u64 = 4;
const D: u64 = 10;
const C: u64 = 100;
const ITEMS: u64 = 1000;
/// Order slots per district (a ring), order lines per order at most.
const SLOTS: u64 = 32;
const MAX_LINES: u64 = 15;
/// Initial stock quantity per item and warehouse.
const STOCK: u64 = 100;

/// The TPC-C-like store's layout: the first line of each table.
#[derive(Clone, Copy)]
struct Tpcc {
    lb: u64,
    warehouses: u64,
    districts: u64,
    customers: u64,
    stock: u64,
    orders: u64,
}

impl Tpcc {
    fn district(&self, w: u64, d: u64) -> u64 {
        self.districts + (w * D + d) * self.lb
    }
    fn customer(&self, w: u64, d: u64, c: u64) -> u64 {
        self.customers + ((w * D + d) * C + c) * self.lb
    }
    fn stock(&self, w: u64, i: u64) -> u64 {
        self.stock + (w * ITEMS + i) * self.lb
    }
    /// The order in slot `s` of district (`w`, `d`): its header line, then its lines.
    fn order(&self, w: u64, d: u64, s: u64) -> u64 {
        self.orders + (((w * D + d) * SLOTS + s) * (1 + MAX_LINES)) * self.lb
    }

    fn build(
        cfg: &SimConfig,
        w: &WorkloadConfig,
        threads: usize,
        total: &Rc<RefCell<LockStats>>,
        tally: &Rc<RefCell<Tally>>,
    ) -> Result<(Sim, Checker), WorkloadError> {
        let lines = W + W * D + W * D * C + W * ITEMS + W * D * SLOTS * (1 + MAX_LINES) + 64;
        let mut sim = super::sim_with_lines(cfg, lines)?;
        let lb = cfg.line_bytes;
        let t = Tpcc {
            lb,
            warehouses: sim.alloc_lines(W),
            districts: sim.alloc_lines(W * D),
            customers: sim.alloc_lines(W * D * C),
            stock: sim.alloc_lines(W * ITEMS),
            orders: sim.alloc_lines(W * D * SLOTS * (1 + MAX_LINES)),
        };
        // Stock, and a full ring of delivered orders per district (TPC-C starts with a history).
        let mut rng = crate::engine::rng::SplitMix64::new(cfg.seed ^ 0x7bcc);
        for wh in 0..W {
            for i in 0..ITEMS {
                sim.write(t.stock(wh, i), STOCK);
            }
            for d in 0..D {
                sim.write(field(t.district(wh, d), 1), SLOTS);
                for s in 0..SLOTS {
                    let order = t.order(wh, d, s);
                    let n = 5 + rng.below(MAX_LINES - 4);
                    sim.write(order, s + 1);
                    sim.write(field(order, 1), rng.below(C));
                    sim.write(field(order, 2), n);
                    sim.write(field(order, 3), 1);
                    for k in 1..=n {
                        sim.write(order + k * lb, rng.below(ITEMS));
                        sim.write(field(order + k * lb, 1), 1 + rng.below(10));
                    }
                }
            }
        }
        let lock = AnyLock::new(w.lock, &mut sim, threads, w.rwle_split_lock);
        let tl = tally.clone();
        spawn_threads(&mut sim, w, threads, &lock, total, move |cpu, lock, upd| {
            let tl = tl.clone();
            async move {
                let wh = cpu.random_below(W);
                let d = cpu.random_below(D);
                let c = cpu.random_below(C);
                if upd {
                    match cpu.random_below(100) {
                        0..50 => {
                            let n = 5 + cpu.random_below(MAX_LINES - 4);
                            let mut items = [(0u64, 0u64); MAX_LINES as usize];
                            for it in items.iter_mut().take(n as usize) {
                                *it = (cpu.random_below(ITEMS), 1 + cpu.random_below(10));
                            }
                            let q = write(&cpu, &lock, |cpu| async move {
                                t.new_order(&cpu, wh, d, c, &items[..n as usize]).await
                            })
                            .await;
                            let mut tl = tl.borrow_mut();
                            tl.ordered += q;
                            tl.new_orders += 1;
                        }
                        50..95 => {
                            let amount = 1 + cpu.random_below(5000);
                            write(&cpu, &lock, |cpu| async move {
                                t.payment(&cpu, wh, d, c, amount).await
                            })
                            .await;
                            tl.borrow_mut().paid += amount;
                        }
                        _ => {
                            let credit =
                                write(&cpu, &lock, |cpu| async move { t.delivery(&cpu, wh).await })
                                    .await;
                            tl.borrow_mut().credited += credit;
                        }
                    }
                } else if cpu.random_below(2) == 0 {
                    read(&cpu, &lock, |cpu| async move {
                        t.order_status(&cpu, wh, d, c).await
                    })
                    .await;
                } else {
                    read(&cpu, &lock, |cpu| async move {
                        t.stock_level(&cpu, wh, d).await
                    })
                    .await;
                }
            }
        });
        Ok((sim, Box::new(move |sim, tally| t.check(sim, tally))))
    }

    /// Returns the quantity ordered.
    async fn new_order(&self, cpu: &Cpu, wh: u64, d: u64, c: u64, items: &[(u64, u64)]) -> u64 {
        let dist = self.district(wh, d);
        cpu.load(field(self.warehouses + wh * self.lb, 1)).await; // tax
        let o_id = cpu.load(field(dist, 1)).await;
        cpu.store(field(dist, 1), o_id + 1).await;
        let cust = self.customer(wh, d, c);
        cpu.load(cust).await; // discount, credit
        let order = self.order(wh, d, o_id % SLOTS);
        let mut qty = 0;
        for (k, &(item, q)) in items.iter().enumerate() {
            let s = self.stock(wh, item);
            let left = cpu.load(s).await;
            // TPC-C restocks an item that would fall below 10.
            let next = if left >= q + 10 {
                left - q
            } else {
                left + 91 - q
            };
            cpu.store(s, next).await;
            let ytd = cpu.load(field(s, 1)).await;
            cpu.store(field(s, 1), ytd + q).await;
            let line = order + (1 + k as u64) * self.lb;
            cpu.store(line, item).await;
            cpu.store(field(line, 1), q).await;
            qty += q;
        }
        cpu.store(order, o_id + 1).await;
        cpu.store(field(order, 1), c).await;
        cpu.store(field(order, 2), items.len() as u64).await;
        cpu.store(field(order, 3), 0).await; // not delivered
        cpu.store(field(cust, 1), o_id + 1).await; // last order
        qty
    }

    async fn payment(&self, cpu: &Cpu, wh: u64, d: u64, c: u64, amount: u64) {
        let wl = self.warehouses + wh * self.lb;
        let ytd = cpu.load(wl).await;
        cpu.store(wl, ytd + amount).await;
        let dist = self.district(wh, d);
        let ytd = cpu.load(dist).await;
        cpu.store(dist, ytd + amount).await;
        let cust = self.customer(wh, d, c);
        let bal = cpu.load(cust).await;
        cpu.store(cust, bal.wrapping_sub(amount)).await;
    }

    /// Delivers each district's newest order if not yet delivered: credits its customer
    /// with its quantity. Returns the credit in all.
    async fn delivery(&self, cpu: &Cpu, wh: u64) -> u64 {
        let mut credited = 0;
        for d in 0..D {
            let next = cpu.load(field(self.district(wh, d), 1)).await;
            if next == 0 {
                continue;
            }
            let order = self.order(wh, d, (next - 1) % SLOTS);
            if cpu.load(field(order, 3)).await != 0 {
                continue;
            }
            let c = cpu.load(field(order, 1)).await;
            let n = cpu.load(field(order, 2)).await;
            let mut qty = 0;
            for k in 1..=n {
                qty += cpu.load(field(order + k * self.lb, 1)).await;
            }
            cpu.store(field(order, 3), 1).await;
            let cust = self.customer(wh, d, c);
            let bal = cpu.load(cust).await;
            cpu.store(cust, bal.wrapping_add(qty)).await;
            credited += qty;
        }
        credited
    }

    async fn order_status(&self, cpu: &Cpu, wh: u64, d: u64, c: u64) -> u64 {
        let cust = self.customer(wh, d, c);
        let mut sum = cpu.load(cust).await;
        let last = cpu.load(field(cust, 1)).await;
        if last == 0 {
            return sum;
        }
        let order = self.order(wh, d, (last - 1) % SLOTS);
        let n = cpu.load(field(order, 2)).await.min(MAX_LINES);
        for k in 1..=n {
            sum = sum.wrapping_add(cpu.load(field(order + k * self.lb, 1)).await);
        }
        sum
    }

    /// Counts the distinct-enough items of the district's last 20 orders whose stock is low.
    async fn stock_level(&self, cpu: &Cpu, wh: u64, d: u64) -> u64 {
        let next = cpu.load(field(self.district(wh, d), 1)).await;
        let mut low = 0;
        for o in next.saturating_sub(20)..next {
            let order = self.order(wh, d, o % SLOTS);
            let n = cpu.load(field(order, 2)).await.min(MAX_LINES);
            for k in 1..=n {
                let item = cpu.load(order + k * self.lb).await % ITEMS;
                if cpu.load(self.stock(wh, item)).await < 20 {
                    low += 1;
                }
            }
        }
        low
    }

    fn check(&self, sim: &Sim, t: &Tally) -> Result<(), String> {
        let (mut w_ytd, mut d_ytd, mut bal, mut orders, mut s_ytd) = (0u64, 0u64, 0u64, 0, 0);
        for wh in 0..W {
            w_ytd += sim.read(self.warehouses + wh * self.lb);
            for d in 0..D {
                d_ytd += sim.read(self.district(wh, d));
                orders += sim.read(field(self.district(wh, d), 1));
                for c in 0..C {
                    bal = bal.wrapping_add(sim.read(self.customer(wh, d, c)));
                }
            }
            for i in 0..ITEMS {
                s_ytd += sim.read(field(self.stock(wh, i), 1));
                let q = sim.read(self.stock(wh, i));
                if !(1..=STOCK + 100).contains(&q) {
                    return Err(format!("stock of item {i} in warehouse {wh} is {q}"));
                }
            }
        }
        if w_ytd != t.paid || d_ytd != t.paid {
            return Err(format!(
                "year-to-date: warehouses {w_ytd}, districts {d_ytd}, payments {}",
                t.paid
            ));
        }
        if bal != t.credited.wrapping_sub(t.paid) {
            return Err(format!(
                "balances sum to {}, expected {} credited - {} paid",
                bal as i64, t.credited, t.paid
            ));
        }
        if orders != W * D * SLOTS + t.new_orders || s_ytd != t.ordered {
            return Err(format!(
                "{orders} orders / {s_ytd} items in stock ytd, expected {} / {}",
                W * D * SLOTS + t.new_orders,
                t.ordered
            ));
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// STMBench7-like.

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
struct Stmbench7 {
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

    fn build(
        cfg: &SimConfig,
        w: &WorkloadConfig,
        threads: usize,
        total: &Rc<RefCell<LockStats>>,
        tally: &Rc<RefCell<Tally>>,
    ) -> Result<(Sim, Checker), WorkloadError> {
        let lines = COMPLEX + BASE + 2 * COMPOSITES + COMPOSITES * ATOMS + 64;
        let mut sim = super::sim_with_lines(cfg, lines)?;
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

// ---------------------------------------------------------------------------------------
// Kyoto Cabinet "wicked"-like.

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
struct Kyoto {
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

    fn build(
        cfg: &SimConfig,
        w: &WorkloadConfig,
        threads: usize,
        total: &Rc<RefCell<LockStats>>,
        tally: &Rc<RefCell<Tally>>,
    ) -> Result<(Sim, Checker), WorkloadError> {
        let population = KSLOTS * KBUCKETS * KRECORDS;
        let pool = super::share(w.total_ops, threads, 0) + 1;
        let lines = 2 * KSLOTS + KSLOTS * KBUCKETS + population + threads as u64 * pool + 64;
        let mut sim = super::sim_with_lines(cfg, lines)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locks::LockKind;
    use crate::workloads::{run, WorkloadKind};

    fn config(app: App, lock: LockKind, write_pct: u64) -> (SimConfig, WorkloadConfig) {
        let mut sim = SimConfig::power8();
        sim.cores = 1;
        sim.threads_per_core = 4;
        // A livelock shows up as a timed-out run, not a hung test.
        sim.max_cycles = 200_000_000;
        let w = WorkloadConfig {
            kind: WorkloadKind::RwleApp,
            app,
            lock,
            write_pct,
            total_ops: 120,
            ..WorkloadConfig::default()
        };
        (sim, w)
    }

    #[test]
    fn every_lock_keeps_every_app_consistent_and_is_deterministic() {
        for app in App::ALL {
            // Algorithm 1 has no fallback: a write section past the capacity retries forever.
            for lock in LockKind::ALL.into_iter().filter(|&l| l != LockKind::RwLe1) {
                for pct in [10, 60] {
                    let (sim, w) = config(app, lock, pct);
                    let what = format!("{} under {} at {pct}%", app.name(), lock.name());
                    let a = run(&sim, &w).unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert!(!a.stats.timed_out, "{what}");
                    assert_eq!(a.locks.sections(), 120, "{what}");
                    assert!(a.locks.write_sections > 0, "{what}");
                    let b = run(&sim, &w).unwrap();
                    assert_eq!((a.stats, a.locks), (b.stats, b.locks), "{what}");
                }
            }
        }
    }

    #[test]
    fn stock_level_and_traversals_outgrow_htm_capacity() {
        // Read-only mixes under HLE: TPC-C's stock-level and STMBench7's traversals overflow
        // the 64-line capacity and fall back; Kyoto's small reads do not.
        for (app, overflows) in [
            (App::Tpcc, true),
            (App::Stmbench7, true),
            (App::Kyoto, false),
        ] {
            let (mut sim, w) = config(app, LockKind::Tle, 0);
            sim.threads_per_core = 1;
            let r = run(&sim, &w).unwrap();
            assert_eq!(
                r.locks.aborts.capacity > 0,
                overflows,
                "{}: {:?}",
                app.name(),
                r.locks
            );
            assert_eq!(r.locks.locked_sections > 0, overflows, "{}", app.name());
        }
    }

    #[test]
    fn kyoto_takes_its_slot_mutexes_only_outside_transactions() {
        // One thread, only read-mode operations. HLE commits every section in HTM (its slot
        // mutexes only read); RW-LE runs them all uninstrumented, taking the mutexes.
        for (lock, htm) in [(LockKind::Tle, 120), (LockKind::RwLeOpt, 0)] {
            let (mut sim, mut w) = config(App::Kyoto, lock, 0);
            sim.threads_per_core = 1;
            w.total_ops = 120;
            let r = run(&sim, &w).unwrap();
            assert_eq!(r.locks.htm_commits, htm, "{}", lock.name());
            assert_eq!(r.locks.uninstrumented_reads, 120 - htm, "{}", lock.name());
            // Each set or get of RW-LE acquires and releases a mutex: a CAS per section.
            assert_eq!(r.stats.rmws > 0, htm == 0, "{}", lock.name());
        }
    }
}
