//! # txmem-sim
//!
//! A deterministic discrete-event simulator of a multicore memory system — private L1
//! (and optional L2) caches, a shared last-level cache, memory, MESI snooping coherence —
//! with a configurable hardware transactional memory modelled on MetaTM (eager or lazy
//! versioning and conflict detection, contention policies, backoff, stall-on-conflict,
//! `xpush`/`xpop`) and POWER8 (suspend/resume, rollback-only transactions).
//!
//! Simulated threads are Rust `async` tasks: every memory operation is an await point that
//! completes at the simulated time the memory model decides. Memory holds real values, so
//! workloads compute real results. The same configuration and seed give identical
//! [`Stats`], bit for bit.
//!
//! Aborts are reported as `txmem-htm`'s [`AbortStatus`], the vocabulary the real RTM backend
//! of `txmem-elide` uses, and [`elision`] runs that crate's retry and coarsening policies
//! ([`policy`]) on the simulated machine, so simulated lock elision makes the decisions the
//! real locks make.
//!
//! ```
//! use txmem_sim::{Sim, SimConfig};
//! let mut sim = Sim::new(SimConfig { cores: 4, ..SimConfig::default() }).unwrap();
//! let lock = sim.alloc_lines(1);
//! let counter = sim.alloc_lines(1);
//! for core in 0..4 {
//!     sim.spawn(core, move |cpu| async move {
//!         for _ in 0..5 {
//!             // test-and-test-and-set spinlock
//!             loop {
//!                 if cpu.load(lock).await == 0 && cpu.cas(lock, 0, 1).await == 0 {
//!                     break;
//!                 }
//!             }
//!             let v = cpu.load(counter).await;
//!             cpu.store(counter, v + 1).await;
//!             cpu.store(lock, 0).await;
//!         }
//!     });
//! }
//! let stats = sim.run().unwrap();
//! assert_eq!(sim.read(counter), 20);
//! assert!(stats.coherence.bus_transactions > 0);
//! ```
#![warn(missing_docs)]

pub mod coherence;
pub mod config;
pub mod cpu;
pub mod elision;
pub mod energy;
pub mod engine;
pub mod experiments;
pub mod htm;
pub mod locks;
pub mod machine;
pub mod memory;
pub mod network;
pub mod simulation;
pub mod stats;
pub mod workloads;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

pub use config::SimConfig;
pub use cpu::Cpu;
pub use htm::{AbortStatus, HtmAbortCause};
pub use simulation::executor::{Sim, SimError};
pub use stats::Stats;
pub use txmem_htm::policy;
