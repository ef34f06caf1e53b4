//! The discrete-event engine, generic over what it simulates: simulated time, the event
//! queue, per-core tables and the seeded random generator. The executor that runs simulated
//! threads on the machine is one layer up, in [`simulation`](crate::simulation).

pub mod event_queue;
pub mod per_core;
pub mod rng;
pub mod time;
