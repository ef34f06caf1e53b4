//! A core's transaction frames: each frame's read and write sets and state, the logical
//! transaction that survives its restarts, and the per-core stack of frames.

use super::set::U64Map;
use super::status::AbortStatus;
use crate::engine::time::Cycle;

/// How a frame was suspended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SuspendKind {
    /// MetaTM `xpush` (explicit or by an interrupt): it can win or lose conflicts.
    Xpush,
    /// POWER8 `tsuspend`: any conflict dooms it, reported at `tresume`.
    Tsuspend,
}

/// State of a transaction that survives its restarts (timestamp, karma, deferrals).
#[derive(Clone, Debug, Default)]
pub struct LogicalTx {
    /// Identity of the logical transaction.
    pub lid: u64,
    /// Time of its first attempt (timestamp policy; not refreshed on restart).
    pub start: Cycle,
    /// Karma: unique references over all attempts.
    pub karma: u64,
    /// Attempts that aborted so far.
    pub restarts: u32,
    /// Logical transactions this one has deferred to (Kindergarten).
    pub deferred_to: Vec<u64>,
    /// Backoff seed chosen by the policy that made it lose (Polka), if any.
    pub seed_override: Option<u64>,
}

/// Flag of a [`TxFrame`] set entry: the frame read the word or line.
pub const READ: u64 = 1;
/// Flag of a [`TxFrame`] set entry: the frame wrote the word or line.
pub const WRITE: u64 = 2;

/// One transaction attempt (or a marker left by `xpush` with no transaction).
///
/// The read and write sets are kept as one map per granularity (word, line) from the key to
/// its [`READ`] | [`WRITE`] flags, so that recording an access or testing a conflict is one
/// lookup; the sizes of the read set, the write set and their union are counted as the maps
/// grow. The sets change only through [`Htm::record_read`](super::Htm::record_read),
/// [`Htm::record_write`](super::Htm::record_write) and
/// [`Htm::clear_tracking`](super::Htm::clear_tracking), which keep the per-line core masks in
/// step.
#[derive(Clone, Debug, Default)]
pub struct TxFrame {
    /// Unique attempt id (0 for markers).
    pub id: u64,
    /// A marker pushed by `xpush` when no transaction was active.
    pub marker: bool,
    /// Rollback-only transaction: loads are not tracked, stores are buffered.
    pub rot: bool,
    /// Suspension, if suspended.
    pub suspended: Option<SuspendKind>,
    /// Set when the attempt has lost; it is rolled back already and reports this status.
    pub doomed: Option<AbortStatus>,
    /// Flat nesting depth (1 for an outermost transaction).
    pub nesting: u32,
    /// State kept across restarts.
    pub logical: LogicalTx,
    /// Words read or written: word index -> flags, in first-access order.
    pub(super) words: U64Map,
    /// Lines read or written: line -> flags, in first-access order.
    pub(super) lines: U64Map,
    /// Words read.
    pub(super) n_read_words: u32,
    /// Words written.
    pub(super) n_write_words: u32,
    /// Lines read.
    pub(super) n_read_lines: u32,
    /// Lines written.
    pub(super) n_write_lines: u32,
    /// Undo log (eager versioning): word index -> old value, first write only.
    pub undo: U64Map,
    /// Write buffer (lazy versioning, rollback-only): word index -> new value.
    pub wbuf: U64Map,
    /// Whether it overflowed the L1 (unbounded capacity).
    pub overflowed: bool,
    /// Transactional lines that left the L1 (unbounded capacity).
    pub overflow_lines: U64Map,
    /// Whether a tracked line was seen conflicting while suspended.
    pub doomed_while_suspended: bool,
}

impl TxFrame {
    /// Whether this frame runs transactionally now.
    #[inline]
    pub fn is_live_active(&self) -> bool {
        !self.marker && self.suspended.is_none() && self.doomed.is_none()
    }

    /// [`READ`] | [`WRITE`] flags of `word` (0 when untracked).
    #[inline]
    pub fn word_flags(&self, word: u64) -> u64 {
        self.words.get(word).unwrap_or(0)
    }

    /// [`READ`] | [`WRITE`] flags of `line` (0 when untracked).
    #[inline]
    pub fn line_flags(&self, line: u64) -> u64 {
        self.lines.get(line).unwrap_or(0)
    }

    /// Whether the frame read `word`.
    #[inline]
    pub fn reads_word(&self, word: u64) -> bool {
        self.word_flags(word) & READ != 0
    }

    /// Whether the frame wrote `word`.
    #[inline]
    pub fn writes_word(&self, word: u64) -> bool {
        self.word_flags(word) & WRITE != 0
    }

    /// Whether the frame read `line`.
    #[inline]
    pub fn reads_line(&self, line: u64) -> bool {
        self.line_flags(line) & READ != 0
    }

