//! The word log: writes of values stored inline in one atomic word
//! (`TBox<u64>`, `TArray<i32>`, any slot value of at most 8 bytes without
//! drop glue), buffered without an item.
//!
//! Why a second write set: an item is a 64-byte entry with a type-erased
//! value, and the commit reaches its object through one virtual call to
//! lock it and another to install it. A word write needs none of that: the
//! version word to lock, the atomic word to store, the encoded value, which
//! is what a word STM's write-set entry holds. The commit locks, installs
//! and unlocks these entries in loops of its own, beside the items'.
//!
//! A subobject is written through its item or through this log, never
//! both, and which one is fixed for the whole attempt: the log unless the
//! attempt's options turn untracked reads off (then every access goes
//! through items, the baseline to compare against), or the object keeps its
//! values' history (`TArray::with_snapshot_history`, whose install saves the
//! old value). A read of a word the attempt wrote finds it here, once the
//! one-word filter shared with the items says it may be here; a read of one
//! it did not write goes to the read log, where the commit validates it
//! (a logged read of a word this attempt locked holds if the lock is ours
//! and the word was locked at the version read: see `read`).

use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::sync::atomic::Ordering;

use super::commit::lock::{Commit, LockOutcome};
use super::index;
use super::savepoint;
use super::state::{filter_bit, LoggedRead, TxState, WordWrite};
use crate::version::{TVersion, LOCK_BIT};
use crate::word::AtomicWord;

impl TxState {
    /// The position of the word write to (`addr`, `key`), if any.
    #[inline(always)]
    pub(super) fn find_word(&self, addr: usize, key: u64) -> Option<usize> {
        if self.words_indexed {
            let words = &self.words;
            self.word_index
                .find(addr, key, |p| (words[p].object, words[p].key))
        } else if self.item_filter & filter_bit(addr, key) == 0 {
            None
        } else {
            self.words
                .iter()
                .position(|w| w.object == addr && w.key == key)
        }
    }

    /// The value this attempt wrote to (`addr`, `key`) through the word log,
    /// if it did (and reads may see their attempt's writes).
    #[inline(always)]
    pub(super) fn pending_word(&self, addr: usize, key: u64) -> Option<MaybeUninit<u64>> {
        if !self.may_have_written(addr, key) {
            return None;
        }
        self.find_word(addr, key).map(|p| self.words[p].bits)
    }

    /// Buffers a write of the encoded value `bits` to the word `word`
    /// guarded by `version`, subobject (`addr`, `key`): overwrites the
    /// attempt's earlier write to it, else appends. `read` is the version
    /// word at which `observe_for_write` just read the subobject for this
    /// write, or `NOT_READ`.
    #[inline(always)]
    pub(super) fn write_word(
        &mut self,
        addr: usize,
        key: u64,
        version: &TVersion,
        word: &AtomicWord,
        bits: MaybeUninit<u64>,
        read: u64,
    ) {
        self.mutated = true;
        let bit = filter_bit(addr, key);
        if self.item_filter & bit != 0 || self.words_indexed {
            if let Some(p) = self.find_word(addr, key) {
                if read != WordWrite::NOT_READ {
                    // Read past the attempt's own write (read-my-writes
                    // off): a read like any other.
                    self.log_read(NonNull::from(version), read, addr, key);
                }
                if !self.savepoints.is_empty() {
                    savepoint::log_word_before_change(self, p);
                }
                self.words[p].bits = bits;
                return;
            }
        }
        self.item_filter |= bit;
        let version = NonNull::from(version);
        let read = if read == WordWrite::NOT_READ {
            self.take_read_of(version)
        } else if self.savepoints.is_empty() {
            read
        } else {
            // Inside a branch the read must outlive a rollback that drops
            // the write.
            self.log_read(version, read, addr, key);
            WordWrite::NOT_READ
        };
        self.words.push(WordWrite {
            version,
            word: NonNull::from(word),
            bits,
            object: addr,
            key,
            read,
            locked_at: 0,
        });
        if self.words_indexed || self.words.len() > index::item_index_cutoff() {
            self.index_last_word();
        }
    }

    /// A read-modify-write (`TBox::modify`) logs its read, then writes the
    /// word: the new word write takes that read, the last logged, over, so
    /// that the commit validates it by locking at the version read (as an
    /// item read and written is locked) rather than finding, in the read
    /// log's validation, that the lock there is its own. Returns the word
    /// read, or `NOT_READ`. Not inside an `or_else` branch, whose rollback
    /// drops the write but keeps the read.
    #[inline(always)]
    fn take_read_of(&mut self, version: NonNull<TVersion>) -> u64 {
        match self.reads.last() {
            Some(r) if r.version == version && self.savepoints.is_empty() => {
                let word = r.word;
                self.reads.pop();
                word
            }
            _ => WordWrite::NOT_READ,
        }
    }

