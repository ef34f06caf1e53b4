//! The `txmem` command of the txmem toolkit (`txmem bench`, `txmem db`,
//! `txmem stamp`, `txmem sim`),
//! and the benchmark harness it measures with.
//!
//! The harness is public so that the criterion benches of this crate
//! measure exactly the rows `txmem bench` measures: see [`harness`]. The
//! rest is the command: [`run`] parses the arguments and runs a subcommand.

#![warn(missing_docs)]

mod bench;
mod cli;
mod db;
mod failure;
pub mod harness;
mod measure;
mod output;
mod plot;
mod serve;
mod sim;
mod stamp;

pub use cli::run;
