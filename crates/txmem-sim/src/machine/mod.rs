//! The simulated machine: cores, memory, caches, coherence and HTM, and the rules by which
//! one operation of one core changes them. The executor ([`crate::simulation::executor`]) calls
//! [`Machine::issue`] from inside the operation futures that simulated code awaits.
//!
//! Timing model: an operation takes effect (is linearized) when it is issued, at the
//! issuing core's current time; its latency says when the core may continue. Conflicts are
//! resolved at issue, so a winner never observes a loser's uncommitted values (the loser is
//! rolled back first).

use crate::coherence::CoherenceProtocol;
use crate::config::{Capacity, Detection, InterruptMode, SimConfig, Versioning};
use crate::engine::event_queue::{EventKind, EventQueue};
use crate::engine::per_core::PerCore;
use crate::engine::rng::SplitMix64;
use crate::engine::time::Cycle;
use crate::htm::backoff::backoff_cycles;
use crate::htm::policy::{requester_wins, Side};
use crate::htm::status::status;
use crate::htm::suspend::{Pushed, Resumed};
use crate::htm::{AbortStatus, Htm, HtmAbortCause, SuspendKind, READ, WRITE};
use crate::memory::hierarchy::{AccessResult, Hierarchy};
use crate::memory::values::Memory;

mod access;
pub mod cell;
mod check;
mod park;
mod presets;
pub mod settings;
mod txn;
mod window;
use crate::stats::{CoreStats, FootprintRuns, Stats};
use std::cell::Cell;
use std::rc::Rc;

/// One operation a core can issue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// Load the word at an address.
    Load(u64),
    /// Store a value at an address.
    Store(u64, u64),
    /// Load whose latency overlaps with what follows ([`crate::Cpu::load_overlapped`]).
    LoadOverlapped(u64),
    /// Store whose latency overlaps with what follows ([`crate::Cpu::store_overlapped`]).
    StoreOverlapped(u64, u64),
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
    XAbort(u8),
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
    /// Sleep until one of the watched words (address, value seen) may have changed: at once
    /// if one differs already, else when a write reaches its line (see `park_spinners`).
    /// Watch one word by giving it twice.
    WaitChange([(u64, u64); 2]),
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
    /// Asleep in a spin-wait until a watched line is written ([`park`]).
    Parked,
}

/// Per-core execution state.
#[derive(Debug)]
pub struct CoreState {
    /// The core's local time.
    pub now: Cycle,
    /// Token of the latest scheduled wake-up (older wake events are stale).
    pub token: u64,
    /// Event sequence number of the latest scheduled wake-up (older ones are stale).
    pub wake_seq: u64,
    /// Token of the latest wake-up that fired.
    pub completed: u64,
    /// Value of the latest operation.
    pub result: u64,
    /// Whether the latest wake-up asks the operation to retry (stall, serial wait).
    pub retry: bool,
    /// Whether a wake-up is scheduled.
    pub waiting: bool,
    /// Aborts waiting to be taken by their transaction's outermost frame: (attempt id, status).
    /// Add them with `Machine::post_abort` (crate-internal), which keeps [`Machine::abort_counts`] in step.
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
    /// When the core went to sleep in a spin-wait, while it sleeps.
    pub parked_since: Option<Cycle>,
    /// While it sleeps, how often a polling core would re-read what it watches.
    pub poll_cycles: Cycle,
    /// Per-core counters.
    pub stats: CoreStats,
    /// Overlapped accesses in flight.
    pub window: window::MissWindow,
}

impl CoreState {
    /// A core at time 0 whose random stream starts from `seed`.
    fn new(seed: u64) -> Self {
        CoreState {
            now: 0,
            token: 0,
            wake_seq: u64::MAX,
            completed: 0,
            result: 0,
            retry: false,
            waiting: false,
            aborts: Vec::new(),
            stalled_on: None,
            rng: SplitMix64::new(seed),
            pending_interrupt: false,
            in_handler: false,
            saved: (0, 0, false),
            finished: false,
            parked_since: None,
            poll_cycles: 0,
            stats: CoreStats::default(),
            window: window::MissWindow::default(),
        }
    }
}

/// The machine.
#[derive(Debug)]
pub struct Machine {
    /// Configuration (validated).
    pub cfg: SimConfig,
    line_shift: u32,
    /// Cores.
    pub cores: PerCore<CoreState>,
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
    /// Per core, the length of [`CoreState::aborts`], shared with the [`crate::cpu::Cpu`]
    /// handles so that transactional code can see that no abort waits without borrowing
    /// the machine.
    pub abort_counts: Rc<PerCore<Cell<u32>>>,
    committed: Option<Vec<u64>>,
    footprints: FootprintRuns,
    conflicts: Vec<(usize, usize)>,
    scratch: Vec<(u64, u64)>,
    serial_owner: Option<usize>,
    /// Cores asleep in a spin-wait, by watched line: (line, CPU).
    watch: Vec<(u64, usize)>,
    /// Bit `line % 64` set for every watched line: a write to any other line skips the
    /// watch list.
    watch_filter: u64,
    /// Per CPU (hardware thread): its TLB, when `tlb.enabled`.
    tlbs: Option<Vec<crate::memory::cache::SetAssocCache>>,
    page_shift: u32,
}

