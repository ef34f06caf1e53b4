//! Transaction coarsening through an explicit scope (XSync §4.2.2).

use crate::engine::{self, Path};
use crate::htm::{DefaultHtm, Htm};
use crate::mutex::{ElidedMutex, RawElidedMutex};
use core::marker::PhantomData;

/// A scope that runs consecutive critical sections of one [`ElidedMutex`], merging them into
/// larger hardware transactions while the per-thread
/// [coarsening policy](crate::policy::coarsen) says contention is low.
///
/// Each [`run`](Batch::run) is one critical section. When a new hardware transaction starts,
/// the policy's current group size says how many sections it should cover; the transaction
/// stays open across that many `run` calls (and the code between them), then commits. A
/// capacity abort halves the group size, a conflict stops coarsening; the aborted group is
/// rolled back and re-executed from its first section, so from the caller's point of view
/// every `run` happened exactly once. When the retry policy falls back to the lock, each
/// section takes the lock on its own. Dropping the batch (or [`finish`](Batch::finish))
/// commits the open group.
///
/// The code between `run` calls executes inside the open transaction, so the same rules as
/// for the sections apply: no system calls or other side effects it relies on.
///
/// ```
/// use txmem_elide::{Batch, ElidedMutex};
///
/// let m = ElidedMutex::<u64>::new(0);
/// let mut batch = Batch::new(&m);
/// for i in 0..100 {
///     batch.run(|sum| *sum += i);
/// }
/// batch.finish();
/// assert_eq!(*m.lock(), 4950);
/// ```
pub struct Batch<'a, T: ?Sized, H: Htm = DefaultHtm> {
    mutex: &'a ElidedMutex<T, H>,
    /// Sections run in the open hardware transaction (0: none open).
    open: u32,
    /// Sections the open transaction should cover.
    target: u32,
    /// A transaction belongs to its thread.
    _not_send: PhantomData<*const ()>,
}

impl<'a, T: ?Sized, H: Htm> Batch<'a, T, H> {
    /// A batch over `mutex`; nothing is acquired until the first [`run`](Batch::run).
    pub fn new(mutex: &'a ElidedMutex<T, H>) -> Self {
        Batch {
            mutex,
            open: 0,
            target: 0,
            _not_send: PhantomData,
        }
    }

    fn raw(&self) -> &'a RawElidedMutex<H> {
        // SAFETY: only used to read state and drive elision; the batch never unlocks a lock it
        // does not hold.
        unsafe { self.mutex.raw() }
    }

    /// Runs one critical section with exclusive access to the data.
    pub fn run<R>(&mut self, f: impl FnOnce(&mut T) -> R) -> R {
        let raw = self.raw();
        if self.open == 0 {
            if !raw.htm().available() || raw.htm().test() {
                // No HTM, or nested in someone else's transaction: a plain section.
                return f(&mut self.mutex.lock());
            }
            match engine::acquire(
                raw.htm(),
                raw.counters(),
                || raw.fallback_locked(),
                || raw.wait_until_free(),
            ) {
                Path::Elided => {
                    // Read inside the transaction: the policy state was updated (outside
                    // it) by any abort that brought us back here.
                    self.target = engine::coarsen_group_size().max(1);
                }
                Path::Fallback => {
                    raw.acquire_fallback_after_policy();
                    // SAFETY: this thread holds the fallback lock (acquired on the line
                    // above); the guard releases it, outside any transaction, on drop.
                    let mut guard = unsafe { self.mutex.make_guard_unchecked() };
                    return f(&mut guard);
                }
            }
        }
        // SAFETY: a hardware transaction subscribed to the free lock word is open (elided
        // exclusive access, see `RawElidedMutex`'s safety argument), and the `&mut self`
        // borrow keeps this the only reference handed out by the batch.
        let r = f(unsafe { &mut *self.mutex.data_ptr() });
        self.open += 1;
        if self.open >= self.target {
            self.close();
        }
        r
    }

    /// Commits the open group, if any, and ends the batch.
    pub fn finish(mut self) {
        self.close();
    }

    /// Commits the open group, if any; the next `run` starts a new one.
    pub fn commit_now(&mut self) {
        self.close();
    }

    /// Sections run in the currently open transaction (0 when none is open).
    pub fn open_sections(&self) -> u32 {
        self.open
    }

    fn close(&mut self) {
        if self.open > 0 {
            let n = self.open;
            self.open = 0;
            self.raw().commit(n);
        }
    }
}

impl<T: ?Sized, H: Htm> Drop for Batch<'_, T, H> {
    fn drop(&mut self) {
        self.close();
    }
}
