//! Intel RTM through stable inline assembly, gated by run-time detection.
//!
//! Detection happens once per process, on first use, in three steps:
//!
//! 1. CPUID leaf 7 (sub-leaf 0) must report RTM (`EBX` bit 11);
//! 2. it must not report `RTM_ALWAYS_ABORT` (`EDX` bit 11), which microcode sets when it
//!    has made every transaction abort;
//! 3. a probe of [`PROBE_ATTEMPTS`] trivial transactions must commit at least half of them
//!    (some microcode and hypervisors keep the CPUID bit but abort everything).
//!
//! Setting the environment variable `TXMEM_ELIDE_HTM` to `off`, `none` or `0` disables RTM
//! before any of this. The verdict is cached in one atomic byte, so afterwards
//! [`Htm::available`] costs a single relaxed load, and on a CPU without RTM no
//! transactional instruction is ever executed (executing `xbegin` there raises an
//! invalid-opcode fault).

use super::{AbortStatus, Htm};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;

/// Number of trivial transactions the detection probe runs.
pub const PROBE_ATTEMPTS: u32 = 64;

const UNKNOWN: u8 = 0;
const UNUSABLE: u8 = 1;
const USABLE: u8 = 2;

static VERDICT: AtomicU8 = AtomicU8::new(UNKNOWN);
static REPORT: OnceLock<RtmDetection> = OnceLock::new();

/// The outcome of RTM detection.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RtmVerdict {
    /// RTM is present and trivial transactions commit: elision is enabled.
    Usable,
    /// The environment variable `TXMEM_ELIDE_HTM` disabled it.
    DisabledByEnvironment,
    /// Not an x86-64 build.
    NotX86,
    /// CPUID does not report RTM.
    NoRtmBit,
    /// CPUID reports `RTM_ALWAYS_ABORT`: the microcode aborts every transaction.
    AlwaysAbortBit,
    /// CPUID reports RTM but the probe's trivial transactions did not commit.
    ProbeFailed,
}

/// What detection found, for reports and diagnostics.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RtmDetection {
    /// CPUID leaf 7 `EBX` bit 11.
    pub cpuid_rtm: bool,
    /// CPUID leaf 7 `EDX` bit 11 (`RTM_ALWAYS_ABORT`).
    pub cpuid_always_abort: bool,
    /// Trivial transactions attempted by the probe (0 if the probe did not run).
    pub probe_attempts: u32,
    /// Trivial transactions that committed.
    pub probe_commits: u32,
    /// The conclusion.
    pub verdict: RtmVerdict,
}

/// The Intel RTM backend.
///
/// Every method first checks the cached detection verdict; when RTM is unusable, `begin`
/// fails with [`AbortStatus::other`], `test` is false and nothing transactional executes.
///
/// ```
/// use txmem_elide::htm::{Htm, Rtm, RtmVerdict};
///
/// let found = Rtm::detection();
/// assert_eq!(Rtm.available(), found.verdict == RtmVerdict::Usable);
/// if !Rtm.available() {
///     assert!(Rtm.begin().is_err());
///     assert!(!Rtm.test());
/// }
/// ```
#[derive(Copy, Clone, Debug, Default)]
pub struct Rtm;

impl Rtm {
    /// Runs detection if it has not run yet and returns its full report.
    pub fn detection() -> RtmDetection {
        *REPORT.get_or_init(detect)
    }

    #[cold]
    #[inline(never)]
    fn detect_slow() -> bool {
        let usable = Rtm::detection().verdict == RtmVerdict::Usable;
        VERDICT.store(if usable { USABLE } else { UNUSABLE }, Ordering::Relaxed);
        usable
    }
}

fn disabled_by_env() -> bool {
    matches!(
        std::env::var("TXMEM_ELIDE_HTM").as_deref(),
        Ok("off") | Ok("none") | Ok("0") | Ok("false")
    )
}

