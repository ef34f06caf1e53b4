//! The discrete-event engine: simulated time, the event queue, the seeded random generator
//! and the single-threaded executor that runs simulated threads as Rust `async` tasks.

pub mod event_queue;
pub mod executor;
pub mod machine_cell;
pub mod per_core;
pub mod rng;
pub mod time;
