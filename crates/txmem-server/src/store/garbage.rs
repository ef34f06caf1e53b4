//! Values on their way back to the system: a replaced or evicted value is
//! freed only once no transaction can still read it (txmem's epochs), and
//! glibc's heap keeps freed memory for reuse. These let writers and the
//! maintenance thread hurry both along.

use super::{live_value_bytes, Store};

/// The least garbage (values replaced or evicted, not yet freed) writers
/// tolerate before they wait for it (see `Store::wait_for_garbage`).
const GARBAGE_MIN_ALLOWANCE: usize = 2 << 20;

/// How many times a writer helps free garbage before it goes on anyway.
const GARBAGE_WAIT_ROUNDS: u32 = 256;

/// Frees what this thread retired as soon as no transaction can read it:
/// a burst of evictions leaves megabytes of values waiting on txmem's
/// epochs, which advance only as threads pass through them. Each flush
/// hands the thread's batch on and tries to advance the epoch; two
/// advances make the batch freeable.
pub fn release_garbage() {
    for _ in 0..3 {
        crossbeam_epoch::pin().flush();
    }
}

/// Returns the allocator's free memory to the system (glibc's heap keeps
/// it otherwise).
pub(super) fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> std::ffi::c_int;
        }
        // SAFETY: glibc's malloc_trim takes no pointers and only releases
        // free pages; it is safe to call from any thread at any time.
        unsafe {
            malloc_trim(0);
        }
    }
}

impl Store {
    /// Holds a writer back while the values already replaced or evicted, and
    /// not yet freed, pass an eighth of the memory limit (at least 2 MB). Under a
    /// flood of large sets txmem's epochs free them later than the flood
    /// replaces them, and the process would hold several times the limit in
    /// garbage; a writer that waits helps them along (`release_garbage`).
    /// The wait is bounded: a value a slow client's reply still refers to
    /// counts as garbage too, and must not stop every writer.
    pub(super) fn wait_for_garbage(&self) {
        let allowance = (self.config.memory_limit / 8).max(GARBAGE_MIN_ALLOWANCE);
        for _ in 0..GARBAGE_WAIT_ROUNDS {
            if live_value_bytes().saturating_sub(self.used()) <= allowance {
                return;
            }
            release_garbage();
            std::thread::yield_now();
        }
    }
}
