//! Lock elision in simulated code, decided by the same policies as `txmem-elide`'s locks.
//!
//! An elided lock runs its critical section as a hardware transaction that only *reads* the
//! lock word, so sections that touch different data run in parallel. What happens after an
//! abort decides whether that pays: try again, wait for a busy lock, or give up and take
//! the lock. `txmem-elide` leaves those decisions to `txmem-htm`'s state machines (the
//! adaptive retry limit with lock-busy waiting, and adaptive coarsening); [`Elision`] feeds
//! the *same* state machines with the simulated HTM's aborts, so a simulated experiment
//! measures the algorithm the lock library ships, on simulated caches and coherence.
//!
//! The lock is a test-and-test-and-set spinlock word in simulated memory ([`spin_lock`]).
//! A section runs as a transaction that reads the word and aborts with
//! [`LOCK_BUSY_CODE`] if it is held; on the fallback path the section takes the spinlock,
//! whose store aborts every transaction subscribed to it (non-transactional accesses win
//! conflicts in the simulator). Retries start at once, without backoff, as in `txmem-elide`.
//!
//! Keep one [`Elision`] per simulated thread, as XSync keeps the policy state per thread.
//!
//! ```
//! use txmem_sim::elision::{Elision, ElisionConfig};
//! use txmem_sim::{Sim, SimConfig};
//!
//! let mut sim = Sim::new(SimConfig { cores: 2, ..SimConfig::default() }).unwrap();
//! let lock = sim.alloc_lines(1);
//! let counter = sim.alloc_lines(1);
//! for core in 0..2 {
//!     sim.spawn(core, move |cpu| async move {
//!         let mut elision = Elision::new(&ElisionConfig::default());
//!         for _ in 0..50 {
//!             elision
//!                 .run(&cpu, lock, |cpu| async move {
//!                     let v = cpu.load(counter).await;
//!                     cpu.store(counter, v + 1).await;
//!                 })
//!                 .await;
//!         }
//!         assert_eq!(elision.stats().sections, 50);
//!     });
//! }
//! sim.run().unwrap();
//! assert_eq!(sim.read(counter), 100);
//! ```

use crate::cpu::Cpu;
use serde::{Deserialize, Serialize};
use std::future::Future;
use txmem_htm::policy::{
    CoarsenConfig, CoarsenEvent, CoarsenPolicy, RetryAction, RetryConfig, RetryEvent, RetryPolicy,
};
use txmem_htm::LOCK_BUSY_CODE;

/// What one thread's elided sections did: `txmem-htm`'s counts, as `txmem-elide` keeps them
/// for the real locks.
pub use txmem_htm::ElisionStats;

/// Acquires the test-and-test-and-set spinlock at `lock` (0 free, 1 held).
pub async fn spin_lock(cpu: &Cpu, lock: u64) {
    loop {
        cpu.spin_until(lock, |v| v == 0).await;
        if cpu.cas(lock, 0, 1).await == 0 {
            return;
        }
    }
}

/// Releases the spinlock at `lock`.
pub async fn spin_unlock(cpu: &Cpu, lock: u64) {
    cpu.store(lock, 0).await;
}

/// The knobs of simulated elision: the parameters of `txmem-htm`'s retry and coarsening
/// policies, in a form `--set workload.elision.<field>=<value>` can reach.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ElisionConfig {
    /// Most hardware attempts per section ([`RetryConfig::max_attempts`]).
    pub max_attempts: u32,
    /// How much each elided commit raises the attempt limit ([`RetryConfig::grow_by`]).
    pub grow_by: u32,
    /// Waits for a busy lock per section before queueing for it
    /// ([`RetryConfig::max_busy_waits`]).
    pub max_busy_waits: u32,
    /// Merge consecutive sections into one transaction by the coarsening policy (off: one
    /// section per transaction).
    pub coarsen: bool,
    /// Successive commits before coarsening starts ([`CoarsenConfig::threshold`]).
    pub coarsen_threshold: u32,
    /// Most sections per transaction ([`CoarsenConfig::max_group`]).
    pub coarsen_max_group: u32,
}

impl Default for ElisionConfig {
    /// The policies' own defaults, which are `txmem-elide`'s; coarsening off.
    fn default() -> Self {
        let (r, c) = (RetryConfig::DEFAULT, CoarsenConfig::DEFAULT);
        ElisionConfig {
            max_attempts: r.max_attempts,
            grow_by: r.grow_by,
            max_busy_waits: r.max_busy_waits,
            coarsen: false,
            coarsen_threshold: c.threshold,
            coarsen_max_group: c.max_group,
        }
    }
}

impl ElisionConfig {
    /// The retry policy's configuration.
    pub fn retry(&self) -> RetryConfig {
        RetryConfig {
            max_attempts: self.max_attempts,
            grow_by: self.grow_by,
            max_busy_waits: self.max_busy_waits,
        }
    }

    /// The coarsening policy's configuration, if coarsening is on.
    pub fn coarsening(&self) -> Option<CoarsenConfig> {
        self.coarsen.then_some(CoarsenConfig {
            threshold: self.coarsen_threshold,
            max_group: self.coarsen_max_group,
        })
    }
}