impl Machine {
    /// Builds a machine from a validated configuration.
    pub fn new(cfg: SimConfig) -> Self {
        let lines = (cfg.memory_bytes / cfg.line_bytes) as usize;
        let seed = cfg.seed;
        let cpus = cfg.cpus();
        let cores = PerCore::new(
            cpus,
            |c| CoreState::new(seed ^ (c as u64 + 1).wrapping_mul(0xA076_1D64_78BD_642F)),
            || CoreState::new(0),
        );
        Machine {
            line_shift: cfg.line_bytes.trailing_zeros(),
            cores,
            mem: Memory::new(cfg.memory_bytes),
            hier: Hierarchy::new(&cfg),
            htm: Htm::new(cfg.htm.clone(), cpus, lines),
            queue: EventQueue::new(),
            stats: Stats::default(),
            committed: cfg
                .check_invariants
                .then(|| vec![0; (cfg.memory_bytes / 8) as usize]),
            abort_counts: Rc::new(PerCore::new(cpus, |_| Cell::new(0), || Cell::new(0))),
            footprints: FootprintRuns::default(),
            conflicts: Vec::new(),
            scratch: Vec::new(),
            serial_owner: None,
            watch: Vec::new(),
            watch_filter: 0,
            tlbs: cfg.tlb.enabled.then(|| {
                let (e, w) = (cfg.tlb.entries as usize, cfg.tlb.ways as usize);
                (0..cpus)
                    .map(|_| crate::memory::cache::SetAssocCache::new(e, w))
                    .collect()
            }),
            page_shift: cfg.tlb.page_bytes.trailing_zeros(),
            cfg,
        }
    }

    /// The physical core (owner of the private caches) that runs CPU `cpu`.
    #[inline(always)]
    pub fn core_of(&self, cpu: usize) -> usize {
        cpu / self.cfg.threads_per_core
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

    /// Schedules a wake-up of `core` at `time` under a new token (which it returns); any
    /// wake-up scheduled before becomes stale.
    #[inline]
    pub fn wake_at(&mut self, core: usize, time: Cycle) -> u64 {
        if self.is_parked(core) {
            self.unwatch(core, time);
        }
        let seq = self.queue.push(time, core, EventKind::Wake);
        let c = &mut self.cores[core];
        c.token += 1;
        c.wake_seq = seq;
        c.waiting = true;
        c.token
    }

    /// Schedules a wake-up of `core` after `latency` cycles carrying `value`.
    #[inline]
    fn schedule(&mut self, core: usize, latency: Cycle, value: u64, retry: bool) -> u64 {
        let c = &mut self.cores[core];
        c.result = value;
        c.retry = retry;
        let t = c.now + latency;
        self.wake_at(core, t)
    }

    /// Issues `op` on `core` at the core's current time. `retrying` is true when the same
    /// operation is re-issued after a stall.
    #[inline]
    pub fn issue(&mut self, core: usize, op: &OpKind, retrying: bool) -> Issue {
        self.cores[core].stalled_on = None;
        let out = match *op {
            OpKind::Load(a) => self.mem_op(core, a, MemKind::Load, retrying),
            OpKind::Store(a, v) => self.mem_op(core, a, MemKind::Store(v), retrying),
            OpKind::Cas(a, e, n) => self.mem_op(core, a, MemKind::Cas(e, n), retrying),
            OpKind::FetchAdd(a, d) => self.mem_op(core, a, MemKind::FetchAdd(d), retrying),
            OpKind::LoadOverlapped(a) => self.overlapped(core, a, MemKind::Load, retrying),
            OpKind::StoreOverlapped(a, v) => self.overlapped(core, a, MemKind::Store(v), retrying),
            OpKind::Compute(n) => Outcome::Done(0, n),
            OpKind::Backoff(n) => {
                self.stats.tx.backoff_cycles += n;
                self.stats.tx.backoffs += 1;
                self.cores[core].stats.backoff_cycles += n;
                Outcome::Done(0, n)
            }
            OpKind::XBegin(rot, id) => self.xbegin(core, rot, id),
            OpKind::XEnd(id) => self.xend(core, id),
            _ => self.issue_other(core, op),
        };
        self.finish(core, out)
    }

    /// An overlapped access: blocking inside a transaction; otherwise it waits only for room
    /// in the core's window.
    #[inline]
    fn overlapped(&mut self, core: usize, addr: u64, kind: MemKind, retrying: bool) -> Outcome {
        if self.htm.active(core).is_some() {
            return self.mem_op(core, addr, kind, retrying);
        }
        if let Some(wait) = self.window_full(core) {
            return Outcome::Stall(wait);
        }
        let already_counted = retrying && !self.take_window_wait(core);
        let out = self.mem_op(core, addr, kind, already_counted);
        self.overlap(core, out)
    }

    /// When and how an issued operation completes: at once when nothing else can happen
    /// before it (no event is due earlier), otherwise through a wake-up event.
    #[inline]
    fn finish(&mut self, core: usize, out: Outcome) -> Issue {
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
            Outcome::Parked => Issue::Pending(self.park(core)),
        }
    }

