//! The TPC-C-like store (RW-LE Fig 10); see the parent module for what it models.

use std::cell::RefCell;
use std::rc::Rc;

use super::{field, read, spawn_threads, write, Checker, Tally};
use crate::config::SimConfig;
use crate::cpu::Cpu;
use crate::locks::{AnyLock, LockStats};
use crate::simulation::executor::Sim;
use crate::workloads::{WorkloadConfig, WorkloadError};

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
pub(super) struct Tpcc {
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

    pub(super) fn build(
        cfg: &SimConfig,
        w: &WorkloadConfig,
        threads: usize,
        total: &Rc<RefCell<LockStats>>,
        tally: &Rc<RefCell<Tally>>,
    ) -> Result<(Sim, Checker), WorkloadError> {
        let lines = W + W * D + W * D * C + W * ITEMS + W * D * SLOTS * (1 + MAX_LINES) + 64;
        let mut sim = crate::workloads::sim_with_lines(cfg, lines)?;
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