#[cfg(target_arch = "x86_64")]
fn detect() -> RtmDetection {
    let mut d = RtmDetection {
        cpuid_rtm: false,
        cpuid_always_abort: false,
        probe_attempts: 0,
        probe_commits: 0,
        verdict: RtmVerdict::NoRtmBit,
    };
    if disabled_by_env() {
        d.verdict = RtmVerdict::DisabledByEnvironment;
        return d;
    }
    let (ebx, edx) = cpuid_leaf7();
    d.cpuid_rtm = ebx & (1 << 11) != 0;
    d.cpuid_always_abort = edx & (1 << 11) != 0;
    if !d.cpuid_rtm {
        return d;
    }
    if d.cpuid_always_abort {
        d.verdict = RtmVerdict::AlwaysAbortBit;
        return d;
    }
    d.probe_attempts = PROBE_ATTEMPTS;
    for _ in 0..PROBE_ATTEMPTS {
        // SAFETY: CPUID reported RTM and no always-abort bit, so `xbegin` and `xend` are
        // valid instructions here. The transaction contains nothing, and `xend` runs only on
        // the path where `xbegin` reported that a transaction started.
        unsafe {
            if raw::xbegin() == raw::STARTED {
                raw::xend();
                d.probe_commits += 1;
            }
        }
    }
    d.verdict = if d.probe_commits * 2 >= d.probe_attempts {
        RtmVerdict::Usable
    } else {
        RtmVerdict::ProbeFailed
    };
    d
}

#[cfg(not(target_arch = "x86_64"))]
fn detect() -> RtmDetection {
    RtmDetection {
        cpuid_rtm: false,
        cpuid_always_abort: false,
        probe_attempts: 0,
        probe_commits: 0,
        verdict: if disabled_by_env() {
            RtmVerdict::DisabledByEnvironment
        } else {
            RtmVerdict::NotX86
        },
    }
}

#[cfg(target_arch = "x86_64")]
fn cpuid_leaf7() -> (u32, u32) {
    use core::arch::x86_64::{__cpuid, __cpuid_count};
    // SAFETY: CPUID exists on every x86-64 CPU and only reads identification registers. The
    // intrinsics are `unsafe fn` on older toolchains and safe on newer ones, hence the allow.
    #[allow(unused_unsafe)]
    unsafe {
        if __cpuid(0).eax < 7 {
            return (0, 0);
        }
        let r = __cpuid_count(7, 0);
        (r.ebx, r.edx)
    }
}

// SAFETY: (1) RTM hardware runs the code between `xbegin` and `xend` atomically and in
// isolation from other transactions. (2) A load inside a transaction puts the line in the
// read set; a later non-transactional write by another thread aborts the transaction and
// rolls it back, so `fallback_acquired` needs no work. (3) `test` is `xtest`, gated by the
// detection verdict (no transaction can exist when RTM is unusable). (4) When unavailable,
// `begin` returns `Err` without executing anything.
unsafe impl Htm for Rtm {
    const INIT: Self = Rtm;

    fn name(&self) -> &'static str {
        "rtm"
    }

    #[inline(always)]
    fn available(&self) -> bool {
        match VERDICT.load(Ordering::Relaxed) {
            USABLE => true,
            UNUSABLE => false,
            _ => Rtm::detect_slow(),
        }
    }

    #[inline]
    fn begin(&self) -> Result<(), AbortStatus> {
        if !self.available() {
            return Err(AbortStatus::other());
        }
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: detection found usable RTM, so `xbegin` is a valid instruction. The
            // soundness of continuing after it is the "returns twice" argument in
            // `raw::xbegin`: an abort restores every register and all memory to their state
            // at the end of that asm block and resumes at its label with a new status in
            // `eax`, which the compiler cannot tell apart from the block having produced that
            // status the first time.
            let status = unsafe { raw::xbegin() };
            if status == raw::STARTED {
                Ok(())
            } else {
                Err(AbortStatus::from_rtm(status))
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        unreachable!("RTM is never available off x86-64")
    }

    #[inline]
    fn end(&self) {
        assert!(self.test(), "Rtm::end called outside a transaction");
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `test` just confirmed RTM is usable and a transaction is active, so `xend`
        // is valid and cannot raise #GP.
        unsafe {
            raw::xend()
        }
    }

    #[inline]
    fn abort(&self, code: u8) -> AbortStatus {
        #[cfg(target_arch = "x86_64")]
        if self.available() {
            // SAFETY: RTM is usable, so `xabort` is valid. Inside a transaction it rolls
            // everything back and resumes at the outermost `xbegin` (never returning here);
            // outside one it is a no-op.
            unsafe { raw::xabort(code) }
        }
        AbortStatus::explicit(code)
    }

    #[inline]
    fn test(&self) -> bool {
        if !self.available() {
            return false;
        }
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: RTM is usable, so `xtest` is valid; it only reads the transactional
            // state into ZF.
            unsafe { raw::xtest() }
        }
        #[cfg(not(target_arch = "x86_64"))]
        false
    }
}

#[cfg(target_arch = "x86_64")]
mod raw {
    //! The four RTM instructions. Callers must have established that RTM is usable.
    use core::arch::asm;

    /// The value `xbegin` leaves in `eax` when a transaction started.
    pub(super) const STARTED: u32 = !0;

