//! Spin-waits that sleep: a core that waits for a word to change is parked until a write
//! reaches that word's line, instead of re-reading it every few cycles.
//!
//! A real spinning core re-reads a line in its own L1 until another core's write invalidates
//! its copy; only then does its next read miss and see something new. Nothing in between
//! changes any other core's view of the machine, so the simulator can skip those re-reads:
//! the parked core is woken by the first write that takes the line for writing (a plain
//! store or read-modify-write, an in-place transactional store, a commit's write-back, or a
//! rollback), and re-reads it through the caches as the real one would. It wakes when its
//! next poll would have been issued: a polling core issues a read every L1 hit per watched
//! word, from the moment it went to sleep, so the first of those reads at or after the write
//! is when it notices. With many threads waiting on a held lock this turns billions of
//! simulated re-reads into a few wake-ups, with the timing of polling (the releaser of a
//! lock still gets a head start on its spinners). `park_spinners = false` polls, to
//! compare.

use super::*;

impl Machine {
    /// [`OpKind::WaitChange`]: parks `core` until one of the two watched lines is written,
    /// unless a watched word already differs from the value the caller saw.
    #[inline(never)]
    pub(super) fn wait_change(&mut self, core: usize, watched: [(u64, u64); 2]) -> Outcome {
        if !self.cfg.park_spinners {
            return Outcome::Done(0, 0);
        }
        for (addr, seen) in watched {
            let w = match self.mem.word_index(addr) {
                Ok(w) => w,
                Err(msg) => panic!("core {core}: {msg}"),
            };
            // A transaction's own buffered store is what it would read; it never changes
            // while the transaction sleeps, so do not sleep on it.
            let buffered = self
                .htm
                .active(core)
                .and_then(|i| self.htm.stacks[core][i].wbuf.get(w as u64));
            if buffered.is_some() || self.mem.get(w) != seen {
                return Outcome::Done(0, 0);
            }
        }
        let words = if watched[0].0 == watched[1].0 { 1 } else { 2 };
        self.cores[core].poll_cycles = words * self.cfg.l1.latency;
        for (addr, _) in watched {
            let line = addr >> self.line_shift;
            if !self.watch.contains(&(line, core)) {
                self.watch.push((line, core));
                self.watch_filter |= 1 << (line & 63);
            }
        }
        let now = self.cores[core].now;
        self.cores[core].parked_since = Some(now);
        self.stats.parked_waits += 1;
        Outcome::Parked
    }

    /// Gives `core` a wake-up token with no event: it sleeps until [`Machine::unpark`].
    pub(super) fn park(&mut self, core: usize) -> u64 {
        let c = &mut self.cores[core];
        c.token += 1;
        c.wake_seq = u64::MAX;
        c.waiting = true;
        c.result = 0;
        c.retry = false;
        c.token
    }

    /// A write took `line` for writing at `time`: wakes the cores parked on it.
    #[inline(always)]
    pub(super) fn line_written(&mut self, line: u64, time: Cycle) {
        if self.watch_filter & (1 << (line & 63)) != 0 {
            self.wake_watchers(line, time);
        }
    }

    #[inline(never)]
    fn wake_watchers(&mut self, line: u64, time: Cycle) {
        while let Some(k) = self.watch.iter().position(|&(l, _)| l == line) {
            let core = self.watch[k].1;
            let c = &self.cores[core];
            let since = c.parked_since.unwrap_or(c.now);
            // The first poll issued at or after the write (polls start at `since`).
            let t = match c.poll_cycles {
                0 => time.max(since),
                p => since + time.saturating_sub(since).div_ceil(p) * p,
            };
            self.unpark(core, t);
        }
    }

    /// Wakes parked `core` at `time` under the token it parked with, so the parked
    /// operation completes.
    pub(super) fn unpark(&mut self, core: usize, time: Cycle) {
        self.unwatch(core, time);
        let seq = self.queue.push(time, core, EventKind::Wake);
        self.cores[core].wake_seq = seq;
    }

    /// Drops `core`'s watches (it is woken, or its wait is superseded at `time`) and counts
    /// the time it slept.
    pub(super) fn unwatch(&mut self, core: usize, time: Cycle) {
        let Some(since) = self.cores[core].parked_since.take() else {
            return;
        };
        self.stats.parked_cycles += time.saturating_sub(since);
        self.watch.retain(|&(_, c)| c != core);
        self.watch_filter = self.watch.iter().fold(0, |f, &(l, _)| f | 1 << (l & 63));
    }

    /// Whether `core` sleeps in a spin-wait.
    pub(super) fn is_parked(&self, core: usize) -> bool {
        self.cores[core].parked_since.is_some()
    }
}
