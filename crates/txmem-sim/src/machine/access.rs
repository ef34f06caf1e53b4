//! One memory access: conflict detection and resolution (contention policies, stalls),
//! caches and coherence, values and read/write sets.

use super::*;
use crate::htm::Footprint;

impl Machine {
    /// A line left the L1 of the physical core running CPU `actor` (the core executing
    /// now): every hardware thread of that core loses it, since they share the L1.
    /// Returns the extra latency and whether `actor`'s own active transaction aborted.
    #[inline]
    pub(super) fn evicted_from_core(&mut self, actor: usize, line: u64) -> (Cycle, bool) {
        let tpc = self.cfg.threads_per_core;
        if tpc == 1 {
            return self.evicted(actor, actor, line);
        }
        let first = self.core_of(actor) * tpc;
        let (mut extra, mut self_abort) = (0, false);
        for cpu in first..first + tpc {
            let (e, s) = self.evicted(actor, cpu, line);
            extra += e;
            self_abort |= s;
        }
        (extra, self_abort)
    }

    /// The protocol recalled `line` from the physical cores in `holders` (a sparse directory
    /// making room) while `actor` was executing: to a transaction that tracked it, that is an
    /// eviction like any other. Returns whether `actor`'s own active transaction aborted.
    #[inline(never)]
    pub(super) fn recalled(&mut self, actor: usize, line: u64, holders: u64) -> bool {
        let tpc = self.cfg.threads_per_core;
        let mut self_abort = false;
        let mut h = holders;
        while h != 0 {
            let d = h.trailing_zeros() as usize;
            h &= h - 1;
            for cpu in d * tpc..(d + 1) * tpc {
                self_abort |= self.evicted(actor, cpu, line).1;
            }
        }
        self_abort
    }

    /// The lines the latest access recalled ([`Hierarchy::recalls`]), each as in
    /// [`Machine::recalled`]. Returns whether `actor`'s own active transaction aborted.
    pub(super) fn all_recalled(&mut self, actor: usize) -> bool {
        let mut self_abort = false;
        for k in 0..self.hier.recalls.len() {
            let (v, holders) = self.hier.recalls[k];
            self_abort |= self.recalled(actor, v, holders);
        }
        self_abort
    }

    /// A line left `core`'s L1 for capacity while `actor` was executing. Returns the extra
    /// latency (overflow penalty) and whether `actor`'s own active transaction aborted.
    pub(super) fn evicted(&mut self, actor: usize, core: usize, line: u64) -> (Cycle, bool) {
        if !self.htm.any_frames()
            || (self.htm.line_r[line as usize] | self.htm.line_w[line as usize]) & (1u128 << core)
                == 0
        {
            return (0, false);
        }
        let mut extra = 0;
        let mut self_abort = false;
        let active = self.htm.active(core);
        for j in 0..self.htm.depth(core) {
            let f = &self.htm.stacks[core][j];
            if f.marker || f.doomed.is_some() || !f.tracks_line(line) {
                continue;
            }
            match self.cfg.htm.capacity {
                Capacity::Bounded => {
                    let part = if f.writes_line(line) {
                        Footprint::Write
                    } else {
                        Footprint::Read
                    };
                    self.doom(actor, core, j, crate::htm::status::capacity(part));
                    if core == actor && Some(j) == active {
                        self_abort = true;
                    }
                }
                Capacity::Unbounded => {
                    let f = &mut self.htm.stacks[core][j];
                    if !f.overflowed {
                        f.overflowed = true;
                        self.stats.tx.overflows += 1;
                        extra += self.cfg.htm.overflow_penalty;
                    }
                    f.overflow_lines.insert(line, 0);
                }
            }
        }
        (extra, self_abort)
    }

