//! What elided sections did: one vocabulary of counts for the real locks (`txmem-elide`) and
//! the simulated ones (`txmem-sim`), so that a figure from either means the same thing.
//!
//! Each driver counts what it can afford to. `txmem-elide` counts neither
//! [`sections`](ElisionStats::sections) nor [`busy_waits`](ElisionStats::busy_waits) (a write
//! on every section's path), so they stay zero there; the simulator has no reader-biased
//! lock, so its [`bias_revocations`](ElisionStats::bias_revocations) stay zero.

use core::ops::{Add, AddAssign};

use crate::status::{AbortStatus, HtmAbortCause};

/// Aborts broken down by cause, lock-busy aborts apart from the other explicit ones.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct AbortCounts {
    /// Explicit aborts other than lock-busy (user code, or a backend refusing).
    pub explicit: u64,
    /// Sections that found the fallback lock held and aborted to wait for it.
    pub lock_busy: u64,
    /// Data conflicts.
    pub conflict: u64,
    /// Capacity overflows.
    pub capacity: u64,
    /// Debug-breakpoint aborts.
    pub debug: u64,
    /// Everything else (interrupts, faults, nesting, unknown, no HTM).
    pub other: u64,
}

impl AbortCounts {
    /// No abort.
    pub const ZERO: AbortCounts = AbortCounts {
        explicit: 0,
        lock_busy: 0,
        conflict: 0,
        capacity: 0,
        debug: 0,
        other: 0,
    };

    /// Number of counters, for a driver that keeps them in an array ([`AbortCounts::slot`]).
    pub const SLOTS: usize = 6;

    /// The counter an abort with status `s` goes to, in field order (`explicit` is 0,
    /// `other` is 5): for a driver that keeps the counts in an array of atomics.
    pub fn slot(s: AbortStatus) -> usize {
        if s.is_lock_busy() {
            return 1;
        }
        match s.cause() {
            HtmAbortCause::Explicit(_) => 0,
            HtmAbortCause::Conflict => 2,
            HtmAbortCause::Capacity => 3,
            HtmAbortCause::Debug => 4,
            HtmAbortCause::NestingOverflow
            | HtmAbortCause::Interrupt
            | HtmAbortCause::Nested
            | HtmAbortCause::Other => 5,
        }
    }

    /// The counts from an array kept by [`slot`](AbortCounts::slot).
    pub fn from_slots(a: [u64; Self::SLOTS]) -> AbortCounts {
        AbortCounts {
            explicit: a[0],
            lock_busy: a[1],
            conflict: a[2],
            capacity: a[3],
            debug: a[4],
            other: a[5],
        }
    }

    /// Counts one abort with status `s` under its cause.
    pub fn record(&mut self, s: AbortStatus) {
        let mut a = self.slots();
        a[Self::slot(s)] += 1;
        *self = Self::from_slots(a);
    }

    /// The counts in [`slot`](AbortCounts::slot) order.
    fn slots(&self) -> [u64; Self::SLOTS] {
        [
            self.explicit,
            self.lock_busy,
            self.conflict,
            self.capacity,
            self.debug,
            self.other,
        ]
    }

    /// All aborts.
    pub fn total(&self) -> u64 {
        self.slots().iter().sum()
    }

    /// The counts since `earlier` was taken, cause by cause (saturating: the
    /// counters only grow).
    pub fn since(&self, earlier: &AbortCounts) -> AbortCounts {
        let (mut a, b) = (self.slots(), earlier.slots());
        for (x, y) in a.iter_mut().zip(b) {
            *x = x.saturating_sub(y);
        }
        Self::from_slots(a)
    }
}

impl Add for AbortCounts {
    type Output = AbortCounts;
    fn add(self, o: AbortCounts) -> AbortCounts {
        let (mut a, b) = (self.slots(), o.slots());
        for (x, y) in a.iter_mut().zip(b) {
            *x += y;
        }
        Self::from_slots(a)
    }
}

/// What elided sections did: of one lock, one thread, all threads, or one simulated core.
///
/// ```
/// use txmem_htm::{AbortStatus, ElisionStats};
///
/// let mut s = ElisionStats::default();
/// s.attempts += 2;
/// s.aborts.record(AbortStatus::lock_busy());
/// s.aborts.record(AbortStatus::conflict());
/// s.fallback_acquisitions += 1;
/// assert_eq!((s.aborts.total(), s.aborts.lock_busy), (2, 1));
/// ```
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ElisionStats {
    /// Critical sections run, elided or under the lock (the simulator counts them;
    /// `txmem-elide` does not).
    pub sections: u64,
    /// Hardware transactions started for sections (outermost begins that succeeded or
    /// failed). `txmem-elide` counts them per lock only while its per-lock counts are on.
    pub attempts: u64,
    /// Hardware transactions that committed (a coarsened one covers several sections).
    /// `txmem-elide` counts them per lock only while its per-lock counts are on.
    pub elided_commits: u64,
    /// Hardware attempts that aborted, by cause (lock-busy ones apart).
    pub aborts: AbortCounts,
    /// Times a section waited, outside any transaction, for a busy lock to be released
    /// (the simulator counts them; `txmem-elide` does not).
    pub busy_waits: u64,
    /// Sections that ran under the real (fallback) lock.
    pub fallback_acquisitions: u64,
    /// Sections that committed inside a transaction covering two or more sections.
    pub coarsened_sections: u64,
    /// Reader-bias revocations by writers (`txmem-elide`'s reader-writer lock only).
    pub bias_revocations: u64,
}

impl ElisionStats {
    /// Nothing counted yet.
    pub const ZERO: ElisionStats = ElisionStats {
        sections: 0,
        attempts: 0,
        elided_commits: 0,
        aborts: AbortCounts::ZERO,
        busy_waits: 0,
        fallback_acquisitions: 0,
        coarsened_sections: 0,
        bias_revocations: 0,
    };
}

impl AddAssign for ElisionStats {
    fn add_assign(&mut self, o: ElisionStats) {
        self.sections += o.sections;
        self.attempts += o.attempts;
        self.elided_commits += o.elided_commits;
        self.aborts = self.aborts + o.aborts;
        self.busy_waits += o.busy_waits;
        self.fallback_acquisitions += o.fallback_acquisitions;
        self.coarsened_sections += o.coarsened_sections;
        self.bias_revocations += o.bias_revocations;
    }
}

impl Add for ElisionStats {
    type Output = ElisionStats;
    fn add(mut self, o: ElisionStats) -> ElisionStats {
        self += o;
        self
    }
}
