//! The C++ entry points that `g++ -fgnu-tm` emits: the transactional clones of the global
//! `operator new`/`delete` (`_ZGTt…`) and the exception calls `_ITM_cxa_*`, with GCC's
//! libitm semantics (its `alloc_cpp.cc` and `eh_cpp.cc`).
//!
//! * A transactional `new` calls the real operator and records the block, so an abort frees
//!   it with the matching `delete`; a transactional `delete` is deferred to commit.
//! * An exception object allocated in a transaction is freed if the transaction aborts before
//!   throwing it; once thrown it belongs to the C++ runtime. Catch handlers entered in the
//!   transaction and not left are ended on abort, an exception leaving the transaction through
//!   a commit that fails is deleted (`__cxa_tm_cleanup`), and the thread's count of uncaught
//!   exceptions is put back.
//!
//! The C++ runtime's functions, and the exception state these calls keep in the descriptor,
//! are in `cxxrt.rs`.
use std::ffi::c_void;

use crate::cxxrt::{
    cxa_allocate_exception, cxa_begin_catch, cxa_end_catch, cxa_free_exception, cxa_throw,
    eh_globals, op_delete, op_delete_array, op_delete_array_nothrow, op_delete_array_sized,
    op_delete_nothrow, op_delete_sized, op_new, op_new_array, op_new_array_nothrow, op_new_nothrow,
};
use crate::fatal::fatal;
use crate::tx::desc::{running, Block, TxDesc};
use crate::tx::lifecycle;

/// A `std::nothrow_t` to pass by reference: the operators never read it.
static NOTHROW: u8 = 0;

fn nothrow() -> *const c_void {
    &NOTHROW as *const u8 as *const c_void
}

/// Remembers the uncaught-exception count before the transaction's first exception call, so an
/// abort can put it back (only throws and catches in the transaction change it).
fn save_uncaught(tx: &mut TxDesc) {
    if tx.eh.saved_uncaught.is_none() {
        if let Some(g) = eh_globals() {
            // SAFETY: the thread's own globals, valid for the thread's lifetime.
            tx.eh.saved_uncaught = Some(unsafe { (*g).uncaught_exceptions });
        }
    }
}

/// Forgets `p` in the allocation log (its owner is now the C++ runtime); the entry stays, as
/// an empty one, so nested transactions' log positions still hold.
fn discard_allocation(tx: &mut TxDesc, p: *mut c_void) {
    if let Some(b) = tx.allocs.iter_mut().rev().find(|b| b.ptr == p) {
        b.ptr = std::ptr::null_mut();
    }
}

// ---------------------------------------------------------------- operator new / delete

unsafe extern "C" fn release_delete(p: *mut c_void, _: usize) {
    // SAFETY: `p` came from the matching `operator new`.
    unsafe { op_delete()(p) }
}
unsafe extern "C" fn release_delete_array(p: *mut c_void, _: usize) {
    // SAFETY: `p` came from the matching `operator new[]`.
    unsafe { op_delete_array()(p) }
}
unsafe extern "C" fn release_delete_sized(p: *mut c_void, size: usize) {
    // SAFETY: `p` came from `operator new` with `size` bytes.
    unsafe { op_delete_sized()(p, size) }
}
unsafe extern "C" fn release_delete_array_sized(p: *mut c_void, size: usize) {
    // SAFETY: `p` came from `operator new[]` with `size` bytes.
    unsafe { op_delete_array_sized()(p, size) }
}
unsafe extern "C" fn release_delete_nothrow(p: *mut c_void, _: usize) {
    // SAFETY: `p` came from the matching nothrow `operator new`.
    unsafe { op_delete_nothrow()(p, nothrow()) }
}
unsafe extern "C" fn release_delete_array_nothrow(p: *mut c_void, _: usize) {
    // SAFETY: `p` came from the matching nothrow `operator new[]`.
    unsafe { op_delete_array_nothrow()(p, nothrow()) }
}
unsafe extern "C" fn release_exception(p: *mut c_void, _: usize) {
    // SAFETY: `p` came from `__cxa_allocate_exception` and was never thrown.
    unsafe { cxa_free_exception()(p) }
}