    /// A load, store or read-modify-write of the word at `addr` by `core`.
    #[inline(always)]
    pub(super) fn mem_op(
        &mut self,
        core: usize,
        addr: u64,
        kind: MemKind,
        retrying: bool,
    ) -> Outcome {
        let w = match self.mem.word_index(addr) {
            Ok(w) => w,
            Err(msg) => panic!("core {core}: {msg}"),
        };
        if !retrying {
            self.stats.mem_ops += 1;
            self.cores[core].stats.mem_ops += 1;
            match kind {
                MemKind::Load => self.stats.loads += 1,
                MemKind::Store(_) => self.stats.stores += 1,
                _ => self.stats.rmws += 1,
            }
        }
        let line = addr >> self.line_shift;
        let write = !matches!(kind, MemKind::Load);
        let tx = self.htm.active(core);
        let eager = self.cfg.htm.detection == Detection::Eager;

        // 0. Translation (when a TLB is modelled) and the per-core transactional capacity
        //    (when bounded): both may abort the transaction before the access happens.
        let mut tlb_extra = 0;
        if self.tlbs.is_some() {
            match self.translate(core, addr, tx) {
                Some(c) => tlb_extra = c,
                None => return Outcome::Aborted,
            }
        }
        if let Some(i) = tx {
            if self.cfg.htm.core_capacity_lines > 0 && self.core_capacity_full(core, i, line, write)
            {
                return Outcome::Aborted;
            }
        }

        // 1. Conflict detection (eager), or strong atomicity for non-transactional accesses.
        if (tx.is_none() || eager) && self.htm.may_conflict(core, tx, line, write) {
            match self.resolve(core, tx, line, w as u64, write, retrying) {
                Resolution::Proceed => {}
                Resolution::Stall(c) => return Outcome::Stall(c),
                Resolution::Aborted => return Outcome::Aborted,
            }
        }
        // 2. Caches, coherence, values (and read/write sets).
        let out = match tx {
            None => self.plain_access(core, w, line, kind),
            Some(i) => self.tx_access(core, i, w, line, kind),
        };
        match out {
            Outcome::Done(v, lat) if tlb_extra > 0 => Outcome::Done(v, lat + tlb_extra),
            out => out,
        }
    }

    /// Looks the page of `addr` up in CPU `core`'s TLB. Returns the extra latency, or `None`
    /// when the miss aborted `core`'s active transaction `tx` (cause `other`, counted as
    /// `paging`).
    #[inline(never)]
    fn translate(&mut self, core: usize, addr: u64, tx: Option<usize>) -> Option<Cycle> {
        let page = addr >> self.page_shift;
        let tlbs = self.tlbs.as_mut()?;
        if tlbs[core].touch(page) {
            self.stats.tlb_hits += 1;
            return Some(0);
        }
        self.stats.tlb_misses += 1;
        let ppm = self.cfg.tlb.tx_miss_abort_ppm;
        // The random stream is drawn from only for a true probability, so `always` and
        // `never` leave every other random choice (backoff) as it was.
        let abort = tx.is_some()
            && (ppm >= 1_000_000
                || (ppm > 0 && self.cores[core].rng.below(1_000_000) < ppm.into()));
        if !abort || self.cfg.tlb.fill_on_abort {
            tlbs[core].insert(page);
        }
        match tx {
            Some(i) if abort => {
                self.stats.tx.aborts.paging += 1;
                self.doom(
                    core,
                    core,
                    i,
                    status(HtmAbortCause::Other).with_non_tx(true),
                );
                None
            }
            _ => Some(self.cfg.tlb.miss_latency),
        }
    }

    /// Whether adding `line` to frame `i` of CPU `core` would exceed the transactional
    /// capacity of its physical core (`htm.core_capacity_lines`, shared by the live frames
    /// of all the core's hardware threads, as POWER8's per-core TMCAM is); if so, dooms the
    /// frame with a capacity abort.
    #[inline(never)]
    fn core_capacity_full(&mut self, core: usize, i: usize, line: u64, write: bool) -> bool {
        let f = &self.htm.stacks[core][i];
        // Lines already tracked cost nothing more; rollback-only loads are not tracked.
        if f.tracks_line(line) || (f.rot && !write) {
            return false;
        }
        let tpc = self.cfg.threads_per_core;
        let first = self.core_of(core) * tpc;
        let used: u64 = (first..first + tpc)
            .flat_map(|c| self.htm.stacks[c].iter())
            .filter(|g| !g.marker && g.doomed.is_none())
            .map(|g| g.working_set_lines() as u64)
            .sum();
        if used < self.cfg.htm.core_capacity_lines {
            return false;
        }
        let part = if write {
            Footprint::Write
        } else {
            Footprint::Read
        };
        self.doom(core, core, i, crate::htm::status::capacity(part));
        true
    }

