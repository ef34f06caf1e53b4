//! The transaction runtime.
//!
//! @@MAP@@

mod abandon;
mod attempt;
mod blocking;
pub(crate) mod commit;
mod context;
mod handlers;
mod index;
mod irrevocable;
mod read;
mod run;
mod savepoint;
mod single;
mod state;
mod transaction;

pub use index::{set_item_index_cutoff, HASH_CUTOFF};
pub use run::{atomically, try_atomically};
pub(crate) use single::commit_single;
pub use transaction::{ItemId, Transaction};
