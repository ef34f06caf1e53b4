//! An asymmetric fence for the serial gate: transactions start without a full memory fence,
//! and the rare thread that takes the gate pays for it with `membarrier(2)`.
//!
//! The gate is a Dekker handshake: a starting transaction publishes its state and then reads
//! the gate's flag; a thread taking the gate sets the flag and then reads every state. Each
//! side needs a full fence between its store and its load, or both may miss the other. A full
//! fence at every transaction start also waits for the previous commit's write-back to leave
//! the store buffer. With `MEMBARRIER_CMD_PRIVATE_EXPEDITED`, the gate's side forces a fence
//! on every running thread of the process (a thread that is not running has passed a context
//! switch, which is one), so the starting side only needs to keep the compiler from reordering.
//!
//! Where the kernel refuses to register (before Linux 4.14, or a sandbox without the syscall),
//! both sides fall back to ordinary full fences.

use std::sync::atomic::{compiler_fence, fence, AtomicBool, Ordering};

// From <linux/membarrier.h>.
const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_long = 1 << 4;

/// True once the process is registered for expedited private membarriers.
static EXPEDITED: AtomicBool = AtomicBool::new(false);

/// Registers the process (at load time, before any transaction runs).
pub(crate) fn init() {
    // SAFETY: the membarrier syscall with a command and flags 0 has no memory effects on the
    // caller beyond its return value.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_membarrier,
            MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
            0,
        )
    };
    EXPEDITED.store(rc == 0, Ordering::Relaxed);
}

/// How the gate's handshake is fenced, for the statistics header.
pub(crate) fn kind() -> &'static str {
    if EXPEDITED.load(Ordering::Relaxed) {
        "membarrier"
    } else {
        "full"
    }
}

/// The light side: between a starting transaction's store of its state and its load of the
/// gate. `full` asks for a real fence anyway (a method whose writers read the states without
/// taking the gate needs one; see `Method::reads_states_at_commit`).
#[inline(always)]
pub(crate) fn light(full: bool) {
    if full || !EXPEDITED.load(Ordering::Relaxed) {
        fence(Ordering::SeqCst);
    } else {
        compiler_fence(Ordering::SeqCst);
    }
}

/// The heavy side: between taking the gate and reading the states.
pub(crate) fn heavy() {
    fence(Ordering::SeqCst);
    if EXPEDITED.load(Ordering::Relaxed) {
        // SAFETY: as in `init`; the process is registered, so the command cannot fail for
        // want of registration.
        let rc =
            unsafe { libc::syscall(libc::SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) };
        if rc != 0 {
            crate::fatal::fatal("membarrier failed after registration");
        }
    }
}
