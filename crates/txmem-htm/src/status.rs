//! Abort status of a hardware transaction: why it ended and whether retrying may help.
//!
//! A status is one `u32`. Bits 0–5 and the explicit code in bits 24–31 are laid out exactly as
//! Intel RTM reports them in `eax` after an abort, so the RTM backend converts with a single
//! mask ([`AbortStatus::from_rtm`]). RTM leaves bits 6–23 reserved; this vocabulary uses some
//! of them for what other HTMs can say and RTM cannot (an interrupt, a nesting overflow, a
//! failure while suspended, a rollback-only transaction, which part of the footprint
//! overflowed). Nothing here touches threads or hardware: the policies in
//! [`crate::policy`] read statuses, and each backend builds them.

use core::fmt;

/// The explicit abort code an elided lock uses when it finds its fallback lock held inside a
/// transaction ("lock busy"). The retry policy treats it specially: it waits outside the
/// transaction for the lock to become free instead of counting the abort as a failure.
pub const LOCK_BUSY_CODE: u8 = 0xFF;

/// The explicit abort code of a section that tried to take a lock its own thread already
/// holds in a conflicting mode (a mutex locked twice, a write lock inside a read lock). An
/// explicit abort is persistent on RTM, so the section goes to the fallback lock, where the
/// second acquisition waits for the first forever: the deadlock every non-reentrant lock
/// gives, rather than a second guard that would alias the first.
pub const REENTRY_CODE: u8 = 0xFE;

/// Why a hardware transaction aborted: the single most specific cause of an
/// [`AbortStatus`].
///
/// Hardware may report several causes at once; [`AbortStatus::cause`] picks one in the order
/// the variants are listed below, except that [`Explicit`](HtmAbortCause::Explicit) always wins.
///
/// These are *hardware* causes. The software transactional memory in the `txmem` crate has
/// its own `txmem::AbortCause` (validation, opacity, `retry`, …): a different concept for a
/// different mechanism, so this one's name says `Htm`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum HtmAbortCause {
    /// The transaction executed an explicit abort (`xabort`, `tabort.`) with this 8-bit code.
    Explicit(u8),
    /// The transaction touched more data than the hardware can track (RTM capacity, POWER8
    /// footprint overflow, a transactional line evicted from a bounded simulated L1).
    Capacity,
    /// Transactions were nested deeper than the hardware allows (POWER8 nesting overflow,
    /// the simulator's flat-nesting or suspension depth). Not RTM's
    /// [`Nested`](HtmAbortCause::Nested), which says *where* an abort happened.
    NestingOverflow,
    /// Another thread (transactional or not) accessed a location in the read or write set.
    Conflict,
    /// An interrupt arrived while the transaction ran. RTM does not say so (such aborts
    /// report [`Other`](HtmAbortCause::Other)); the simulator does.
    Interrupt,
    /// A debug breakpoint was hit (RTM).
    Debug,
    /// The abort happened inside a nested transaction (RTM's "nested" bit).
    Nested,
    /// Anything else: page faults, unfriendly instructions, system calls, or a backend that
    /// cannot run transactions at all.
    Other,
}

/// Which part of a transaction's footprint overflowed, for backends that know (the
/// simulator does; RTM and POWER8 do not say).
///
/// The distinction matters to a policy because a POWER8 rollback-only transaction does not
/// track loads: a section whose *read* set overflowed may fit as one.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Footprint {
    /// A location the transaction only read.
    Read,
    /// A location the transaction wrote.
    Write,
}

