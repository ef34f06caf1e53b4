//! The interface simulated code uses: a [`Cpu`] handle with memory operations, computation,
//! and hardware transactions.
//!
//! # How transactions restart
//!
//! Rust `async` code cannot be rolled back to an earlier point, so a transactional region is
//! always a closure that builds the body future: [`Cpu::xbegin`] runs it once as a
//! transaction and returns `Ok(value)` if it committed or `Err(status)` if it aborted — like
//! RTM's `xbegin` returning an abort status to the fallback path. On abort the body future is
//! dropped at once, wherever it was suspended, which discards its local variables exactly as
//! hardware discards registers; memory is rolled back by the HTM. [`Cpu::transaction`] is
//! MetaTM's behaviour: it re-runs the body after each abort (with the configured backoff)
//! until it commits, and after a persistent abort (capacity, nesting) it runs the body once
//! in serial mode (all other transactions aborted and held off) so it always finishes.
//! A transaction started while another is active on the same core is flat-nested into it.
//!
//! `xabort` inside a body never returns; outside a transaction it does nothing.

use crate::htm::AbortStatus;
use crate::machine::cell::{MachineRef, Shared};
use crate::machine::{Issue, OpKind};
use std::cell::Cell;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::{pin, Pin};
use std::rc::Rc;
use std::task::{Context, Poll};

/// Handle of one simulated core, given to the code that runs on it. Cheap to clone.
#[derive(Clone)]
pub struct Cpu {
    shared: Rc<Shared>,
    core: usize,
}

impl std::fmt::Debug for Cpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cpu").field("core", &self.core).finish()
    }
}

/// Conversion from an operation's raw 64-bit result to the type its future yields.
pub trait OpOutput {
    /// Converts.
    fn from_raw(raw: u64) -> Self;
}

impl OpOutput for u64 {
    #[inline]
    fn from_raw(raw: u64) -> Self {
        raw
    }
}

impl OpOutput for () {
    #[inline]
    fn from_raw(_: u64) -> Self {}
}

/// Future of one machine operation; completes at the simulated time the machine decides.
#[must_use = "simulator operations do nothing unless awaited"]
pub struct Op<'a, O> {
    cpu: &'a Cpu,
    kind: OpKind,
    /// 0 before issue; the wake-up token while pending; `u64::MAX` after an abort.
    token: u64,
    retrying: bool,
    /// Complete (instead of waiting forever) when the operation aborts its transaction or
    /// its transaction is doomed while it waits: for the `xbegin` that starts an attempt,
    /// which takes the abort next.
    ready_on_abort: bool,
    _out: PhantomData<fn() -> O>,
}

impl<O: OpOutput> Future for Op<'_, O> {
    type Output = O;

    #[inline]
    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<O> {
        let this = &mut *self;
        let mut m = this.cpu.machine();
        if this.token != 0 {
            let c = &m.cores[this.cpu.core];
            if c.completed != this.token {
                // A later wake-up superseded this operation's: its transaction was doomed.
                return if this.ready_on_abort {
                    debug_assert!(this.cpu.shared.abort_counts[this.cpu.core].get() > 0);
                    Poll::Ready(O::from_raw(0))
                } else {
                    Poll::Pending
                };
            }
            if !c.retry {
                return Poll::Ready(O::from_raw(c.result));
            }
            this.retrying = true;
        }
        match m.issue(this.cpu.core, &this.kind, this.retrying) {
            Issue::Done(v) => Poll::Ready(O::from_raw(v)),
            Issue::Pending(token) => {
                this.token = token;
                Poll::Pending
            }
            Issue::Aborted if this.ready_on_abort => Poll::Ready(O::from_raw(0)),
            Issue::Aborted => {
                this.token = u64::MAX;
                Poll::Pending
            }
        }
    }
}

