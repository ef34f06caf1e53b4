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

use super::state::TxState;
use crate::clock;
use crate::error::{Abort, AbortCause, TxResult};
use crate::options::Opacity;
use crate::version::{TVersion, LOCK_SPINS};

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
        mut load: impl FnMut() -> R,
    ) -> TxResult<R> {
        let mut spins = 0u32;
        let (word, value) = loop {
            // SeqCst: an irrevocable reader pairs this load with a no-clock
            // committer's SeqCst read of the gate (Dekker). Every reader
            // uses it, since it costs what an acquire load costs on x86 and
            // Arm (`mov`, `ldar`) and saves a test on the read path.
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
                break (w1, value);
            }
        };
        self.record_read(pos, word)?;
        Ok(value)
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
        match self.opacity {
            Opacity::Tl2 => {
                // The first item needs no check against the snapshot bound:
                // nothing read before it can disagree with it. The bound
                // stays, so a later read newer than the bound revalidates
                // this one.
                let version = TVersion::version_of(word);
                if version > self.start && self.items.len() > 1 {
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
    pub(super) fn check_unrecorded(&mut self, word: u64) -> TxResult<()> {
        if self.irrevocable.is_some() {
            return Ok(());
        }
        match self.opacity {
            Opacity::Tl2 => {
                let version = TVersion::version_of(word);
                if version > self.start && self.items.iter().any(|it| it.is_read()) {
                    self.extend_snapshot(version)?;
                }
            }
            Opacity::Revalidate => {
                if !self.validate_reads() {
                    return Err(Abort::new(AbortCause::Opacity));
                }
            }
            Opacity::None => {}
        }
        Ok(())
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
    #[cold]
    fn extend_snapshot(&mut self, seen: u64) -> TxResult<()> {
        self.stale_start = true;
        let mut now = clock::now().time();
        if seen > now {
            now = clock::advance_to(seen).time();
        }
        if self.view_holds() {
            self.start = now;
            Ok(())
        } else {
            Err(Abort::new(AbortCause::Opacity))
        }
    }

    /// True if the attempt's view is still consistent: always for an
    /// irrevocable attempt (see [`acquire_irrevocability`](Self::acquire_irrevocability)),
    /// otherwise if every read is still current.
    pub(crate) fn view_holds(&self) -> bool {
        self.irrevocable.is_some() || self.validate_reads()
    }

    /// Validates every read item; true if all reads are still current.
    pub(crate) fn validate_reads(&self) -> bool {
        let ctx = self.commit_ctx(0);
        self.items.iter().all(|it| {
            !it.is_read() || {
                // SAFETY: objects outlive the transaction (`Transaction<'env>`).
                let obj = unsafe { it.object.as_ref() };
                obj.check(it, &ctx)
            }
        })
    }
}
