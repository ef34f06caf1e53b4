//! The atomics of the commit protocol, swapped for loom's
//! model-checked versions when built with `RUSTFLAGS="--cfg txmem_loom"`
//! (see `tests/loom.rs`).

#[cfg(not(txmem_loom))]
pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicI64, AtomicU64, AtomicUsize};

#[cfg(txmem_loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicI64, AtomicU64, AtomicUsize};

/// The lock that serializes irrevocable transactions (a loom mutex under
/// loom, so that models may run irrevocable transactions).
#[cfg(not(txmem_loom))]
pub(crate) type TokenLock = parking_lot::Mutex<()>;
#[cfg(txmem_loom)]
pub(crate) type TokenLock = loom::sync::Mutex<()>;

/// A held [`TokenLock`].
#[cfg(not(txmem_loom))]
pub(crate) type Token = parking_lot::MutexGuard<'static, ()>;
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
