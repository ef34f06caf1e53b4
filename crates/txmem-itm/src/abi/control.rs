//! Commit, cancel, queries, mode changes, user actions, the clone table and version calls.

use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Mutex;

use crate::fatal::fatal;
use crate::tx::desc::running;
use crate::tx::lifecycle;

#[no_mangle]
extern "C" fn _ITM_commitTransaction() {
    match running() {
        Some(tx) => lifecycle::commit(tx),
        None => fatal("_ITM_commitTransaction outside a transaction"),
    }
}

const USER_ABORT: u32 = 1;
const OUTER_ABORT: u32 = 16;

#[no_mangle]
extern "C" fn _ITM_abortTransaction(reason: u32) -> ! {
    let Some(tx) = running() else {
        fatal("_ITM_abortTransaction outside a transaction")
    };
    if reason & USER_ABORT == 0 {
        fatal("_ITM_abortTransaction with a reason other than a user cancel");
    }
    lifecycle::cancel(tx, reason & OUTER_ABORT != 0)
}

#[no_mangle]
extern "C" fn _ITM_inTransaction() -> u32 {
    match running() {
        None => 0,
        Some(tx) if tx.irrevocable => 2,
        Some(_) => 1,
    }
}

#[no_mangle]
extern "C" fn _ITM_getTransactionId() -> u64 {
    // 1 is the ABI's id for "no transaction"; ids of transactions start at 2.
    running().map_or(1, lifecycle::transaction_id)
}

#[no_mangle]
extern "C" fn _ITM_changeTransactionMode(mode: u32) {
    // modeSerialIrrevocable is the only mode the ABI defines.
    if mode != 0 {
        fatal("_ITM_changeTransactionMode with an unknown mode");
    }
    if let Some(tx) = running() {
        lifecycle::go_irrevocable(tx);
    }
}

#[no_mangle]
unsafe extern "C" fn _ITM_addUserCommitAction(
    f: unsafe extern "C" fn(*mut c_void),
    _resuming_tx: u64,
    arg: *mut c_void,
) {
    match running() {
        Some(tx) => tx.commit_actions.push((f, arg)),
        // SAFETY: outside a transaction the action has nothing to wait for.
        None => unsafe { f(arg) },
    }
}

#[no_mangle]
extern "C" fn _ITM_addUserUndoAction(f: unsafe extern "C" fn(*mut c_void), arg: *mut c_void) {
    if let Some(tx) = running() {
        if !tx.irrevocable {
            tx.undo_actions.push((f, arg));
        }
    }
}

/// Refused, as GCC's libitm refuses it: the ABI does not say what forgetting references
/// means for each log (GCC's own testsuite expects the call to fail), so the program stops
/// with EXIT_FAILURE and a message rather than going on as if the call had done something.
#[no_mangle]
extern "C" fn _ITM_dropReferences(_p: *mut c_void, _len: usize) {
    eprintln!("txmem-itm: _ITM_dropReferences is not supported");
    std::process::exit(libc::EXIT_FAILURE)
}

// ---------------------------------------------------------------- clone tables

/// A table the compiler emits per object: pairs of (function, its transactional clone).
#[derive(Clone, Copy)]
struct CloneTable {
    pairs: *const [usize; 2],
    len: usize,
}
// SAFETY: the tables are read-only data in the program's objects.
unsafe impl Send for CloneTable {}

/// The registered tables, in registration order; registration and deregistration take it.
static CLONE_TABLES: Mutex<Vec<CloneTable>> = Mutex::new(Vec::new());

/// Every registered (function, clone) pair, sorted by function, for the lookups that each
/// indirect call in a transaction makes: published whole after each registration or
/// deregistration and searched without a lock. A replaced index is leaked, since a lookup
/// may still be reading it; there is one per object loaded or unloaded.
static CLONE_INDEX: AtomicPtr<Vec<(usize, usize)>> = AtomicPtr::new(std::ptr::null_mut());

/// Rebuilds and publishes the index from `tables`; called with `CLONE_TABLES` held, so
/// rebuilds do not race.
fn publish_index(tables: &[CloneTable]) {
    let mut index: Vec<(usize, usize)> = Vec::new();
    for t in tables {
        // SAFETY: registered tables stay mapped until deregistered (under the caller's lock).
        let pairs = unsafe { std::slice::from_raw_parts(t.pairs, t.len) };
        index.extend(pairs.iter().filter(|p| p[1] != 0).map(|p| (p[0], p[1])));
    }
    // A stable sort, then the first of equal keys kept: the earliest table's pair wins, as
    // a search of the tables in registration order would find.
    index.sort_by_key(|e| e.0);
    index.dedup_by_key(|e| e.0);
    CLONE_INDEX.store(Box::into_raw(Box::new(index)), Ordering::Release);
}

