//! The paths that start and end a transaction: begin (outermost or nested), commit, abort
//! and restart, cancel, and the switch to serial irrevocable mode.

use std::sync::atomic::{AtomicU64, Ordering};

use super::desc::{
    current, Nested, TxDesc, A_ABORT, A_RESTORE_LIVE, A_RUN_INSTRUMENTED, A_RUN_UNINSTRUMENTED,
    A_SAVE_LIVE, INACTIVE, PR_DOES_GO_IRREVOCABLE, PR_HAS_NO_ABORT, PR_INSTRUMENTED,
    PR_UNINSTRUMENTED,
};
use super::gate::{self, enter_ordinary, enter_serial, leave_serial, quiesce, quiesce_proxy};
use crate::checkpoint::{longjmp, JmpBuf};
use crate::config::{self, ContentionPolicy, MethodKind};
use crate::cxxrt;
use crate::fatal::fatal;
use crate::method::{AbortCause, Privatization};
use crate::stats::Event;

static NEXT_TX_ID: AtomicU64 = AtomicU64::new(2);

/// The running transaction's id (ids start at 2: libitm answers 1 outside a transaction).
pub(crate) fn transaction_id(tx: &mut TxDesc) -> u64 {
    if tx.tx_id == 0 {
        tx.tx_id = NEXT_TX_ID.fetch_add(1, Ordering::Relaxed);
    }
    tx.tx_id
}

/// Starts (or restarts) the outermost transaction in the mode its history asks for, and
/// returns the code-path bits of the action.
fn start_outermost(tx: &mut TxDesc) -> u32 {
    let cfg = config::get();
    let props = tx.props;
    let must_serial_irr = props & PR_INSTRUMENTED == 0 || props & PR_DOES_GO_IRREVOCABLE != 0;
    let reason = tx.restart_serial.take();
    if must_serial_irr || reason.is_some() || cfg.method == MethodKind::Serial {
        if must_serial_irr {
            tx.record(Event::StartedIrrevocable);
        } else if let Some(r) = reason {
            tx.record(r);
        } else {
            tx.record(Event::SerialMethod);
        }
        tx.method = MethodKind::Serial;
        tx.state.store(INACTIVE, Ordering::SeqCst);
        enter_serial(tx);
        tx.serial = true;
        tx.irrevocable = must_serial_irr || reason == Some(Event::SwitchedMidFlight);
        tx.serial_version = crate::orec::CLOCK.fetch_add(1, Ordering::AcqRel) + 1;
        if tx.irrevocable && props & PR_UNINSTRUMENTED != 0 {
            return A_RUN_UNINSTRUMENTED;
        }
        return A_RUN_INSTRUMENTED;
    }
    tx.method = cfg.method;
    tx.serial = false;
    tx.irrevocable = false;
    tx.start = enter_ordinary(tx);
    let method = tx.method;
    method.begin(tx);
    A_RUN_INSTRUMENTED
}

/// `_ITM_beginTransaction` after the checkpoint was taken into `jb`.
pub(crate) fn begin(props: u32, jb: &JmpBuf) -> u32 {
    // SAFETY: the thread's own descriptor; no other reference to it is live in this thread.
    let tx = unsafe { &mut *current() };
    if tx.nesting > 0 {
        tx.nesting += 1;
        if props & PR_HAS_NO_ABORT == 0 && !tx.irrevocable {
            // The inner transaction may cancel: remember where its logs start.
            let n = Nested {
                level: tx.nesting,
                jb: jb.copy_word_by_word(),
                redo: tx.redo.clone(),
                undo_len: tx.undo.len(),
                undo_data_len: tx.undo_data.len(),
                allocs_len: tx.allocs.len(),
                frees_len: tx.frees.len(),
                commit_actions_len: tx.commit_actions.len(),
                undo_actions_len: tx.undo_actions.len(),
                eh_catch_count: tx.eh.catch_count,
            };
            tx.nested.push(n);
            return A_RUN_INSTRUMENTED | A_SAVE_LIVE;
        }
        if tx.irrevocable && props & PR_UNINSTRUMENTED != 0 {
            return A_RUN_UNINSTRUMENTED;
        }
        return A_RUN_INSTRUMENTED;
    }
    tx.nesting = 1;
    tx.props = props;
    tx.jb = jb.copy_word_by_word();
    tx.site = jb.rip;
    tx.consecutive_aborts = 0;
    tx.restart_serial = None;
    tx.tx_id = 0;
    tx.record(Event::Begin);
    start_outermost(tx) | A_SAVE_LIVE
}

