//! `_ITM_malloc`, `_ITM_calloc`, `_ITM_free`: an allocation made by a transaction that aborts
//! is freed; a free inside a transaction waits until it commits (and, for a write-back commit,
//! until concurrent readers are gone), since an abort must be able to bring the block back.

use std::ffi::c_void;

use crate::tx::desc::{running, Block};

impl Block {
    /// A block from `malloc` or `calloc` of `size` bytes (0 where the size is not known).
    fn malloced(ptr: *mut c_void, size: usize) -> Block {
        Block {
            ptr,
            size,
            release: release_free,
        }
    }
}

unsafe extern "C" fn release_free(p: *mut c_void, _: usize) {
    // SAFETY: `p` came from malloc or calloc.
    unsafe { libc::free(p) }
}

#[no_mangle]
extern "C" fn _ITM_malloc(size: usize) -> *mut c_void {
    // SAFETY: plain libc allocation.
    let p = unsafe { libc::malloc(size) };
    if let Some(tx) = running() {
        if !p.is_null() && !tx.irrevocable {
            tx.allocs.push(Block::malloced(p, size));
        }
    }
    p
}

#[no_mangle]
extern "C" fn _ITM_calloc(n: usize, size: usize) -> *mut c_void {
    // SAFETY: plain libc allocation.
    let p = unsafe { libc::calloc(n, size) };
    if let Some(tx) = running() {
        if !p.is_null() && !tx.irrevocable {
            // calloc failed (null) had the product overflowed.
            tx.allocs.push(Block::malloced(p, n * size));
        }
    }
    p
}

#[no_mangle]
unsafe extern "C" fn _ITM_free(p: *mut c_void) {
    if p.is_null() {
        return;
    }
    match running() {
        Some(tx) if !tx.irrevocable => tx.frees.push(Block::malloced(p, 0)),
        // SAFETY: the program frees a block it owns; outside a transaction or when it cannot
        // abort, at once.
        _ => unsafe { libc::free(p) },
    }
}
