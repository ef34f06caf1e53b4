//! The simulated machine: cores, memory, caches, coherence and HTM, and the rules by which
//! one operation of one core changes them. The executor ([`crate::engine::executor`]) calls
//! [`Machine::issue`] from inside the operation futures that simulated code awaits.
//!
//! Timing model: an operation takes effect (is linearized) when it is issued, at the
//! issuing core's current time; its latency says when the core may continue. Conflicts are
//! resolved at issue, so a winner never observes a loser's uncommitted values (the loser is
//! rolled back first).

use crate::config::{Capacity, Detection, InterruptMode, SimConfig, Versioning};
use crate::engine::event_queue::{EventKind, EventQueue};
use crate::engine::rng::SplitMix64;
use crate::engine::time::Cycle;
use crate::htm::backoff::backoff_cycles;
use crate::htm::policy::{requester_wins, Side};
use crate::htm::suspend::{Pushed, Resumed};
use crate::htm::{AbortCause, AbortStatus, Htm, SuspendKind};
use crate::memory::hierarchy::Hierarchy;
use crate::memory::values::Memory;
use crate::stats::{CoreStats, Stats};

/// One operation a core can issue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// Load the word at an address.
    Load(u64),
    /// Store a value at an address.
    Store(u64, u64),
    /// Compare-and-swap (address, expected, new); returns the old value.
    Cas(u64, u64, u64),
    /// Fetch-and-add (address, delta); returns the old value.
    FetchAdd(u64, u64),
    /// Memory fence.
    Fence,
    /// Local computation for some cycles.
    Compute(u64),
    /// Backoff before a restart (counted as backoff).
    Backoff(u64),
    /// Start a transaction (rollback-only if true) with the attempt id reserved by
    /// [`Machine::reserve_attempt`]; costs `begin_cycles`.
    XBegin(bool, u64),
    /// Commit (or leave a flat-nested level of) transaction attempt `id`.
    XEnd(u64),
    /// Explicit abort with a code.
    XAbort(u32),
    /// MetaTM `xpush`.
    XPush,
    /// MetaTM `xpop`.
    XPop,
    /// POWER8 `tsuspend`.
    TSuspend,
    /// POWER8 `tresume`.
    TResume,
    /// Enter serial (irrevocable) mode: waits until no other core holds it, then dooms
    /// every other transaction.
    SerialAcquire,
    /// Leave serial mode.
    SerialRelease,
}

/// What issuing an operation did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Issue {
    /// Completed synchronously with this value (no other event could intervene).
    Done(u64),
    /// Completes when the wake event with this token fires.
    Pending(u64),
    /// The core's own transaction aborted; the operation never completes.
    Aborted,
}

enum Outcome {
    Done(u64, Cycle),
    Stall(Cycle),
    Aborted,
}

/// Per-core execution state.
#[derive(Debug)]
pub struct CoreState {
    /// The core's local time.
    pub now: Cycle,
    /// Token of the latest scheduled wake-up (older wake events are stale).
    pub token: u64,
    /// Token of the latest wake-up that fired.
    pub completed: u64,
    /// Value of the latest operation.
    pub result: u64,
    /// Whether the latest wake-up asks the operation to retry (stall, serial wait).
    pub retry: bool,
    /// Whether a wake-up is scheduled.
    pub waiting: bool,
    /// Aborts waiting to be taken by their transaction's outermost frame: (attempt id, status).
    pub aborts: Vec<(u64, AbortStatus)>,
    /// Core this one is stalled on (stall-on-conflict), for deadlock detection.
    pub stalled_on: Option<usize>,
    /// The core's random stream.
    pub rng: SplitMix64,
    /// A timer interrupt is pending.
    pub pending_interrupt: bool,
    /// An interrupt handler is running.
    pub in_handler: bool,
    saved: (u64, u64, bool),
    /// The thread finished.
    pub finished: bool,
    /// Per-core counters.
    pub stats: CoreStats,
}

