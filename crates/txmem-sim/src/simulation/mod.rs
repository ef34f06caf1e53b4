//! A simulation: the machine of a configuration with simulated threads on it. The executor
//! (`executor.rs`, [`Sim`](executor::Sim)) runs each simulated thread as an `async` task and
//! hands operations to the machine, which it shares with the [`Cpu`](crate::cpu::Cpu)
//! handles through [`machine::cell`](crate::machine::cell).
//!
//! The layers below, each using only those before it: [`engine`](crate::engine) (time,
//! events, per-core tables, random numbers); the memory system, coherence, network and
//! HTM state; [`machine`](crate::machine) (what one operation of one CPU does);
//! [`cpu`](crate::cpu) (the API simulated code calls). This module sits on all of them.

pub mod executor;
