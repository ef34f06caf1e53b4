//! The commit protocol (STO): lock the write set, take a commit version,
//! validate the read set, install, and wake blocked `retry`ers.

use super::TxState;
use crate::clock::{self, IRREVOCABLE};
use crate::error::AbortCause;
use crate::object::{Commit, LockOutcome};
use crate::options::Opacity;
use crate::version::{TVersion, VERSION_STEP};
use crate::wait;

/// What a successful commit did, for the statistics.
pub(crate) struct Committed {
    pub reads: usize,
    pub writes: usize,
}

impl TxState {
    /// Commits the current attempt or reports why it must abort. On failure
    /// every lock taken has been released; the items stay for the caller's
    /// blocking wait or cleanup.
    #[inline]
    pub(crate) fn commit(&mut self) -> Result<Committed, AbortCause> {
        if !self.mutated {
            // No item was handed out for mutation: nothing to lock or install.
            return self.commit_read_only(self.items.len());
        }
        self.commit_writes()
    }

    /// The full protocol, for transactions that may have written.
    #[inline(never)]
    fn commit_writes(&mut self) -> Result<Committed, AbortCause> {
        let irrevocable = self.irrevocable.is_some();

        // Phase 1: lock the write set (bounded spinning keeps it
        // deadlock-free), counting the sets on the way.
        let mut reads = 0;
        let mut writes = 0;
        let mut unlocked_reads = 0;
        let locking = Commit {
            version: 0,
            irrevocable,
            guard: &self.guard,
        };
        let mut failure = None;
        for it in self.items.iter_mut() {
            let read = it.is_read() as usize;
            reads += read;
            if !it.is_write() {
                unlocked_reads += read;
                continue;
            }
            writes += 1;
            // SAFETY: objects outlive the transaction (`Transaction<'env>`).
            let obj = unsafe { it.object.as_ref() };
            match obj.lock(it, &locking) {
                LockOutcome::Acquired => it.set_locked(true),
                LockOutcome::Busy => {
                    failure = Some(AbortCause::LockBusy);
                    break;
                }
                LockOutcome::Stale => {
                    failure = Some(AbortCause::Validation);
                    break;
                }
            }
        }
        if let Some(cause) = failure {
            self.unlock_all();
            return Err(cause);
        }
        if writes == 0 {
            return self.commit_read_only(reads);
        }

        // Phase 2: the commit version. Its SeqCst access to the clock word,
        // after the SeqCst lock RMWs, is also where a closed irrevocability
        // gate is seen (see `clock`).
        let (word, version) = match self.opacity {
            Opacity::Tl2 => {
                let word = clock::tick();
                (word, word.time())
            }
            // Silo-style: larger than every version this transaction saw and
            // than the clock, without writing any shared word.
            Opacity::Revalidate | Opacity::None => {
                let word = clock::now_seqcst();
                let seen = self
                    .items
                    .iter()
                    .map(|it| TVersion::version_of(it.read_version()))
                    .fold(word.time(), u64::max);
                (word, seen + VERSION_STEP)
            }
        };
        if word.has(IRREVOCABLE) && !irrevocable {
            self.unlock_all();
            return Err(AbortCause::Irrevocable);
        }
        let wake = wait::waiters_present();
        let ctx = Commit {
            version,
            irrevocable,
            guard: &self.guard,
        };

        // Phase 3: validate reads not already covered by a lock on the same
        // item (a read item is locked only if its version was unchanged).
        let valid = unlocked_reads == 0
            || self.items.iter().all(|it| {
                !it.is_read() || it.is_locked() || {
                    // SAFETY: as above.
                    let obj = unsafe { it.object.as_ref() };
                    obj.check(it, &ctx)
                }
            });
        if !valid {
            assert!(
                !irrevocable,
                "txmem: an irrevocable transaction failed validation (a TObject broke the protocol)"
            );
            self.unlock_all();
            return Err(AbortCause::Validation);
        }

        // Phase 4: install (the commit point has passed); install also unlocks.
        for it in self.items.iter_mut() {
            if it.is_locked() {
                // SAFETY: as above.
                let obj = unsafe { it.object.as_ref() };
                obj.install(it, &ctx);
                it.set_locked(false);
            }
        }
        if wake {
            wait::wake_readers_of(
                self.items
                    .iter()
                    .filter(|it| it.is_write())
                    .map(|it| it.object_addr()),
            );
        }
        Ok(Committed { reads, writes })
    }

    /// A read-only transaction commits without locking anything. Opaque
    /// modes validated every read against the snapshot when it was made, so
    /// it is serializable at its snapshot; without opacity, validate now.
    #[inline]
    fn commit_read_only(&self, reads: usize) -> Result<Committed, AbortCause> {
        if self.opacity == Opacity::None && !self.validate_reads() {
            return Err(AbortCause::Validation);
        }
        Ok(Committed { reads, writes: 0 })
    }

    fn unlock_all(&mut self) {
        for it in self.items.iter_mut() {
            if it.is_locked() {
                // SAFETY: objects outlive the transaction.
                let obj = unsafe { it.object.as_ref() };
                obj.unlock(it);
                it.set_locked(false);
            }
        }
    }
}