/// The machine.
#[derive(Debug)]
pub struct Machine {
    /// Configuration (validated).
    pub cfg: SimConfig,
    line_shift: u32,
    /// Cores.
    pub cores: Vec<CoreState>,
    /// Memory values.
    pub mem: Memory,
    /// Caches and coherence.
    pub hier: Hierarchy,
    /// Transactional state.
    pub htm: Htm,
    /// Pending events.
    pub queue: EventQueue,
    /// Counters (cache and coherence parts are filled in by [`Machine::final_stats`]).
    pub stats: Stats,
    committed: Option<Vec<u64>>,
    conflicts: Vec<(usize, usize)>,
    scratch: Vec<(u64, u64)>,
    serial_owner: Option<usize>,
}

impl Machine {
    /// Builds a machine from a validated configuration.
    pub fn new(cfg: SimConfig) -> Self {
        let lines = (cfg.memory_bytes / cfg.line_bytes) as usize;
        let cores = (0..cfg.cores)
            .map(|c| CoreState {
                now: 0,
                token: 0,
                completed: 0,
                result: 0,
                retry: false,
                waiting: false,
                aborts: Vec::new(),
                stalled_on: None,
                rng: SplitMix64::new(cfg.seed ^ (c as u64 + 1).wrapping_mul(0xA076_1D64_78BD_642F)),
                pending_interrupt: false,
                in_handler: false,
                saved: (0, 0, false),
                finished: false,
                stats: CoreStats::default(),
            })
            .collect();
        Machine {
            line_shift: cfg.line_bytes.trailing_zeros(),
            cores,
            mem: Memory::new(cfg.memory_bytes),
            hier: Hierarchy::new(&cfg),
            htm: Htm::new(cfg.htm.clone(), cfg.cores, lines),
            queue: EventQueue::new(),
            stats: Stats::default(),
            committed: cfg
                .check_invariants
                .then(|| vec![0; (cfg.memory_bytes / 8) as usize]),
            conflicts: Vec::new(),
            scratch: Vec::new(),
            serial_owner: None,
            cfg,
        }
    }

    /// Writes a word directly (initialisation before the run).
    pub fn poke(&mut self, addr: u64, value: u64) -> Result<(), String> {
        let w = self.mem.word_index(addr)?;
        self.mem.set(w, value);
        if let Some(c) = &mut self.committed {
            c[w] = value;
        }
        Ok(())
    }

    /// Schedules a wake-up of `core` after `latency` cycles carrying `value`.
    fn schedule(&mut self, core: usize, latency: Cycle, value: u64, retry: bool) -> u64 {
        let c = &mut self.cores[core];
        c.token += 1;
        c.result = value;
        c.retry = retry;
        c.waiting = true;
        let t = c.now + latency;
        let token = c.token;
        self.queue.push(t, core, EventKind::Wake { token });
        token
    }

