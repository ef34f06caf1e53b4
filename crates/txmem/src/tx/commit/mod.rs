//! The commit protocol (STO): lock the write set (the word log's entries,
//! then the items), take a commit version, validate the read set, install,
//! and wake blocked `retry`ers. The part an
//! object takes in it (the commit context, lock outcomes, the standard lock
//! step) is in [`lock`].

pub(crate) mod lock;

use crate::clock::{self, ClockWord};
use crate::error::AbortCause;
use crate::options::Opacity;
use crate::tx::state::TxState;
use crate::version::VERSION_STEP;
use crate::wait;
use lock::{Commit, LockOutcome};

/// The commit version of a commit that does not tick the clock: one past
/// the clock word `clock`, read after locking. (Installs publish it, or one
/// step past the item's previous version if that is larger, so versions
/// never go backwards.)
///
/// A TL2 reader accepts a version without revalidating only if it is at most
/// its snapshot bound, which is always a value it read from the clock. Such
/// a version is above the clock value its committer read after locking, so
/// the reader read its bound after that, hence after the commit locked
/// everything it writes: the reader sees the commit whole, or sees its locks
/// and waits. That holds with or without a tick. The tick only moves the
/// clock past the new version, so that later readers' bounds cover it
/// without extending their snapshots (each extension revalidates the read
/// set; one that meets a version past the clock moves the clock up to it).
/// TL2 ticks for commits of several items. For one written item the tick is
/// not worth its cost, a contended atomic add: few readers meet the new
/// version before the clock moves on. (TL2's paper calls this scheme GV5.)
/// The no-clock modes never tick: their readers do not use the clock.
#[inline(always)]
pub(crate) fn version_past(clock: ClockWord) -> u64 {
    clock.time() + VERSION_STEP
}

/// What a successful commit did, for the statistics.
#[derive(Clone, Copy)]
pub(crate) struct Committed {
    pub reads: u32,
    pub writes: u32,
}

impl TxState {
    /// Commits the current attempt or reports why it must abort. On failure
    /// every lock taken has been released; the items stay for the caller's
    /// blocking wait or cleanup.
    #[inline(always)]
    pub(crate) fn commit(&mut self) -> Result<Committed, AbortCause> {
        if !self.mutated {
            // No item was handed out for mutation: nothing to lock or install.
            let reads = self.items.len() + self.reads.len();
            return self.commit_read_only(reads as u32);
        }
        if self.snapshot {
            // A snapshot attempt wrote: its reads, unlogged, cannot be
            // validated. The rerun is an ordinary attempt.
            return Err(AbortCause::Snapshot);
        }
        // Sets of no item (words only: boxes, arrays of numbers) and of one
        // item (a counter, a collection's entry) are common enough to have
        // the protocol compiled for them, item loops unrolled, inline;
        // larger sets share one out-of-line copy.
        match self.items.len() {
            0 => self.commit_writes(0),
            1 if self.words.is_empty() => self.commit_writes(1),
            _ => self.commit_writes_out_of_line(),
        }
    }

    #[inline(never)]
    fn commit_writes_out_of_line(&mut self) -> Result<Committed, AbortCause> {
        self.commit_writes(self.items.len())
    }

