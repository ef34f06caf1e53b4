//! The simulator's own single-threaded executor.
//!
//! Each core runs one simulated thread (an `async` task) and, while it takes a timer
//! interrupt, a handler task on top of it. Operation futures ([`crate::cpu::Op`]) issue their
//! operation to the [`Machine`] on first poll; the machine either completes it at once (when
//! no other event can come first) or schedules a wake-up event keyed by (time, sequence).
//! The executor pops events in order and polls the task of the core concerned; no wakers are
//! needed because the executor always knows which core an event belongs to.

use crate::config::{ConfigError, SimConfig};
use crate::cpu::Cpu;
use crate::engine::event_queue::EventKind;
use crate::engine::per_core::PerCore;
use crate::machine::cell::{MachineCell, MachineRef, Shared};
use crate::machine::Machine;
use crate::stats::Stats;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

type Task = Pin<Box<dyn Future<Output = ()>>>;
type HandlerFactory = Rc<dyn Fn(Cpu) -> Task>;

/// The machine, for one step of the executor or of a `Sim` method.
#[inline(always)]
fn machine(shared: &Shared) -> MachineRef<'_> {
    // SAFETY: in this module the machine is taken only around simulator code: every
    // `MachineRef` taken here is dropped before a task is polled (the `Cpu` handles take the
    // machine only inside polls) and before another is taken; the handler factory is called
    // only inside the interrupt task, when it is polled.
    unsafe { shared.machine.access() }
}

/// Why a run could not complete.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SimError {
    /// The configuration is invalid.
    Config(ConfigError),
    /// Threads are blocked but nothing is scheduled.
    Stuck(String),
}

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SimError::Config(e) => e.fmt(f),
            SimError::Stuck(m) => write!(f, "simulation stuck: {m}"),
        }
    }
}

impl std::error::Error for SimError {}

impl From<ConfigError> for SimError {
    fn from(e: ConfigError) -> Self {
        SimError::Config(e)
    }
}

/// Core `cpu` takes its pending timer interrupt: returns the task that runs the handler
/// (between two `entry_cycles` computations) before the core's thread continues.
#[cold]
fn interrupt_task(m: &mut Machine, cpu: Cpu, user: Option<HandlerFactory>) -> Task {
    m.take_interrupt(cpu.core());
    let entry = m.cfg.interrupts.entry_cycles;
    Box::pin(async move {
        cpu.compute(entry).await;
        if let Some(h) = user {
            h(cpu.clone()).await;
        }
        cpu.compute(entry).await;
    })
}

/// A simulated machine plus the simulated threads to run on it.
///
/// ```
/// use txmem_sim::{Sim, SimConfig};
/// let mut sim = Sim::new(SimConfig { cores: 2, ..SimConfig::default() }).unwrap();
/// let counter = sim.alloc_lines(1);
/// for core in 0..2 {
///     sim.spawn(core, move |cpu| async move {
///         for _ in 0..10 {
///             cpu.transaction(|cpu| async move {
///                 let v = cpu.load(counter).await;
///                 cpu.store(counter, v + 1).await;
///             })
///             .await;
///         }
///     });
/// }
/// let stats = sim.run().unwrap();
/// assert_eq!(sim.read(counter), 20);
/// assert_eq!(stats.tx.commits, 20);
/// ```
pub struct Sim {
    shared: Rc<Shared>,
    threads: PerCore<Option<Task>>,
    handlers: PerCore<Option<Task>>,
    handler: Option<HandlerFactory>,
    ran: bool,
}

impl std::fmt::Debug for Sim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sim")
            .field("cores", &self.threads.len())
            .finish_non_exhaustive()
    }
}

impl Sim {
    /// A machine built from `cfg`, with no threads yet.
    pub fn new(cfg: SimConfig) -> Result<Sim, ConfigError> {
        cfg.validate()?;
        let cores = cfg.cpus();
        let machine = Machine::new(cfg);
        Ok(Sim {
            shared: Rc::new(Shared {
                abort_counts: machine.abort_counts.clone(),
                machine: MachineCell::new(machine),
            }),
            threads: PerCore::new(cores, |_| None, || None),
            handlers: PerCore::new(cores, |_| None, || None),
            handler: None,
            ran: false,
        })
    }

    /// The configuration.
    pub fn config(&self) -> SimConfig {
        machine(&self.shared).cfg.clone()
    }

    /// Reserves `bytes` bytes of simulated memory aligned to `align`; panics when memory is
    /// exhausted (raise `memory_bytes`).
    pub fn alloc(&mut self, bytes: u64, align: u64) -> u64 {
        let mut m = machine(&self.shared);
        let size = m.mem.size_bytes();
        m.mem.alloc(bytes, align).unwrap_or_else(|| {
            panic!("simulated memory ({size} bytes) exhausted; raise memory_bytes")
        })
    }

    /// Reserves `n` whole cache lines (line-aligned) and returns the first address.
    pub fn alloc_lines(&mut self, n: u64) -> u64 {
        let lb = machine(&self.shared).cfg.line_bytes;
        self.alloc(n * lb, lb)
    }

    /// Reads a word of simulated memory (committed state after a run). Panics on a
    /// misaligned or out-of-range address.
    pub fn read(&self, addr: u64) -> u64 {
        let m = machine(&self.shared);
        match m.mem.word_index(addr) {
            Ok(w) => m.mem.get(w),
            Err(e) => panic!("{e}"),
        }
    }

    /// Writes a word of simulated memory (initial values, before the run). Panics on a
    /// misaligned or out-of-range address.
    pub fn write(&mut self, addr: u64, value: u64) {
        if let Err(e) = machine(&self.shared).poke(addr, value) {
            panic!("{e}");
        }
    }