    /// A non-transactional access (its conflicts are resolved already).
    #[inline]
    fn plain_access(&mut self, core: usize, w: usize, line: u64, kind: MemKind) -> Outcome {
        let now = self.cores[core].now;
        let r = self.hier.access(
            self.core_of(core),
            line,
            !matches!(kind, MemKind::Load),
            now,
        );
        let mut lat = r.latency;
        if r.n_evicted > 0 {
            match self.evictions(core, &r) {
                Some(extra) => lat += extra,
                None => return Outcome::Aborted,
            }
        }
        if r.recalled {
            // Outside a transaction: only other CPUs' transactions can abort.
            self.all_recalled(core);
        }
        let checks = self.cfg.check_invariants;
        if checks {
            self.check_access(core, line, &r);
        }
        let old = self.mem.get(w);
        if matches!(kind, MemKind::Load) {
            self.check_committed(core, w, old);
        }
        if let Some(new) = kind.new_value(old) {
            self.mem.set(w, new);
            if let Some(c) = &mut self.committed {
                c[w] = new;
            }
        }
        if !matches!(kind, MemKind::Load) {
            // The line was taken for writing (a failed CAS too): spinning readers re-read it.
            self.line_written(line, now);
        }
        if checks && self.cfg.htm.detection == Detection::Eager {
            self.check_tx_word(w as u64, line);
        }
        Outcome::Done(old, lat)
    }

    /// An access by the active transaction (frame `i` of `core`; its conflicts are resolved
    /// already).
    #[inline(always)]
    fn tx_access(&mut self, core: usize, i: usize, w: usize, line: u64, kind: MemKind) -> Outcome {
        let now = self.cores[core].now;
        let eager = self.cfg.htm.detection == Detection::Eager;
        // Lazy detection keeps transactional stores out of the coherence protocol until commit.
        let cache_write = !matches!(kind, MemKind::Load) && eager;
        let r = self.hier.access(self.core_of(core), line, cache_write, now);
        let mut extra = 0;
        if r.n_evicted > 0 {
            match self.evictions(core, &r) {
                Some(e) => extra = e,
                None => return Outcome::Aborted,
            }
        }
        if r.recalled && self.all_recalled(core) {
            return Outcome::Aborted;
        }
        let checks = self.cfg.check_invariants;
        if checks {
            self.check_access(core, line, &r);
        }
        let word = w as u64;
        let Machine {
            htm,
            mem,
            committed,
            cfg,
            hier,
            ..
        } = self;
        let f = &mut htm.stacks[core][i];
        let buffered = f.rot || cfg.htm.versioning == Versioning::Lazy;
        let mut lat = r.latency;
        // A line this transaction overflowed (unbounded capacity) is served from memory. (The
        // evictions above never concern the accessed line, so they do not change this.)
        if f.overflowed && f.overflow_lines.contains(line) {
            lat = lat.max(hier.memory_path_latency());
        }
        lat += extra;
        let old = if buffered {
            f.wbuf.get(word).unwrap_or_else(|| mem.get(w))
        } else {
            mem.get(w)
        };
        if let Some(c) = committed {
            if !f.writes_word(word) {
                check::committed_value(c, core, w, old);
            }
        }
        let bit = 1u128 << core;
        if !matches!(kind, MemKind::Store(_)) && !f.rot && f.note_read(word, line) {
            htm.line_r[line as usize] |= bit;
        }
        if let Some(new) = kind.new_value(old) {
            let (first, new_line) = f.note_write(word, line);
            if new_line {
                htm.line_w[line as usize] |= bit;
            }
            if buffered {
                f.wbuf.insert(word, new);
            } else {
                if first {
                    f.undo.insert(word, old);
                }
                mem.set(w, new);
            }
        }
        if cache_write {
            self.line_written(line, now);
        }
        if checks && eager {
            self.check_tx_word(word, line);
        }
        Outcome::Done(old, lat)
    }

    /// Handles the lines an access pushed out of `core`'s L1. Returns the extra latency, or
    /// `None` when `core`'s own active transaction aborted.
    #[inline(never)]
    fn evictions(&mut self, core: usize, r: &AccessResult) -> Option<Cycle> {
        let mut extra = 0;
        let l2 = self.cfg.htm.tracked_in == crate::config::TrackLevel::L2;
        for line in r.tracked_victims(l2) {
            let (e, self_abort) = self.evicted_from_core(core, line);
            extra += e;
            if self_abort {
                return None;
            }
        }
        Some(extra)
    }