/// The status reported by a failed transaction: cause bits, the hardware's retry hint, the
/// explicit abort code and a few details some backends add.
///
/// # How each backend fills it
///
/// | source | status |
/// |---|---|
/// | RTM `eax` | [`from_rtm`](AbortStatus::from_rtm): the same bits; no interrupt, nesting-overflow or footprint detail |
/// | POWER8 `TEXASR` (no backend yet) | footprint overflow → capacity; the conflict kinds → conflict; nesting overflow → nesting overflow; `tabort.` → explicit with its failure code; "failure persistent" → retry hint clear; "suspended" and "ROT" → [`is_suspended`](AbortStatus::is_suspended) and [`is_rollback_only`](AbortStatus::is_rollback_only) |
/// | simulator (MetaTM, POWER8 features) | one cause per abort; the retry hint clear only for capacity and nesting overflow; suspension, rollback-only and the overflowing footprint as details |
/// | scripted mock, no-HTM backend | the constructors below |
///
/// # Examples
///
/// ```
/// use txmem_htm::{HtmAbortCause, AbortStatus, Footprint};
///
/// let s = AbortStatus::conflict();
/// assert_eq!(s.cause(), HtmAbortCause::Conflict);
/// assert!(s.retry_hint());
/// assert!(!AbortStatus::capacity().retry_hint());
/// assert_eq!(AbortStatus::explicit(7).code(), Some(7));
///
/// // What the simulator reports for a suspended rollback-only transaction whose write set
/// // overflowed the L1:
/// let sim = AbortStatus::capacity_of(Footprint::Write)
///     .with_suspended(true)
///     .with_rollback_only(true);
/// assert_eq!(sim.cause(), HtmAbortCause::Capacity);
/// assert_eq!(sim.capacity_footprint(), Some(Footprint::Write));
/// assert!(sim.is_suspended() && sim.is_rollback_only());
/// ```
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
pub struct AbortStatus {
    bits: u32,
}

impl AbortStatus {
    /// Bit set when the transaction ended with an explicit abort (RTM bit 0).
    pub const EXPLICIT: u32 = 1 << 0;
    /// Bit set when the hardware thinks a retry may succeed (RTM bit 1).
    pub const RETRY: u32 = 1 << 1;
    /// Bit set on a data conflict with another thread (RTM bit 2).
    pub const CONFLICT: u32 = 1 << 2;
    /// Bit set when the transaction overflowed the hardware's tracking capacity (RTM bit 3).
    pub const CAPACITY: u32 = 1 << 3;
    /// Bit set when a debug breakpoint was hit (RTM bit 4).
    pub const DEBUG: u32 = 1 << 4;
    /// Bit set when the abort happened in a nested transaction (RTM bit 5).
    pub const NESTED: u32 = 1 << 5;
    /// Bit set when an interrupt aborted the transaction (reserved in RTM).
    pub const INTERRUPT: u32 = 1 << 6;
    /// Bit set when transactions nested too deeply (reserved in RTM).
    pub const NESTING_OVERFLOW: u32 = 1 << 7;
    /// Detail: the transaction was suspended when it failed (reserved in RTM).
    pub const SUSPENDED: u32 = 1 << 8;
    /// Detail: the failed transaction was rollback-only (reserved in RTM).
    pub const ROLLBACK_ONLY: u32 = 1 << 9;
    /// Detail of a capacity abort: a location only read overflowed (reserved in RTM).
    pub const READ_SET: u32 = 1 << 10;
    /// Detail of a capacity abort: a written location overflowed (reserved in RTM).
    pub const WRITE_SET: u32 = 1 << 11;
    /// Detail of a conflict: the other side was a non-transactional access, or the
    /// translation of an address (POWER8's "non-transactional conflict"; reserved in RTM).
    pub const NON_TX: u32 = 1 << 12;

    /// The bits RTM defines: causes and hint in 0–5, the explicit code in 24–31.
    const RTM_BITS: u32 = 0xFF00_003F;

    /// Wraps a raw status word in this type's layout (see [`raw`](AbortStatus::raw)).
    pub const fn from_raw(bits: u32) -> Self {
        AbortStatus { bits }
    }

    /// Converts RTM's `eax` after an abort. Bits RTM reserves are cleared, so that a future
    /// processor's use of them cannot be mistaken for this vocabulary's extra causes.
    pub const fn from_rtm(eax: u32) -> Self {
        AbortStatus {
            bits: eax & Self::RTM_BITS,
        }
    }

    /// The raw status word: RTM's layout in bits 0–5 and 24–31 (the code), this vocabulary's
    /// additions in 6–12.
    pub const fn raw(self) -> u32 {
        self.bits
    }

    /// An explicit abort with `code`; the retry hint is clear, as after RTM's `xabort`.
    pub const fn explicit(code: u8) -> Self {
        AbortStatus {
            bits: Self::EXPLICIT | ((code as u32) << 24),
        }
    }

    /// The status of an elided section that found its fallback lock held.
    pub const fn lock_busy() -> Self {
        Self::explicit(LOCK_BUSY_CODE)
    }