    /// The full protocol, for transactions that may have written; `n` is
    /// the number of items (a constant where the caller knows it).
    #[inline(always)]
    fn commit_writes(&mut self, n: usize) -> Result<Committed, AbortCause> {
        let irrevocable = self.irrevocable.is_some();
        // Phase 1: lock the write set, the word log's first (bounded
        // spinning keeps it deadlock-free), counting the sets on the way.
        let mut writes = 0u32;
        let mut reads = 0u32;
        if !self.words.is_empty() {
            match self.lock_words(irrevocable) {
                Ok(word_reads) => reads = word_reads,
                Err(outcome) => return Err(self.lock_failed(outcome)),
            }
            writes = self.words.len() as u32;
        }
        let mut ctx = Commit {
            version: 0,
            irrevocable,
            guard: &self.guard,
        };

        let mut unlocked_reads = false;
        for it in self.items[..n].iter_mut() {
            let read = it.is_read();
            reads += u32::from(read);
            if !it.is_write() {
                unlocked_reads |= read;
                continue;
            }
            writes += 1;
            // SAFETY: objects outlive the transaction (`Transaction<'env>`).
            let obj = unsafe { it.object.as_ref() };
            match obj.lock(it, &ctx) {
                LockOutcome::Acquired => it.set_locked(true),
                outcome => return Err(self.lock_failed(outcome)),
            }
        }
        reads += self.reads.len() as u32;
        if writes == 0 {
            return self.commit_read_only(reads);
        }

        // Phase 2: the commit version. Its SeqCst access to the clock word,
        // after the SeqCst lock RMWs, is also where a closed irrevocability
        // gate is seen (see `clock`).
        // TL2 ticks the clock for more than one write; a single write, and
        // every commit of the no-clock modes, only reads it (see
        // `version_past`). Either way the thread keeps a clock value it
        // read as its next snapshot bound (see `TxState::begin`).
        let word = if self.opacity == Opacity::Tl2 && writes > 1 {
            let word = clock::tick();
            ctx.version = word.time();
            self.start = ctx.version;
            word
        } else {
            let word = clock::now_seqcst();
            ctx.version = version_past(word);
            self.start = word.time();
            word
        };
        if word.irrevocable() && !irrevocable {
            self.unlock_all();
            return Err(AbortCause::Irrevocable);
        }
        let wake = wait::waiters_present();

        // Phase 3: validate reads not already covered by a lock on the same
        // item (a read item is locked only if its version was unchanged).
        let unchecked = unlocked_reads || !self.reads.is_empty();
        if unchecked && !self.validate_unlocked_reads(&ctx) {
            self.unlock_all();
            return Err(AbortCause::Validation);
        }

        // Phase 4: install (the commit point has passed); install also unlocks.
        for it in self.items[..n].iter_mut() {
            if it.is_locked() {
                // SAFETY: as above.
                let obj = unsafe { it.object.as_ref() };
                obj.install(it, &ctx);
                it.set_locked(false);
            }
        }
        if !self.words.is_empty() {
            self.install_words(ctx.version);
        }
        if wake {
            self.wake_waiters();
        }
        Ok(Committed { reads, writes })
    }

    /// Releases the locks taken before an item or word could not be
    /// locked, and says why the attempt aborts.
    #[cold]
    #[inline(never)]
    fn lock_failed(&mut self, outcome: LockOutcome) -> AbortCause {
        self.unlock_all();
        match outcome {
            LockOutcome::Busy => AbortCause::LockBusy,
            _ => AbortCause::Validation,
        }
    }

    /// Phase 3 of the commit: checks the reads that no lock of this
    /// transaction covers (an irrevocable attempt's reads need no check; see
    /// `TxState::acquire_irrevocability`).
    #[inline(never)]
    fn validate_unlocked_reads(&self, ctx: &Commit<'_>) -> bool {
        ctx.irrevocable
            || (self.items.iter().all(|it| {
                !it.is_read() || it.is_locked() || {
                    // SAFETY: objects outlive the transaction.
                    let obj = unsafe { it.object.as_ref() };
                    obj.check(it, ctx)
                }
            }) && self.validate_logged_reads())
    }

    #[cold]
    #[inline(never)]
    fn wake_waiters(&self) {
        wait::wake_readers_of(
            self.items
                .iter()
                .filter(|it| it.is_write())
                .map(|it| it.object_addr())
                .chain(self.words.iter().map(|w| w.object)),
        );
    }

    /// A read-only transaction commits without locking anything. Opaque
    /// modes validated every read against the snapshot when it was made, so
    /// it is serializable at its snapshot; without opacity, validate now.
    #[inline(always)]
    fn commit_read_only(&self, reads: u32) -> Result<Committed, AbortCause> {
        if self.opacity == Opacity::None && !self.view_holds() {
            return Err(AbortCause::Validation);
        }
        Ok(Committed { reads, writes: 0 })
    }

    #[cold]
    fn unlock_all(&mut self) {
        for it in self.items.iter_mut() {
            if it.is_locked() {
                // SAFETY: objects outlive the transaction.
                let obj = unsafe { it.object.as_ref() };
                obj.unlock(it);
                it.set_locked(false);
            }
        }
        self.unlock_words();
    }
}
