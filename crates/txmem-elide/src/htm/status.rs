//! Abort status of a hardware transaction: why it ended and whether retrying may help.
//!
//! The bit layout is the one Intel RTM reports in `eax` after an abort, so the RTM backend
//! converts with no work; other backends (the mock, a simulator) build statuses with the
//! constructors below. This module is pure data: the policies in [`crate::policy`] depend on it
//! and nothing here touches threads or hardware.

use core::fmt;

/// The explicit abort code the elided locks use when they find their fallback lock held
/// inside a transaction ("lock busy"). The retry policy treats it specially: it waits outside
/// the transaction for the lock to become free instead of counting it as a failure.
pub const LOCK_BUSY_CODE: u8 = 0xFF;

/// The explicit abort code of a section that tried to take a lock its own thread already
/// holds in a conflicting mode (a mutex locked twice, a write lock inside a read lock). An
/// explicit abort is persistent, so the section goes to the fallback lock, where the second
/// acquisition waits for the first forever: the deadlock every non-reentrant lock gives,
/// rather than a second guard that would alias the first.
pub const REENTRY_CODE: u8 = 0xFE;

/// Why a transaction aborted, most specific cause first.
///
/// Hardware may set several cause bits at once; [`AbortStatus::cause`] picks one in the
/// order explicit, capacity, conflict, debug, nested, other.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum AbortCause {
    /// The transaction executed an explicit abort with this 8-bit code.
    Explicit(u8),
    /// Another thread accessed a location in the read or write set.
    Conflict,
    /// The transaction touched more data than the hardware can track.
    Capacity,
    /// A debug breakpoint was hit.
    Debug,
    /// An inner (nested) transaction aborted.
    Nested,
    /// Anything else: interrupts, page faults, unfriendly instructions, system calls, or a
    /// backend that cannot run transactions at all.
    Other,
}

/// The status reported by a failed `begin`: cause bits, the hardware's retry hint, and the
/// explicit abort code.
///
/// # Examples
///
/// ```
/// use txmem_elide::htm::{AbortCause, AbortStatus};
///
/// let s = AbortStatus::conflict();
/// assert_eq!(s.cause(), AbortCause::Conflict);
/// assert!(s.retry_hint());
/// assert!(!AbortStatus::capacity().retry_hint());
/// assert_eq!(AbortStatus::explicit(7).code(), Some(7));
/// ```
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
pub struct AbortStatus {
    bits: u32,
}

impl AbortStatus {
    /// Bit set when the transaction ended with an explicit abort (`xabort`).
    pub const EXPLICIT: u32 = 1 << 0;
    /// Bit set when the hardware thinks a retry may succeed.
    pub const RETRY: u32 = 1 << 1;
    /// Bit set on a data conflict with another thread.
    pub const CONFLICT: u32 = 1 << 2;
    /// Bit set when the transaction overflowed the hardware's tracking capacity.
    pub const CAPACITY: u32 = 1 << 3;
    /// Bit set when a debug breakpoint was hit.
    pub const DEBUG: u32 = 1 << 4;
    /// Bit set when the abort happened in a nested transaction.
    pub const NESTED: u32 = 1 << 5;

    /// Wraps a raw RTM status word (`eax` after an abort).
    pub const fn from_raw(bits: u32) -> Self {
        AbortStatus { bits }
    }

    /// The raw status word, in RTM layout (code in bits 24..32).
    pub const fn raw(self) -> u32 {
        self.bits
    }

    /// An explicit abort with `code`; the retry hint is clear, as after `xabort`.
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

    /// A debug-breakpoint abort.
    pub const fn debug() -> Self {
        AbortStatus { bits: Self::DEBUG }
    }

    /// An abort with no cause bit (interrupt, fault, unsupported instruction, or a backend
    /// without transactions), retry hint clear.
    pub const fn other() -> Self {
        AbortStatus { bits: 0 }
    }

    /// The same status with the retry hint set or cleared.
    pub const fn with_retry(self, retry: bool) -> Self {
        AbortStatus {
            bits: if retry {
                self.bits | Self::RETRY
            } else {
                self.bits & !Self::RETRY
            },
        }
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

    /// True if this is the elided locks' "fallback lock is held" abort.
    pub const fn is_lock_busy(self) -> bool {
        matches!(self.code(), Some(LOCK_BUSY_CODE))
    }

    /// True if the hardware reported a capacity overflow.
    pub const fn is_capacity(self) -> bool {
        self.bits & Self::CAPACITY != 0
    }

    /// True if the hardware reported a data conflict.
    pub const fn is_conflict(self) -> bool {
        self.bits & Self::CONFLICT != 0
    }

    /// The single most specific cause (see [`AbortCause`]).
    pub const fn cause(self) -> AbortCause {
        if let Some(code) = self.code() {
            AbortCause::Explicit(code)
        } else if self.bits & Self::CAPACITY != 0 {
            AbortCause::Capacity
        } else if self.bits & Self::CONFLICT != 0 {
            AbortCause::Conflict
        } else if self.bits & Self::DEBUG != 0 {
            AbortCause::Debug
        } else if self.bits & Self::NESTED != 0 {
            AbortCause::Nested
        } else {
            AbortCause::Other
        }
    }

    /// Whether an elision policy should try the transaction again: the retry hint is set and
    /// the cause is not capacity (a capacity overflow repeats when the same section runs
    /// again). Lock-busy aborts are handled separately by the policies.
    pub const fn is_transient(self) -> bool {
        self.retry_hint() && !self.is_capacity()
    }
}

impl fmt::Debug for AbortStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AbortStatus")
            .field("cause", &self.cause())
            .field("retry", &self.retry_hint())
            .field("raw", &format_args!("{:#010x}", self.bits))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_follow_priority() {
        let both = AbortStatus::from_raw(AbortStatus::CONFLICT | AbortStatus::CAPACITY);
        assert_eq!(both.cause(), AbortCause::Capacity);
        assert_eq!(AbortStatus::explicit(3).cause(), AbortCause::Explicit(3));
        assert_eq!(AbortStatus::debug().cause(), AbortCause::Debug);
        assert_eq!(
            AbortStatus::from_raw(AbortStatus::NESTED).cause(),
            AbortCause::Nested
        );
        assert_eq!(AbortStatus::other().cause(), AbortCause::Other);
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
    fn transient_needs_retry_and_no_capacity() {
        assert!(AbortStatus::conflict().is_transient());
        assert!(!AbortStatus::capacity().with_retry(true).is_transient());
        assert!(!AbortStatus::conflict().with_retry(false).is_transient());
        assert!(AbortStatus::other().with_retry(true).is_transient());
    }
}
