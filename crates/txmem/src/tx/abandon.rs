//! Ending a transaction without a commit: the closure returned the
//! program's own error, or panicked.
//!
//! Why the attempt's view is checked first: an attempt whose reads went
//! stale may have acted on an inconsistent state, so its error or panic
//! need not be the program's answer; it is retried as an abort instead. A
//! user error needs the check only without opacity (the opaque modes
//! checked each read as it was made); a panic always gets it, since it may
//! come from a value loaded but not yet checked.

use std::panic;

use super::context::{end_retrying, CallState, ThreadContext};
use super::handlers::run_handlers;
use super::state::TxState;
use crate::error::AbortCause;
use crate::options::Opacity;

/// The closure returned the program's own error: the transaction ends
/// without committing (its abort handlers run), unless the attempt may have
/// seen an inconsistent state, in which case it aborts and retries.
#[cold]
#[inline(never)]
pub(super) fn end_with_error(st: &mut TxState, call: &mut CallState) -> Result<(), AbortCause> {
    // Without opacity the error may come from an inconsistent view: only a
    // validated attempt may return it.
    if st.opacity == Opacity::None && !st.view_holds() {
        return Err(AbortCause::Validation);
    }
    end_without_commit(st, call);
    Ok(())
}

/// The closure panicked. A doomed attempt (its reads no longer valid) is an
/// abort; a valid one is aborted and the panic propagates.
#[cold]
#[inline(never)]
pub(super) fn panicked(
    ctx: &ThreadContext,
    st: &mut TxState,
    call: &mut CallState,
    payload: Box<dyn std::any::Any + Send>,
) -> AbortCause {
    if !st.view_holds() {
        return AbortCause::Panic;
    }
    end_without_commit(st, call);
    // Leave the transaction before the abort handlers run (the run loop's
    // `ActiveGuard` clears the flag again as the panic unwinds).
    let handlers = st.take_ready_handlers();
    ctx.active.set(false);
    if let Some(handlers) = handlers {
        run_handlers(handlers);
    }
    panic::resume_unwind(payload);
}

/// Ends a transaction that returns without committing (a user error, or a
/// panic that propagates): its attempt is aborted and its abort handlers
/// are kept to run.
fn end_without_commit(st: &mut TxState, call: &mut CallState) {
    st.finish(false);
    end_retrying(call);
}
