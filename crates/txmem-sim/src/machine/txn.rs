//! Transaction boundaries: begin, commit, doom (rollback), abort bookkeeping and backoff.

use super::*;

impl Machine {
    #[inline(always)]
    pub(super) fn xbegin(&mut self, core: usize, rot: bool, id: u64) -> Outcome {
        if matches!(self.serial_owner, Some(o) if o != core) {
            return Outcome::Stall(self.cfg.htm.stall_retry_cycles.max(1));
        }
        let begin = self.cfg.htm.begin_cycles;
        if let Some(idx) = self.htm.active(core) {
            // Flat nesting: the inner transaction is subsumed by the outer one.
            let f = &mut self.htm.stacks[core][idx];
            assert_eq!(
                f.id, id,
                "core {core}: xbegin nested in a different transaction than reserved"
            );
            f.nesting += 1;
            if f.nesting > self.cfg.htm.max_nesting {
                self.doom(core, core, idx, status(HtmAbortCause::NestingOverflow));
                return Outcome::Aborted;
            }
            return Outcome::Done(0, begin);
        }
        self.stats.tx.begins += 1;
        let now = self.cores[core].now;
        self.htm.begin_with_id(core, rot, now, id);
        Outcome::Done(0, begin)
    }

    #[inline(never)]
    pub(super) fn xend(&mut self, core: usize, id: u64) -> Outcome {
        let Some(idx) = self.htm.find(core, id) else {
            panic!("core {core}: xend of transaction {id} that is not running");
        };
        let top = self.htm.depth(core) - 1;
        let f = &mut self.htm.stacks[core][idx];
        if f.suspended.is_some() || idx != top {
            panic!(
                "core {core}: a transaction body ended while its transaction was suspended or had \
                 unresumed xpush entries above it (every tsuspend needs a tresume and every xpush an \
                 xpop inside the body)"
            );
        }
        if f.nesting > 1 {
            f.nesting -= 1;
            return Outcome::Done(0, 0);
        }
        if let Some(st) = f.doomed {
            self.post_abort(core, id, st);
            return Outcome::Aborted;
        }
        let now = self.cores[core].now;
        let mut lat = self.cfg.htm.commit_penalty;
        let rot = f.rot;
        // Statistics of the committed footprint.
        let t = &mut self.stats.tx;
        t.commits += 1;
        self.cores[core].stats.commits += 1;
        if rot {
            t.rot_commits += 1;
        }
        if f.logical.restarts > 0 {
            t.unique_restarts += 1;
        }
        let sizes = [
            f.read_set_words() as u64 * 8,
            f.read_set_lines() as u64,
            f.write_set_words() as u64 * 8,
            f.write_set_lines() as u64,
            f.working_set_words() as u64 * 8,
            f.working_set_lines() as u64,
        ];
        self.footprints.add(sizes, t);
        // Collect the writes, (word, value to publish), when something needs them: buffered
        // writes are published now, lazy detection dooms their readers, invariant checking
        // tracks committed values.
        let buffered = rot || self.cfg.htm.versioning == Versioning::Lazy;
        let publish = buffered || self.committed.is_some();
        self.scratch.clear();
        if buffered {
            self.scratch.extend(f.wbuf.iter());
        } else if publish {
            // In place: the undo log names every written word once, in first-write order.
            debug_assert_eq!(f.undo.len(), f.write_set_words());
            let mem = &self.mem;
            self.scratch
                .extend(f.undo.keys().map(|w| (w, mem.get(w as usize))));
        }
        self.htm.clear_tracking(core, idx);
        self.htm.pop_frame(core, idx);
        let writes = std::mem::take(&mut self.scratch);
        if self.cfg.htm.detection == Detection::Lazy && !rot {
            // Committer wins: doom every transaction that touched what we write.
            for &(w, _) in &writes {
                let line = (w * 8) >> self.line_shift;
                let mut buf = std::mem::take(&mut self.conflicts);
                buf.clear();
                self.htm.conflicts(core, None, line, w, true, &mut buf);
                for &(d, j) in &buf {
                    self.doom(core, d, j, status(HtmAbortCause::Conflict));
                }
                self.conflicts = buf;
            }
        }
        if buffered {
            let mut last_line = u64::MAX;
            for &(w, v) in &writes {
                self.mem.set(w as usize, v);
                let line = (w * 8) >> self.line_shift;
                if line != last_line {
                    last_line = line;
                    self.line_written(line, now + lat);
                    let r = self.hier.access(self.core_of(core), line, true, now + lat);
                    lat += r.latency;
                    let l2 = self.cfg.htm.tracked_in == crate::config::TrackLevel::L2;
                    for victim in r.tracked_victims(l2) {
                        let (extra, _) = self.evicted_from_core(core, victim);
                        lat += extra;
                    }
                    if r.recalled {
                        self.all_recalled(core);
                    }
                }
            }
        }
        if let Some(c) = &mut self.committed {
            for &(w, v) in &writes {
                c[w as usize] = v;
            }
        }
        self.scratch = writes;
        Outcome::Done(0, lat)
    }

