//! The read protocol: reading a subobject consistently, recording the read,
//! and the opacity check of each mode (including TL2's snapshot extension),
//! plus validation of the whole read set.
//!
//! Why reads are checked as they are made, and not only at commit: in the
//! opaque modes no attempt, not even one that will abort, may act on an
//! inconsistent view (a loop bound, an index or a pointer read from two
//! different states). TL2 checks a read against the attempt's snapshot bound
//! and revalidates only when it meets a newer version; `Revalidate` checks
//! the whole read set at every read; `None` defers to commit.
//!
//! Why two places for a read. An item is 64 bytes, found by a scan or a
//! hash index and created if missing: that is what lets a read see the
//! attempt's own write, and what a collection needs for its own flags
//! (placeholders, removals). A read of a subobject the attempt has not
//! written needs neither, so it goes to the *read log* instead — the
//! (version, word) pair a word STM logs, plus the subobject's name for the
//! two rare questions (is a word locked at commit locked by us; which
//! objects to wait on after `retry`). Repeated reads are logged again
//! rather than looked up: the snapshot check of the second read catches a
//! change in between. "Not written" is one test while the attempt has
//! written nothing; after its first write, a one-word filter over its items
//! answers (STO's read-only items, thesis §5). Under callgrind a read of an
//! audit costs 57 instructions this way against 198 through an item
//! (`scripts/callgrind-reads.sh`).

use std::ptr::NonNull;

use super::state::{LoggedRead, TxState};
use crate::clock;
use crate::error::{Abort, AbortCause, TxResult};
use crate::options::Opacity;
use crate::version::{TVersion, LOCK_BIT, LOCK_SPINS};

impl TxState {
    /// [`Transaction::observe`](crate::Transaction::observe) for the item at
    /// `pos`: the seqlock-style read (two reads of the version word around
    /// `load`, retried until they agree on an unlocked word), then
    /// [`record_read`](Self::record_read).
    #[inline(always)]
    pub(super) fn observe<R>(
        &mut self,
        pos: usize,
        version: &TVersion,
        load: impl FnMut() -> R,
    ) -> TxResult<R> {
        let (word, value) = self.stable_read(version, load)?;
        self.record_read(pos, word)?;
        Ok(value)
    }

    /// [`observe`](Self::observe) for a subobject the attempt has not
    /// written (the caller checked [`may_have_written`](Self::may_have_written)):
    /// the read goes to the read log instead of an item, with the same
    /// opacity check, and returns the word read with the value. A repeated
    /// read is logged again; the check of a version newer than the first
    /// read's catches a change in between.
    ///
    /// The common case (a TL2 attempt reading a version within its snapshot)
    /// is a seqlock read and a push; every other case is out of line, so that
    /// the read inlines small into the program's loop.
    ///
    /// `previous` serves a snapshot attempt that meets a version past its
    /// snapshot: given the word read, it returns the subobject's value
    /// before its last write with that value's version word and the
    /// replacing commit's version, if the object keeps one and nothing was
    /// written since (see `types::history`).
    #[inline(always)]
    pub(super) fn observe_logged<R>(
        &mut self,
        object: usize,
        key: u64,
        version: &TVersion,
        load: impl FnMut() -> R,
        previous: impl FnOnce(u64) -> Option<(u64, u64, R)>,
    ) -> TxResult<(u64, R)> {
        let (word, value) = self.stable_read(version, load)?;
        if self.snapshot {
            // A snapshot attempt logs nothing: a version within the snapshot
            // is all it needs (see `TxOptions::read_only`).
            if TVersion::version_of(word) > self.start {
                return self.read_previous(word, previous);
            }
            return Ok((word, value));
        }
        self.reads.push(LoggedRead {
            version: NonNull::from(version),
            word,
            object,
            key,
        });
        // (The entry just pushed does not count as an earlier read.)
        self.check_new_read(word, |st| st.reads.len() > 1)?;
        Ok((word, value))
    }

