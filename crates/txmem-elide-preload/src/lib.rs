//! `libtxmem_elide_preload.so`: pthread locks of unmodified programs, elided with RTM where
//! the CPU allows, and profiled per lock site on request.
//!
//! ```text
//! LD_PRELOAD=target/release/libtxmem_elide_preload.so ./program
//! TXMEM_ELIDE_STATS=1 LD_PRELOAD=target/release/libtxmem_elide_preload.so ./program
//! ```
//!
//! The library defines `pthread_mutex_lock`, `_trylock`, `_timedlock`, `_unlock`, the
//! `pthread_rwlock_*` locks and unlock, and `pthread_cond_wait`, `_timedwait`, `_signal`,
//! `_broadcast`; each ends in the C library's own function, found after this library with
//! `dlsym(RTLD_NEXT)` (`dlvsym` at `GLIBC_2.3.2` for the condition variables, whose plain
//! `dlsym` may return the old ABI). What it adds depends on the mode chosen at start-up
//! (`real.rs`):
//!
//! * **nothing** (no `TXMEM_ELIDE_STATS`, and no usable RTM or `TXMEM_ELIDE_HTM=off`): the
//!   hot entry points load one word and jump to the C library's function;
//! * **the profile** (`TXMEM_ELIDE_STATS=1`): per (lock, call site) acquisitions, contended
//!   acquisitions, wait and hold time percentiles, printed at exit (`profile/`);
//! * **elision** (RTM usable, `TXMEM_ELIDE_HTM` not `off`): normal mutexes run their
//!   sections as hardware transactions with XSync's adaptive retry (`elide.rs`).
//!
//! Robust, priority-inheritance, priority-protect and process-shared mutexes, and
//! process-shared reader-writer locks, are passed through untouched in every mode. Recursive
//! and error-checking mutexes are profiled but never elided; reader-writer locks are
//! profiled but not elided. Each hook records its caller's return address through a small
//! naked entry stub (`entry!`), which is how a site is named without frame pointers.
//!
//! Only x86-64 Linux with glibc is supported; elsewhere the library is empty.

#![warn(missing_docs)]

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod cond;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod elide;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod mutex;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod profile;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod real;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod rwlock;

/// Defines an exported, naked entry point that hands its caller's return address to a Rust
/// function as one more argument (in register `$reg`), after an optional pass-through check:
/// when `FAST[$slot]` holds the C library's function, it jumps there directly.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
macro_rules! entry {
    ($(#[$doc:meta])* fn $name:ident($($a:ident: $t:ty),*), fast $slot:expr, ret in $reg:literal, then $slow:path) => {
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// The same contract as the C library's function of this name.
        // SAFETY (naked): assembly only. It reads the return address at [rsp] into an
        // argument register the C function does not use, and jumps (never calls) either to
        // the C library's function or to a Rust function taking the same arguments plus that
        // address, so the stack and every callee-saved register reach them untouched.
        #[unsafe(naked)]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($a: $t),*) -> libc::c_int {
            core::arch::naked_asm!(
                "mov rax, qword ptr [rip + {fast} + {off}]",
                "test rax, rax",
                "jz 2f",
                "jmp rax",
                "2:",
                concat!("mov ", $reg, ", qword ptr [rsp]"),
                "jmp {slow}",
                fast = sym crate::real::FAST,
                off = const $slot * 8,
                slow = sym $slow,
            )
        }
    };
    ($(#[$doc:meta])* fn $name:ident($($a:ident: $t:ty),*), ret in $reg:literal, then $slow:path) => {
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// The same contract as the C library's function of this name.
        // SAFETY (naked): as above, without the pass-through check.
        #[unsafe(naked)]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($a: $t),*) -> libc::c_int {
            core::arch::naked_asm!(
                concat!("mov ", $reg, ", qword ptr [rsp]"),
                "jmp {slow}",
                slow = sym $slow,
            )
        }
    };
}
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
pub(crate) use entry;

/// The mode for this process: the profile if `TXMEM_ELIDE_STATS` asks for it, elision if
/// RTM is usable (called once, by `real.rs`'s start-up).
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn choose_mode() -> real::Mode {
    real::Mode {
        profile: real::env_on(b"TXMEM_ELIDE_STATS\0"),
        elide: elide::usable(),
    }
}

/// Called by the start-up once the mode is chosen, before any hook acts on it.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn started(mode: real::Mode) {
    if mode.profile {
        profile::start();
    }
}

/// Resolves the C library's functions and chooses the mode while the process is still
/// single-threaded (the first interposed call would do it otherwise).
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
extern "C" fn init() {
    let _ = real::real();
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[used]
#[link_section = ".init_array"]
static INIT: extern "C" fn() = init;

#[cfg(all(test, target_arch = "x86_64", target_os = "linux"))]
mod tests {
    use super::profile;

    #[test]
    fn a_site_is_one_row_per_lock_and_caller() {
        let a = profile::site(0x1000, 0x40).unwrap() as *const _;
        let b = profile::site(0x1000, 0x48).unwrap() as *const _;
        assert_ne!(a, b);
        assert_eq!(a, profile::site(0x1000, 0x40).unwrap() as *const _);
    }

    #[test]
    fn holds_are_measured_from_acquire_to_release() {
        profile::acquired(0x2000, 0x10, true, 500, false);
        profile::acquired(0x3000, 0x10, false, 0, true);
        std::thread::sleep(std::time::Duration::from_millis(2));
        // Released out of order: each release finds its own lock.
        let s = profile::released(0x2000).expect("held");
        assert!(s.hold.max() >= 2_000_000, "held {} ns", s.hold.max());
        assert_eq!(s.contended.load(std::sync::atomic::Ordering::Relaxed), 1);
        assert!(profile::released(0x2000).is_none());
        let r = profile::released(0x3000).expect("held");
        assert_eq!(r.shared.load(std::sync::atomic::Ordering::Relaxed), 1);
    }
}
