//! GCC's TM ABI (`libitm.h`), one file per group of entry points. Every entry point is a
//! `#[no_mangle] extern "C"` function (or an assembly stub) exported by the cdylib.

pub(crate) mod alloc;
pub(crate) mod barriers;
pub(crate) mod begin;
pub(crate) mod control;
pub(crate) mod cxx;
pub(crate) mod memory;
