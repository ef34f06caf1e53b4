//! The life of one attempt: [`begin`](TxState::begin) sets it up (waiting
//! for the hourglass, taking irrevocability, choosing the snapshot bound);
//! [`finish`](TxState::finish) ends it, committed or not (cleanups, the
//! epoch guard, irrevocability, the handlers kept for the outcome).
//!
//! Why `finish` tests one `rare` flag: an ordinary attempt used none of the
//! index, savepoints, handlers or irrevocability, and ends with one branch.

use super::state::{Tracking, TxState};
use crate::clock;
use crate::error::AbortCause;
use crate::options::Opacity;
use crate::version::VERSION_STEP;

/// How many snapshot attempts a read-only transaction makes before it goes
/// on as an ordinary one (where it cannot starve: it extends its snapshot,
/// and the contention policy serializes it after too many aborts).
const SNAPSHOT_ATTEMPTS: u32 = 8;

/// Whether an attempt is a snapshot attempt of a read-only transaction
/// (see [`TxOptions::read_only`](crate::TxOptions::read_only)), and how it
/// takes its bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Snapshot {
    /// An ordinary attempt.
    Off,
    /// Bound read from the clock.
    Plain,
    /// Bound taken by advancing the clock.
    Ticked,
}

impl TxState {
    /// Prepares an attempt: hourglass, irrevocability, snapshot bound.
    /// `irrevocable`: run this attempt irrevocably; `requested`: because the
    /// program asked (not because the runtime serialized a starving one);
    /// `holds_hourglass`: this transaction holds the hourglass, so it does not
    /// wait for it.
    ///
    /// The TL2 snapshot bound is usually not read from the clock here: the
    /// attempt keeps the last clock value this thread saw (its last commit
    /// version or snapshot extension). Any clock value read before the
    /// attempt's first read is a sound bound; an older one only makes a read
    /// of a newer version extend the snapshot (which reads the clock then).
    /// Most transactions of a large working set read nothing that changed
    /// since, and skip a read of the clock's cache line, which moves to every
    /// committing writer's core. Once a kept bound proves stale (the last
    /// attempt extended its snapshot or aborted), the next attempt reads the
    /// clock, so that transactions over fast-changing data do not extend
    /// (and revalidate) in every attempt.
    ///
    /// A snapshot attempt of a read-only transaction always takes a fresh
    /// bound: it cannot extend its snapshot, so a stale bound would abort
    /// it. It checks its reads as TL2 does, whatever the transaction's
    /// mode. A `Ticked` one advances the clock to take its bound, so that
    /// every write past the bound began after it did and the value before
    /// such a write may be read (see `types::history`); a `Plain` one only
    /// reads the clock and may read history past one more step.
    #[inline]
    pub(crate) fn begin(
        &mut self,
        opacity: Opacity,
        irrevocable: bool,
        requested: bool,
        holds_hourglass: bool,
        snapshot: Snapshot,
    ) {
        if clock::hourglass_held() && !holds_hourglass {
            clock::wait_hourglass_released();
        }
        self.opacity = opacity;
        self.snapshot = false;
        if snapshot != Snapshot::Off && !irrevocable {
            self.begin_snapshot(snapshot);
        } else if self.stale_start {
            self.stale_start = false;
            self.start = clock::now().time();
        }
        self.wants_irrevocable = false;
        self.user_irrevocable = requested;
        if irrevocable && self.irrevocable.is_none() {
            self.acquire_irrevocability();
            // The snapshot must not predate the commits that finished
            // before the gate closed.
            self.start = clock::now().time();
        }
    }

    /// The part of [`begin`](Self::begin) for a snapshot attempt.
    #[inline(never)]
    fn begin_snapshot(&mut self, snapshot: Snapshot) {
        self.snapshot = true;
        self.snapshot_stale = false;
        self.stale_start = false;
        self.opacity = Opacity::Tl2;
        if snapshot == Snapshot::Ticked {
            self.start = clock::tick().time();
            self.history_bound = self.start;
        } else {
            self.start = clock::now().time();
            self.history_bound = self.start + VERSION_STEP;
        }
    }