type Release = unsafe extern "C" fn(*mut c_void, usize);

/// Records a block allocated in the running transaction, to be released on abort.
fn record_allocation(p: *mut c_void, release: Release) -> *mut c_void {
    if let Some(tx) = running() {
        if !p.is_null() && !tx.irrevocable {
            tx.allocs.push(Block {
                ptr: p,
                size: 0,
                release,
            });
        }
    }
    p
}

/// Frees `p` at commit (or now, outside a transaction or in an irrevocable one).
fn forget_allocation(p: *mut c_void, size: usize, release: Release) {
    if p.is_null() {
        return;
    }
    match running() {
        Some(tx) if !tx.irrevocable => tx.frees.push(Block {
            ptr: p,
            size,
            release,
        }),
        // SAFETY: the program deletes a block it owns with the matching operator.
        _ => unsafe { release(p, size) },
    }
}

/// `operator new(size_t)`, transactional clone.
#[no_mangle]
unsafe extern "C-unwind" fn _ZGTtnwm(size: usize) -> *mut c_void {
    // SAFETY: the real operator; it throws `bad_alloc` through this frame on failure.
    let p = unsafe { op_new()(size) };
    record_allocation(p, release_delete)
}

/// `operator new[](size_t)`, transactional clone.
#[no_mangle]
unsafe extern "C-unwind" fn _ZGTtnam(size: usize) -> *mut c_void {
    // SAFETY: as for `_ZGTtnwm`.
    let p = unsafe { op_new_array()(size) };
    record_allocation(p, release_delete_array)
}

/// `operator new(size_t, const nothrow_t&)`, transactional clone.
#[no_mangle]
unsafe extern "C" fn _ZGTtnwmRKSt9nothrow_t(size: usize, nt: *const c_void) -> *mut c_void {
    // SAFETY: the real nothrow operator; returns null on failure.
    let p = unsafe { op_new_nothrow()(size, nt) };
    record_allocation(p, release_delete_nothrow)
}

/// `operator new[](size_t, const nothrow_t&)`, transactional clone.
#[no_mangle]
unsafe extern "C" fn _ZGTtnamRKSt9nothrow_t(size: usize, nt: *const c_void) -> *mut c_void {
    // SAFETY: as above.
    let p = unsafe { op_new_array_nothrow()(size, nt) };
    record_allocation(p, release_delete_array_nothrow)
}

/// `operator delete(void*)`, transactional clone: deferred to commit.
#[no_mangle]
extern "C" fn _ZGTtdlPv(p: *mut c_void) {
    forget_allocation(p, 0, release_delete)
}

/// `operator delete[](void*)`, transactional clone.
#[no_mangle]
extern "C" fn _ZGTtdaPv(p: *mut c_void) {
    forget_allocation(p, 0, release_delete_array)
}

/// `operator delete(void*, size_t)`, transactional clone.
#[no_mangle]
extern "C" fn _ZGTtdlPvm(p: *mut c_void, size: usize) {
    forget_allocation(p, size, release_delete_sized)
}

/// `operator delete[](void*, size_t)`, transactional clone. GCC's libitm lacks it, though
/// g++ 12 calls it for `delete[]` of a class with a destructor.
#[no_mangle]
extern "C" fn _ZGTtdaPvm(p: *mut c_void, size: usize) {
    forget_allocation(p, size, release_delete_array_sized)
}

/// `operator delete(void*, const nothrow_t&)`, transactional clone.
#[no_mangle]
extern "C" fn _ZGTtdlPvRKSt9nothrow_t(p: *mut c_void, _nt: *const c_void) {
    forget_allocation(p, 0, release_delete_nothrow)
}

/// `operator delete[](void*, const nothrow_t&)`, transactional clone.
#[no_mangle]
extern "C" fn _ZGTtdaPvRKSt9nothrow_t(p: *mut c_void, _nt: *const c_void) {
    forget_allocation(p, 0, release_delete_array_nothrow)
}