    /// Issues `op` on `core` at the core's current time. `retrying` is true when the same
    /// operation is re-issued after a stall.
    pub fn issue(&mut self, core: usize, op: &OpKind, retrying: bool) -> Issue {
        self.cores[core].stalled_on = None;
        let out = match *op {
            OpKind::Load(a) => self.mem_op(core, a, MemKind::Load, retrying),
            OpKind::Store(a, v) => self.mem_op(core, a, MemKind::Store(v), retrying),
            OpKind::Cas(a, e, n) => self.mem_op(core, a, MemKind::Cas(e, n), retrying),
            OpKind::FetchAdd(a, d) => self.mem_op(core, a, MemKind::FetchAdd(d), retrying),
            OpKind::Fence => {
                self.stats.fences += 1;
                self.stats.mem_ops += 1;
                self.cores[core].stats.mem_ops += 1;
                Outcome::Done(0, self.cfg.l1.latency)
            }
            OpKind::Compute(n) => Outcome::Done(0, n),
            OpKind::Backoff(n) => {
                self.stats.tx.backoff_cycles += n;
                self.stats.tx.backoffs += 1;
                self.cores[core].stats.backoff_cycles += n;
                Outcome::Done(0, n)
            }
            OpKind::XBegin(rot, id) => self.xbegin(core, rot, id),
            OpKind::XEnd(id) => self.xend(core, id),
            OpKind::XAbort(code) => match self.htm.active(core) {
                Some(idx) => {
                    self.doom(
                        core,
                        core,
                        idx,
                        AbortStatus::new(AbortCause::Explicit(code)),
                    );
                    Outcome::Aborted
                }
                None => Outcome::Done(0, 1),
            },
            OpKind::XPush => {
                let too_deep =
                    self.htm.suspended_count(core) >= self.cfg.htm.max_suspended as usize;
                if let Pushed::Suspended(idx) = self.htm.xpush(core) {
                    if too_deep {
                        self.doom(core, core, idx, AbortStatus::new(AbortCause::Nesting));
                    }
                }
                Outcome::Done(0, 1)
            }
            OpKind::XPop => match self.htm.xpop(core) {
                Err(msg) => panic!("{msg}"),
                Ok(r) => self.resumed(core, r),
            },
            OpKind::TSuspend => {
                self.htm.tsuspend(core);
                Outcome::Done(0, 1)
            }
            OpKind::TResume => {
                let r = self.htm.tresume(core);
                self.resumed(core, r)
            }
            OpKind::SerialAcquire => match self.serial_owner {
                Some(o) if o != core => Outcome::Stall(self.cfg.htm.stall_retry_cycles.max(1)),
                _ => {
                    self.serial_owner = Some(core);
                    self.stats.tx.serialized += 1;
                    for d in 0..self.cfg.cores {
                        if d == core {
                            continue;
                        }
                        for j in 0..self.htm.depth(d) {
                            self.doom(core, d, j, AbortStatus::new(AbortCause::Conflict));
                        }
                    }
                    Outcome::Done(0, 1)
                }
            },
            OpKind::SerialRelease => {
                if self.serial_owner == Some(core) {
                    self.serial_owner = None;
                }
                Outcome::Done(0, 1)
            }
        };
        match out {
            Outcome::Done(v, 0) => Issue::Done(v),
            Outcome::Done(v, lat) => {
                let t = self.cores[core].now + lat;
                if t < self.queue.next_time().unwrap_or(Cycle::MAX) && t <= self.cfg.max_cycles {
                    self.cores[core].now = t;
                    Issue::Done(v)
                } else {
                    Issue::Pending(self.schedule(core, lat, v, false))
                }
            }
            Outcome::Stall(lat) => Issue::Pending(self.schedule(core, lat, 0, true)),
            Outcome::Aborted => Issue::Aborted,
        }
    }

    fn resumed(&mut self, core: usize, r: Resumed) -> Outcome {
        match r {
            Resumed::Nothing | Resumed::Running(_) => Outcome::Done(0, 1),
            Resumed::Doomed(idx, st) => {
                let id = self.htm.stacks[core][idx].id;
                self.cores[core].aborts.push((id, st));
                Outcome::Aborted
            }
        }
    }

    /// The attempt id and outermost flag the next `xbegin` on `core` will have: the running
    /// transaction's (flat nesting) or a freshly reserved one.
    pub fn reserve_attempt(&mut self, core: usize) -> (u64, bool) {
        match self.htm.active(core) {
            Some(idx) => (self.htm.stacks[core][idx].id, false),
            None => (self.htm.reserve_id(), true),
        }
    }