/// Runs a transaction body and stops it as soon as its transaction aborts.
struct Abortable<'a, 'b, F> {
    cpu: &'a Cpu,
    /// How many aborts wait on this core ([`crate::machine::Machine::abort_counts`]): the
    /// machine is consulted only when there are some.
    waiting: &'a Cell<u32>,
    id: u64,
    outermost: bool,
    fut: Pin<&'b mut F>,
}

impl<F: Future> Future for Abortable<'_, '_, F> {
    type Output = Result<F::Output, AbortStatus>;

    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Some(r) = self.check() {
            return r;
        }
        match self.fut.as_mut().poll(cx) {
            Poll::Ready(v) => Poll::Ready(Ok(v)),
            Poll::Pending => self.check().unwrap_or(Poll::Pending),
        }
    }
}

impl<F: Future> Abortable<'_, '_, F> {
    /// `Some` when this attempt aborted: `Ready(Err)` at the outermost level of a
    /// (flat-nested) transaction, which takes the abort, `Pending` (forever) at inner ones.
    #[inline]
    fn check(&self) -> Option<Poll<Result<F::Output, AbortStatus>>> {
        if self.waiting.get() == 0 {
            return None;
        }
        let st = take_abort(self.cpu, self.id, self.outermost)?;
        Some(if self.outermost {
            Poll::Ready(Err(st))
        } else {
            Poll::Pending
        })
    }
}

/// The abort of attempt `id` waiting on `cpu`'s core, if any (taken when `take`).
#[inline]
fn take_abort(cpu: &Cpu, id: u64, take: bool) -> Option<AbortStatus> {
    cpu.machine().pending_abort(cpu.core, id, take)
}

impl Cpu {
    pub(crate) fn new(shared: Rc<Shared>, core: usize) -> Self {
        Cpu { shared, core }
    }