    /// Dooms frame `idx` of `core` on behalf of `actor` (the core executing now): rolls it
    /// back, drops its tracking and arranges for the abort to reach its code.
    #[inline]
    pub fn doom(&mut self, actor: usize, core: usize, idx: usize, st: AbortStatus) {
        let eager = self.cfg.htm.versioning == Versioning::Eager;
        let f = &mut self.htm.stacks[core][idx];
        if f.marker || f.doomed.is_some() {
            return;
        }
        if eager && !f.rot {
            for (w, old) in f.undo.iter().rev() {
                self.mem.set(w as usize, old);
            }
            if !self.watch.is_empty() {
                // Spinners that saw the transaction's values (a suspended reader may) re-read.
                let now = self.cores[actor].now;
                let mut undo = std::mem::take(&mut self.htm.stacks[core][idx].undo);
                for (w, _) in undo.iter() {
                    self.line_written((w * 8) >> self.line_shift, now);
                }
                undo.clear();
                self.htm.stacks[core][idx].undo = undo;
            }
        }
        let f = &mut self.htm.stacks[core][idx];
        f.undo.clear();
        f.wbuf.clear();
        let suspended = f.suspended.is_some();
        let st = st.with_suspended(suspended).with_rollback_only(f.rot);
        f.doomed = Some(st);
        let id = f.id;
        self.htm.clear_tracking(core, idx);
        if suspended {
            self.stats.tx.doomed_while_suspended += 1;
            return;
        }
        self.post_abort(core, id, st);
        if core != actor {
            // Cancel whatever the core waits for and wake it now to take the abort.
            let now = self.cores[actor].now.max(self.cores[core].now);
            let c = &mut self.cores[core];
            c.stalled_on = None;
            c.retry = false;
            self.wake_at(core, now);
        }
    }

    /// Makes the abort of attempt `id` (with status `st`) wait on `core` for the attempt's
    /// outermost frame to take it.
    #[inline]
    pub(crate) fn post_abort(&mut self, core: usize, id: u64, st: AbortStatus) {
        let a = &mut self.cores[core].aborts;
        a.push((id, st));
        self.abort_counts[core].set(a.len() as u32);
    }

    /// Whether an abort for attempt `id` waits on `core`; removes it when `take`.
    #[inline]
    pub fn pending_abort(&mut self, core: usize, id: u64, take: bool) -> Option<AbortStatus> {
        let a = &mut self.cores[core].aborts;
        let i = a.iter().position(|&(x, _)| x == id)?;
        let st = a[i].1;
        if take {
            a.swap_remove(i);
            self.abort_counts[core].set(a.len() as u32);
        }
        Some(st)
    }

    /// Ends aborted attempt `id` of `core`: counts it, removes its frame and remembers its
    /// logical state for the retry. Returns the abort penalty in cycles.
    #[inline]
    pub fn finish_abort(&mut self, core: usize, id: u64, st: AbortStatus) -> Cycle {
        let t = &mut self.stats.tx;
        t.restarts += 1;
        self.cores[core].stats.restarts += 1;
        if st.is_persistent() {
            t.persistent_aborts += 1;
        }
        t.aborts.count(st.cause());
        if let Some(idx) = self.htm.find(core, id) {
            self.htm.abort_frame(core, idx);
        }
        self.cfg.htm.abort_penalty
    }

    /// Backoff before the next attempt of the transaction that last aborted at the current
    /// stack depth of `core`.
    #[inline]
    pub fn backoff_for(&mut self, core: usize) -> Cycle {
        let Some(l) = self.htm.retry_state(core) else {
            return 0;
        };
        let n = l.restarts;
        let seed = l.seed_override.take();
        let c = &mut self.cores[core];
        backoff_cycles(self.cfg.htm.backoff, &self.cfg.htm, n, seed, &mut c.rng)
    }

    /// Forgets retry state of `core` (it gave up on its transaction).
    pub fn forget_retry(&mut self, core: usize) {
        self.htm.forget_retry(core);
    }
}
