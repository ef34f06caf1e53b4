//! A libitm-compatible runtime: runs programs compiled with `gcc -fgnu-tm` on txmem's
//! algorithms, without recompiling them.
//!
//! GCC turns `__transaction_atomic { … }` and `__transaction_relaxed { … }` into calls to the
//! TM ABI of its `libitm.h`: `_ITM_beginTransaction`, a load or store barrier per shared
//! access (`_ITM_RU4`, `_ITM_WU8`, …), `_ITM_commitTransaction`, and a few more. This crate
//! builds `libtxmem_itm.so`, which defines those symbols. Preloaded
//! (`LD_PRELOAD=libtxmem_itm.so ./prog`) it takes precedence over GCC's libitm; linked in
//! its place (a `libitm.so.1` symlink on `LD_LIBRARY_PATH`) it replaces it.
//!
//! # Design
//!
//! * **The checkpoint is assembly** (`abi/begin.rs`). An abort anywhere inside the
//!   transaction (a barrier, the commit) must resume the program as if
//!   `_ITM_beginTransaction` returned again, with other action bits: that is `setjmp`, and
//!   Rust cannot express it. A `global_asm!` routine saves the callee-saved registers, the
//!   caller's stack pointer and the return address, then calls Rust; a second routine
//!   restores them and "returns" the new action code. The Rust frames jumped over hold
//!   nothing with a destructor at that point.
//! * **One descriptor per thread** (`tx.rs`), pooled and never freed, so that other threads
//!   may read its `state` word at any time. Flat nesting: an inner transaction only counts
//!   depth, unless the compiler says it may cancel, in which case it records where the logs
//!   stood so an inner `__transaction_cancel` can return them to that point.
//! * **A gate, not a global lock.** Ordinary transactions publish their start version in
//!   their own descriptor and then read one shared flag; only a thread that must run serial
//!   sets that flag and waits until every descriptor is inactive. While nobody runs serial,
//!   no transaction writes shared state to start. Serial transactions come from
//!   `TXMEM_ITM_METHOD=serial`, from relaxed transactions reaching unsafe code (they upgrade
//!   in place when the gate is free and their reads still validate, else run again serial:
//!   a running transaction never waits for the gate), from code the compiler
//!   marks as going irrevocable, and from transactions that aborted too often
//!   (`TXMEM_ITM_SERIALIZE_AFTER`, default 100).
//! * **Orecs and a clock** (`orec.rs`, `method/lazy.rs`). A fixed table of 2^20 ownership
//!   records, one per hashed 8-byte word, each a version or a commit lock, and one global
//!   version clock (TL2). Reads check the orec against the start version (and extend it when
//!   the read set still validates); writes go to a redo log of masked words; commit locks
//!   the written words' orecs, takes a new version, validates, writes back and releases.
//!   The table is fixed, so a transaction never runs out of orecs; aliasing only adds false
//!   conflicts. `method/eager.rs` locks at the first write instead and writes in place with
//!   an undo log, as GCC's `ml_wt` does.
//! * **NOrec** (`method/norec.rs`): no orecs; one global sequence lock orders commits, and a
//!   transaction revalidates the values it read whenever the lock moved.
//! * **Privatization safety**, as GCC's default method has it. After a writing commit, the
//!   orec methods wait for transactions that started before it (quiescence), and a read-only
//!   commit waits for any writer it may have seen to finish that wait (proxy
//!   privatization: it may be the one that acts on the privatizing write). NOrec needs
//!   neither: a doomed reader notices the commit that dooms it at its next read.
//!   Transactional frees are deferred past the wait.
//! * **C++** (`abi/cxx.rs`): the transactional `operator new`/`delete` clones and the
//!   `_ITM_cxa_*` exception calls, as in GCC's libitm; an exception leaving a transaction
//!   commits it. The C++ runtime is found with `dlsym` at first use, so C programs do not
//!   need libstdc++.
//! * **Stack memory made inside the transaction** (below the checkpoint's stack pointer) is
//!   accessed directly: it dies with the attempt, and buffering or restoring it could clobber
//!   frames the runtime itself is running in.
//!
//! # Configuration
//!
//! * `TXMEM_ITM_METHOD=norec|lazy|eager|serial` (default `norec`); anything else stops the
//!   program at load time with a message.
//! * `TXMEM_ITM_STATS=1`: at exit, a table on stderr of transactions, commits, cancels,
//!   aborts by cause and serializations by cause, in total and per transaction site (the
//!   return address of `_ITM_beginTransaction`, symbolized with `dladdr`).
//! * `TXMEM_ITM_CM=backoff|none|hourglass` (default `backoff`): after an abort, spin for a
//!   time that doubles with each consecutive abort, run again at once, or back off and, after
//!   `TXMEM_ITM_HOURGLASS_AFTER` (default 128) consecutive aborts, close the hourglass: no new
//!   transaction starts until the starving one commits.
//! * `TXMEM_ITM_SERIALIZE_AFTER=N`: consecutive aborts before a transaction runs serial
//!   (default 100; never with the hourglass unless set).
//!
//! # Not done yet
//!
//! Inner cancels are not counted in the statistics. x86-64 Linux only.
//!
//! # Caveats
//!
//! * Signal handlers must not run transactions: the descriptor and its logs are not
//!   async-signal-safe, and a signal arriving inside a transaction sees its state.
//! * The assembly of the checkpoint never touches thread-local storage: it saves the registers
//!   on its own stack and Rust copies them into the descriptor. The descriptor pointer is an
//!   initial-exec TLS slot (as libitm's is), so `dlopen`ing the library late into a process
//!   that has used up its static TLS space fails; preloading or linking it never does.
//! * Barriers read whole aligned 8-byte words (never crossing a page, so never faulting) and
//!   write back only the bytes the program wrote; a write-back races with plain accesses that
//!   other code makes to the neighbouring bytes, as in any word-based STM.
//! * Memory written by a transaction is only committed by it: accesses without a barrier
//!   (code compiled without `-fgnu-tm`) are not isolated, as with libitm.
//! * At most 4096 threads at once run transactions (descriptors are pooled on thread exit).
//! * The exported symbols carry no symbol version, so as `libitm.so.1` on the library path
//!   ld.so warns once per run that the program's `LIBITM_1.0` references find "no version
//!   information" (the program then runs normally). rustc's own version script for cdylibs
//!   would have to be replaced to fix it. `LD_PRELOAD` gives no warning.

#![cfg(all(target_arch = "x86_64", target_os = "linux"))]
#![warn(clippy::undocumented_unsafe_blocks)]

pub(crate) mod abi;
pub(crate) mod checkpoint;
pub(crate) mod config;
pub(crate) mod cxxrt;
pub(crate) mod fatal;
pub(crate) mod fence;
pub(crate) mod method;
pub(crate) mod orec;
pub(crate) mod redo;
#[doc(hidden)]
pub mod seqlock;
pub(crate) mod stats;
pub(crate) mod tx;

/// Reads the configuration when the library is loaded, so a wrong TXMEM_ITM_METHOD stops the
/// program before it runs, and registers the statistics report.
extern "C" fn on_load() {
    let cfg = config::get();
    fence::init();
    if cfg.stats {
        // SAFETY: registers a function without arguments that lives as long as the process
        // (the library is never unloaded while the program runs transactions).
        unsafe { libc::atexit(stats_at_exit) };
    }
}

extern "C" fn stats_at_exit() {
    stats::print(tx::desc::all_descs().map(|d| &d.stats));
}

#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn() = on_load;

/// The name of the method the environment selects (for tests and tools).
pub fn configured_method() -> &'static str {
    config::get().method.name()
}