/// `operator delete(void*, size_t, const nothrow_t&)`, transactional clone (libitm 1.1; as
/// there, it calls the nothrow delete, the C++ runtime having no sized nothrow one).
#[no_mangle]
extern "C" fn _ZGTtdlPvmRKSt9nothrow_t(p: *mut c_void, _size: usize, _nt: *const c_void) {
    forget_allocation(p, 0, release_delete_nothrow)
}

// ---------------------------------------------------------------- exceptions

/// Allocates an exception object; freed if the transaction aborts before throwing it. Until
/// it is thrown the object is the transaction's private memory, written in place
/// ([`TxDesc::is_private`] says why).
#[no_mangle]
unsafe extern "C-unwind" fn _ITM_cxa_allocate_exception(size: usize) -> *mut c_void {
    if let Some(tx) = running() {
        save_uncaught(tx);
    }
    // SAFETY: the real allocator (it terminates the program if it cannot allocate).
    let p = unsafe { cxa_allocate_exception()(size) };
    if let Some(tx) = running() {
        if !p.is_null() {
            tx.unthrown.push((p as usize, p as usize + size));
        }
    }
    record_allocation(p, release_exception)
}

/// `p` is no longer the transaction's private memory: thrown, or freed.
fn forget_unthrown(tx: &mut TxDesc, p: *mut c_void) {
    if let Some(i) = tx.unthrown.iter().rposition(|&(lo, _)| lo == p as usize) {
        tx.unthrown.swap_remove(i);
    }
}

/// Frees an exception object at once (its constructor threw): no longer freed on abort.
#[no_mangle]
unsafe extern "C" fn _ITM_cxa_free_exception(p: *mut c_void) {
    if let Some(tx) = running() {
        discard_allocation(tx, p);
        forget_unthrown(tx, p);
    }
    // SAFETY: `p` came from `__cxa_allocate_exception` and was not thrown.
    unsafe { cxa_free_exception()(p) }
}

/// Throws: the C++ runtime owns the object from here, so an abort no longer frees it.
#[no_mangle]
unsafe extern "C-unwind" fn _ITM_cxa_throw(
    obj: *mut c_void,
    tinfo: *mut c_void,
    dest: *mut c_void,
) -> ! {
    if let Some(tx) = running() {
        save_uncaught(tx);
        discard_allocation(tx, obj);
        forget_unthrown(tx, obj);
    }
    // SAFETY: the arguments are the compiler's, for the real `__cxa_throw`; the exception
    // unwinds through this frame, which holds nothing to drop.
    unsafe { cxa_throw()(obj, tinfo, dest) }
}

/// Enters a catch handler, counted so an abort can end it.
#[no_mangle]
unsafe extern "C" fn _ITM_cxa_begin_catch(exc: *mut c_void) -> *mut c_void {
    if let Some(tx) = running() {
        save_uncaught(tx);
        tx.eh.catch_count += 1;
    }
    // SAFETY: the compiler passes the caught exception's unwind header.
    unsafe { cxa_begin_catch()(exc) }
}

/// Leaves a catch handler.
#[no_mangle]
unsafe extern "C-unwind" fn _ITM_cxa_end_catch() {
    if let Some(tx) = running() {
        tx.eh.catch_count = tx.eh.catch_count.saturating_sub(1);
    }
    // SAFETY: matches the handler's `__cxa_begin_catch` (the destructor of the exception
    // object may throw, hence C-unwind).
    unsafe { cxa_end_catch()() }
}

/// Commits the transaction as the exception `exc` leaves it (GCC's semantics: a transaction
/// an exception leaves is committed). If the commit fails the transaction runs again, and
/// `exc` is deleted by the rollback.
#[no_mangle]
extern "C" fn _ITM_commitTransactionEH(exc: *mut c_void) {
    match running() {
        Some(tx) => {
            if tx.nesting == 1 {
                tx.eh.in_flight = exc;
            }
            lifecycle::commit(tx);
        }
        None => fatal("_ITM_commitTransactionEH outside a transaction"),
    }
}