    /// A data conflict, with the retry hint set (as hardware usually reports it).
    pub const fn conflict() -> Self {
        AbortStatus {
            bits: Self::CONFLICT | Self::RETRY,
        }
    }

    /// A capacity overflow, retry hint clear.
    pub const fn capacity() -> Self {
        AbortStatus {
            bits: Self::CAPACITY,
        }
    }

    /// A capacity overflow of the given part of the footprint, retry hint clear.
    pub const fn capacity_of(part: Footprint) -> Self {
        AbortStatus {
            bits: Self::CAPACITY
                | match part {
                    Footprint::Read => Self::READ_SET,
                    Footprint::Write => Self::WRITE_SET,
                },
        }
    }

    /// Too deep a nesting of transactions, retry hint clear (the same section nests as deeply
    /// next time).
    pub const fn nesting_overflow() -> Self {
        AbortStatus {
            bits: Self::NESTING_OVERFLOW,
        }
    }

    /// An interrupt, retry hint set (the next attempt is unlikely to meet one at the same
    /// point).
    pub const fn interrupt() -> Self {
        AbortStatus {
            bits: Self::INTERRUPT | Self::RETRY,
        }
    }

    /// A debug-breakpoint abort.
    pub const fn debug() -> Self {
        AbortStatus { bits: Self::DEBUG }
    }

    /// An abort with no cause bit (fault, unsupported instruction, an interrupt on RTM, or a
    /// backend without transactions), retry hint clear.
    pub const fn other() -> Self {
        AbortStatus { bits: 0 }
    }

    /// The status the constructors above give `cause` (for
    /// [`Nested`](HtmAbortCause::Nested): the nested bit alone).
    pub const fn from_cause(cause: HtmAbortCause) -> Self {
        match cause {
            HtmAbortCause::Explicit(code) => Self::explicit(code),
            HtmAbortCause::Capacity => Self::capacity(),
            HtmAbortCause::NestingOverflow => Self::nesting_overflow(),
            HtmAbortCause::Conflict => Self::conflict(),
            HtmAbortCause::Interrupt => Self::interrupt(),
            HtmAbortCause::Debug => Self::debug(),
            HtmAbortCause::Nested => AbortStatus { bits: Self::NESTED },
            HtmAbortCause::Other => Self::other(),
        }
    }

    #[inline]
    const fn with_bit(self, bit: u32, on: bool) -> Self {
        AbortStatus {
            bits: if on {
                self.bits | bit
            } else {
                self.bits & !bit
            },
        }
    }

    /// The same status with the retry hint set or cleared.
    pub const fn with_retry(self, retry: bool) -> Self {
        self.with_bit(Self::RETRY, retry)
    }

    /// The same status, marked as (or not as) the failure of a suspended transaction.
    pub const fn with_suspended(self, suspended: bool) -> Self {
        self.with_bit(Self::SUSPENDED, suspended)
    }

    /// The same status, marked as (or not as) the failure of a rollback-only transaction.
    pub const fn with_rollback_only(self, rollback_only: bool) -> Self {
        self.with_bit(Self::ROLLBACK_ONLY, rollback_only)
    }

    /// The same status, marked as (or not as) caused by non-transactional code: a plain
    /// access to the transaction's data, or the system's handling of a page.
    pub const fn with_non_tx(self, non_tx: bool) -> Self {
        self.with_bit(Self::NON_TX, non_tx)
    }

    /// True if non-transactional code caused the abort ([`with_non_tx`](Self::with_non_tx)).
    pub const fn is_non_tx(self) -> bool {
        self.bits & Self::NON_TX != 0
    }

    /// The hardware's hint that retrying the transaction may succeed.
    pub const fn retry_hint(self) -> bool {
        self.bits & Self::RETRY != 0
    }

    /// The explicit abort code, if the transaction aborted explicitly.
    pub const fn code(self) -> Option<u8> {
        if self.bits & Self::EXPLICIT != 0 {
            Some((self.bits >> 24) as u8)
        } else {
            None
        }
    }

    /// True if this is an elided lock's "fallback lock is held" abort.
    pub const fn is_lock_busy(self) -> bool {
        matches!(self.code(), Some(LOCK_BUSY_CODE))
    }

    /// True if the backend reported a capacity overflow.
    pub const fn is_capacity(self) -> bool {
        self.bits & Self::CAPACITY != 0
    }

