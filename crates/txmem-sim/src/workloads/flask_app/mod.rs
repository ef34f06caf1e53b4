//! Flask's Table II workloads (Menezo, Puente, Gregorio, HPCA 2015; seed SPECS.md §4.6–4.8)
//! as self-checking simulated programs, one generator per behaviour class.
//!
//! The seed ran GEMS full-system checkpoints of SPEC CPU2006, NPB and the Wisconsin
//! commercial suite; those are not available, so each class is reproduced by the behaviour
//! its results hinge on: how much of the data is private, how much is shared and by how many
//! cores, and how the footprints compare with the private caches, the LLC and the directory.
//! The aim is the *shape* of Flask's figures (which workloads a small directory or a small
//! filter hurts), not GEMS's numbers.
//!
//! # Sizes
//!
//! Footprints scale with the machine, so that a test on tiny caches keeps the behaviour of a
//! full-size run: `P` is one core's outermost private cache (the L2 when enabled, else the
//! L1; an exclusive L2, as in Table I, holds the L1's lines besides) and `L` is the LLC.
//! On the seed's Table I machine (32 KB L1, 256 KB L2, 16 MB LLC, 16 cores, 64-B lines),
//! `P` = 256 KB and `L` = 16 MB; the sizes quoted below are for that machine.
//!
//! [`WorkloadConfig::total_ops`] is the run's length: about that many simulated memory
//! operations in all, split evenly over the cores that do the work (SPEC's OS core runs
//! until the others finish; NPB's grids are sized to it). Table II-like runs take 1 to 2
//! million (`total_ops` = 1,000,000 makes every SPEC copy sweep hmmer's array three times
//! and revisit astar's nodes; a debug build simulates one in a few seconds); tests take a
//! few thousand on shrunken caches.
//!
//! # SPEC CPU2006 rate mode ([`FlaskApp::Astar`], [`FlaskApp::Hmmer`], [`FlaskApp::Omnetpp`])
//!
//! Table II runs 15 copies with one core left to the OS. CPU 0 is that OS: every 200 cycles
//! it ticks a timer word and updates a word of a 32-line run-queue region; every 1,000
//! operations each copy makes a "system call" (a `fetch_add` on a shared counter and reads
//! of 2 run-queue lines). Apart from that every copy runs a private stream, so nearly every
//! miss is private and the only actively shared lines are the OS's few dozen (why Flask
//! keeps at least one directory way, and why its directory never fills). Streams mix a
//! sequential sweep (independent accesses: overlapped; each word loaded, and a fixed share
//! of them stored) and visits to nodes of a heap (dependent: each node's link is loaded
//! with a blocking load and followed, and its visit count incremented):
//!
//! | app | sweep | node heap | walk | visits | behaviour |
//! |---|---|---|---|---|---|
//! | hmmer | `P`/2 (128 KB), a store every 4th word | — | — | 0% | fits the private caches: after the first sweep (20,000 operations per copy), L1 misses hit in the L2 |
//! | astar | 2`P` (512 KB), a store every 8th word | 2`P` (512 KB) | random graph walk near each node's link | 50% | misses the private caches, 15 × 1 MB fits the LLC |
//! | omnetpp | `P`/8 (32 KB), a store every 2nd word | 4`L`/copies (4.3 MB) | pointer chase round a random cycle | 60% | dependent misses to memory: 64 MB of heaps against a 16 MB LLC |
//!
//! # NAS Parallel Benchmarks ([`FlaskApp::Mg`], [`FlaskApp::Ft`], [`FlaskApp::Lu`])
//!
//! Real kernels on integer grids (wrapping `u64` arithmetic, so the host recomputes the exact
//! result), partitioned so that much of every core's data is read or written by another
//! core: the "highest sharing contention" class, where a tiny filter cannot tell on-chip
//! misses apart (Fig 6) and an undersized directory recalls lines in use.
//!
//! * **MG** — a 7-point stencil on an `N`×`N`×2·cores grid, two planes per core, 4 iterations
//!   between two grids with a barrier after each: both of a core's planes are read by a
//!   neighbour every iteration (producer–consumer sharing at every plane).
//! * **FT** — an `N`×`N` array (`N` a power of two): each core transforms its rows (a
//!   twiddle and a Walsh–Hadamard butterfly), then, after a barrier, writes its rows of the
//!   transpose, reading a column of every other core's rows (all-to-all); 3 iterations.
//! * **LU** — a wavefront (Gauss–Seidel) sweep over a (4·cores)×`C` grid: cell (i, j)
//!   depends on the new (i−1, j) and (i, j−1). Each core owns 4 rows and follows the core
//!   above it block by block (16-word column blocks), waiting on that core's progress flag;
//!   3 sweeps with a barrier between them. A quarter of the rows read a neighbour's row.
//!
//! `N` or `C` is chosen so the kernel makes about `total_ops` accesses (at least a small
//! minimum grid).
//!
//! # Commercial servers ([`FlaskApp::Oltp`], [`FlaskApp::Apache`], [`FlaskApp::Jbb`], [`FlaskApp::Zeus`])
//!
//! One generator, four parameter sets. Every core mixes three kinds of operation:
//!
//! * **read-shared** — code and shared read-mostly data, read by every core: a "function" of
//!   4 consecutive lines (2 words read from each) picked by Zipf-like popularity (weight
//!   1/rank, or 1/√rank for a flatter profile). The first line blocks (the jump's target must
//!   arrive before anything runs), the rest stream in overlapped. The footprint is a sizeable
//!   fraction of the LLC, far beyond a small directory, and its popular part is cached by
//!   every core at once (a high sharing degree);
//! * **migratory** — a record (one line: a lock and its fields) locked with a CAS, read,
//!   updated and unlocked by one core at a time; the next core to pick it takes it from the
//!   last one's cache (peer-to-peer transfers);
//! * **private** — allocation in a per-core heap (one-line objects written sequentially at a
//!   bump pointer that wraps round), and reads of objects among the 64 allocated last.
//!
//! | app | read-shared | popularity | records | heap | shared / migratory / private |
//! |---|---|---|---|---|---|
//! | OLTP | `L`/4 (4 MB) | 1/rank | `L`/64 lines (4,096) | `P`/4 (64 KB) | 45 / 30 / 25% |
//! | Apache | `L`/8 (2 MB) | 1/rank | `L`/1024 lines (256) | `P`/2 (128 KB) | 65 / 5 / 30% |
//! | JBB | `L`/16 (1 MB) | 1/rank | `L`/256 lines (1,024) | 4`P` (1 MB) | 30 / 15 / 55% |
//! | Zeus | 3`L`/16 (3 MB) | 1/√rank | `L`/2048 lines (128) | `P`/2 (128 KB) | 65 / 5 / 30% |
//!
//! The shares are of operations picked; each kind makes about 8 accesses, so they are shares
//! of accesses too. Record counts are at least the number of cores. OLTP has the most
//! migratory records and a large footprint; Apache and Zeus are dominated by the read-shared
//! footprint with little migratory data (Zeus's larger and flatter than Apache's); JBB has
//! the largest private heaps (its allocation sweeps miss the L2).
//!
//! # What to expect
//!
//! On the Table I machine: SPEC's misses are private (omnetpp's mostly to memory, hmmer's
//! few), its invalidations and peer transfers an order of magnitude rarer per access than
//! NPB's, and Flask's directory holds its sharing at any size while an inclusive sparse
//! directory at 5% recalls its private lines. NPB's misses are mostly coherence misses
//! (transfers from the core that wrote the line), the grids themselves fitting the LLC.
//! The servers transfer lines from cache to cache (migratory records) and overflow a
//! small directory with read-shared lines (Flask's directory evictions and reconstructions
//! grow as it shrinks).
//!
//! # Checks
//!
//! Every value a program loads from data it knows is checked as it runs (read-only data
//! against the host's initial values, private data against a host copy the thread keeps);
//! the first wrong value fails the run. Afterwards the host checks simulated memory: SPEC's
//! arrays, node visit counts and result words, the OS's counters; NPB's final grids against
//! the host's run of the same kernel; the servers' records (their update counts and sums
//! against the updates counted on the host, every lock free) and heaps.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::{RunResult, WorkloadConfig, WorkloadError};
use crate::config::SimConfig;
use crate::simulation::executor::Sim;