    /// Executes `xbegin` and returns its status (`STARTED`, or an abort status).
    ///
    /// # Safety
    ///
    /// RTM must be usable on this CPU.
    ///
    /// Why continuing after this asm block is sound although it "returns twice": the abort
    /// target is the label `2:` at the very end of this same block, and `eax` (preset to
    /// `STARTED`) is its only output. When the transaction later aborts, the processor
    /// discards every transactional store (including stores to this and any caller's stack
    /// frame), restores every register except `eax` and `rip` to its value at `xbegin`, sets
    /// `eax` to the abort status and jumps to `2:`. Execution therefore continues from the end
    /// of this asm block with exactly the machine state the compiler expects there, except for
    /// the output register, as though the block had produced the abort status the first time.
    /// Nothing the aborted attempt did can be observed afterwards: its stores are discarded
    /// and any instruction with an effect outside memory (system call, I/O, fault) aborts the
    /// transaction before taking effect. The block is not `nomem`/`pure`, so the compiler
    /// assumes it may read and write memory and keeps no stale values across it.
    #[inline(always)]
    pub(super) unsafe fn xbegin() -> u32 {
        let status: u32;
        // SAFETY: see the function's contract and the argument above.
        unsafe {
            asm!(
                "mov eax, 0xFFFFFFFF",
                "xbegin 2f",
                "2:",
                out("eax") status,
                options(nostack),
            );
        }
        status
    }

    /// Commits the innermost transaction.
    ///
    /// # Safety
    ///
    /// RTM must be usable and a transaction active (otherwise `xend` raises #GP).
    #[inline(always)]
    pub(super) unsafe fn xend() {
        // SAFETY: per the contract, a transaction is active.
        unsafe { asm!("xend", options(nostack)) }
    }

    /// True inside a transaction.
    ///
    /// # Safety
    ///
    /// RTM must be usable.
    #[inline(always)]
    pub(super) unsafe fn xtest() -> bool {
        let inside: u8;
        // SAFETY: per the contract `xtest` is valid; it reads no memory.
        unsafe {
            asm!("xtest", "setnz {0}", out(reg_byte) inside, options(nostack, nomem));
        }
        inside != 0
    }

    #[inline(always)]
    unsafe fn xabort_imm<const CODE: u8>() {
        // SAFETY: the caller (`xabort`) guarantees RTM is usable. Outside a transaction
        // `xabort` is a no-op; inside one control never comes back here.
        unsafe { asm!("xabort {code}", code = const CODE, options(nostack)) }
    }

    macro_rules! low_nibble {
        ($code:expr, $hi:literal; $($lo:literal)*) => {
            match $code & 0xF {
                $($lo => xabort_imm::<{ $hi * 16 + $lo }>(),)*
                _ => unreachable!(),
            }
        };
    }

    macro_rules! high_nibble {
        ($code:expr; $($hi:literal)*) => {
            match $code >> 4 {
                $($hi => low_nibble!($code, $hi; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15),)*
                _ => unreachable!(),
            }
        };
    }

    /// Executes `xabort` with a run-time code (`xabort` only takes an immediate, so this
    /// dispatches to one of 256 instances).
    ///
    /// # Safety
    ///
    /// RTM must be usable.
    #[inline(never)]
    pub(super) unsafe fn xabort(code: u8) {
        // SAFETY: per the contract RTM is usable.
        unsafe { high_nibble!(code; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_matches_cpuid_and_is_cached() {
        let d = Rtm::detection();
        if !d.cpuid_rtm {
            // This is the case on the development machine (AMD EPYC without RTM): the probe
            // must not have run, and nothing transactional may execute.
            assert!(matches!(
                d.verdict,
                RtmVerdict::NoRtmBit | RtmVerdict::DisabledByEnvironment | RtmVerdict::NotX86
            ));
            assert_eq!(d.probe_attempts, 0);
            assert!(!Rtm.available());
            assert!(!Rtm.test());
            assert_eq!(Rtm.begin(), Err(AbortStatus::other()));
            assert_eq!(Rtm.abort(9), AbortStatus::explicit(9));
        }
        if d.cpuid_always_abort && !matches!(d.verdict, RtmVerdict::DisabledByEnvironment) {
            assert_eq!(d.verdict, RtmVerdict::AlwaysAbortBit);
        }
        assert_eq!(Rtm.available(), d.verdict == RtmVerdict::Usable);
        assert_ne!(VERDICT.load(Ordering::Relaxed), UNKNOWN);
    }

    #[test]
    #[should_panic(expected = "outside a transaction")]
    fn end_outside_transaction_panics() {
        Rtm.end();
    }
}