    /// The read of a word that the attempt writes next through the word log
    /// (a read-modify-write of a word it has not written): the consistent
    /// read and its opacity check, not logged, since the write takes the
    /// read over (see `words::write_word`). A snapshot attempt that is about
    /// to write ends here.
    #[inline(always)]
    pub(super) fn observe_for_write<R>(
        &mut self,
        version: &TVersion,
        load: impl FnMut() -> R,
    ) -> TxResult<(u64, R)> {
        if self.snapshot {
            return Err(Self::snapshot_missed());
        }
        let (word, value) = self.stable_read(version, load)?;
        self.check_new_read(word, |st| !st.reads.is_empty())?;
        Ok((word, value))
    }

    /// The opacity check of a read at `word` that no item records;
    /// `logged_before` says whether the read log holds an earlier read.
    #[inline(always)]
    fn check_new_read(
        &mut self,
        word: u64,
        logged_before: impl FnOnce(&Self) -> bool,
    ) -> TxResult<()> {
        if self.needs_view_check(word) {
            // (A word write counts: it may hold a read it took over.)
            let earlier = logged_before(self) || !self.items.is_empty() || !self.words.is_empty();
            // A first read under TL2 needs no check (see `check_view`):
            // decided here, so that a read-modify-write of one word, which
            // meets a version past its kept bound every time, makes no call.
            if earlier || self.opacity != Opacity::Tl2 {
                self.check_view(word, earlier)?;
            }
        }
        Ok(())
    }

    /// A snapshot attempt met `word`, past its snapshot: the value before
    /// the last write if that write is after the snapshot in real time too
    /// (its commit version is past `history_bound`) and the value's own
    /// version is within the snapshot; else the attempt cannot go on.
    ///
    /// (Inlined: passing `previous` to an out-of-line function builds its
    /// captures on the stack at every read, taken branch or not.)
    #[inline(always)]
    fn read_previous<R>(
        &mut self,
        word: u64,
        previous: impl FnOnce(u64) -> Option<(u64, u64, R)>,
    ) -> TxResult<(u64, R)> {
        if let Some((old, overwritten, value)) = previous(word) {
            if overwritten > self.history_bound && TVersion::version_of(old) <= self.start {
                return Ok((old, value));
            }
        }
        Err(self.snapshot_stale())
    }

    /// A snapshot attempt met a version past its snapshot and cannot go on.
    #[cold]
    #[inline(never)]
    fn snapshot_stale(&mut self) -> Abort {
        self.snapshot_stale = true;
        Self::snapshot_missed()
    }

    /// Whether an observation at `word` needs the opacity check of the
    /// attempt's mode: under TL2, if it is newer than the snapshot; under
    /// `Revalidate`, always; under `None`, never.
    #[inline(always)]
    fn needs_view_check(&self, word: u64) -> bool {
        match self.opacity {
            Opacity::Tl2 => TVersion::version_of(word) > self.start,
            Opacity::Revalidate => true,
            Opacity::None => false,
        }
    }

    /// The opacity check of a new observation at `word` (a logged read, or
    /// an absence an insert reports) that
    /// [`needs_view_check`](Self::needs_view_check): TL2 extends the
    /// snapshot if anything was read before it (`earlier`: the first read
    /// cannot disagree with anything), `Revalidate` checks every read.
    #[cold]
    #[inline(never)]
    fn check_view(&mut self, word: u64, earlier: bool) -> TxResult<()> {
        match self.opacity {
            Opacity::Tl2 if earlier => self.extend_snapshot(TVersion::version_of(word)),
            Opacity::Revalidate if !self.view_holds() => Err(Abort::new(AbortCause::Opacity)),
            _ => Ok(()),
        }
    }