mod npb;
mod server;
mod spec;

/// A Table II workload of Flask.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlaskApp {
    /// SPEC CPU2006 astar, rate mode: medium private footprints, graph walks.
    Astar,
    /// SPEC CPU2006 hmmer, rate mode: small private footprints that fit the private caches.
    Hmmer,
    /// SPEC CPU2006 omnetpp, rate mode: large private heaps, pointer chasing to memory.
    Omnetpp,
    /// NPB MG: a 3-D stencil with neighbour sharing at every plane.
    Mg,
    /// NPB FT: row transforms and an all-to-all transpose.
    Ft,
    /// NPB LU: a pipelined wavefront.
    Lu,
    /// OLTP (IBM DB2, TPC-C-like): large shared footprint, many migratory records.
    Oltp,
    /// Apache (SpecWeb-like): large read-shared footprint, little migratory data.
    Apache,
    /// SpecJBB: large private heaps.
    Jbb,
    /// Zeus (SpecWeb-like): as Apache, with a larger and flatter read-shared footprint.
    Zeus,
}

/// Table II's classes, which Flask sizes its controller for (§IV.B: a 1-way directory for
/// multiprogrammed and numerical workloads, 7 ways for commercial ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlaskClass {
    /// SPEC CPU2006 rate mode (multiprogrammed).
    Spec,
    /// NAS Parallel Benchmarks (numerical).
    Npb,
    /// The Wisconsin commercial suite (servers).
    Server,
}

impl FlaskApp {
    /// Every workload, in Table II's order by class (SPEC, NPB, servers).
    pub const ALL: [FlaskApp; 10] = [
        FlaskApp::Astar,
        FlaskApp::Hmmer,
        FlaskApp::Omnetpp,
        FlaskApp::Mg,
        FlaskApp::Ft,
        FlaskApp::Lu,
        FlaskApp::Oltp,
        FlaskApp::Apache,
        FlaskApp::Jbb,
        FlaskApp::Zeus,
    ];