    /// The operations simulated code issues rarely (fences, xabort, suspension, serial
    /// mode).
    #[inline(never)]
    fn issue_other(&mut self, core: usize, op: &OpKind) -> Outcome {
        match *op {
            OpKind::Fence => {
                self.stats.fences += 1;
                self.stats.mem_ops += 1;
                self.cores[core].stats.mem_ops += 1;
                Outcome::Done(0, self.fence_cycles(core))
            }
            OpKind::XAbort(code) => match self.htm.active(core) {
                Some(idx) => {
                    self.doom(core, core, idx, status(HtmAbortCause::Explicit(code)));
                    Outcome::Aborted
                }
                None => Outcome::Done(0, 1),
            },
            OpKind::XPush => {
                let too_deep =
                    self.htm.suspended_count(core) >= self.cfg.htm.max_suspended as usize;
                if let Pushed::Suspended(idx) = self.htm.xpush(core) {
                    if too_deep {
                        self.doom(core, core, idx, status(HtmAbortCause::NestingOverflow));
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
                Outcome::Done(0, self.cfg.htm.suspend_cycles)
            }
            OpKind::TResume => {
                let r = self.htm.tresume(core);
                match self.resumed(core, r) {
                    Outcome::Done(v, _) => Outcome::Done(v, self.cfg.htm.resume_cycles),
                    other => other,
                }
            }
            OpKind::SerialAcquire => match self.serial_owner {
                Some(o) if o != core => Outcome::Stall(self.cfg.htm.stall_retry_cycles.max(1)),
                _ => {
                    self.serial_owner = Some(core);
                    self.stats.tx.serialized += 1;
                    for d in 0..self.cfg.cpus() {
                        if d == core {
                            continue;
                        }
                        for j in 0..self.htm.depth(d) {
                            self.doom(core, d, j, status(HtmAbortCause::Conflict));
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
            OpKind::WaitChange(watched) => self.wait_change(core, watched),
            OpKind::Load(_)
            | OpKind::Store(..)
            | OpKind::LoadOverlapped(_)
            | OpKind::StoreOverlapped(..)
            | OpKind::Cas(..)
            | OpKind::FetchAdd(..)
            | OpKind::Compute(_)
            | OpKind::Backoff(_)
            | OpKind::XBegin(..)
            | OpKind::XEnd(_) => unreachable!("issued by Machine::issue"),
        }
    }

    fn resumed(&mut self, core: usize, r: Resumed) -> Outcome {
        match r {
            Resumed::Nothing | Resumed::Running(_) => Outcome::Done(0, 1),
            Resumed::Doomed(idx, st) => {
                let id = self.htm.stacks[core][idx].id;
                self.post_abort(core, id, st);
                Outcome::Aborted
            }
        }
    }

    /// The attempt id and outermost flag the next `xbegin` on `core` will have: the running
    /// transaction's (flat nesting) or a freshly reserved one.
    #[inline]
    pub fn reserve_attempt(&mut self, core: usize) -> (u64, bool) {
        match self.htm.active(core) {
            Some(idx) => (self.htm.stacks[core][idx].id, false),
            None => (self.htm.reserve_id(), true),
        }
    }

    /// Timer event for `core` at `time`.
    pub fn on_timer(&mut self, core: usize, time: Cycle) {
        if self.cores[core].finished {
            return;
        }
        self.cores[core].pending_interrupt = true;
        // A spinning core takes its interrupt between two reads: wake it to take it.
        if self.is_parked(core) {
            self.unpark(core, time);
        }
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
                    self.doom(core, core, idx, status(HtmAbortCause::Interrupt));
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
                        self.post_abort(core, id, st);
                    }
                }
            }
        }
    }

    /// Statistics so far, with cache and coherence counters filled in.
    pub fn final_stats(&self) -> Stats {
        let mut s = self.stats.clone();
        self.footprints.clone().flush(&mut s.tx);
        s.per_core = self.cores.iter().map(|c| c.stats.clone()).collect();
        s.total_cycles = s.per_core.iter().map(|c| c.cycles).max().unwrap_or(0);
        s.cache = self.hier.stats.clone();
        s.coherence = self.hier.proto.stats().clone();
        s.network = self.hier.net.stats.clone();
        // A point-to-point protocol's messages are the network's deliveries.
        s.coherence.messages += s.network.deliveries;
        s
    }
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