    /// The seqlock-style read: two reads of the version word around `load`
    /// that agree on an unlocked word.
    #[inline(always)]
    fn stable_read<R>(
        &self,
        version: &TVersion,
        mut load: impl FnMut() -> R,
    ) -> TxResult<(u64, R)> {
        // SeqCst: an irrevocable reader pairs this load with a no-clock
        // committer's SeqCst read of the gate (Dekker). Every reader uses it,
        // since it costs what an acquire load costs on x86 and Arm (`mov`,
        // `ldar`) and saves a test on the read path.
        let w1 = version.load_seqcst();
        if !TVersion::is_locked(w1) {
            let value = load();
            if version.load() == w1 {
                return Ok((w1, value));
            }
        }
        self.stable_read_contended(version, load)
    }

    /// [`stable_read`](Self::stable_read) after its first try met a lock or
    /// a change: retried until the two reads agree on an unlocked word (a
    /// lock held past a bounded spin aborts, unless the attempt is
    /// irrevocable).
    #[cold]
    #[inline(never)]
    fn stable_read_contended<R>(
        &self,
        version: &TVersion,
        mut load: impl FnMut() -> R,
    ) -> TxResult<(u64, R)> {
        let mut spins = 0u32;
        loop {
            let w1 = version.load_seqcst();
            if TVersion::is_locked(w1) {
                if self.irrevocable.is_none() && spins >= LOCK_SPINS {
                    return Err(Abort::new(AbortCause::LockBusy));
                }
                spins += 1;
                crate::sync::spin_hint();
                continue;
            }
            let value = load();
            if version.load() == w1 {
                return Ok((w1, value));
            }
        }
    }

    /// Records a read of the item at `pos` at version word `word`: a
    /// repeated read must see the version of the first (or the attempt
    /// aborts), a first read gets the opacity check of the attempt's mode.
    #[inline(always)]
    pub(super) fn record_read(&mut self, pos: usize, word: u64) -> TxResult<()> {
        let item = &mut self.items[pos];
        if item.is_read() {
            return if item.read_version() == word || self.irrevocable.is_some() {
                Ok(())
            } else {
                Err(Abort::new(AbortCause::Opacity))
            };
        }
        item.observe(word);
        // The check of `needs_view_check` and `check_view`, written out with
        // the first-read test ahead of any call: a read-modify-write of one
        // box meets a version past its kept bound in every transaction
        // (callgrind-core.sh: 5 instructions fewer than calling out).
        match self.opacity {
            Opacity::Tl2 => {
                // The first read needs no check against the snapshot bound:
                // nothing read before it can disagree with it. The bound
                // stays, so a later read newer than the bound revalidates
                // this one.
                // (A snapshot attempt's reads are not logged: any of them
                // may have come before.)
                let version = TVersion::version_of(word);
                if version > self.start
                    && (self.items.len() > 1
                        || !self.reads.is_empty()
                        || !self.words.is_empty()
                        || self.snapshot)
                {
                    self.extend_snapshot(version)?;
                }
            }
            Opacity::Revalidate => {
                if !self.view_holds() {
                    return Err(Abort::new(AbortCause::Opacity));
                }
            }
            Opacity::None => {}
        }
        Ok(())
    }

    /// The opacity check for a state the attempt acts on without recording
    /// a read of it: the structure word at which an insert found its key
    /// absent (it reports the absence, but records no read, so that inserts
    /// of distinct keys never conflict; its placeholder keeps the key absent
    /// for others from then on). The absence is consistent with the
    /// attempt's earlier reads if the word is within the snapshot; a newer
    /// word gets the check a newer read gets. With no read so far there is
    /// nothing to disagree with.
    ///
    /// Nor is there when the word is one this attempt published itself
    /// for the same structure (`own_word`): versions only grow, so the
    /// structure has not changed since this attempt's own change, which it
    /// made to the state it found at a word that passed this check; what
    /// the change added (a placeholder) no one else sees. So a run of
    /// inserts into one B-tree leaf (a TPC-C order's lines), each of which
    /// moves the leaf's version past the snapshot, revalidates the read set
    /// once and not at every insert. (The snapshot bound stays where it
    /// was: the skipped check is what would have moved it.)
    // (Only the collections use it, and the loom build has none.)
    #[cfg_attr(txmem_loom, allow(dead_code))]
    pub(super) fn check_unrecorded(&mut self, object: usize, key: u64, word: u64) -> TxResult<()> {
        if self.irrevocable.is_some() || !self.needs_view_check(word) {
            return Ok(());
        }
        if self.own_word == Some((object, key, word)) {
            // The clock still moves up to it, as an extension would move
            // it: the attempt's next change of the structure then starts
            // from there (its version stays one step past the clock and
            // the commit's tick covers it), and other readers, snapshot
            // attempts among them, do not meet versions ahead of the clock.
            clock::advance_to(TVersion::version_of(word));
            return Ok(());
        }
        // (A word write counts: it may hold a read it took over.)
        let earlier = self.snapshot
            || !self.reads.is_empty()
            || !self.words.is_empty()
            || self.items.iter().any(|it| it.is_read());
        self.check_view(word, earlier)
    }