    /// Logs a read of `observe_for_write` that no new word write takes
    /// over, as `observe_logged` would have.
    #[cold]
    fn log_read(&mut self, version: NonNull<TVersion>, word: u64, addr: usize, key: u64) {
        self.reads.push(LoggedRead {
            version,
            word,
            object: addr,
            key,
        });
    }

    /// True if the read a word write took over (if any) still holds: the
    /// word unchanged, or locked at the version read by this attempt's
    /// commit.
    #[inline]
    pub(super) fn word_read_holds(&self, w: &WordWrite) -> bool {
        if w.read == WordWrite::NOT_READ {
            return true;
        }
        // SAFETY: as in `lock_words`.
        let cur = unsafe { w.version.as_ref() }.load_seqcst();
        cur == w.read || (self.words_locked > 0 && cur == w.read | LOCK_BIT)
    }

    /// Adds the word write just appended to the index, building the index
    /// when the log crosses the cutoff.
    #[cold]
    #[inline(never)]
    fn index_last_word(&mut self) {
        let words = &self.words;
        let key_of = |p: usize| (words[p].object, words[p].key);
        if self.words_indexed {
            let pos = words.len() - 1;
            let (addr, key) = key_of(pos);
            self.word_index.insert(addr, key, pos, key_of);
        } else {
            self.word_index.build(words.len(), key_of);
            self.words_indexed = true;
            self.rare = true;
        }
    }

    /// Rebuilds the index after a rollback shortened the log (`savepoint`).
    pub(super) fn reindex_words(&mut self) {
        if self.words_indexed {
            let words = &self.words;
            self.word_index
                .build(words.len(), |p| (words[p].object, words[p].key));
        }
    }

    /// Commit, phase 1: locks every word write (waiting without a bound if
    /// the attempt is `irrevocable`), a write that took over a read only at
    /// the version read. Returns the number of such reads. On failure the
    /// words locked so far stay locked (`words_locked` counts them) for
    /// `unlock_words`.
    #[inline(always)]
    pub(super) fn lock_words(&mut self, irrevocable: bool) -> Result<u32, LockOutcome> {
        let ctx = Commit {
            version: 0,
            irrevocable,
            guard: &self.guard,
        };
        let mut reads = 0;
        for w in self.words.iter_mut() {
            // SAFETY: the version belongs to an object that outlives the
            // transaction (`Transaction<'env>`); the log is cleared with it.
            let version = unsafe { w.version.as_ref() };
            w.locked_at = if w.read == WordWrite::NOT_READ {
                ctx.lock_unread(version)?
            } else {
                reads += 1;
                match ctx.lock_read(version, w.read) {
                    LockOutcome::Acquired => w.read,
                    outcome => return Err(outcome),
                }
            };
            self.words_locked += 1;
        }
        Ok(reads)
    }

    /// Commit, phase 4: stores every word and unlocks it at a version past
    /// `commit_version` (as `TVersion::next_after` gives).
    #[inline(always)]
    pub(super) fn install_words(&mut self, commit_version: u64) {
        for w in self.words.iter() {
            // SAFETY: as in `lock_words`; the word belongs to the same
            // object, and this transaction holds its version's lock, so no
            // other writer stores to it.
            let (version, word) = unsafe { (w.version.as_ref(), w.word.as_ref()) };
            // Release: a reader that sees the new value sees the lock taken
            // before it (the seqlock read checks the version again).
            word.store(w.bits, Ordering::Release);
            version.unlock_to(TVersion::next_after(w.locked_at, commit_version));
        }
        self.words_locked = 0;
    }

    /// Releases the word locks taken by a commit that cannot go on.
    pub(super) fn unlock_words(&mut self) {
        for w in &self.words[..self.words_locked] {
            // SAFETY: as in `lock_words`.
            unsafe { w.version.as_ref() }.unlock_unchanged(w.locked_at);
        }
        self.words_locked = 0;
    }

    /// True if this attempt's commit holds the lock of its word write to
    /// (`addr`, `key`).
    #[inline]
    pub(super) fn holds_word_lock(&self, addr: usize, key: u64) -> bool {
        self.words_locked > 0
            && self
                .find_word(addr, key)
                .is_some_and(|p| p < self.words_locked)
    }
}