// ---------------------------------------------------------------- ending

fn finish(tx: &mut TxDesc) {
    tx.nesting = 0;
    // Release, not SeqCst: whoever waits for this descriptor (the gate, a quiescing writer)
    // only needs to see it eventually, after the transaction's accesses; a full fence here
    // would wait for the write-back's stores to drain.
    tx.state.store(INACTIVE, Ordering::Release);
    if tx.serial {
        tx.serial = false;
        tx.irrevocable = false;
        leave_serial();
    }
}

/// `_ITM_commitTransaction`.
pub(crate) fn commit(tx: &mut TxDesc) {
    if tx.nesting > 1 {
        if tx.nested.last().is_some_and(|n| n.level == tx.nesting) {
            tx.nested.pop();
        }
        tx.nesting -= 1;
        return;
    }
    let privatization = match tx.method.commit(tx) {
        Ok(p) => p,
        Err(cause) => abort_and_restart(tx, cause),
    };
    finish(tx);
    gate::open_hourglass(tx);
    match privatization {
        Privatization::Safe => {}
        Privatization::Writer(v) => quiesce(tx, v),
        Privatization::Reader(start) => quiesce_proxy(tx, start),
    }
    for b in tx.frees.drain(..) {
        // SAFETY: the program freed the block inside the committed transaction; the free was
        // deferred to here, after quiescence, so no transaction still reads the block.
        unsafe { b.release() };
    }
    let actions = std::mem::take(&mut tx.commit_actions);
    tx.clear_logs();
    tx.record(Event::Commit);
    for (f, arg) in actions.iter() {
        // SAFETY: registered by the program as a commit action with this argument.
        unsafe { f(*arg) };
    }
    // Keep the vector's capacity for the next transaction.
    tx.commit_actions = actions;
    tx.commit_actions.clear();
}

/// Rolls the whole transaction back and jumps to its checkpoint to run it again.
pub(crate) fn abort_and_restart(tx: &mut TxDesc, cause: AbortCause) -> ! {
    if tx.irrevocable {
        fatal("an irrevocable transaction was asked to abort");
    }
    tx.record(Event::Abort(cause));
    roll_back_all(tx);
    finish(tx);
    tx.consecutive_aborts += 1;
    let cfg = config::get();
    if cause == AbortCause::OpacityOnUpgrade {
        tx.restart_serial = Some(Event::SwitchedMidFlight);
    } else if tx.consecutive_aborts >= cfg.serialize_after {
        tx.restart_serial = Some(Event::AfterAborts);
    } else if cfg.contention != ContentionPolicy::None {
        // Back off a little, longer after each abort, so that two transactions that keep
        // conflicting stop meeting at the same point.
        let spins = 1u32 << tx.consecutive_aborts.min(10);
        for _ in 0..spins {
            std::hint::spin_loop();
        }
        if cfg.contention == ContentionPolicy::Hourglass
            && tx.consecutive_aborts >= cfg.hourglass_after
            && !tx.holds_hourglass
            && gate::close_hourglass(tx)
        {
            tx.record(Event::HourglassClosed);
        }
    }
    tx.nesting = 1;
    let action = start_outermost(tx) | A_RESTORE_LIVE;
    let jb = tx.jb;
    jump(&jb, action)
}

