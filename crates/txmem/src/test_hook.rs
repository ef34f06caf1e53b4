//! Test-only hooks: a closure a unit test installs on its own thread, which
//! the code under test runs once at a chosen point (between a load and its
//! use, between two looks), to force an interleaving that timing alone would
//! rarely produce.

use std::cell::RefCell;
use std::thread::LocalKey;

/// The thread-local slot of one hook point:
/// `thread_local! { static POINT: Slot = const { RefCell::new(None) }; }`.
pub(crate) type Slot = RefCell<Option<Box<dyn FnOnce()>>>;

/// Installs `f` at `point` for the calling thread's next pass.
pub(crate) fn install(point: &'static LocalKey<Slot>, f: impl FnOnce() + 'static) {
    point.with(|h| *h.borrow_mut() = Some(Box::new(f)));
}

/// Runs and removes the hook installed at `point`, if any (the code under
/// test calls this at the point).
pub(crate) fn run(point: &'static LocalKey<Slot>) {
    if let Some(hook) = point.with(|h| h.borrow_mut().take()) {
        hook();
    }
}