    /// Whether the frame wrote `line`.
    #[inline]
    pub fn writes_line(&self, line: u64) -> bool {
        self.line_flags(line) & WRITE != 0
    }

    /// Whether the frame's tracked footprint conflicts with an access to `word`/`line`.
    /// `write` is the access kind; `word_granularity` refines line matches to words.
    #[inline]
    pub fn conflicts_with(
        &self,
        line: u64,
        word: u64,
        write: bool,
        word_granularity: bool,
    ) -> bool {
        if self.marker || self.doomed.is_some() {
            return false;
        }
        let flags = if word_granularity {
            self.word_flags(word)
        } else {
            self.line_flags(line)
        };
        flags & WRITE != 0 || (write && flags & READ != 0)
    }

    /// Whether the frame holds `line` in its tracked sets.
    #[inline]
    pub fn tracks_line(&self, line: u64) -> bool {
        self.line_flags(line) != 0
    }

    /// Unique words read.
    #[inline]
    pub fn read_set_words(&self) -> usize {
        self.n_read_words as usize
    }

    /// Unique words written.
    #[inline]
    pub fn write_set_words(&self) -> usize {
        self.n_write_words as usize
    }

    /// Unique lines read.
    #[inline]
    pub fn read_set_lines(&self) -> usize {
        self.n_read_lines as usize
    }

    /// Unique lines written.
    #[inline]
    pub fn write_set_lines(&self) -> usize {
        self.n_write_lines as usize
    }

    /// Unique words read or written (loads of rollback-only transactions are not tracked).
    #[inline]
    pub fn working_set_words(&self) -> usize {
        self.words.len()
    }

    /// Unique lines read or written.
    #[inline]
    pub fn working_set_lines(&self) -> usize {
        self.lines.len()
    }

    /// Working-set size in unique bytes (SizeMatters).
    #[inline]
    pub fn size_bytes(&self) -> u64 {
        self.working_set_words() as u64 * 8
    }

    /// Adds a read of `word` in `line` to the sets (rollback-only frames do not track
    /// loads: the caller skips them). Returns whether `line` is new to the read set, i.e.
    /// whether the core's read-mask bit of the line must be set.
    #[inline(always)]
    pub(crate) fn note_read(&mut self, word: u64, line: u64) -> bool {
        let old = self.words.or_insert(word, READ);
        if old & READ == 0 {
            self.n_read_words += 1;
            if old == 0 {
                // Karma counts unique references: a word neither read nor written before.
                self.logical.karma = self.logical.karma.saturating_add(1);
            }
        }
        let new_line = self.lines.or_insert(line, READ) & READ == 0;
        if new_line {
            self.n_read_lines += 1;
        }
        new_line
    }

    /// Adds a write of `word` in `line` to the sets. Returns (whether it is the first write
    /// of `word`, whether `line` is new to the write set).
    #[inline(always)]
    pub(crate) fn note_write(&mut self, word: u64, line: u64) -> (bool, bool) {
        let old = self.words.or_insert(word, WRITE);
        let first = old & WRITE == 0;
        if first {
            self.n_write_words += 1;
            if old == 0 {
                self.logical.karma = self.logical.karma.saturating_add(1);
            }
        }
        let new_line = self.lines.or_insert(line, WRITE) & WRITE == 0;
        if new_line {
            self.n_write_lines += 1;
        }
        (first, new_line)
    }

    /// Makes the frame fresh (its logical state is left as it is: frames leave the stack
    /// through [`FrameStack::remove`], which takes it).
    #[inline]
    pub(super) fn reset(&mut self) {
        self.id = 0;
        self.marker = false;
        self.rot = false;
        self.suspended = None;
        self.doomed = None;
        self.nesting = 0;
        self.clear_sets();
        self.undo.clear();
        self.wbuf.clear();
        self.overflowed = false;
        self.overflow_lines.clear();
        self.doomed_while_suspended = false;
    }

    /// Empties the read and write sets.
    #[inline]
    pub(super) fn clear_sets(&mut self) {
        self.words.clear();
        self.lines.clear();
        self.n_read_words = 0;
        self.n_write_words = 0;
        self.n_read_lines = 0;
        self.n_write_lines = 0;
    }
}

/// A core's stack of frames. Frames above the top are kept (not dropped) so that their set
/// allocations are reused by the next transaction: pushing and popping moves no data.
///
/// The stack also keeps the retry state of each depth: the logical transaction of the last
/// attempt that aborted at depth `d` is continued by the next transaction that begins at
/// depth `d`. It is *parked* in place, in the spare frame slot `d` it ran in (nothing but a
/// transaction beginning at `d` touches a slot's logical state), so an abort and the retry
/// move no data. Only when an attempt below the top ends (the frames above it shift down)
/// are the parked states concerned *spilled* to a side list.
#[derive(Debug, Default, Clone)]
pub struct FrameStack {
    pub(super) frames: Vec<TxFrame>,
    pub(super) len: usize,
    /// Per depth: whether slot `d` holds the parked logical transaction of depth `d`.
    pub(super) parked: Vec<bool>,
    /// Per depth: a spilled logical transaction of depth `d` (then `parked[d]` is false).
    pub(super) spilled: Vec<Option<LogicalTx>>,
}