/// `_ITM_abortTransaction`: a cancel of the innermost (or, with `outer`, the outermost)
/// transaction. The cancelled transaction's code is skipped, not rerun.
pub(crate) fn cancel(tx: &mut TxDesc, outer: bool) -> ! {
    if tx.nesting == 0 {
        fatal("__transaction_cancel outside a transaction");
    }
    if tx.irrevocable {
        fatal("__transaction_cancel in an irrevocable transaction");
    }
    if !outer && tx.nesting > 1 {
        if let Some(n) = tx.nested.pop() {
            if n.level == tx.nesting {
                tx.redo = n.redo;
                tx.undo_to(n.undo_len, n.undo_data_len);
                while tx.undo_actions.len() > n.undo_actions_len {
                    let (f, arg) = tx.undo_actions.pop().expect("length checked");
                    // SAFETY: registered by the program as an undo action.
                    unsafe { f(arg) };
                }
                cxxrt::cancel_inner(&mut tx.eh, n.eh_catch_count);
                for b in tx.allocs.drain(n.allocs_len..) {
                    // SAFETY: allocated inside the cancelled inner transaction only.
                    unsafe { b.release() };
                }
                if !tx.unthrown.is_empty() {
                    // Exception objects just freed are no longer private memory.
                    let allocs = &tx.allocs;
                    tx.unthrown
                        .retain(|&(lo, _)| allocs.iter().any(|b| b.ptr as usize == lo));
                }
                tx.frees.truncate(n.frees_len);
                tx.commit_actions.truncate(n.commit_actions_len);
                tx.nesting = n.level - 1;
                let jb = n.jb;
                jump(&jb, A_ABORT | A_RESTORE_LIVE)
            }
            tx.nested.push(n);
        }
        fatal("__transaction_cancel in an inner transaction that was compiled as unable to cancel");
    }
    tx.record(Event::Cancel);
    roll_back_all(tx);
    finish(tx);
    gate::open_hourglass(tx);
    let jb = tx.jb;
    jump(&jb, A_ABORT | A_RESTORE_LIVE)
}

/// The one place that leaves Rust code by a jump.
fn jump(jb: &JmpBuf, action: u32) -> ! {
    let jb = *jb;
    // SAFETY: `jb` is a checkpoint taken by `_ITM_beginTransaction` in a frame that is still
    // live (the transaction's code runs inside it). Every frame between here and there is
    // either this crate's (which hold no values with destructors at their call into this
    // function: the callers above pass only references and copies) or the program's C code,
    // which expects exactly this control transfer from the TM ABI.
    unsafe { longjmp(&jb, action) }
}

/// Switches the running transaction to serial irrevocable mode (relaxed code reaching unsafe
/// code, or a function without a transactional clone).
pub(crate) fn go_irrevocable(tx: &mut TxDesc) {
    if tx.nesting == 0 || tx.irrevocable {
        return;
    }
    if tx.serial {
        // Already alone: only the right to roll back is given up.
        tx.irrevocable = true;
        tx.undo.clear();
        tx.undo_data.clear();
        tx.nested.clear();
        tx.record(Event::SwitchedMidFlight);
        return;
    }
    // Upgrade in place only if the gate is free. Waiting for it while still active could
    // deadlock (its holder waits for us to finish), and waiting inactive would let a serial
    // transaction run under our feet: it may write without barriers, which neither our read
    // set nor (eager) our undo log would notice. So if the gate is busy, run again serial.
    if !gate::try_enter_serial(tx) {
        abort_and_restart(tx, AbortCause::OpacityOnUpgrade);
    }
    tx.serial = true;
    if !tx.method.validate(tx) {
        // Someone committed over what we read: run again, serial from the start.
        abort_and_restart(tx, AbortCause::OpacityOnUpgrade);
    }
    tx.serial_version = crate::orec::CLOCK.fetch_add(1, Ordering::AcqRel) + 1;
    tx.method.write_back_serial(tx);
    tx.method = MethodKind::Serial;
    tx.irrevocable = true;
    tx.undo.clear();
    tx.undo_data.clear();
    tx.nested.clear();
    tx.record(Event::SwitchedMidFlight);
}

/// Undoes everything the transaction did, outermost level.
fn roll_back_all(tx: &mut TxDesc) {
    let method = tx.method;
    method.rollback(tx);
    tx.undo_to(0, 0);
    while let Some((f, arg)) = tx.undo_actions.pop() {
        // SAFETY: the program registered `f` with `arg` as an undo action.
        unsafe { f(arg) };
    }
    cxxrt::roll_back(&mut tx.eh);
    for b in tx.allocs.drain(..) {
        // SAFETY: allocated in this aborted transaction and never visible outside it.
        unsafe { b.release() };
    }
    tx.clear_logs();
}