    /// True if the backend reported a data conflict.
    pub const fn is_conflict(self) -> bool {
        self.bits & Self::CONFLICT != 0
    }

    /// True if the backend reported that transactions nested too deeply.
    pub const fn is_nesting_overflow(self) -> bool {
        self.bits & Self::NESTING_OVERFLOW != 0
    }

    /// True if the transaction was suspended (POWER8 `tsuspend.`, MetaTM `xpush`) when it
    /// failed; its abort is delivered when it resumes.
    pub const fn is_suspended(self) -> bool {
        self.bits & Self::SUSPENDED != 0
    }

    /// True if the failed transaction was rollback-only (POWER8 ROT: stores buffered, loads
    /// not tracked).
    pub const fn is_rollback_only(self) -> bool {
        self.bits & Self::ROLLBACK_ONLY != 0
    }

    /// For a capacity abort whose backend says so, which part of the footprint overflowed.
    pub const fn capacity_footprint(self) -> Option<Footprint> {
        if !self.is_capacity() {
            None
        } else if self.bits & Self::WRITE_SET != 0 {
            Some(Footprint::Write)
        } else if self.bits & Self::READ_SET != 0 {
            Some(Footprint::Read)
        } else {
            None
        }
    }

    /// The single most specific cause (see [`HtmAbortCause`]).
    pub const fn cause(self) -> HtmAbortCause {
        if let Some(code) = self.code() {
            HtmAbortCause::Explicit(code)
        } else if self.bits & Self::CAPACITY != 0 {
            HtmAbortCause::Capacity
        } else if self.bits & Self::NESTING_OVERFLOW != 0 {
            HtmAbortCause::NestingOverflow
        } else if self.bits & Self::CONFLICT != 0 {
            HtmAbortCause::Conflict
        } else if self.bits & Self::INTERRUPT != 0 {
            HtmAbortCause::Interrupt
        } else if self.bits & Self::DEBUG != 0 {
            HtmAbortCause::Debug
        } else if self.bits & Self::NESTED != 0 {
            HtmAbortCause::Nested
        } else {
            HtmAbortCause::Other
        }
    }

    /// Whether running the same transaction again may succeed: the retry hint is set and the
    /// cause is not one that repeats with the same section (capacity, nesting overflow).
    /// Lock-busy aborts are handled separately by the policies.
    pub const fn is_transient(self) -> bool {
        self.retry_hint() && !self.is_capacity() && !self.is_nesting_overflow()
    }

    /// The opposite of [`is_transient`](AbortStatus::is_transient): the same section is
    /// expected to fail the same way again.
    pub const fn is_persistent(self) -> bool {
        !self.is_transient()
    }
}

impl fmt::Debug for AbortStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("AbortStatus");
        d.field("cause", &self.cause())
            .field("retry", &self.retry_hint());
        if self.is_suspended() {
            d.field("suspended", &true);
        }
        if self.is_rollback_only() {
            d.field("rollback_only", &true);
        }
        if let Some(part) = self.capacity_footprint() {
            d.field("footprint", &part);
        }
        d.field("raw", &format_args!("{:#010x}", self.bits))
            .finish()
    }
}