/// One simulated thread's elision state: `txmem-htm`'s retry policy, optionally its
/// coarsening policy, and counts of what they decided.
#[derive(Clone, Debug)]
pub struct Elision {
    retry: RetryPolicy,
    coarsen: Option<CoarsenPolicy>,
    stats: ElisionStats,
}

impl Elision {
    /// Fresh policies configured by `cfg`.
    pub fn new(cfg: &ElisionConfig) -> Self {
        Elision {
            retry: RetryPolicy::new(cfg.retry()),
            coarsen: cfg.coarsening().map(CoarsenPolicy::new),
            stats: ElisionStats::default(),
        }
    }

    /// What the sections run so far did.
    pub fn stats(&self) -> ElisionStats {
        self.stats
    }

    /// The retry policy's current state.
    pub fn retry_policy(&self) -> &RetryPolicy {
        &self.retry
    }

    /// The coarsening policy's current state, if coarsening is on.
    pub fn coarsen_policy(&self) -> Option<&CoarsenPolicy> {
        self.coarsen.as_ref()
    }

    /// Runs one critical section guarded by the spinlock at `lock`, elided when the retry
    /// policy allows. `body` may run several times (once per attempt); only the run that
    /// commits, or the one under the lock, takes effect.
    pub async fn run<F, Fut>(&mut self, cpu: &Cpu, lock: u64, body: F)
    where
        F: FnMut(Cpu) -> Fut,
        Fut: Future<Output = ()>,
    {
        self.run_group(cpu, lock, 1, body).await;
    }

    /// Runs up to `max_sections` consecutive critical sections guarded by the spinlock at
    /// `lock` and returns how many ran (at least one). With coarsening on, one transaction
    /// covers as many sections as the coarsening policy's group size; otherwise, and
    /// whenever the retry policy falls back to the lock, exactly one runs (under the lock,
    /// each section on its own, as `txmem-elide`'s `Batch` does).
    ///
    /// Inside a running transaction the section nests flatly into it and never takes the
    /// lock: a busy lock aborts the enclosing transaction, whose owner decides what next.
    pub async fn run_group<F, Fut>(
        &mut self,
        cpu: &Cpu,
        lock: u64,
        max_sections: u64,
        mut body: F,
    ) -> u64
    where
        F: FnMut(Cpu) -> Fut,
        Fut: Future<Output = ()>,
    {
        if cpu.xtest() {
            // An abort here is taken by the enclosing transaction: this never sees `Err`.
            let _ = cpu.xbegin(|cpu| elided(cpu, lock, 1, &mut body)).await;
            self.stats.sections += 1;
            return 1;
        }
        let mut action = self.retry.on(RetryEvent::Start);
        loop {
            match action {
                RetryAction::Attempt => {
                    let k = self.group_size(max_sections);
                    self.stats.attempts += 1;
                    match cpu.xbegin(|cpu| elided(cpu, lock, k, &mut body)).await {
                        Ok(()) => {
                            self.committed(k);
                            return k;
                        }
                        Err(status) => {
                            self.stats.aborts.record(status);
                            if let Some(c) = &mut self.coarsen {
                                c.on(CoarsenEvent::Aborted(status));
                            }
                            action = self.retry.on(RetryEvent::Abort(status));
                        }
                    }
                }
                RetryAction::WaitThenAttempt => {
                    self.stats.busy_waits += 1;
                    cpu.spin_until(lock, |v| v == 0).await;
                    action = RetryAction::Attempt;
                }
                RetryAction::Fallback | RetryAction::Done => {
                    // The aborted transaction is over: the section now runs under the lock.
                    cpu.forget_aborted();
                    spin_lock(cpu, lock).await;
                    self.retry.on(RetryEvent::FallbackAcquired);
                    body(cpu.clone()).await;
                    spin_unlock(cpu, lock).await;
                    self.stats.fallback_acquisitions += 1;
                    self.stats.sections += 1;
                    return 1;
                }
            }
        }
    }

    /// Sections the next transaction should cover, at most `max_sections` and at least one.
    fn group_size(&self, max_sections: u64) -> u64 {
        let group = self.coarsen.as_ref().map_or(1, |c| c.group_size());
        u64::from(group).min(max_sections).max(1)
    }

    /// Bookkeeping after a transaction covering `k` sections committed.
    fn committed(&mut self, k: u64) {
        self.retry.on(RetryEvent::Commit);
        if let Some(c) = &mut self.coarsen {
            c.on(CoarsenEvent::Committed {
                sections: u32::try_from(k).unwrap_or(u32::MAX),
            });
        }
        self.stats.elided_commits += 1;
        self.stats.sections += k;
        if k > 1 {
            self.stats.coarsened_sections += k;
        }
    }
}

/// The transaction body of an elided group: subscribe to the lock (abort if it is held),
/// then run `k` sections.
async fn elided<F, Fut>(cpu: Cpu, lock: u64, k: u64, body: &mut F)
where
    F: FnMut(Cpu) -> Fut,
    Fut: Future<Output = ()>,
{
    if cpu.load(lock).await != 0 {
        cpu.xabort(LOCK_BUSY_CODE).await;
    }
    for _ in 0..k {
        body(cpu.clone()).await;
    }
}
