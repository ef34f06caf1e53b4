//! Hardware transactional memory: transaction frames, read/write sets, conflict lookup,
//! contention policies, backoff, abort statuses and suspended transactions.
//!
//! Abort statuses are `txmem-htm`'s [`AbortStatus`] and [`AbortCause`], shared with the
//! real lock-elision backends; [`status`] says how simulated aborts map into them.
//!
//! Each core has a stack of frames. The top frame, when it is neither suspended nor doomed,
//! is the core's *active* transaction; frames below it are suspended (by `xpush`, by an
//! interrupt in `xpush` mode, or by POWER8 `tsuspend`). `xpush` with no active transaction
//! pushes a *marker* frame so that the matching `xpop` finds its entry (MetaTM §2.2).
//!
//! Read and write sets are kept per frame at word (8-byte) and line granularity; per-line
//! core masks say which cores have a frame holding a line, so conflict lookup is a mask test
//! on the common path.

pub mod backoff;
pub mod policy;
pub mod set;
pub mod settings;
pub mod status;
pub mod suspend;

use crate::config::HtmConfig;
use crate::engine::per_core::PerCore;
use crate::engine::time::Cycle;
use set::U64Map;
pub use status::{AbortCause, AbortStatus, Footprint};

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
/// grow. The sets change only through [`Htm::record_read`], [`Htm::record_write`] and
/// [`Htm::clear_tracking`], which keep the per-line core masks in step.
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
    words: U64Map,
    /// Lines read or written: line -> flags, in first-access order.
    lines: U64Map,
    /// Words read.
    n_read_words: u32,
    /// Words written.
    n_write_words: u32,
    /// Lines read.
    n_read_lines: u32,
    /// Lines written.
    n_write_lines: u32,
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
    fn reset(&mut self) {
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
    fn clear_sets(&mut self) {
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
    frames: Vec<TxFrame>,
    len: usize,
    /// Per depth: whether slot `d` holds the parked logical transaction of depth `d`.
    parked: Vec<bool>,
    /// Per depth: a spilled logical transaction of depth `d` (then `parked[d]` is false).
    spilled: Vec<Option<LogicalTx>>,
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
    fn push_reset(&mut self) -> usize {
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
    fn remove(&mut self, idx: usize) {
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
    fn remove_below_top(&mut self, idx: usize) {
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
    fn abort(&mut self, idx: usize) {
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
    fn continue_or_start(&mut self, d: usize, lid: u64, now: Cycle) -> bool {
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
    fn retry_state(&mut self, d: usize) -> Option<&mut LogicalTx> {
        if self.parked.get(d).copied().unwrap_or(false) {
            Some(&mut self.frames[d].logical)
        } else {
            self.spilled.get_mut(d).and_then(Option::as_mut)
        }
    }

    /// Drops the retry state of every depth.
    fn forget_retry(&mut self) {
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

/// All transactional state of the machine.
#[derive(Debug)]
pub struct Htm {
    /// The knobs.
    pub cfg: HtmConfig,
    /// Frame stack per core (top = last).
    pub stacks: PerCore<FrameStack>,
    /// Per line: CPUs (hardware threads) with a frame that read it. Kept per hardware
    /// thread, not per physical core, so that siblings sharing one L1 still conflict.
    pub line_r: Vec<u128>,
    /// Per line: CPUs (hardware threads) with a frame that wrote it.
    pub line_w: Vec<u128>,
    /// Frames on every core's stack: while there are none, no line is tracked, and an access
    /// need not read the per-line masks (which for a large memory miss the host's caches).
    live: usize,
    next_id: u64,
    next_lid: u64,
}

impl Htm {
    /// Transactional state for `cores` cores and `lines` memory lines.
    pub fn new(cfg: HtmConfig, cores: usize, lines: usize) -> Self {
        Htm {
            cfg,
            stacks: PerCore::new(cores, |_| FrameStack::default(), FrameStack::default),
            line_r: vec![0; lines],
            line_w: vec![0; lines],
            live: 0,
            next_id: 1,
            next_lid: 1,
        }
    }

    /// Index of `core`'s active transaction frame, if any.
    #[inline]
    pub fn active(&self, core: usize) -> Option<usize> {
        let s = &self.stacks[core];
        match s.last() {
            Some(f) if f.is_live_active() => Some(s.len() - 1),
            _ => None,
        }
    }

    /// Index of the frame with attempt id `id` on `core`.
    #[inline]
    pub fn find(&self, core: usize, id: u64) -> Option<usize> {
        self.stacks[core]
            .iter()
            .rposition(|f| f.id == id && !f.marker)
    }

    /// Pushes a fresh frame (reusing a previous one's allocations) and returns its index.
    #[inline]
    pub fn push_frame(&mut self, core: usize) -> usize {
        self.live += 1;
        self.stacks[core].push_reset()
    }

    /// Whether any core has a frame (only then can a line be tracked).
    #[inline]
    pub fn any_frames(&self) -> bool {
        self.live > 0
    }

    /// Starts an outermost transaction attempt on `core` at time `now`; continues the logical
    /// transaction of the last abort at this depth if there is one. Returns (index, id).
    /// Reserves the attempt id the next outermost `begin` on `core` will use.
    #[inline]
    pub fn reserve_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Starts an outermost transaction attempt with a reserved `id` on `core` at time `now`;
    /// continues the logical transaction of the last abort at this depth if there is one.
    /// Returns the frame index.
    #[inline]
    pub fn begin_with_id(&mut self, core: usize, rot: bool, now: Cycle, id: u64) -> usize {
        self.live += 1;
        let stack = &mut self.stacks[core];
        let idx = stack.push_reset();
        if stack.continue_or_start(idx, self.next_lid, now) {
            self.next_lid += 1;
        }
        let f = &mut stack.frames[idx];
        f.id = id;
        f.rot = rot;
        f.nesting = 1;
        idx
    }

    /// Starts an outermost transaction attempt on `core` with a fresh id. Returns
    /// (frame index, id).
    pub fn begin(&mut self, core: usize, rot: bool, now: Cycle) -> (usize, u64) {
        let id = self.reserve_id();
        (self.begin_with_id(core, rot, now, id), id)
    }

    /// Removes frame `idx` of `core` (its tracking must be cleared already) and returns it
    /// to the pool.
    #[inline]
    pub fn pop_frame(&mut self, core: usize, idx: usize) {
        self.live -= 1;
        self.stacks[core].remove(idx)
    }

    /// Removes aborted frame `idx` of `core` (its tracking must be cleared already) and
    /// keeps its logical transaction, with one more restart, for the next transaction that
    /// begins at the same depth.
    #[inline]
    pub fn abort_frame(&mut self, core: usize, idx: usize) {
        self.live -= 1;
        self.stacks[core].abort(idx)
    }

    /// The logical transaction the next transaction beginning at the current depth of
    /// `core` will continue (that of the last abort at this depth), if any.
    #[inline]
    pub fn retry_state(&mut self, core: usize) -> Option<&mut LogicalTx> {
        let s = &mut self.stacks[core];
        let d = s.len();
        s.retry_state(d)
    }

    /// Forgets any remembered retry state of `core` (the caller gave up on the transaction).
    pub fn forget_retry(&mut self, core: usize) {
        self.stacks[core].forget_retry();
    }

    /// Records a transactional read of `word` in `line` by frame `idx` of `core` (nothing
    /// for rollback-only transactions, whose loads are not tracked).
    #[inline]
    pub fn record_read(&mut self, core: usize, idx: usize, word: u64, line: u64) {
        let f = &mut self.stacks[core][idx];
        if !f.rot && f.note_read(word, line) {
            self.line_r[line as usize] |= 1u128 << core;
        }
    }

    /// Records a transactional write of `word` in `line`; returns true on the first write
    /// of that word by this frame.
    #[inline]
    pub fn record_write(&mut self, core: usize, idx: usize, word: u64, line: u64) -> bool {
        let (first, new_line) = self.stacks[core][idx].note_write(word, line);
        if new_line {
            self.line_w[line as usize] |= 1u128 << core;
        }
        first
    }

    /// Clears the per-line masks of frame `idx` of `core` (keeping bits other frames of the
    /// same core still need), and empties its read/write sets.
    #[inline(always)]
    pub fn clear_tracking(&mut self, core: usize, idx: usize) {
        if self.stacks[core].len() > 1 {
            return self.clear_tracking_nested(core, idx);
        }
        // The core's only frame: its lines are exactly the core's bits in the masks.
        let bit = 1u128 << core;
        let f = &mut self.stacks[core][idx];
        for (line, flags) in f.lines.iter() {
            if flags & READ != 0 {
                self.line_r[line as usize] &= !bit;
            }
            if flags & WRITE != 0 {
                self.line_w[line as usize] &= !bit;
            }
        }
        f.clear_sets();
    }

    /// [`Htm::clear_tracking`] when the core has other frames, which may hold the same
    /// lines (suspended transactions): their bits stay.
    #[inline(never)]
    fn clear_tracking_nested(&mut self, core: usize, idx: usize) {
        let bit = 1u128 << core;
        let stack = &mut self.stacks[core];
        let f = &stack[idx];
        for (line, flags) in f.lines.iter() {
            let others = stack
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != idx)
                .fold(0, |acc, (_, g)| acc | g.line_flags(line));
            if flags & READ != 0 && others & READ == 0 {
                self.line_r[line as usize] &= !bit;
            }
            if flags & WRITE != 0 && others & WRITE == 0 {
                self.line_w[line as usize] &= !bit;
            }
        }
        stack[idx].clear_sets();
    }

    /// Cores that may hold a frame conflicting with an access by `core` to `line` (`skip`
    /// being the requester's own active frame, if any): a cheap filter for
    /// [`Htm::conflicts`], which finds nothing when this is 0.
    #[inline]
    fn conflict_mask(&self, core: usize, skip: Option<usize>, line: u64, write: bool) -> u128 {
        if self.live == 0 {
            return 0;
        }
        let mut mask = self.line_w[line as usize];
        if write {
            mask |= self.line_r[line as usize];
        }
        // The requester's own frame is skipped: when it is the core's only frame (or the core
        // has none), the core's own bit cannot name a conflicting frame.
        if mask != 0 && self.stacks[core].len() == usize::from(skip.is_some()) {
            mask &= !(1u128 << core);
        }
        mask
    }

    /// Whether [`Htm::conflicts`] may find a conflicting frame for this access (false means
    /// it finds none).
    #[inline]
    pub fn may_conflict(&self, core: usize, skip: Option<usize>, line: u64, write: bool) -> bool {
        self.conflict_mask(core, skip, line, write) != 0
    }

    /// Appends to `out` every frame `(core, index)` whose footprint conflicts with an access
    /// by `core` to `word`/`line`, except frame `skip` of `core` (the requester itself).
    #[inline(always)]
    pub fn conflicts(
        &self,
        core: usize,
        skip: Option<usize>,
        line: u64,
        word: u64,
        write: bool,
        out: &mut Vec<(usize, usize)>,
    ) {
        let mut mask = self.conflict_mask(core, skip, line, write);
        if mask == 0 {
            return;
        }
        let wg = self.cfg.granularity == crate::config::Granularity::Word;
        while mask != 0 {
            let d = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            let frames = &self.stacks[d];
            if !wg && frames.len() == 1 {
                // The masks are exactly the union of the core's line sets, so with one frame
                // (never the skipped one: its bit is not in the mask) the bit is the answer.
                debug_assert!(frames[0].conflicts_with(line, word, write, wg));
                out.push((d, 0));
                continue;
            }
            for (j, f) in frames.iter().enumerate() {
                if d == core && Some(j) == skip {
                    continue;
                }
                if f.conflicts_with(line, word, write, wg) {
                    out.push((d, j));
                }
            }
        }
    }

    /// Number of frames (including markers) on `core`.
    #[inline]
    pub fn depth(&self, core: usize) -> usize {
        self.stacks[core].len()
    }
}
