//! The commercial server mixes (OLTP, Apache, JBB, Zeus): read-shared code and data,
//! migratory records and private heaps; see the parent module for the calibration.

use std::cell::RefCell;
use std::rc::Rc;

use super::{Checker, Faults, FlaskApp, Sizes};
use crate::config::SimConfig;
use crate::cpu::Cpu;
use crate::elision::{spin_lock, spin_unlock};
use crate::engine::rng::hash64;
use crate::simulation::executor::Sim;
use crate::workloads::{share, sim_with_lines, WorkloadError};

/// Lines of one "function" of the read-shared footprint, read together.
const RUN_LINES: u64 = 4;
/// Words read from each of those lines (fewer if a line holds fewer).
const RUN_WORDS: u64 = 2;
/// Bytes a record needs: its lock, update count, sum and last owner.
const RECORD_BYTES: u64 = 32;
/// Youngest objects a reuse may pick from (a few KB: they are still in the L1).
const REUSE_WINDOW: u64 = 64;
/// Cycles of work per operation.
const WORK: u64 = 10;

/// Tags that keep the initial values of different data apart.
const SHARED_TAG: u64 = 0x5a4e_d000 << 32;
const HEAP_TAG: u64 = 0x4ea9 << 48;

/// How popularity falls with rank in the read-shared footprint.
#[derive(Clone, Copy, Debug)]
enum Skew {
    /// Zipf, weight 1/rank.
    Rank,
    /// Flatter, weight 1/√rank.
    SqrtRank,
}

/// One app's parameters (see the parent module's table).
#[derive(Clone, Copy, Debug)]
struct Params {
    /// Lines of the read-shared footprint.
    shared_lines: u64,
    skew: Skew,
    /// Migratory records (a line each, or more if a line is under [`RECORD_BYTES`]).
    records: u64,
    /// Bytes from one record to the next.
    record_bytes: u64,
    /// Words read from each line of a function.
    run_words: u64,
    /// Objects (a line each) in each CPU's heap.
    heap_lines: u64,
    /// Percentages of operations that read shared data and that update a record (the
    /// rest are private); each kind makes about 8 accesses, so these are shares of accesses
    /// too.
    shared_pct: u64,
    record_pct: u64,
}

impl Params {
    fn of(app: FlaskApp, s: &Sizes) -> Params {
        let (l, p) = (s.llc, s.private);
        let llc_lines = s.lines(l, 1);
        let records = |div: u64| (llc_lines / div).max(s.cpus as u64);
        let (shared, skew, records, heap, shared_pct, record_pct) = match app {
            FlaskApp::Oltp => (l / 4, Skew::Rank, records(64), p / 4, 45, 30),
            FlaskApp::Apache => (l / 8, Skew::Rank, records(1024), p / 2, 65, 5),
            FlaskApp::Jbb => (l / 16, Skew::Rank, records(256), 4 * p, 30, 15),
            // Zeus (only server apps come here).
            _ => (3 * l / 16, Skew::SqrtRank, records(2048), p / 2, 65, 5),
        };
        Params {
            shared_lines: s.lines(shared, RUN_LINES).next_multiple_of(RUN_LINES),
            skew,
            records,
            record_bytes: s.lb.max(RECORD_BYTES),
            run_words: RUN_WORDS.min(s.wpl()),
            // At least two objects, so that one can be reused while another is written.
            heap_lines: s.lines(heap, 2),
            shared_pct,
            record_pct,
        }
    }
}

/// Cumulative popularity of the functions, for sampling by rank.
fn popularity(functions: u64, skew: Skew) -> Vec<u64> {
    let mut total = 0u64;
    (0..functions)
        .map(|i| {
            total += match skew {
                Skew::Rank => (1 << 32) / (i + 1),
                // 2^40 / √((i+1)·2^16) = 2^32 / √(i+1), with integer precision to spare.
                Skew::SqrtRank => (1 << 40) / ((i + 1) << 16).isqrt(),
            };
            total
        })
        .collect()
}

/// Initial (and only) value of word `w` of shared line `line`.
fn shared_value(seed: u64, line: u64, w: u64) -> u64 {
    hash64(seed ^ SHARED_TAG ^ (line << 4) ^ w)
}

/// Word `w` of the object that allocation `serial` of `cpu` wrote.
fn object_value(seed: u64, cpu: usize, serial: u64, w: u64) -> u64 {
    hash64(hash64(seed ^ HEAP_TAG ^ ((cpu as u64) << 40) ^ serial) ^ w)
}

/// Where the data lie.
#[derive(Clone, Copy, Debug)]
struct Layout {
    shared: u64,
    records: u64,
    /// CPU `c`'s heap starts `c * heap_lines` lines from here.
    heaps: u64,
}

