//! The crate's synchronization primitives: the atomics of the commit
//! protocol, swapped for loom's model-checked versions when built with
//! `RUSTFLAGS="--cfg txmem_loom"` (see `tests/loom.rs`), and the blocking
//! locks, swapped for spinning ones under Miri.

#[cfg(not(txmem_loom))]
pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicI64, AtomicU64, AtomicUsize};

#[cfg(txmem_loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicI64, AtomicU64, AtomicUsize};

/// The crate's blocking locks: parking_lot's, except under Miri. A
/// parking_lot lock that parks a thread passes `&AtomicI32` to the futex
/// system call (parking_lot_core 0.9.12), which Miri rejects since it
/// checks a variadic call's argument types; whether a run parks depends on
/// Miri's schedule, so any change could fail an unrelated Miri test. Under
/// Miri the same `lock_api` types run over locks that spin and yield
/// ([`miri_locks`]), and Miri checks txmem's code around them.
#[cfg(not(miri))]
pub(crate) use parking_lot::{Mutex, MutexGuard, RwLock};
#[cfg(miri)]
pub(crate) type Mutex<T> = lock_api::Mutex<miri_locks::RawSpinMutex, T>;
#[cfg(miri)]
pub(crate) type MutexGuard<'a, T> = lock_api::MutexGuard<'a, miri_locks::RawSpinMutex, T>;
#[cfg(miri)]
pub(crate) type RwLock<T> = lock_api::RwLock<miri_locks::RawSpinRwLock, T>;

/// The lock that serializes irrevocable transactions (a loom mutex under
/// loom, so that models may run irrevocable transactions).
#[cfg(not(txmem_loom))]
pub(crate) type TokenLock = Mutex<()>;
#[cfg(txmem_loom)]
pub(crate) type TokenLock = loom::sync::Mutex<()>;

/// A held [`TokenLock`].
#[cfg(not(txmem_loom))]
pub(crate) type Token = MutexGuard<'static, ()>;
#[cfg(txmem_loom)]
pub(crate) type Token = loom::sync::MutexGuard<'static, ()>;

/// Takes `lock`, waiting for it.
#[inline]
pub(crate) fn take_token(lock: &'static TokenLock) -> Token {
    #[cfg(not(txmem_loom))]
    return lock.lock();
    #[cfg(txmem_loom)]
    return lock
        .lock()
        .expect("the irrevocability token is never poisoned");
}

/// Takes `lock` if it is free.
#[inline]
pub(crate) fn try_take_token(lock: &'static TokenLock) -> Option<Token> {
    #[cfg(not(txmem_loom))]
    return lock.try_lock();
    #[cfg(txmem_loom)]
    return lock.try_lock().ok();
}

/// Gives up the processor while waiting for another thread. Under loom, a
/// loom yield, so the model checker schedules the thread being waited for.
#[inline]
pub(crate) fn yield_now() {
    #[cfg(not(txmem_loom))]
    std::thread::yield_now();
    #[cfg(txmem_loom)]
    loom::thread::yield_now();
}

/// A busy-wait hint. Under loom, a yield, so the model checker can schedule
/// the thread being waited for.
#[inline]
pub(crate) fn spin_hint() {
    #[cfg(not(txmem_loom))]
    std::hint::spin_loop();
    #[cfg(txmem_loom)]
    loom::thread::yield_now();
}

/// Declares a protocol-level global atomic: a plain `static` normally, a
/// lazily created (per model execution) one under loom.
macro_rules! protocol_static {
    ($(#[$m:meta])* static $name:ident: $ty:ty = $init:expr;) => {
        #[cfg(not(txmem_loom))]
        $(#[$m])*
        static $name: $ty = $init;
        #[cfg(txmem_loom)]
        loom::lazy_static! {
            $(#[$m])*
            static ref $name: $ty = $init;
        }
    };
}
pub(crate) use protocol_static;

/// Locks that wait by spinning and yielding, for Miri (see [`Mutex`]).
#[cfg(miri)]
mod miri_locks {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    /// A mutex: held while the flag is set.
    pub(crate) struct RawSpinMutex(AtomicBool);

    // SAFETY: at most one thread holds the lock: `try_lock` takes it only by
    // turning the flag from clear to set (Acquire, so the holder sees what
    // the previous holder wrote), and `unlock`, which lock_api calls only
    // for the holder, clears it (Release).
    unsafe impl lock_api::RawMutex for RawSpinMutex {
        const INIT: Self = RawSpinMutex(AtomicBool::new(false));
        type GuardMarker = lock_api::GuardNoSend;

        fn lock(&self) {
            while !self.try_lock() {
                std::thread::yield_now();
            }
        }

        fn try_lock(&self) -> bool {
            self.0
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        }

        unsafe fn unlock(&self) {
            self.0.store(false, Ordering::Release);
        }
    }

    /// Held exclusively while the word is [`WRITER`]; otherwise it counts
    /// the readers in units of [`READER`].
    pub(crate) struct RawSpinRwLock(AtomicUsize);

    const WRITER: usize = 1;
    const READER: usize = 2;

    // SAFETY: a writer takes the word only from 0 (no reader, no writer) to
    // `WRITER`, and a reader adds `READER` only to a word without `WRITER`,
    // both by compare-and-swap (Acquire); so a writer excludes everyone and
    // readers exclude writers. Unlocks (Release), which lock_api calls only
    // for holders, undo exactly what their lock did.
    unsafe impl lock_api::RawRwLock for RawSpinRwLock {
        const INIT: Self = RawSpinRwLock(AtomicUsize::new(0));
        type GuardMarker = lock_api::GuardNoSend;

        fn lock_shared(&self) {
            while !self.try_lock_shared() {
                std::thread::yield_now();
            }
        }

        fn try_lock_shared(&self) -> bool {
            let word = self.0.load(Ordering::Relaxed);
            word & WRITER == 0
                && self
                    .0
                    .compare_exchange(word, word + READER, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
        }

        unsafe fn unlock_shared(&self) {
            self.0.fetch_sub(READER, Ordering::Release);
        }

        fn lock_exclusive(&self) {
            while !self.try_lock_exclusive() {
                std::thread::yield_now();
            }
        }

        fn try_lock_exclusive(&self) -> bool {
            self.0
                .compare_exchange(0, WRITER, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        }

        unsafe fn unlock_exclusive(&self) {
            self.0.store(0, Ordering::Release);
        }
    }
}