    /// The kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            FlaskApp::Astar => "astar",
            FlaskApp::Hmmer => "hmmer",
            FlaskApp::Omnetpp => "omnetpp",
            FlaskApp::Mg => "mg",
            FlaskApp::Ft => "ft",
            FlaskApp::Lu => "lu",
            FlaskApp::Oltp => "oltp",
            FlaskApp::Apache => "apache",
            FlaskApp::Jbb => "jbb",
            FlaskApp::Zeus => "zeus",
        }
    }

    /// The workload's class.
    pub fn class(self) -> FlaskClass {
        match self {
            FlaskApp::Astar | FlaskApp::Hmmer | FlaskApp::Omnetpp => FlaskClass::Spec,
            FlaskApp::Mg | FlaskApp::Ft | FlaskApp::Lu => FlaskClass::Npb,
            FlaskApp::Oltp | FlaskApp::Apache | FlaskApp::Jbb | FlaskApp::Zeus => {
                FlaskClass::Server
            }
        }
    }
}

/// Runs `w.flask_app` on every CPU of a machine configured by `cfg`, about `w.total_ops`
/// memory operations in all, and checks its result.
pub fn run_flask_app(cfg: &SimConfig, w: &WorkloadConfig) -> Result<RunResult, WorkloadError> {
    let sizes = Sizes::of(cfg);
    let (mut sim, check) = match w.flask_app.class() {
        FlaskClass::Spec => spec::build(cfg, &sizes, w.flask_app, w.total_ops)?,
        FlaskClass::Npb => npb::build(cfg, &sizes, w.flask_app, w.total_ops)?,
        FlaskClass::Server => server::build(cfg, &sizes, w.flask_app, w.total_ops)?,
    };
    // The host time of the simulation, not of building tens of megabytes of heaps.
    let start = Instant::now();
    super::run_checked(&mut sim, start, check)
}

/// Checks simulated memory after a run.
type Checker = Box<dyn FnOnce(&Sim) -> Result<(), String>>;

/// The machine's sizes that the footprints scale with.
#[derive(Clone, Copy, Debug)]
struct Sizes {
    /// CPUs (hardware threads), each running one thread.
    cpus: usize,
    /// Bytes per line.
    lb: u64,
    /// One core's outermost private cache, in bytes (`P`).
    private: u64,
    /// The LLC, in bytes (`L`).
    llc: u64,
}

impl Sizes {
    fn of(cfg: &SimConfig) -> Sizes {
        Sizes {
            cpus: cfg.cpus(),
            lb: cfg.line_bytes,
            private: if cfg.l2.enabled {
                cfg.l2.cache.size_bytes
            } else {
                cfg.l1.size_bytes
            },
            llc: cfg.llc.size_bytes,
        }
    }

    /// Words per line.
    fn wpl(&self) -> u64 {
        self.lb / 8
    }

    /// Whole lines in `bytes` (at least `min`).
    fn lines(&self, bytes: u64, min: u64) -> u64 {
        (bytes / self.lb).max(min)
    }
}

/// The first wrong value a simulated thread saw, reported after the run.
#[derive(Clone, Default)]
struct Faults(Rc<RefCell<Option<String>>>);

impl Faults {
    /// Records a wrong value unless one was recorded already (the first is the telling one).
    fn report(&self, what: impl FnOnce() -> String) {
        let mut f = self.0.borrow_mut();
        if f.is_none() {
            *f = Some(what());
        }
    }

    /// Checks that `got` is `want`, reporting `what` otherwise.
    fn expect(&self, got: u64, want: u64, what: impl FnOnce() -> String) {
        if got != want {
            self.report(|| format!("{}: loaded {got:#x}, expected {want:#x}", what()));
        }
    }

    /// `Err` with the first wrong value, if any.
    fn result(&self) -> Result<(), String> {
        match self.0.borrow().as_ref() {
            Some(m) => Err(m.clone()),
            None => Ok(()),
        }
    }
}

/// Checks that the `n` words from `addr` hold `want(i)`; names the first that does not.
fn check_words(
    sim: &Sim,
    addr: u64,
    n: u64,
    what: &str,
    want: impl Fn(u64) -> u64,
) -> Result<(), String> {
    for i in 0..n {
        let (got, w) = (sim.read(addr + 8 * i), want(i));
        if got != w {
            return Err(format!("{what} word {i} is {got:#x}, expected {w:#x}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_classes_cover_every_app() {
        let names: Vec<_> = FlaskApp::ALL.iter().map(|a| a.name()).collect();
        assert_eq!(names.len(), 10);
        for a in FlaskApp::ALL {
            let json = serde_json::to_string(&a).unwrap();
            assert_eq!(json, format!("\"{}\"", a.name()));
        }
        let count = |c| FlaskApp::ALL.iter().filter(|a| a.class() == c).count();
        assert_eq!(
            (
                count(FlaskClass::Spec),
                count(FlaskClass::Npb),
                count(FlaskClass::Server)
            ),
            (3, 3, 4)
        );
    }
}