/// Builds the machine: every CPU runs the mix, `total_ops` accesses split over them.
pub(super) fn build(
    cfg: &SimConfig,
    s: &Sizes,
    app: FlaskApp,
    total_ops: u64,
) -> Result<(Sim, Checker), WorkloadError> {
    let p = Params::of(app, s);
    let record_lines = p.records * p.record_bytes / s.lb;
    let lines = p.shared_lines + record_lines + s.cpus as u64 * p.heap_lines;
    let mut sim = sim_with_lines(cfg, lines)?;
    let (lb, seed) = (s.lb, cfg.seed);
    let l = Layout {
        shared: sim.alloc_lines(p.shared_lines),
        records: sim.alloc_lines(record_lines),
        heaps: sim.alloc_lines(s.cpus as u64 * p.heap_lines),
    };
    for line in 0..p.shared_lines {
        for w in 0..p.run_words {
            sim.write(l.shared + line * lb + 8 * w, shared_value(seed, line, w));
        }
    }
    let cdf = Rc::new(popularity(p.shared_lines / RUN_LINES, p.skew));
    let faults = Faults::default();
    // Per record: updates and the sum of their amounts, counted on the host.
    let tally = Rc::new(RefCell::new(vec![(0u64, 0u64); p.records as usize]));
    // Per CPU: objects allocated.
    let allocated = Rc::new(RefCell::new(vec![None; s.cpus]));
    for c in 0..s.cpus {
        let t = Thread {
            p,
            l,
            lb,
            wpl: s.wpl(),
            seed,
            budget: share(total_ops, s.cpus, c),
            cdf: cdf.clone(),
            faults: faults.clone(),
            tally: tally.clone(),
        };
        let allocated = allocated.clone();
        sim.spawn(c, move |cpu| async move {
            let n = t.run(&cpu).await;
            allocated.borrow_mut()[c] = Some(n);
        });
    }
    let wpl = s.wpl();
    let check = move |sim: &Sim| -> Result<(), String> {
        faults.result()?;
        for (r, &(count, sum)) in tally.borrow().iter().enumerate() {
            let rec = l.records + r as u64 * p.record_bytes;
            let got = (sim.read(rec), sim.read(rec + 8), sim.read(rec + 16));
            if got != (0, count, sum) {
                return Err(format!(
                    "record {r}: lock {}, {} updates summing {}; the threads made {count} \
                     summing {sum}",
                    got.0, got.1, got.2
                ));
            }
        }
        for (c, n) in allocated.borrow().iter().enumerate() {
            let n = n.ok_or_else(|| format!("CPU {c} did not finish"))?;
            let heap = l.heaps + c as u64 * p.heap_lines * lb;
            for slot in 0..p.heap_lines {
                // The last allocation that used this slot, if any.
                let last = (slot < n).then(|| slot + (n - 1 - slot) / p.heap_lines * p.heap_lines);
                for w in 0..wpl {
                    let want = last.map_or(0, |s| object_value(seed, c, s, w));
                    let got = sim.read(heap + slot * lb + 8 * w);
                    if got != want {
                        return Err(format!(
                            "CPU {c}'s heap slot {slot} word {w} is {got:#x}, expected {want:#x} \
                             after {n} allocations"
                        ));
                    }
                }
            }
        }
        Ok(())
    };
    Ok((sim, Box::new(check)))
}

/// One server thread's program.
struct Thread {
    p: Params,
    l: Layout,
    lb: u64,
    wpl: u64,
    seed: u64,
    /// Accesses to make.
    budget: u64,
    cdf: Rc<Vec<u64>>,
    faults: Faults,
    tally: Rc<RefCell<Vec<(u64, u64)>>>,
}

impl Thread {
    /// Runs the mix until the budget is spent; returns the objects allocated.
    async fn run(self, cpu: &Cpu) -> u64 {
        let (p, l, lb) = (self.p, self.l, self.lb);
        let c = cpu.core();
        let heap = l.heaps + c as u64 * p.heap_lines * lb;
        let total = *self.cdf.last().expect("at least one function");
        let (mut ops, mut serial) = (0, 0u64);
        while ops < self.budget {
            let pick = cpu.random_below(100);
            if pick < p.shared_pct {
                // A call to a function picked by popularity: its first line is needed before
                // anything can run (the jump's target), the rest stream in behind it.
                let x = cpu.random_below(total);
                let f = self.cdf.partition_point(|&w| w <= x) as u64;
                for k in 0..RUN_LINES {
                    let line = f * RUN_LINES + k;
                    for w in 0..p.run_words {
                        let a = l.shared + line * lb + 8 * w;
                        let v = if k == 0 && w == 0 {
                            cpu.load(a).await
                        } else {
                            cpu.load_overlapped(a).await
                        };
                        let want = shared_value(self.seed, line, w);
                        self.faults
                            .expect(v, want, || format!("CPU {c}, shared line {line}"));
                    }
                }
                ops += RUN_LINES * p.run_words;
            } else if pick < p.shared_pct + p.record_pct {
                // A migratory record: locked, read, updated, unlocked by one CPU at a time.
                let r = cpu.random_below(p.records);
                let amount = 1 + cpu.random_below(100);
                let rec = l.records + r * p.record_bytes;
                spin_lock(cpu, rec).await;
                let count = cpu.load(rec + 8).await;
                let sum = cpu.load(rec + 16).await;
                cpu.store(rec + 8, count + 1).await;
                cpu.store(rec + 16, sum + amount).await;
                cpu.store(rec + 24, c as u64 + 1).await;
                spin_unlock(cpu, rec).await;
                let mut t = self.tally.borrow_mut();
                t[r as usize].0 += 1;
                t[r as usize].1 += amount;
                ops += 7;
            } else if serial == 0 || cpu.random_below(2) == 0 {
                // Allocation: the next object at the bump pointer, written sequentially.
                let obj = heap + (serial % p.heap_lines) * lb;
                for w in 0..self.wpl {
                    let v = object_value(self.seed, c, serial, w);
                    cpu.store_overlapped(obj + 8 * w, v).await;
                }
                serial += 1;
                ops += self.wpl;
            } else {
                // Reuse of a young object, still live (not yet overwritten by the bump).
                let back = 1 + cpu.random_below(serial.min(REUSE_WINDOW).min(p.heap_lines));
                let s = serial - back;
                let obj = heap + (s % p.heap_lines) * lb;
                for w in 0..self.wpl {
                    let v = cpu.load_overlapped(obj + 8 * w).await;
                    let want = object_value(self.seed, c, s, w);
                    self.faults
                        .expect(v, want, || format!("CPU {c}, object {s} word {w}"));
                }
                ops += self.wpl;
            }
            cpu.compute(WORK).await;
        }
        serial
    }
}
