//! The built-in transactional datatypes.

pub(crate) mod cell;
mod history;
mod slot;
mod tarray;
mod tbox;
mod tcounter;

pub use tarray::TArray;
pub use tbox::TBox;
pub use tcounter::TCounter;