#[no_mangle]
extern "C" fn _ITM_registerTMCloneTable(table: *const [usize; 2], len: usize) {
    let mut t = CLONE_TABLES.lock().unwrap_or_else(|e| e.into_inner());
    t.push(CloneTable { pairs: table, len });
    publish_index(&t);
}

#[no_mangle]
extern "C" fn _ITM_deregisterTMCloneTable(table: *const [usize; 2]) {
    let mut t = CLONE_TABLES.lock().unwrap_or_else(|e| e.into_inner());
    t.retain(|c| !std::ptr::eq(c.pairs, table));
    publish_index(&t);
}

fn find_clone(f: usize) -> Option<usize> {
    let index = CLONE_INDEX.load(Ordering::Acquire);
    // SAFETY: a published index is never freed or changed (replaced ones are leaked).
    let index = unsafe { index.as_ref()? };
    index
        .binary_search_by_key(&f, |e| e.0)
        .ok()
        .map(|i| index[i].1)
}

/// The clone of `f`, or `f` itself after going irrevocable (an uninstrumented function may do
/// anything).
#[no_mangle]
extern "C" fn _ITM_getTMCloneOrIrrevocable(f: *mut c_void) -> *mut c_void {
    if let Some(c) = find_clone(f as usize) {
        return c as *mut c_void;
    }
    _ITM_changeTransactionMode(0);
    f
}

#[no_mangle]
extern "C" fn _ITM_getTMCloneSafe(f: *mut c_void) -> *mut c_void {
    match find_clone(f as usize) {
        Some(c) => c as *mut c_void,
        None => fatal("no transactional clone for a function called as transaction_safe"),
    }
}

// ---------------------------------------------------------------- versions and errors

const VERSION_NO: i32 = 90;

#[no_mangle]
extern "C" fn _ITM_versionCompatible(version: i32) -> i32 {
    (version == VERSION_NO) as i32
}

#[no_mangle]
extern "C" fn _ITM_libraryVersion() -> *const c_char {
    c"txmem-itm 0.90 (GCC TM ABI)".as_ptr()
}

/// `_ITM_srcLocation`: only `psource` is read, the rest gives it its offset.
#[repr(C)]
#[allow(dead_code)]
struct SrcLocation {
    reserved_1: u32,
    flags: u32,
    reserved_2: u32,
    reserved_3: u32,
    psource: *const c_char,
}

#[no_mangle]
unsafe extern "C" fn _ITM_error(loc: *const SrcLocation, code: i32) -> ! {
    // SAFETY: the compiler passes a valid location or null; `psource` is a C string or null.
    let src = unsafe {
        loc.as_ref().filter(|l| !l.psource.is_null()).map(|l| {
            std::ffi::CStr::from_ptr(l.psource)
                .to_string_lossy()
                .into_owned()
        })
    };
    fatal(&format!(
        "_ITM_error {code} at {}",
        src.as_deref().unwrap_or("an unknown location")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Addresses no real function has; the tests share the process-wide tables, so each
    // uses its own range.
    static FIRST: [[usize; 2]; 3] = [
        [0x7000_0300, 0x7100_0300],
        [0x7000_0100, 0x7100_0100],
        [0x7000_0200, 0],
    ];
    static SECOND: [[usize; 2]; 2] = [[0x7000_0100, 0x7200_0100], [0x7000_0400, 0x7200_0400]];

    #[test]
    fn clone_lookup_follows_registration() {
        _ITM_registerTMCloneTable(FIRST.as_ptr(), FIRST.len());
        assert_eq!(find_clone(0x7000_0300), Some(0x7100_0300));
        assert_eq!(find_clone(0x7000_0100), Some(0x7100_0100));
        assert_eq!(
            find_clone(0x7000_0200),
            None,
            "a pair without a clone is no clone"
        );
        assert_eq!(find_clone(0x7000_0400), None);
        _ITM_registerTMCloneTable(SECOND.as_ptr(), SECOND.len());
        assert_eq!(
            find_clone(0x7000_0100),
            Some(0x7100_0100),
            "the earlier table wins"
        );
        assert_eq!(find_clone(0x7000_0400), Some(0x7200_0400));
        _ITM_deregisterTMCloneTable(FIRST.as_ptr());
        assert_eq!(find_clone(0x7000_0100), Some(0x7200_0100));
        assert_eq!(find_clone(0x7000_0300), None);
        _ITM_deregisterTMCloneTable(SECOND.as_ptr());
        assert_eq!(find_clone(0x7000_0400), None);
    }
}