    fn resolve(
        &mut self,
        core: usize,
        tx: Option<usize>,
        line: u64,
        word: u64,
        write: bool,
        retrying: bool,
    ) -> Resolution {
        // The conflicting frames, in `self.conflicts` (nothing below changes that list).
        self.conflicts.clear();
        self.htm
            .conflicts(core, tx, line, word, write, &mut self.conflicts);
        if self.conflicts.is_empty() {
            return Resolution::Proceed;
        }
        let mut lost_to: Option<usize> = None;
        let mut doom_all = true;
        for k in 0..self.conflicts.len() {
            let (d, j) = self.conflicts[k];
            let holder_suspension = self.htm.stacks[d][j].suspended;
            let unconditional =
                d == core || holder_suspension == Some(SuspendKind::Tsuspend) || tx.is_none();
            if unconditional {
                continue;
            }
            let i = tx.unwrap_or_default();
            if self.cfg.htm.stall_on_conflict && self.holder_wrote(d, j, line, word) {
                // The line is owned (written) by the other transaction: wait for it to finish,
                // unless that would close a waits-for cycle; then the policy decides.
                if !self.would_deadlock(core, d) {
                    lost_to = Some(d);
                    doom_all = false;
                    break;
                }
                self.stats.tx.deadlocks_avoided += 1;
            }
            if !self.policy_requester_wins(core, i, d, j, write, word, line) {
                // The policy's loser restarts (no stall after a deadlock check or when the
                // holder only read the line).
                doom_all = false;
                break;
            }
        }
        if doom_all {
            let st = status(HtmAbortCause::Conflict).with_non_tx(tx.is_none());
            for k in 0..self.conflicts.len() {
                let (d, j) = self.conflicts[k];
                self.doom(core, d, j, st);
            }
            return Resolution::Proceed;
        }
        let i = tx.unwrap_or_default();
        match lost_to {
            Some(d) if self.cfg.htm.stall_on_conflict => {
                let c = self.cfg.htm.stall_retry_cycles;
                self.cores[core].stalled_on = Some(d);
                self.stats.tx.stall_cycles += c;
                self.cores[core].stats.stall_cycles += c;
                if !retrying {
                    self.stats.tx.stalls += 1;
                }
                Resolution::Stall(c)
            }
            _ => {
                self.doom(core, core, i, status(HtmAbortCause::Conflict));
                Resolution::Aborted
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn policy_requester_wins(
        &mut self,
        core: usize,
        i: usize,
        d: usize,
        j: usize,
        write: bool,
        word: u64,
        line: u64,
    ) -> bool {
        let wg = self.cfg.htm.granularity == crate::config::Granularity::Word;
        // Only SizeMatters looks at working-set sizes; the other policies ignore them.
        let sizes = self.cfg.htm.policy == crate::config::PolicyKind::SizeMatters;
        debug_assert_ne!(core, d, "a core's own frames never go to the policy");
        let (rs, hs) = self.htm.stacks.pair_mut(core, d);
        let (r, h) = (&mut rs[i], &mut hs[j]);
        let rsize = if sizes { r.size_bytes() } else { 0 };
        let hsize = if sizes { h.size_bytes() } else { 0 };
        // Only Polka looks at whether the holder wrote the location.
        let hwrites = self.cfg.htm.policy == crate::config::PolicyKind::Polka
            && if wg {
                h.writes_word(word)
            } else {
                h.writes_line(line)
            };
        requester_wins(
            &self.cfg.htm,
            &mut Side {
                logical: &mut r.logical,
                size_bytes: rsize,
                writes: write,
                core,
            },
            &mut Side {
                logical: &mut h.logical,
                size_bytes: hsize,
                writes: hwrites,
                core: d,
            },
        )
    }

    /// Whether frame `j` of core `d` wrote the conflicting location (it owns the line).
    fn holder_wrote(&self, d: usize, j: usize, line: u64, word: u64) -> bool {
        let f = &self.htm.stacks[d][j];
        if self.cfg.htm.granularity == crate::config::Granularity::Word {
            f.writes_word(word)
        } else {
            f.writes_line(line)
        }
    }

    fn would_deadlock(&self, core: usize, holder: usize) -> bool {
        let mut x = holder;
        for _ in 0..self.cores.len() {
            match self.cores[x].stalled_on {
                Some(y) if y == core => return true,
                Some(y) => x = y,
                None => return false,
            }
        }
        false
    }
}

enum Resolution {
    Proceed,
    Stall(Cycle),
    Aborted,
}
