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
//! The C++ runtime's functions are looked up with `dlsym(RTLD_DEFAULT)` at first use, so the
//! library does not depend on libstdc++ and C programs load it as before; a program that
//! replaces `operator new` gets its own operator (the executable comes first in that search).

use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::abi::alloc::Block;
use crate::tx::{self, TxDesc};

/// A C++ runtime function, looked up by name on first use.
struct Sym {
    name: &'static CStr,
    addr: AtomicUsize,
}

impl Sym {
    const fn new(name: &'static CStr) -> Sym {
        Sym {
            name,
            addr: AtomicUsize::new(0),
        }
    }

    /// The address, or 0 if no loaded object defines the symbol.
    fn lookup(&self) -> usize {
        let a = self.addr.load(Ordering::Relaxed);
        if a != 0 {
            return a;
        }
        // SAFETY: dlsym with a pseudo-handle and a NUL-terminated name has no preconditions.
        let a = unsafe { libc::dlsym(libc::RTLD_DEFAULT, self.name.as_ptr()) } as usize;
        self.addr.store(a, Ordering::Relaxed);
        a
    }

    /// The address; a missing symbol is fatal (the program called a C++ entry point, so it
    /// must have the C++ runtime loaded).
    fn get(&self) -> usize {
        match self.lookup() {
            0 => tx::fatal(&format!(
                "{} not found: is the C++ runtime loaded?",
                self.name.to_string_lossy()
            )),
            a => a,
        }
    }
}

/// Declares the runtime functions, each as a `Sym` and a typed accessor returning its
/// function pointer.
macro_rules! runtime_fns {
    ($($acc:ident, $sym:ident = $name:literal : $ty:ty;)*) => {$(
        static $sym: Sym = Sym::new($name);
        fn $acc() -> $ty {
            // SAFETY: the symbol is the C++ ABI function of that name, whose signature is $ty.
            unsafe { std::mem::transmute::<usize, $ty>($sym.get()) }
        }
    )*};
}

type NewFn = unsafe extern "C-unwind" fn(usize) -> *mut c_void;
type NewNothrowFn = unsafe extern "C" fn(usize, *const c_void) -> *mut c_void;
type DeleteFn = unsafe extern "C" fn(*mut c_void);
type DeleteSizedFn = unsafe extern "C" fn(*mut c_void, usize);
type DeleteNothrowFn = unsafe extern "C" fn(*mut c_void, *const c_void);
type ThrowFn = unsafe extern "C-unwind" fn(*mut c_void, *mut c_void, *mut c_void) -> !;

runtime_fns! {
    op_new, NEW = c"_Znwm": NewFn;
    op_new_array, NEW_ARRAY = c"_Znam": NewFn;
    op_new_nothrow, NEW_NOTHROW = c"_ZnwmRKSt9nothrow_t": NewNothrowFn;
    op_new_array_nothrow, NEW_ARRAY_NOTHROW = c"_ZnamRKSt9nothrow_t": NewNothrowFn;
    op_delete, DELETE = c"_ZdlPv": DeleteFn;
    op_delete_array, DELETE_ARRAY = c"_ZdaPv": DeleteFn;
    op_delete_sized, DELETE_SIZED = c"_ZdlPvm": DeleteSizedFn;
    op_delete_array_sized, DELETE_ARRAY_SIZED = c"_ZdaPvm": DeleteSizedFn;
    op_delete_nothrow, DELETE_NOTHROW = c"_ZdlPvRKSt9nothrow_t": DeleteNothrowFn;
    op_delete_array_nothrow, DELETE_ARRAY_NOTHROW = c"_ZdaPvRKSt9nothrow_t": DeleteNothrowFn;
    cxa_allocate_exception, CXA_ALLOCATE = c"__cxa_allocate_exception": NewFn;
    cxa_free_exception, CXA_FREE = c"__cxa_free_exception": DeleteFn;
    cxa_throw, CXA_THROW = c"__cxa_throw": ThrowFn;
    cxa_begin_catch, CXA_BEGIN_CATCH = c"__cxa_begin_catch": unsafe extern "C" fn(*mut c_void) -> *mut c_void;
    cxa_end_catch, CXA_END_CATCH = c"__cxa_end_catch": unsafe extern "C-unwind" fn();
}

