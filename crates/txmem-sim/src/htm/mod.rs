//! Hardware transactional memory: transaction frames, read/write sets, conflict lookup,
//! contention policies, backoff, abort statuses and suspended transactions.
//!
//! Abort statuses are `txmem-htm`'s [`AbortStatus`] and [`HtmAbortCause`], shared with the
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
mod frame;
pub mod policy;
pub mod set;
pub mod settings;
pub mod status;
pub mod suspend;

use crate::config::HtmConfig;
use crate::engine::per_core::PerCore;
use crate::engine::time::Cycle;
pub use frame::{FrameStack, LogicalTx, SuspendKind, TxFrame, READ, WRITE};
pub use status::{AbortStatus, Footprint, HtmAbortCause};

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
