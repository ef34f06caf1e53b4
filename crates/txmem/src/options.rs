//! Per-transaction options and the runtime-wide defaults.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::contention::ContentionPolicy;
use crate::sync::RwLock;

/// How a transaction keeps its reads consistent while it runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Opacity {
    /// Opacity through a TL2-style global clock with STO's *extended check*:
    /// a transaction's snapshot bound is a clock value read before its
    /// first read (each thread keeps the last one it saw, and reads the
    /// clock again once that proves stale); a read of a subobject whose
    /// version is newer than the bound revalidates the read set and moves
    /// the bound forward instead of aborting. Writers of more than one item
    /// advance the clock at commit; a single write only reads it. Read-only
    /// transactions need no commit-time validation. The default.
    #[default]
    Tl2,
    /// Opacity without a clock: every read revalidates the whole read set
    /// (quadratic in the read-set size, but no shared counter at all).
    Revalidate,
    /// No opacity: reads are validated only at commit, so a transaction that
    /// will abort may observe an inconsistent state while it runs (committed
    /// transactions are still serializable). Commits write no shared clock:
    /// they only read it, for a commit version one past its value. For
    /// database-style code that never trusts values before commit.
    None,
}

impl Opacity {
    /// The mode's name as used in tables and JSON (`"tl2"`, `"revalidate"`, `"none"`).
    pub const fn name(self) -> &'static str {
        match self {
            Opacity::Tl2 => "tl2",
            Opacity::Revalidate => "revalidate",
            Opacity::None => "none",
        }
    }
}

impl std::str::FromStr for Opacity {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "tl2" | "opaque" => Ok(Opacity::Tl2),
            "revalidate" | "direct" => Ok(Opacity::Revalidate),
            "none" | "off" => Ok(Opacity::None),
            other => Err(format!(
                "unknown opacity mode `{other}` (expected tl2, revalidate or none)"
            )),
        }
    }
}

/// Options of a transaction: opacity mode, contention policy, serialization
/// threshold and irrevocability. Build one, then run transactions with it:
///
/// ```
/// use txmem::{Opacity, TBox, TxOptions};
/// let b = TBox::new(1u64);
/// let opts = TxOptions::new().opacity(Opacity::None).serialize_after(Some(20));
/// let v = opts.run(|tx| b.get(tx));
/// assert_eq!(v, 1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TxOptions {
    pub(crate) opacity: Opacity,
    pub(crate) contention: ContentionPolicy,
    pub(crate) serialize_after: Option<u32>,
    pub(crate) irrevocable: bool,
    pub(crate) untracked_reads: bool,
    pub(crate) read_my_writes: bool,
    pub(crate) read_only: bool,
}

/// The default for [`TxOptions::serialize_after`]: after this many
/// consecutive aborts a transaction runs irrevocably, alone among writers.
pub const DEFAULT_SERIALIZE_AFTER: u32 = 100;

impl Default for TxOptions {
    fn default() -> Self {
        Self::BUILT_IN
    }
}

impl TxOptions {
    /// The built-in defaults (also what [`TxOptions::new`] returns).
    pub(crate) const BUILT_IN: TxOptions = TxOptions {
        opacity: Opacity::Tl2,
        contention: ContentionPolicy::DEFAULT,
        serialize_after: Some(DEFAULT_SERIALIZE_AFTER),
        irrevocable: false,
        untracked_reads: true,
        read_my_writes: true,
        read_only: false,
    };

    /// The built-in defaults: TL2 opacity, exponential backoff, serialize
    /// after [`DEFAULT_SERIALIZE_AFTER`] consecutive aborts, revocable.
    pub fn new() -> Self {
        Self::default()
    }

    /// The runtime-wide defaults currently in force (see [`set_default_options`]).
    pub fn current_defaults() -> Self {
        *DEFAULTS.read()
    }

    /// Sets the opacity mode.
    pub fn opacity(mut self, opacity: Opacity) -> Self {
        self.opacity = opacity;
        self
    }

    /// Sets the contention-management policy.
    pub fn contention(mut self, policy: ContentionPolicy) -> Self {
        self.contention = policy;
        self
    }

    /// After `n` consecutive aborts, run the next attempt irrevocably
    /// (`None` disables this; `Some(0)` is treated as `Some(1)`).
    pub fn serialize_after(mut self, n: Option<u32>) -> Self {
        self.serialize_after = n.map(|n| n.max(1));
        self
    }

