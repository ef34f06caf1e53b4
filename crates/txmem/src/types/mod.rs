//! The built-in transactional datatypes.

mod cell;
mod slot;
mod tarray;
mod tbox;
mod tcounter;

pub use tarray::TArray;
pub use tbox::TBox;
pub use tcounter::TCounter;