    fn xbegin(&mut self, core: usize, rot: bool, id: u64) -> Outcome {
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
                self.doom(core, core, idx, AbortStatus::new(AbortCause::Nesting));
                return Outcome::Aborted;
            }
            return Outcome::Done(0, begin);
        }
        self.stats.tx.begins += 1;
        let now = self.cores[core].now;
        self.htm.begin_with_id(core, rot, now, id);
        Outcome::Done(0, begin)
    }

    fn xend(&mut self, core: usize, id: u64) -> Outcome {
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
            self.cores[core].aborts.push((id, st));
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
        t.read_set_bytes.record(f.read_words.len() as u64 * 8);
        t.read_set_lines.record(f.read_lines.len() as u64);
        t.write_set_bytes.record(f.write_words.len() as u64 * 8);
        t.write_set_lines.record(f.write_lines.len() as u64);
        t.working_set_bytes.record(f.working_set_words() as u64 * 8);
        t.working_set_lines.record(f.working_set_lines() as u64);
        // Collect the writes: (word, value to publish).
        let buffered = rot || self.cfg.htm.versioning == Versioning::Lazy;
        self.scratch.clear();
        if buffered {
            self.scratch.extend(f.wbuf.iter());
        } else {
            let mem = &self.mem;
            self.scratch
                .extend(f.write_words.keys().map(|w| (w, mem.get(w as usize))));
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
                    self.doom(core, d, j, AbortStatus::new(AbortCause::Conflict));
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
                    let r = self.hier.access(core, line, true, now + lat);
                    lat += r.latency;
                    for k in 0..r.n_evicted {
                        let (extra, _) = self.evicted(core, core, r.evicted[k]);
                        lat += extra;
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

    /// A line left `core`'s L1 for capacity while `actor` was executing. Returns the extra
    /// latency (overflow penalty) and whether `actor`'s own active transaction aborted.
    fn evicted(&mut self, actor: usize, core: usize, line: u64) -> (Cycle, bool) {
        if (self.htm.line_r[line as usize] | self.htm.line_w[line as usize]) & (1 << core) == 0 {
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
                    self.doom(actor, core, j, AbortStatus::new(AbortCause::Capacity));
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

    /// Dooms frame `idx` of `core` on behalf of `actor` (the core executing now): rolls it
    /// back, drops its tracking and arranges for the abort to reach its code.
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
        }
        f.undo.clear();
        f.wbuf.clear();
        f.doomed = Some(st);
        let id = f.id;
        let suspended = f.suspended.is_some();
        self.htm.clear_tracking(core, idx);
        if suspended {
            self.stats.tx.doomed_while_suspended += 1;
            return;
        }
        self.cores[core].aborts.push((id, st));
        if core != actor {
            // Cancel whatever the core waits for and wake it now to take the abort.
            let now = self.cores[actor].now.max(self.cores[core].now);
            let c = &mut self.cores[core];
            c.stalled_on = None;
            c.token += 1;
            c.waiting = true;
            c.retry = false;
            let token = c.token;
            self.queue.push(now, core, EventKind::Wake { token });
        }
    }

    /// Whether an abort for attempt `id` waits on `core`; removes it when `take`.
    pub fn pending_abort(&mut self, core: usize, id: u64, take: bool) -> Option<AbortStatus> {
        let a = &mut self.cores[core].aborts;
        let i = a.iter().position(|&(x, _)| x == id)?;
        let st = a[i].1;
        if take {
            a.swap_remove(i);
        }
        Some(st)
    }

    /// Ends aborted attempt `id` of `core`: counts it, removes its frame and remembers its
    /// logical state for the retry. Returns the abort penalty in cycles.
    pub fn finish_abort(&mut self, core: usize, id: u64, st: AbortStatus) -> Cycle {
        let t = &mut self.stats.tx;
        t.restarts += 1;
        self.cores[core].stats.restarts += 1;
        if st.persistent {
            t.persistent_aborts += 1;
        }
        match st.cause {
            AbortCause::Explicit(_) => t.aborts.explicit += 1,
            AbortCause::Conflict => t.aborts.conflict += 1,
            AbortCause::Capacity => t.aborts.capacity += 1,
            AbortCause::Nesting => t.aborts.nesting += 1,
            AbortCause::Interrupt => t.aborts.interrupt += 1,
        }
        if let Some(idx) = self.htm.find(core, id) {
            let mut l = self.htm.pop_frame(core, idx);
            l.restarts += 1;
            self.htm.remember_retry(core, idx, l);
        }
        self.cfg.htm.abort_penalty
    }

    /// Backoff before the next attempt of the transaction that last aborted at the current
    /// stack depth of `core`.
    pub fn backoff_for(&mut self, core: usize) -> Cycle {
        let depth = self.htm.depth(core);
        let Some(Some(l)) = self.htm.retry[core].get_mut(depth) else {
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

    fn mem_op(&mut self, core: usize, addr: u64, kind: MemKind, retrying: bool) -> Outcome {
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
        let word = w as u64;
        let line = addr >> self.line_shift;
        let write = !matches!(kind, MemKind::Load);
        let tx = self.htm.active(core);
        let now = self.cores[core].now;

        // 1. Conflict detection (eager), or strong atomicity for non-transactional accesses.
        let check = tx.is_none() || self.cfg.htm.detection == Detection::Eager;
        if check && self.htm.may_conflict(core, tx, line, write) {
            match self.resolve(core, tx, line, word, write, retrying) {
                Resolution::Proceed => {}
                Resolution::Stall(c) => return Outcome::Stall(c),
                Resolution::Aborted => return Outcome::Aborted,
            }
        }

        // 2. Caches and coherence.
        let buffered = match tx {
            Some(i) => self.htm.stacks[core][i].rot || self.cfg.htm.versioning == Versioning::Lazy,
            None => false,
        };
        let cache_write = write && !(tx.is_some() && self.cfg.htm.detection == Detection::Lazy);
        let r = self.hier.access(core, line, cache_write, now);
        let mut lat = r.latency;
        if let Some(i) = tx {
            let f = &self.htm.stacks[core][i];
            if f.overflowed && f.overflow_lines.contains(line) {
                lat = lat.max(self.hier.memory_path_latency());
            }
        }
        for k in 0..r.n_evicted {
            let (extra, self_abort) = self.evicted(core, core, r.evicted[k]);
            lat += extra;
            if self_abort {
                return Outcome::Aborted;
            }
        }
        if self.cfg.check_invariants {
            self.check_after_access(core, line);
            for k in 0..r.n_evicted {
                self.check_after_access(core, r.evicted[k]);
            }
        }

        // 3. Values and read/write sets.
        let value = match tx {
            None => {
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
                old
            }
            Some(i) => {
                let f = &self.htm.stacks[core][i];
                let own_write = f.write_words.contains(word);
                let old = if buffered {
                    f.wbuf.get(word).unwrap_or_else(|| self.mem.get(w))
                } else {
                    self.mem.get(w)
                };
                if !own_write {
                    self.check_committed(core, w, old);
                }
                if !matches!(kind, MemKind::Store(_)) {
                    self.htm.record_read(core, i, word, line);
                }
                if let Some(new) = kind.new_value(old) {
                    let first = self.htm.record_write(core, i, word, line);
                    let f = &mut self.htm.stacks[core][i];
                    if buffered {
                        f.wbuf.insert(word, new);
                    } else {
                        if first {
                            f.undo.insert(word, old);
                        }
                        self.mem.set(w, new);
                    }
                }
                old
            }
        };
        if self.cfg.check_invariants && self.cfg.htm.detection == Detection::Eager {
            self.check_tx_word(word, line);
        }
        Outcome::Done(value, lat)
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
        let mut buf = std::mem::take(&mut self.conflicts);
        buf.clear();
        self.htm.conflicts(core, tx, line, word, write, &mut buf);
        if buf.is_empty() {
            self.conflicts = buf;
            return Resolution::Proceed;
        }
        let mut lost_to: Option<usize> = None;
        let mut doom_all = true;
        for &(d, j) in &buf {
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
            for &(d, j) in &buf {
                self.doom(core, d, j, AbortStatus::new(AbortCause::Conflict));
            }
            self.conflicts = buf;
            return Resolution::Proceed;
        }
        self.conflicts = buf;
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
                self.doom(core, core, i, AbortStatus::new(AbortCause::Conflict));
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
        let [rs, hs] = self
            .htm
            .stacks
            .get_disjoint_mut([core, d])
            .expect("requester and holder are different cores");
        let (r, h) = (&mut rs[i], &mut hs[j]);
        let rsize = if sizes { r.size_bytes() } else { 0 };
        let hsize = if sizes { h.size_bytes() } else { 0 };
        let hwrites = if wg {
            h.write_words.contains(word)
        } else {
            h.write_lines.contains(line)
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
            f.write_words.contains(word)
        } else {
            f.write_lines.contains(line)
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

    fn check_committed(&self, core: usize, w: usize, v: u64) {
        if let Some(c) = &self.committed {
            assert_eq!(
                v,
                c[w],
                "invariant violated: core {core} loaded {v} from {:#x} but the last committed store wrote {}",
                w * 8,
                c[w]
            );
        }
    }

    fn check_after_access(&self, core: usize, line: u64) {
        if let Err(e) = self.hier.check_line(line) {
            panic!("coherence invariant violated after an access by core {core}: {e}");
        }
    }

    /// Transactional single-writer invariant for one word (eager detection): at most one
    /// live frame writes it, and then no other live frame reads it.
    fn check_tx_word(&self, word: u64, line: u64) {
        let wg = self.cfg.htm.granularity == crate::config::Granularity::Word;
        let (mut writers, mut readers) = (0, 0);
        for s in &self.htm.stacks {
            for f in s.iter().filter(|f| !f.marker && f.doomed.is_none()) {
                let (wr, rd) = if wg {
                    (f.write_words.contains(word), f.read_words.contains(word))
                } else {
                    (f.write_lines.contains(line), f.read_lines.contains(line))
                };
                if wr {
                    writers += 1;
                } else if rd {
                    readers += 1;
                }
            }
        }
        assert!(
            writers <= 1 && (writers == 0 || readers == 0),
            "transactional invariant violated at word {:#x}: {writers} writers and {readers} other readers",
            word * 8
        );
    }

    /// Full invariant check (every line in a private cache).
    pub fn check_all(&self) -> Result<(), String> {
        for line in self.hier.private_lines() {
            self.hier.check_line(line)?;
        }
        Ok(())
    }

    /// Timer event for `core` at `time`.
    pub fn on_timer(&mut self, core: usize, time: Cycle) {
        if self.cores[core].finished {
            return;
        }
        self.cores[core].pending_interrupt = true;
        self.queue
            .push(time + self.cfg.interrupts.period, core, EventKind::Timer);
    }

    /// Enters the interrupt handler on `core`: saves the interrupted operation's completion
    /// and suspends (xpush mode) or aborts (abort mode) the running transaction.
    pub fn take_interrupt(&mut self, core: usize) {
        let c = &mut self.cores[core];
        c.pending_interrupt = false;
        c.in_handler = true;
        c.saved = (c.completed, c.result, c.retry);
        c.stats.interrupts += 1;
        self.stats.interrupts += 1;
        let active = self.htm.active(core);
        if active.is_some() {
            self.stats.tx.interrupted_transactions += 1;
        }
        match self.cfg.interrupts.mode {
            InterruptMode::Xpush => {
                self.htm.xpush(core);
            }
            InterruptMode::Abort => {
                if let Some(idx) = active {
                    self.doom(core, core, idx, AbortStatus::new(AbortCause::Interrupt));
                }
            }
        }
    }

    /// Leaves the interrupt handler on `core`: restores the interrupted operation and resumes
    /// the suspended transaction (xpush mode).
    pub fn end_interrupt(&mut self, core: usize) {
        let c = &mut self.cores[core];
        c.in_handler = false;
        (c.completed, c.result, c.retry) = c.saved;
        if self.cfg.interrupts.mode == InterruptMode::Xpush {
            match self.htm.xpop(core) {
                Err(msg) => panic!(
                    "interrupt handler on core {core} left the transaction stack unbalanced: {msg}"
                ),
                Ok(r) => {
                    if let Resumed::Doomed(idx, st) = r {
                        let id = self.htm.stacks[core][idx].id;
                        self.cores[core].aborts.push((id, st));
                    }
                }
            }
        }
    }

    /// Statistics so far, with cache and coherence counters filled in.
    pub fn final_stats(&self) -> Stats {
        let mut s = self.stats.clone();
        s.per_core = self.cores.iter().map(|c| c.stats.clone()).collect();
        s.total_cycles = s.per_core.iter().map(|c| c.cycles).max().unwrap_or(0);
        s.cache = self.hier.stats.clone();
        s.coherence = self.hier.proto.stats().clone();
        s
    }
}

enum Resolution {
    Proceed,
    Stall(Cycle),
    Aborted,
}

#[derive(Clone, Copy, Debug)]
enum MemKind {
    Load,
    Store(u64),
    Cas(u64, u64),
    FetchAdd(u64),
}

impl MemKind {
    #[inline]
    fn new_value(self, old: u64) -> Option<u64> {
        match self {
            MemKind::Load => None,
            MemKind::Store(v) => Some(v),
            MemKind::Cas(e, n) => (old == e).then_some(n),
            MemKind::FetchAdd(d) => Some(old.wrapping_add(d)),
        }
    }
}