    /// Run irrevocably from the first attempt: the transaction never aborts
    /// once it starts and may perform actions that cannot be undone.
    pub fn irrevocable(mut self, yes: bool) -> Self {
        self.irrevocable = yes;
        self
    }

    /// Whether reads of subobjects the transaction has not written skip the
    /// tracking set (on by default; STO's *read-only items*). Such a read
    /// is logged as a (version word, value) pair — what a word STM logs —
    /// instead of finding or creating an item, and is validated like any
    /// other read; and writes of values stored inline in one word go to a
    /// word log rather than items. Off, every read and write creates or
    /// finds its item (the behaviour to compare against).
    pub fn untracked_reads(mut self, yes: bool) -> Self {
        self.untracked_reads = yes;
        self
    }

    /// Whether the transaction may read what it wrote (on by default). Off,
    /// the transaction promises never to read a subobject after writing it
    /// (a read returns the committed value, not the pending one), and reads
    /// skip the check for an own write (STO's read-my-writes knob). Reads
    /// that go through an item (untracked reads off, or datatypes without an
    /// untracked read) still see the transaction's writes.
    pub fn read_my_writes(mut self, yes: bool) -> Self {
        self.read_my_writes = yes;
        self
    }

    /// Declares the transaction read-only (off by default): a hint that
    /// makes its first attempt a *snapshot attempt*. Under TL2's reasoning
    /// every value whose version is at most a clock value read before the
    /// first read belongs to the state at that clock value, so a snapshot
    /// attempt reads the clock once, checks each read against it, and logs
    /// nothing: a read costs a seqlock read and one comparison, and the
    /// commit checks nothing.
    ///
    /// A snapshot attempt cannot extend its snapshot (it kept no reads to
    /// revalidate), so if it meets a version newer than its snapshot, writes,
    /// calls [`retry`](crate::Transaction::retry) or asks to become
    /// irrevocable, it aborts (cause [`Snapshot`](crate::AbortCause::Snapshot))
    /// and the transaction goes on as an ordinary one: a wrong hint costs
    /// one attempt, never a wrong result. The snapshot attempt is opaque
    /// whatever the [`opacity`](Self::opacity) mode.
    ///
    /// ```
    /// use txmem::{TArray, TxOptions};
    /// let accounts = TArray::from_fn(64, |_| 100i64);
    /// let audit = TxOptions::new().read_only(true);
    /// let total: i64 = audit.run(|tx| {
    ///     let mut sum = 0;
    ///     for i in 0..accounts.len() {
    ///         sum += accounts.get(tx, i)?;
    ///     }
    ///     Ok(sum)
    /// });
    /// assert_eq!(total, 6400);
    /// ```
    pub fn read_only(mut self, yes: bool) -> Self {
        self.read_only = yes;
        self
    }

    /// Whether the transaction is declared read-only (see [`read_only`](Self::read_only)).
    pub fn read_only_enabled(&self) -> bool {
        self.read_only
    }

    /// Whether untracked reads are on (see [`untracked_reads`](Self::untracked_reads)).
    pub fn untracked_reads_enabled(&self) -> bool {
        self.untracked_reads
    }

    /// Whether read-my-writes is on (see [`read_my_writes`](Self::read_my_writes)).
    pub fn read_my_writes_enabled(&self) -> bool {
        self.read_my_writes
    }

    /// The opacity mode.
    pub fn opacity_mode(&self) -> Opacity {
        self.opacity
    }

    /// The contention policy.
    pub fn contention_policy(&self) -> &ContentionPolicy {
        &self.contention
    }
}

static DEFAULTS: RwLock<TxOptions> = RwLock::new(TxOptions::BUILT_IN);
/// Bumped on every change of the defaults, so threads can cache them and
/// check for changes with one relaxed load.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Replaces the runtime-wide defaults used by [`atomically`](crate::atomically)
/// and [`try_atomically`](crate::try_atomically).
///
/// Single-operation writes ([`TBox::store`](crate::TBox::store) and the like)
/// draw their commit versions by the rule of the default opacity mode.
pub fn set_default_options(options: TxOptions) {
    let mut defaults = DEFAULTS.write();
    *defaults = options;
    GENERATION.fetch_add(1, Ordering::Release);
}

#[inline]
pub(crate) fn defaults_generation() -> u64 {
    GENERATION.load(Ordering::Acquire)
}