impl FrameStack {
    /// Number of frames.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no frames.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The frames, bottom first.
    #[inline]
    pub fn iter(&self) -> std::slice::Iter<'_, TxFrame> {
        self.frames[..self.len].iter()
    }

    /// The top frame.
    #[inline]
    pub fn last(&self) -> Option<&TxFrame> {
        self.len.checked_sub(1).and_then(|i| self.frames.get(i))
    }

    /// The top frame, mutably.
    #[inline]
    pub fn last_mut(&mut self) -> Option<&mut TxFrame> {
        self.len.checked_sub(1).and_then(|i| self.frames.get_mut(i))
    }

    #[inline]
    pub(super) fn push_reset(&mut self) -> usize {
        if self.len == self.frames.len() {
            self.frames.push(TxFrame::default());
            self.parked.push(false);
            self.spilled.push(None);
        }
        self.frames[self.len].reset();
        self.len += 1;
        self.len - 1
    }

    /// Removes frame `idx` (the top, except in rare cases).
    #[inline]
    pub(super) fn remove(&mut self, idx: usize) {
        assert!(idx < self.len);
        if idx + 1 == self.len {
            self.len -= 1;
        } else {
            self.remove_below_top(idx);
        }
    }

    /// Removes frame `idx` below the top: the frames above it shift down, so the logical
    /// states parked in their slots are spilled first; the removed frame's slot goes above
    /// the live frames.
    #[cold]
    pub(super) fn remove_below_top(&mut self, idx: usize) {
        for j in idx + 1..self.len {
            if self.parked[j] {
                self.parked[j] = false;
                self.spilled[j] = Some(std::mem::take(&mut self.frames[j].logical));
            }
        }
        let f = self.frames.remove(idx);
        self.frames.insert(self.len - 1, f);
        self.len -= 1;
    }

    /// Removes aborted frame `idx` and keeps its logical transaction (one more restart) for
    /// the next transaction that begins at depth `idx`.
    #[inline]
    pub(super) fn abort(&mut self, idx: usize) {
        assert!(idx < self.len);
        self.frames[idx].logical.restarts += 1;
        if idx + 1 == self.len {
            self.len -= 1;
            self.parked[idx] = true;
            self.spilled[idx] = None;
        } else {
            let l = std::mem::take(&mut self.frames[idx].logical);
            self.remove_below_top(idx);
            self.parked[idx] = false;
            self.spilled[idx] = Some(l);
        }
    }

    /// Gives top frame `d` (a transaction just pushed) its logical transaction: the one
    /// kept for depth `d` by the last abort there, or a fresh one named `lid` that starts at
    /// `now` (then `lid` was used and `true` is returned).
    #[inline]
    pub(super) fn continue_or_start(&mut self, d: usize, lid: u64, now: Cycle) -> bool {
        debug_assert_eq!(d + 1, self.len);
        if self.parked[d] {
            self.parked[d] = false;
            return false;
        }
        let l = &mut self.frames[d].logical;
        if let Some(spilled) = self.spilled[d].take() {
            *l = spilled;
            return false;
        }
        l.lid = lid;
        l.start = now;
        l.karma = 0;
        l.restarts = 0;
        l.deferred_to.clear();
        l.seed_override = None;
        true
    }

    /// The logical transaction kept for the next attempt at depth `d`, if any.
    #[inline]
    pub(super) fn retry_state(&mut self, d: usize) -> Option<&mut LogicalTx> {
        if self.parked.get(d).copied().unwrap_or(false) {
            Some(&mut self.frames[d].logical)
        } else {
            self.spilled.get_mut(d).and_then(Option::as_mut)
        }
    }

    /// Drops the retry state of every depth.
    pub(super) fn forget_retry(&mut self) {
        self.parked.iter_mut().for_each(|p| *p = false);
        self.spilled.iter_mut().for_each(|s| *s = None);
    }
}

impl std::ops::Index<usize> for FrameStack {
    type Output = TxFrame;
    #[inline]
    fn index(&self, i: usize) -> &TxFrame {
        // Frames above `len` are spare frames kept for their allocations: indexing one is a
        // logic error (checked in debug builds), never a memory error.
        debug_assert!(i < self.len, "frame {i} of a stack of {}", self.len);
        &self.frames[i]
    }
}

impl std::ops::IndexMut<usize> for FrameStack {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut TxFrame {
        debug_assert!(i < self.len, "frame {i} of a stack of {}", self.len);
        &mut self.frames[i]
    }
}
