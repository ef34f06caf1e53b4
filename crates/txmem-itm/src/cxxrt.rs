//! The C++ runtime as this library finds it, and a transaction's exception state.
//!
//! The runtime's functions are looked up with `dlsym(RTLD_DEFAULT)` at first use, so the
//! library does not depend on libstdc++ and C programs load it as before; a program that
//! replaces `operator new` gets its own operator (the executable comes first in that search).
//! The C++ entry points that use them are in `abi/cxx.rs`; the paths that end a transaction
//! use [`roll_back`] and [`cancel_inner`] here.

use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::fatal::fatal;

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
            0 => fatal(&format!(
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
        pub(crate) fn $acc() -> $ty {
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
pub(crate) struct EhGlobals {
    caught_exceptions: *mut c_void,
    pub uncaught_exceptions: u32,
}

/// The C++ exception state of a transaction (a field of its descriptor).
pub(crate) struct EhState {
    /// `__cxa_begin_catch` calls in the transaction not yet matched by `__cxa_end_catch`.
    pub catch_count: u32,
    /// The thread's uncaught-exception count before the transaction's first exception call.
    pub saved_uncaught: Option<u32>,
    /// The exception leaving the transaction while its commit runs (`_ITM_commitTransactionEH`).
    pub in_flight: *mut c_void,
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

/// The thread's `__cxa_eh_globals`, if the runtime has them.
pub(crate) fn eh_globals() -> Option<*mut EhGlobals> {
    let f = CXA_GET_GLOBALS.lookup();
    if f == 0 {
        return None;
    }
    // SAFETY: `__cxa_get_globals` takes nothing and returns the thread's globals.
    let f = unsafe { std::mem::transmute::<usize, unsafe extern "C" fn() -> *mut EhGlobals>(f) };
    // SAFETY: as above.
    Some(unsafe { f() })
}

/// Undoes the transaction's exception effects; called by the outermost rollback before its
/// allocations are freed (those include exception objects not thrown yet).
pub(crate) fn roll_back(eh: &mut EhState) {
    let eh = std::mem::replace(eh, EhState::new());
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
pub(crate) fn cancel_inner(eh: &mut EhState, catch_count: u32) {
    while eh.catch_count > catch_count {
        eh.catch_count -= 1;
        // SAFETY: matches a `__cxa_begin_catch` of the cancelled transaction.
        unsafe { cxa_end_catch()() };
    }
}
