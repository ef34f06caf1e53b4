//! Why transactions abort, and the error types that carry it.

use std::fmt;

/// The reason a transaction attempt aborted.
///
/// Every cause is counted separately in [`Stats`](crate::stats::Stats) and in the
/// per-call-site profile, so that a user can see *why* a transaction retries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum AbortCause {
    /// Commit-time validation found a read that another transaction changed.
    Validation,
    /// A lock stayed busy past the bounded spin (at read or at commit).
    LockBusy,
    /// A read during execution was inconsistent with earlier reads (opacity
    /// check or repeated read of a changed subobject): the attempt could not
    /// continue without observing an inconsistent state.
    Opacity,
    /// The program asked for an abort ([`Transaction::abort`](crate::Transaction::abort)).
    Explicit,
    /// The program called [`retry`](crate::Transaction::retry): the attempt
    /// blocks until something it read changes.
    Retry,
    /// A writer found an irrevocable transaction running and waited for it
    /// (or a transaction asked to become irrevocable while another was).
    Irrevocable,
    /// A panic inside an attempt whose reads were no longer valid (a doomed
    /// transaction); it is retried rather than propagated.
    Panic,
    /// A snapshot attempt of a read-only transaction
    /// ([`TxOptions::read_only`](crate::TxOptions::read_only)) met a version
    /// newer than its snapshot, or wrote, retried or asked for
    /// irrevocability: the transaction goes on as an ordinary one.
    Snapshot,
}

impl AbortCause {
    /// Every cause, in counter order.
    pub const ALL: [AbortCause; 8] = [
        AbortCause::Validation,
        AbortCause::LockBusy,
        AbortCause::Opacity,
        AbortCause::Explicit,
        AbortCause::Retry,
        AbortCause::Irrevocable,
        AbortCause::Panic,
        AbortCause::Snapshot,
    ];
    /// Number of causes.
    pub const COUNT: usize = Self::ALL.len();

    /// A short lowercase name (`"validation"`, `"lock-busy"`, ...), used in tables and JSON.
    pub const fn name(self) -> &'static str {
        match self {
            AbortCause::Validation => "validation",
            AbortCause::LockBusy => "lock-busy",
            AbortCause::Opacity => "opacity",
            AbortCause::Explicit => "explicit",
            AbortCause::Retry => "retry",
            AbortCause::Irrevocable => "irrevocable",
            AbortCause::Panic => "doomed-panic",
            AbortCause::Snapshot => "snapshot",
        }
    }

    #[inline]
    pub(crate) const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for AbortCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An aborted transaction attempt. Returned by transactional operations; pass
/// it on with `?` and [`atomically`](crate::atomically) retries the attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Abort {
    cause: AbortCause,
}

impl Abort {
    #[inline]
    pub(crate) const fn new(cause: AbortCause) -> Self {
        Abort { cause }
    }

    /// Why the attempt aborted.
    #[inline]
    pub const fn cause(&self) -> AbortCause {
        self.cause
    }
}

impl fmt::Display for Abort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "transaction aborted ({})", self.cause)
    }
}

impl std::error::Error for Abort {}

/// The result type of transactional operations.
pub type TxResult<T> = Result<T, Abort>;

/// The error of a transaction run with [`try_atomically`](crate::try_atomically):
/// either an abort (retried by the runtime, never returned to the caller) or
/// the program's own error `E`, which rolls the transaction back and is
/// returned.
#[derive(Debug, PartialEq, Eq)]
pub enum TxError<E> {
    /// The attempt aborted; the runtime retries it.
    Abort(Abort),
    /// The program's error: the transaction's writes are discarded and the
    /// error is returned to the caller.
    User(E),
}

impl<E> From<Abort> for TxError<E> {
    fn from(a: Abort) -> Self {
        TxError::Abort(a)
    }
}

impl<E: fmt::Display> fmt::Display for TxError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TxError::Abort(a) => a.fmt(f),
            TxError::User(e) => e.fmt(f),
        }
    }
}

impl<E: fmt::Debug + fmt::Display> std::error::Error for TxError<E> {}