    /// A handle for code running on `core` (also usable to build futures before `run`).
    /// Panics if the core does not exist.
    pub fn cpu(&self, core: usize) -> Cpu {
        assert!(
            core < self.threads.len(),
            "core {core} does not exist ({} cores)",
            self.threads.len()
        );
        Cpu::new(self.shared.clone(), core)
    }

    /// Runs `f(cpu)` as the thread of `core`. Panics if the core has a thread already.
    pub fn spawn<F, Fut>(&mut self, core: usize, f: F)
    where
        F: FnOnce(Cpu) -> Fut,
        Fut: Future<Output = ()> + 'static,
    {
        assert!(
            core < self.threads.len(),
            "core {core} does not exist ({} cores)",
            self.threads.len()
        );
        assert!(
            self.threads[core].is_none(),
            "core {core} already has a thread"
        );
        self.threads[core] = Some(Box::pin(f(self.cpu(core))));
    }

    /// Code run by every timer interrupt (see `interrupts.period`). In `xpush` mode the
    /// interrupted transaction is suspended around it, and it may run its own transactions.
    pub fn set_interrupt_handler<F, Fut>(&mut self, f: F)
    where
        F: Fn(Cpu) -> Fut + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        self.handler = Some(Rc::new(move |cpu| Box::pin(f(cpu)) as Task));
    }

    /// Runs until every thread finishes (or `max_cycles`), and returns the statistics.
    pub fn run(&mut self) -> Result<Stats, SimError> {
        assert!(!self.ran, "Sim::run may be called once");
        self.ran = true;
        let mut live = 0usize;
        {
            let mut m = machine(&self.shared);
            let period = m.cfg.interrupts.period;
            for c in 0..self.threads.len() {
                if self.threads[c].is_some() {
                    live += 1;
                    m.wake_at(c, 0);
                    if period > 0 {
                        m.queue.push(period, c, EventKind::Timer);
                    }
                } else {
                    m.cores[c].finished = true;
                }
            }
        }
        let mut timed_out = false;
        let mut events = 0u64;
        // The core whose task was polled last and is now pending: it must wait for a
        // simulator operation, checked before anything else happens.
        let mut unchecked: Option<usize> = None;
        while live > 0 {
            let c = {
                let mut m = machine(&self.shared);
                if let Some(w) = unchecked.take() {
                    if !m.cores[w].waiting {
                        return Err(awaited_foreign_future(w));
                    }
                }
                let Some(ev) = m.queue.pop() else {
                    break;
                };
                if ev.time() > m.cfg.max_cycles {
                    timed_out = true;
                    break;
                }
                events += 1;
                let c = ev.core();
                match ev.kind() {
                    EventKind::Timer => {
                        m.on_timer(c, ev.time());
                        continue;
                    }
                    EventKind::Wake => {
                        let core = &mut m.cores[c];
                        if ev.seq() != core.wake_seq {
                            // Stale: the core scheduled a later wake-up since.
                            continue;
                        }
                        core.now = ev.time();
                        core.completed = core.token;
                        core.waiting = false;
                        if core.pending_interrupt && !core.in_handler && !core.finished {
                            let handler = self.handler.clone();
                            let cpu = Cpu::new(self.shared.clone(), c);
                            self.handlers[c] = Some(interrupt_task(&mut m, cpu, handler));
                        }
                    }
                }
                c
            };
            match self.poll_core(c) {
                Polled::Finished => live -= 1,
                Polled::Pending => unchecked = Some(c),
                Polled::Idle => {}
            }
        }
        let mut m = machine(&self.shared);
        if live > 0 && !timed_out {
            return Err(SimError::Stuck(format!(
                "{live} threads blocked with no pending event"
            )));
        }
        if m.cfg.check_invariants {
            if let Err(e) = m.check_all() {
                panic!("coherence invariant violated at the end of the run: {e}");
            }
        }
        m.stats.events = events;
        let mut s = m.final_stats();
        s.timed_out = timed_out;
        if timed_out {
            s.total_cycles = s.total_cycles.max(m.cfg.max_cycles);
        }
        Ok(s)
    }

    /// Polls the task running on core `c` (its interrupt handler, if one runs, then its
    /// thread).
    fn poll_core(&mut self, c: usize) -> Polled {
        let mut cx = Context::from_waker(Waker::noop());
        loop {
            if let Some(h) = &mut self.handlers[c] {
                match h.as_mut().poll(&mut cx) {
                    Poll::Ready(()) => {
                        self.handlers[c] = None;
                        machine(&self.shared).end_interrupt(c);
                        continue;
                    }
                    Poll::Pending => return Polled::Pending,
                }
            }
            let Some(t) = &mut self.threads[c] else {
                return Polled::Idle;
            };
            return match t.as_mut().poll(&mut cx) {
                Poll::Ready(()) => {
                    self.threads[c] = None;
                    let mut m = machine(&self.shared);
                    let core = &mut m.cores[c];
                    core.finished = true;
                    // The thread ends when its overlapped accesses have completed.
                    core.now = core.window.drained(core.now);
                    core.stats.cycles = core.now;
                    Polled::Finished
                }
                Poll::Pending => Polled::Pending,
            };
        }
    }
}

/// What polling a core's task did.
enum Polled {
    /// The core's thread finished.
    Finished,
    /// The task is pending (it must be waiting for a simulator operation).
    Pending,
    /// The core has no task (its thread finished before).
    Idle,
}

/// The error of a core whose simulated code awaited something else than a simulator
/// operation (it would never be woken).
#[cold]
fn awaited_foreign_future(c: usize) -> SimError {
    SimError::Stuck(format!(
        "core {c}: simulated code awaited a future that is not a simulator operation"
    ))
}
