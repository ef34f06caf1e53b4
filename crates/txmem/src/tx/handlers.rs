//! `on_commit` / `on_abort` handlers: erased to `'static` while they are
//! kept, chosen by the attempt's outcome when it finishes, and run once the
//! transaction is left (so a handler may start a transaction of its own).

use super::state::{Handler, TxState};

impl TxState {
    /// Keeps the handlers of the attempt's outcome for
    /// [`take_ready_handlers`](Self::take_ready_handlers) and drops the
    /// others (part of `finish`).
    #[inline]
    pub(super) fn keep_handlers(&mut self, committed: bool) {
        if self.on_commit.is_empty() && self.on_abort.is_empty() {
            return;
        }
        let (keep, discard) = if committed {
            (&mut self.on_commit, &mut self.on_abort)
        } else {
            (&mut self.on_abort, &mut self.on_commit)
        };
        discard.clear();
        std::mem::swap(&mut self.ready, keep);
    }

    /// The handlers `finish` kept, if any.
    #[inline]
    pub(crate) fn take_ready_handlers(&mut self) -> Option<Vec<Handler>> {
        if self.ready.is_empty() {
            None
        } else {
            Some(std::mem::take(&mut self.ready))
        }
    }
}

/// Erases the borrows of a handler's closure, so that the thread's state
/// can keep it.
pub(super) fn erase_handler<'env>(f: Box<dyn FnOnce() + 'env>) -> Handler {
    // SAFETY: handlers are run or dropped before `atomically` returns (or
    // unwinds), so nothing they borrow from 'env is used after 'env ends.
    unsafe { std::mem::transmute::<Box<dyn FnOnce() + 'env>, Box<dyn FnOnce() + 'static>>(f) }
}

/// Runs handlers taken from [`TxState::take_ready_handlers`].
pub(super) fn run_handlers(handlers: Vec<Handler>) {
    handlers.into_iter().for_each(|h| h());
}
