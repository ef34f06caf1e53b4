//! Blocking `retry`: sleep until a commit changes something the transaction read.
//!
//! No lost wake-ups, without a fence on the commit path: a waiter announces
//! itself (SeqCst increment of [`WAITERS`]) and then re-checks its reads with
//! SeqCst loads; a committer locks its write set (SeqCst read-modify-writes)
//! and then reads [`WAITERS`] (SeqCst). In the single total order of these
//! operations, either the committer sees the waiter and wakes it after
//! installing, or the waiter's re-check comes after the committer's lock and
//! sees the item locked or changed, and does not sleep.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crossbeam_utils::sync::{Parker, Unparker};
use parking_lot::Mutex;

use crate::sync::{protocol_static, AtomicUsize};

struct Waiter {
    unparker: Unparker,
    /// Addresses of the objects the waiting transaction read (sorted).
    objects: Vec<usize>,
}

protocol_static! {
    static WAITERS: AtomicUsize = AtomicUsize::new(0);
}
static REGISTRY: Mutex<Vec<Arc<Waiter>>> = Mutex::new(Vec::new());

/// True if some transaction is blocked in `retry` (read after locking).
#[inline]
pub(crate) fn waiters_present() -> bool {
    WAITERS.load(Ordering::SeqCst) != 0
}

/// Wakes every waiter that read one of `written` objects.
pub(crate) fn wake_readers_of(written: impl Iterator<Item = usize> + Clone) {
    let reg = REGISTRY.lock();
    for w in reg.iter() {
        if written.clone().any(|a| w.objects.binary_search(&a).is_ok()) {
            w.unparker.unpark();
        }
    }
}

thread_local! {
    static PARKER: Parker = Parker::new();
}

/// Blocks until `still_valid` returns false. `objects` are the addresses of
/// the objects read.
pub(crate) fn block_until_changed(mut objects: Vec<usize>, still_valid: impl Fn() -> bool) {
    assert!(
        !objects.is_empty(),
        "txmem: retry() in a transaction that read nothing would block forever"
    );
    objects.sort_unstable();
    objects.dedup();
    PARKER.with(|parker| {
        let me = Arc::new(Waiter {
            unparker: parker.unparker().clone(),
            objects,
        });
        REGISTRY.lock().push(me.clone());
        WAITERS.fetch_add(1, Ordering::SeqCst);
        while still_valid() {
            parker.park();
        }
        WAITERS.fetch_sub(1, Ordering::SeqCst);
        REGISTRY.lock().retain(|w| !Arc::ptr_eq(w, &me));
    });
}