    /// The machine, for one simulator step.
    #[inline(always)]
    fn machine(&self) -> MachineRef<'_> {
        // SAFETY: in this module the machine is taken only for one simulator step that calls
        // no simulated code and takes it no second time: every `MachineRef` taken here is
        // dropped before the method that took it awaits or returns.
        unsafe { self.shared.machine.access() }
    }

    #[inline]
    fn op<O>(&self, kind: OpKind) -> Op<'_, O> {
        Op {
            cpu: self,
            kind,
            token: 0,
            retrying: false,
            ready_on_abort: false,
            _out: PhantomData,
        }
    }

    /// The CPU (hardware thread) this handle runs on, as given to `Sim::spawn`; with
    /// `threads_per_core` above 1, its physical core is `core() / threads_per_core`.
    pub fn core(&self) -> usize {
        self.core
    }

    /// Number of simulated CPUs (hardware threads; the number of cores when
    /// `threads_per_core` is 1).
    pub fn cores(&self) -> usize {
        self.machine().cfg.cpus()
    }

    /// The core's current simulated time.
    pub fn now(&self) -> u64 {
        self.machine().cores[self.core].now
    }

    /// A deterministic pseudo-random number from the core's own stream.
    pub fn random(&self) -> u64 {
        self.machine().cores[self.core].rng.next_u64()
    }

    /// A deterministic pseudo-random number in `0..n` (`n > 0`).
    pub fn random_below(&self, n: u64) -> u64 {
        self.machine().cores[self.core].rng.below(n)
    }

    /// Loads the 8-byte word at `addr` (8-byte aligned).
    pub fn load(&self, addr: u64) -> Op<'_, u64> {
        self.op(OpKind::Load(addr))
    }

    /// Stores `value` at `addr`.
    pub fn store(&self, addr: u64, value: u64) -> Op<'_, ()> {
        self.op(OpKind::Store(addr, value))
    }

    /// Loads the word at `addr` without waiting for the access to complete: the core goes on
    /// with up to [`crate::SimConfig::max_outstanding`] such accesses in flight, as an
    /// out-of-order core overlaps independent misses. The value is the one at issue (every
    /// access takes effect when issued); use it freely, the time model only hides the
    /// latency. [`Cpu::fence`] and the end of the thread wait for the accesses in flight.
    /// Inside a transaction this is [`Cpu::load`].
    ///
    /// ```
    /// use txmem_sim::{Sim, SimConfig};
    /// let mut sim = Sim::new(SimConfig { cores: 1, ..SimConfig::default() }).unwrap();
    /// let a = sim.alloc_lines(8);
    /// sim.spawn(0, move |cpu| async move {
    ///     for i in 0..8 {
    ///         cpu.load_overlapped(a + 64 * i).await;
    ///     }
    ///     cpu.fence().await;
    /// });
    /// let stats = sim.run().unwrap();
    /// // Eight misses to memory overlap: far less than eight memory latencies.
    /// assert!(stats.total_cycles < 2 * 300);
    /// assert_eq!(stats.overlapped, 8);
    /// ```
    pub fn load_overlapped(&self, addr: u64) -> Op<'_, u64> {
        self.op(OpKind::LoadOverlapped(addr))
    }

    /// Stores `value` at `addr` without waiting for the access to complete, as
    /// [`Cpu::load_overlapped`] loads.
    pub fn store_overlapped(&self, addr: u64, value: u64) -> Op<'_, ()> {
        self.op(OpKind::StoreOverlapped(addr, value))
    }

    /// Atomically replaces the word at `addr` by `new` if it equals `expected`; yields the
    /// old value.
    pub fn cas(&self, addr: u64, expected: u64, new: u64) -> Op<'_, u64> {
        self.op(OpKind::Cas(addr, expected, new))
    }

    /// Atomically adds `delta` (wrapping) to the word at `addr`; yields the old value.
    pub fn fetch_add(&self, addr: u64, delta: u64) -> Op<'_, u64> {
        self.op(OpKind::FetchAdd(addr, delta))
    }

    /// Spins until the word at `addr` satisfies `done`, and yields the value that did.
    ///
    /// Each read is a [`Cpu::load`]; between two reads that fail `done`, the core sleeps until
    /// a write reaches the word's line (see [`crate::SimConfig::park_spinners`]), as a real
    /// core re-reading its cached copy would see nothing new before that. Inside a
    /// transaction every read is tracked, as a plain loop's would be.
    ///
    /// ```
    /// use txmem_sim::{Sim, SimConfig};
    /// let mut sim = Sim::new(SimConfig { cores: 2, ..SimConfig::default() }).unwrap();
    /// let flag = sim.alloc_lines(1);
    /// sim.spawn(0, move |cpu| async move {
    ///     assert_eq!(cpu.spin_until(flag, |v| v != 0).await, 7);
    /// });
    /// sim.spawn(1, move |cpu| async move {
    ///     cpu.compute(10_000).await;
    ///     cpu.store(flag, 7).await;
    /// });
    /// let stats = sim.run().unwrap();
    /// // Two reads (before and after the store), not thousands.
    /// assert_eq!(stats.loads, 2);
    /// assert_eq!(stats.parked_waits, 1);
    /// ```
    pub async fn spin_until(&self, addr: u64, mut done: impl FnMut(u64) -> bool) -> u64 {
        loop {
            let v = self.load(addr).await;
            if done(v) {
                return v;
            }
            self.wait_change(&[(addr, v)]).await;
        }
    }

    /// Sleeps until one of the `watched` words (an address and the value last read there;
    /// one or two of them) may have changed: returns at once if one differs already, else
    /// when a write reaches one of their lines. The caller re-reads and decides whether to
    /// wait again; [`Cpu::spin_until`] is the one-word loop. Returns at once when
    /// `park_spinners` is off.
    ///
    /// # Panics
    ///
    /// If `watched` is empty or holds more than two words.
    pub fn wait_change(&self, watched: &[(u64, u64)]) -> Op<'_, ()> {
        let pair = match *watched {
            [a] => [a, a],
            [a, b] => [a, b],
            _ => panic!(
                "wait_change watches one or two words, not {}",
                watched.len()
            ),
        };
        self.op(OpKind::WaitChange(pair))
    }

    /// A memory fence: waits until the core's overlapped accesses have completed (accesses
    /// are sequentially consistent already; costs at least an L1 hit).
    pub fn fence(&self) -> Op<'_, ()> {
        self.op(OpKind::Fence)
    }

    /// Computes locally for `cycles` cycles.
    pub fn compute(&self, cycles: u64) -> Op<'_, ()> {
        self.op(OpKind::Compute(cycles))
    }

    /// Whether a transaction is running on this core (not suspended), like RTM `xtest`.
    pub fn xtest(&self) -> bool {
        self.machine().htm.active(self.core).is_some()
    }

    /// Explicitly aborts the running transaction with `code`; never completes inside a
    /// transaction. Outside one it does nothing.
    pub fn xabort(&self, code: u8) -> Op<'_, ()> {
        self.op(OpKind::XAbort(code))
    }

    /// Ends the retry history of the transaction that last aborted on this core at the
    /// current depth: the caller finished its work another way (under a lock), so the next
    /// [`Cpu::xbegin`] starts a new logical transaction (fresh timestamp and karma, and its
    /// commit is not a restart) instead of continuing the aborted one.
    pub fn forget_aborted(&self) {
        self.machine().forget_retry(self.core);
    }

    /// MetaTM `xpush`: suspends the running transaction (if any) so that the following code
    /// runs independently of it and may start new, independent transactions.
    pub fn xpush(&self) -> Op<'_, ()> {
        self.op(OpKind::XPush)
    }

    /// MetaTM `xpop`: resumes the transaction suspended by the matching `xpush`. If it lost a
    /// conflict meanwhile it aborts now (and this future never completes).
    pub fn xpop(&self) -> Op<'_, ()> {
        self.op(OpKind::XPop)
    }

    /// POWER8 `tsuspend`: accesses until `tresume` are non-transactional.
    pub fn tsuspend(&self) -> Op<'_, ()> {
        self.op(OpKind::TSuspend)
    }

    /// POWER8 `tresume`: resumes the suspended transaction; if anything conflicted with it
    /// while suspended, it aborts now.
    pub fn tresume(&self) -> Op<'_, ()> {
        self.op(OpKind::TResume)
    }

    /// One transaction attempt of `body` (see [`Cpu::xbegin`]).
    async fn attempt<F, Fut, T>(&self, rot: bool, body: F) -> Result<T, AbortStatus>
    where
        F: FnOnce(Cpu) -> Fut,
        Fut: Future<Output = T>,
    {
        let (id, outermost) = self.machine().reserve_attempt(self.core);
        self.begin_op(rot, id).await;
        let fut = pin!(body(self.clone()));
        let r = self.abortable(id, outermost, fut).await;
        self.end_attempt(id, r).await
    }

    /// The operation that begins attempt `id` (reserved with
    /// [`crate::machine::Machine::reserve_attempt`]). The attempt begins before the abort
    /// wrapper runs its body: nothing can abort a new attempt before it begins, and a begin
    /// that aborts it (nesting too deep) completes at once, so that the wrapper takes the
    /// abort straight away.
    #[inline(always)]
    fn begin_op(&self, rot: bool, id: u64) -> Op<'_, ()> {
        Op {
            ready_on_abort: true,
            ..self.op::<()>(OpKind::XBegin(rot, id))
        }
    }

    /// Runs the body future `fut` of attempt `id` until it completes or the attempt aborts.
    #[inline(always)]
    fn abortable<'b, F: Future>(
        &self,
        id: u64,
        outermost: bool,
        fut: Pin<&'b mut F>,
    ) -> Abortable<'_, 'b, F> {
        Abortable {
            cpu: self,
            waiting: &self.shared.abort_counts[self.core],
            id,
            outermost,
            fut,
        }
    }

    /// Ends attempt `id` whose body ended with `r`: commits it (or leaves its flat-nested
    /// level) after a completed body, or counts its abort and waits out the abort penalty.
    async fn end_attempt<T>(&self, id: u64, r: Result<T, AbortStatus>) -> Result<T, AbortStatus> {
        match r {
            Ok(v) => {
                self.op::<()>(OpKind::XEnd(id)).await;
                Ok(v)
            }
            Err(st) => {
                let penalty = self.machine().finish_abort(self.core, id, st);
                if penalty > 0 {
                    self.compute(penalty).await;
                }
                Err(st)
            }
        }
    }

    /// Runs `body` once as a hardware transaction: `Ok` with its value if it committed,
    /// `Err` with the abort status if it aborted (its effects are gone). The caller decides
    /// whether to retry — a following `xbegin` on this core at the same suspension depth
    /// counts as a restart of the aborted transaction (for statistics and for policies that
    /// remember age or karma).
    pub fn xbegin<'a, F, Fut, T>(
        &'a self,
        body: F,
    ) -> impl Future<Output = Result<T, AbortStatus>> + use<'a, F, Fut, T>
    where
        F: FnOnce(Cpu) -> Fut,
        Fut: Future<Output = T>,
    {
        self.attempt(false, body)
    }

    /// As [`Cpu::xbegin`] for a POWER8 rollback-only transaction: stores are tracked and
    /// buffered, loads are not tracked.
    pub fn xbegin_rot<'a, F, Fut, T>(
        &'a self,
        body: F,
    ) -> impl Future<Output = Result<T, AbortStatus>> + use<'a, F, Fut, T>
    where
        F: FnOnce(Cpu) -> Fut,
        Fut: Future<Output = T>,
    {
        self.attempt(true, body)
    }

    /// Runs `body` as a transaction until it commits (MetaTM semantics), backing off by the
    /// configured policy between attempts. After a persistent abort the body runs once in
    /// serial mode, so this always completes.
    pub fn transaction<'a, F, Fut, T>(
        &'a self,
        body: F,
    ) -> impl Future<Output = T> + use<'a, F, Fut, T>
    where
        F: FnMut(Cpu) -> Fut,
        Fut: Future<Output = T>,
    {
        self.retry_loop(false, body)
    }

    /// As [`Cpu::transaction`] with rollback-only transactions.
    pub fn transaction_rot<'a, F, Fut, T>(
        &'a self,
        body: F,
    ) -> impl Future<Output = T> + use<'a, F, Fut, T>
    where
        F: FnMut(Cpu) -> Fut,
        Fut: Future<Output = T>,
    {
        self.retry_loop(true, body)
    }

    async fn retry_loop<F, Fut, T>(&self, rot: bool, mut body: F) -> T
    where
        F: FnMut(Cpu) -> Fut,
        Fut: Future<Output = T>,
    {
        loop {
            // One attempt, as `attempt` runs it, written out here so that the polls of the
            // body go through one state machine less.
            let (id, outermost) = self.machine().reserve_attempt(self.core);
            self.begin_op(rot, id).await;
            let r = {
                let fut = pin!(body(self.clone()));
                let r = self.abortable(id, outermost, fut).await;
                self.end_attempt(id, r).await
            };
            match r {
                Ok(v) => return v,
                Err(st) if st.is_persistent() => {
                    self.machine().forget_retry(self.core);
                    self.op::<()>(OpKind::SerialAcquire).await;
                    let v = body(self.clone()).await;
                    self.op::<()>(OpKind::SerialRelease).await;
                    return v;
                }
                Err(_) => {
                    let b = self.machine().backoff_for(self.core);
                    if b > 0 {
                        self.op::<()>(OpKind::Backoff(b)).await;
                    }
                }
            }
        }
    }
}