    /// The kind of snapshot attempt that should follow this one, the
    /// `aborted`-th abort in a row, itself aborted for `cause`: a snapshot
    /// attempt that met a version past its snapshot is followed by another,
    /// which advances the clock (it may read history that a plain one may
    /// not), up to [`SNAPSHOT_ATTEMPTS`]; anything else by an ordinary
    /// attempt.
    ///
    /// Why more than one: against a stream of writers, a fresh snapshot
    /// with history fails only if an element it has yet to read is written
    /// twice while it runs, where an ordinary attempt fails whenever a
    /// writer changes an element it read and one it has yet to read (its
    /// extension revalidates and finds the first changed).
    pub(crate) fn next_snapshot(&self, cause: AbortCause, aborted: u32) -> Snapshot {
        if self.snapshot
            && cause == AbortCause::Snapshot
            && self.snapshot_stale
            && aborted < SNAPSHOT_ATTEMPTS
        {
            Snapshot::Ticked
        } else {
            Snapshot::Off
        }
    }

    /// Sets how attempts track their reads (the [`Tracking`] bits of their
    /// options), if that changed (see `TxState::may_have_written`).
    #[inline(always)]
    pub(crate) fn set_tracking(&mut self, tracking: u8) {
        if tracking != self.tracking {
            self.retrack(tracking);
        }
    }

    #[cold]
    fn retrack(&mut self, tracking: u8) {
        self.tracking = tracking;
        self.tracked_only = tracking & Tracking::NO_UNTRACKED_READS != 0;
        self.no_read_my_writes = tracking & Tracking::NO_READ_MY_WRITES != 0;
    }

    /// Ends an attempt: drops items (running cleanups), releases the guard
    /// and irrevocability, and keeps the handlers for the outcome, if any
    /// (take them with `take_ready_handlers`).
    #[inline]
    pub(crate) fn finish(&mut self, committed: bool) {
        self.item_filter = 0;
        if self.mutated {
            // Only a mutated attempt publishes structure words.
            self.own_word = None;
            // Unrolled for no item and one item, as in `commit`.
            match self.items.len() {
                0 => self.drop_items(0, committed),
                1 => self.drop_items(1, committed),
                _ => self.drop_all_items(committed),
            }
            // (Word writes own nothing: forgetting them drops nothing.)
            self.words.clear();
        } else {
            debug_assert!(self
                .items
                .iter()
                .all(|it| !it.value.is_set() && !it.has(crate::item::NEEDS_CLEANUP)));
            debug_assert!(self.words.is_empty());
        }
        // SAFETY: every item's value is empty (read-only attempts never set
        // one; `drop_items` cleared them) and an entry has no other drop
        // glue, so forgetting the entries drops nothing.
        unsafe { self.items.set_len(0) };
        self.reads.clear();
        // Collections pin the epoch in most transactions: unpin inline.
        if self.guard.get().is_some() {
            self.unpin();
        }
        if self.rare {
            self.finish_extras(committed);
        }
    }

    #[inline(never)]
    fn unpin(&mut self) {
        drop(self.guard.take());
    }

    #[cold]
    fn finish_extras(&mut self, committed: bool) {
        self.rare = false;
        if self.indexed {
            self.index.clear();
            self.indexed = false;
        }
        if self.words_indexed {
            self.word_index.clear();
            self.words_indexed = false;
        }
        self.savepoints.clear();
        self.release_irrevocability();
        self.keep_handlers(committed);
    }

    #[inline(never)]
    fn drop_all_items(&mut self, committed: bool) {
        self.drop_items(self.items.len(), committed);
    }

    /// Runs the cleanups and drops the pending values of the first `n`
    /// items (the items themselves are forgotten by the caller).
    #[inline(always)]
    fn drop_items(&mut self, n: usize, committed: bool) {
        for it in self.items[..n].iter_mut() {
            if it.has(crate::item::NEEDS_CLEANUP) {
                // SAFETY: objects outlive the transaction.
                let obj = unsafe { it.object.as_ref() };
                obj.cleanup(it, committed);
            }
            it.value.clear();
        }
        self.mutated = false;
    }
}