static CXA_TM_CLEANUP: Sym = Sym::new(c"__cxa_tm_cleanup");
static CXA_GET_GLOBALS: Sym = Sym::new(c"__cxa_get_globals");

/// The head of libstdc++'s `__cxa_eh_globals` (the Itanium C++ ABI's layout).
#[repr(C)]
struct EhGlobals {
    caught_exceptions: *mut c_void,
    uncaught_exceptions: u32,
}

/// A `std::nothrow_t` to pass by reference: the operators never read it.
static NOTHROW: u8 = 0;

fn nothrow() -> *const c_void {
    &NOTHROW as *const u8 as *const c_void
}

/// The C++ exception state of a transaction (a field of [`TxDesc`]).
pub(crate) struct EhState {
    /// `__cxa_begin_catch` calls in the transaction not yet matched by `__cxa_end_catch`.
    pub catch_count: u32,
    /// The thread's uncaught-exception count before the transaction's first exception call.
    saved_uncaught: Option<u32>,
    /// The exception leaving the transaction while its commit runs (`_ITM_commitTransactionEH`).
    in_flight: *mut c_void,
}

impl EhState {
    pub(crate) const fn new() -> EhState {
        EhState {
            catch_count: 0,
            saved_uncaught: None,
            in_flight: std::ptr::null_mut(),
        }
    }
}

fn running() -> Option<&'static mut TxDesc> {
    let p = tx::current_or_null();
    // SAFETY: the thread's own leaked descriptor; no other reference is live during the call.
    let tx = unsafe { p.as_mut()? };
    (tx.nesting > 0).then_some(tx)
}

/// The thread's `__cxa_eh_globals`, if the runtime has them.
fn eh_globals() -> Option<*mut EhGlobals> {
    let f = CXA_GET_GLOBALS.lookup();
    if f == 0 {
        return None;
    }
    // SAFETY: `__cxa_get_globals` takes nothing and returns the thread's globals.
    let f = unsafe { std::mem::transmute::<usize, unsafe extern "C" fn() -> *mut EhGlobals>(f) };
    // SAFETY: as above.
    Some(unsafe { f() })
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

/// Undoes the transaction's exception effects; called by the outermost rollback before its
/// allocations are freed (those include exception objects not thrown yet).
pub(crate) fn rollback(tx: &mut TxDesc) {
    let eh = std::mem::replace(&mut tx.eh, EhState::new());
    if eh.catch_count > 0 || !eh.in_flight.is_null() {
        let f = CXA_TM_CLEANUP.get();
        // SAFETY: libstdc++'s `__cxa_tm_cleanup(unthrown, in_flight, caught_count)` ends the
        // handlers this transaction entered and deletes the exception leaving it.
        let f = unsafe {
            std::mem::transmute::<usize, unsafe extern "C" fn(*mut c_void, *mut c_void, u32)>(f)
        };
        // SAFETY: as above; the counts are this transaction's own.
        unsafe { f(std::ptr::null_mut(), eh.in_flight, eh.catch_count) };
    }
    if let (Some(n), Some(g)) = (eh.saved_uncaught, eh_globals()) {
        // SAFETY: the thread's own globals.
        unsafe { (*g).uncaught_exceptions = n };
    }
}

/// An inner transaction is cancelled: end the catch handlers it entered.
pub(crate) fn cancel_inner(tx: &mut TxDesc, catch_count: u32) {
    while tx.eh.catch_count > catch_count {
        tx.eh.catch_count -= 1;
        // SAFETY: matches a `__cxa_begin_catch` of the cancelled transaction.
        unsafe { cxa_end_catch()() };
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
            tx::commit(tx);
        }
        None => tx::fatal("_ITM_commitTransactionEH outside a transaction"),
    }
}