impl fmt::Display for AbortStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.cause() {
            HtmAbortCause::Explicit(c) => write!(f, "explicit abort (code {c}")?,
            HtmAbortCause::Capacity => f.write_str("capacity (")?,
            HtmAbortCause::NestingOverflow => f.write_str("nesting (")?,
            HtmAbortCause::Conflict => f.write_str("conflict (")?,
            HtmAbortCause::Interrupt => f.write_str("interrupt (")?,
            HtmAbortCause::Debug => f.write_str("debug (")?,
            HtmAbortCause::Nested => f.write_str("nested (")?,
            HtmAbortCause::Other => f.write_str("other (")?,
        }
        if self.code().is_some() {
            f.write_str(", ")?;
        }
        f.write_str(if self.is_persistent() {
            "persistent"
        } else {
            "transient"
        })?;
        match self.capacity_footprint() {
            Some(Footprint::Read) => f.write_str(", read set")?,
            Some(Footprint::Write) => f.write_str(", write set")?,
            None => {}
        }
        if self.is_suspended() {
            f.write_str(", suspended")?;
        }
        if self.is_rollback_only() {
            f.write_str(", rollback-only")?;
        }
        f.write_str(")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_follow_priority() {
        let both = AbortStatus::from_raw(AbortStatus::CONFLICT | AbortStatus::CAPACITY);
        assert_eq!(both.cause(), HtmAbortCause::Capacity);
        assert_eq!(AbortStatus::explicit(3).cause(), HtmAbortCause::Explicit(3));
        assert_eq!(AbortStatus::debug().cause(), HtmAbortCause::Debug);
        assert_eq!(
            AbortStatus::from_raw(AbortStatus::NESTED).cause(),
            HtmAbortCause::Nested
        );
        assert_eq!(AbortStatus::other().cause(), HtmAbortCause::Other);
        let deep_conflict =
            AbortStatus::from_raw(AbortStatus::NESTING_OVERFLOW | AbortStatus::CONFLICT);
        assert_eq!(deep_conflict.cause(), HtmAbortCause::NestingOverflow);
        assert_eq!(AbortStatus::interrupt().cause(), HtmAbortCause::Interrupt);
    }

    #[test]
    fn every_cause_roundtrips_through_from_cause() {
        for c in [
            HtmAbortCause::Explicit(9),
            HtmAbortCause::Capacity,
            HtmAbortCause::NestingOverflow,
            HtmAbortCause::Conflict,
            HtmAbortCause::Interrupt,
            HtmAbortCause::Debug,
            HtmAbortCause::Nested,
            HtmAbortCause::Other,
        ] {
            assert_eq!(AbortStatus::from_cause(c).cause(), c);
        }
    }

    #[test]
    fn lock_busy_roundtrips_through_raw_layout() {
        let s = AbortStatus::lock_busy();
        assert_eq!(s.raw(), 0xFF00_0001);
        assert!(s.is_lock_busy());
        assert!(!AbortStatus::explicit(1).is_lock_busy());
        assert!(!s.is_transient());
    }

    #[test]
    fn rtm_reserved_bits_are_dropped() {
        // Conflict + retry, with every reserved bit set as a future CPU might.
        let eax = 0x00FF_FFC0 | AbortStatus::CONFLICT | AbortStatus::RETRY;
        let s = AbortStatus::from_rtm(eax);
        assert_eq!(s, AbortStatus::conflict());
        assert!(!s.is_suspended() && !s.is_rollback_only());
        assert_eq!(AbortStatus::from_rtm(0xFF00_0001), AbortStatus::lock_busy());
    }

    #[test]
    fn transient_needs_retry_and_no_repeating_cause() {
        assert!(AbortStatus::conflict().is_transient());
        assert!(!AbortStatus::capacity().with_retry(true).is_transient());
        assert!(!AbortStatus::nesting_overflow()
            .with_retry(true)
            .is_transient());
        assert!(!AbortStatus::conflict().with_retry(false).is_transient());
        assert!(AbortStatus::other().with_retry(true).is_transient());
        assert!(AbortStatus::interrupt().is_transient());
        assert!(AbortStatus::explicit(2).is_persistent());
    }

    #[test]
    fn details_do_not_change_the_cause() {
        let s = AbortStatus::conflict()
            .with_suspended(true)
            .with_rollback_only(true);
        assert_eq!(s.cause(), HtmAbortCause::Conflict);
        assert!(s.is_transient());
        assert_eq!(s.capacity_footprint(), None);
        let c = AbortStatus::capacity_of(Footprint::Read);
        assert_eq!(c.cause(), HtmAbortCause::Capacity);
        assert_eq!(c.capacity_footprint(), Some(Footprint::Read));
        assert_eq!(AbortStatus::capacity().capacity_footprint(), None);
        assert_eq!(
            s.with_suspended(false).with_rollback_only(false),
            AbortStatus::conflict()
        );
    }

    #[test]
    fn display_names_cause_hint_and_details() {
        assert_eq!(
            format!("{}", AbortStatus::conflict()),
            "conflict (transient)"
        );
        assert_eq!(
            format!("{}", AbortStatus::explicit(7).with_retry(true)),
            "explicit abort (code 7, transient)"
        );
        assert_eq!(
            format!(
                "{}",
                AbortStatus::capacity_of(Footprint::Write).with_rollback_only(true)
            ),
            "capacity (persistent, write set, rollback-only)"
        );
        assert_eq!(
            format!("{}", AbortStatus::nesting_overflow()),
            "nesting (persistent)"
        );
    }
}