    /// STO's extended check: instead of aborting on a version newer than
    /// the snapshot, move the snapshot to now if every read is still valid.
    ///
    /// A version can be ahead of the clock (structure versions bumped at
    /// execution time, commit versions of the no-clock modes); the clock is
    /// then moved up to it first, or every later read of it would extend the
    /// snapshot again (and revalidate the whole read set). Moving the clock
    /// forward is safe: a commit whose version the new snapshot covers
    /// locked its items before reading or advancing the clock, so this
    /// transaction's validation, which comes after, sees them.
    ///
    /// A snapshot attempt has no log to revalidate: it aborts instead.
    #[cold]
    fn extend_snapshot(&mut self, seen: u64) -> TxResult<()> {
        self.stale_start = true;
        if self.snapshot {
            return Err(self.snapshot_stale());
        }
        // (The clock as it is if it covers `seen` already.)
        let now = clock::advance_to(seen).time();
        if self.view_holds() {
            self.start = now;
            Ok(())
        } else {
            Err(Abort::new(AbortCause::Opacity))
        }
    }

    /// The abort of a snapshot attempt that cannot go on as one.
    #[cold]
    #[inline(never)]
    pub(super) fn snapshot_missed() -> Abort {
        Abort::new(AbortCause::Snapshot)
    }

    /// True if the attempt's view is still consistent: always for an
    /// irrevocable attempt (see [`acquire_irrevocability`](Self::acquire_irrevocability)),
    /// otherwise if every read is still current.
    pub(crate) fn view_holds(&self) -> bool {
        self.irrevocable.is_some() || self.validate_reads()
    }

    /// Validates every read (items, the read log and the reads the word
    /// log took over); true if all are still current.
    pub(crate) fn validate_reads(&self) -> bool {
        let ctx = self.commit_ctx(0);
        self.items.iter().all(|it| {
            !it.is_read() || {
                // SAFETY: objects outlive the transaction (`Transaction<'env>`).
                let obj = unsafe { it.object.as_ref() };
                obj.check(it, &ctx)
            }
        }) && self.validate_logged_reads()
            && self.words.iter().all(|w| self.word_read_holds(w))
    }

    /// Validates the read log: each word unchanged, or locked at the same
    /// version by this attempt (it wrote the subobject after reading it and
    /// holds the lock at commit).
    pub(super) fn validate_logged_reads(&self) -> bool {
        self.reads.iter().all(|r| self.logged_read_holds(r))
    }

    #[inline]
    pub(super) fn logged_read_holds(&self, r: &LoggedRead) -> bool {
        // SAFETY: the version belongs to an object that outlives the
        // transaction (`Transaction<'env>`); the log is cleared with it.
        let cur = unsafe { r.version.as_ref() }.load_seqcst();
        cur == r.word || (cur == r.word | LOCK_BIT && self.holds_lock(r.object, r.key))
    }

    /// True if this attempt holds the lock of (`object`, `key`): its item's
    /// or its word write's.
    #[cold]
    fn holds_lock(&self, object: usize, key: u64) -> bool {
        self.find(object, key)
            .is_some_and(|p| self.items[p].is_locked())
            || self.holds_word_lock(object, key)
    }
}
