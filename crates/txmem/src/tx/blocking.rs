//! Blocking `retry`, the transaction's side: an attempt that called
//! `retry` sleeps until a commit changes something it read, then reruns.
//! The registry of sleepers, and why no wake-up is lost, are in `wait`.
//!
//! Why a sleeper first gives up what it holds (its cleanups' placeholders,
//! the contention manager's precedence, a runtime-granted irrevocability):
//! the commit it waits for may need any of them.

use std::task::Waker;

use super::context::{Recorder, Retrying};
use super::state::{TxState, WordWrite};
use crate::wait;

/// Waits, after an attempt that called `retry`, until something the
/// attempt read has changed. Panics if the transaction is irrevocable at
/// the program's request (no writer could commit to wake it), and, in
/// [`wait::block_until_changed`], if it read nothing.
pub(super) fn wait_for_change(st: &mut TxState, r: &mut Retrying, record: Option<Recorder>) {
    let objects = prepare_wait(st, r, record);
    let st_ref: &TxState = st;
    wait::block_until_changed(objects, || st_ref.validate_reads());
}

/// The async form of [`wait_for_change`]: registers `waker` for a change
/// to what the attempt read and returns the registration if the reads are
/// still valid (the task may wait for the wake), or `None` if something
/// already changed (rerun at once).
pub(super) fn register_for_change(
    st: &mut TxState,
    r: &mut Retrying,
    record: Option<Recorder>,
    waker: &Waker,
) -> Option<wait::Registration> {
    let objects = prepare_wait(st, r, record);
    let registration = wait::register_task(objects, waker);
    st.validate_reads().then_some(registration)
}

/// What a waiter gives up before it waits, and the objects it waits on.
fn prepare_wait(st: &mut TxState, r: &mut Retrying, record: Option<Recorder>) -> wait::Objects {
    assert!(
        !(st.user_irrevocable && st.irrevocable.is_some()),
        "txmem: retry() in an irrevocable transaction would block every writer forever"
    );
    // A transaction the runtime serialized may wait like any other: it
    // gives up irrevocability before sleeping and starts counting
    // aborts afresh.
    if st.irrevocable.is_some() {
        st.release_irrevocability();
        r.irrevocable = false;
        r.cm.consecutive = 0;
    }
    if let Some(rec) = record {
        rec.stats().blocking_waits.add(1);
    }
    // Never sleep holding precedence (the hourglass would stop every
    // other transaction from beginning, including the one this waiter
    // needs).
    r.cm.finish();
    st.clean_up_before_wait();
    st.items
        .iter()
        .filter(|it| it.is_read())
        .map(|it| it.object_addr())
        .chain(st.reads.iter().map(|r| r.object))
        .chain(
            st.words
                .iter()
                .filter(|w| w.read != WordWrite::NOT_READ)
                .map(|w| w.object),
        )
        .collect()
}

impl TxState {
    /// Runs the cleanups of an aborted attempt ahead of its blocking wait:
    /// a placeholder its inserts left in a collection would otherwise stay
    /// in the way of every inserter of the same key until the sleeper
    /// wakes (which may need one of them to commit first).
    pub(crate) fn clean_up_before_wait(&mut self) {
        for it in self.items.iter_mut() {
            if it.has(crate::item::NEEDS_CLEANUP) {
                // SAFETY: objects outlive the transaction.
                let obj = unsafe { it.object.as_ref() };
                obj.cleanup(it, false);
                it.clear_flags(crate::item::NEEDS_CLEANUP);
            }
        }
    }
}
