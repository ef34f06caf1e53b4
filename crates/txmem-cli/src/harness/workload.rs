//! Word workloads and how they pair with backends into benchmark rows.

use rand::rngs::SmallRng;
use txmem::ContentionPolicy;

use crate::harness::kinds::KindTallies;
use crate::harness::mem::{Backend, Layout, Word};
use crate::harness::peers::locks::{LockKind, Locked};
use crate::harness::peers::stm_crates::{FastStm, StmCrate};
use crate::harness::spec::{AbortCounting, Instance, Plan, Tally};
use crate::harness::system::System;
use crate::harness::txmem_sys::{self, Store, TxmemArray, TxmemUntyped, Variant};
use crate::harness::versions::peer_version;

/// A workload over an array of words, runnable by every [`Backend`].
pub trait WordWorkload: Send + Sync + 'static {
    /// Initial words and lock scheme.
    fn layout(&self) -> Layout;
    /// One operation: draws its random choices, then runs through `b.atomic`.
    fn op<B: Backend>(&self, b: &B, rng: &mut SmallRng, tally: &mut Tally);
    /// [`op`](Self::op), recording the operation's kind in `kinds` (sized
    /// by [`kinds`](Self::kinds); empty when the run does not count kinds).
    /// Workloads without kinds run `op`.
    fn op_kinds<B: Backend>(
        &self,
        b: &B,
        rng: &mut SmallRng,
        tally: &mut Tally,
        kinds: &mut KindTallies,
    ) {
        let _ = kinds;
        self.op(b, rng, tally)
    }
    /// The names of the workload's operation kinds (none by default).
    fn kinds(&self) -> &'static [&'static str] {
        &[]
    }
    /// Checks the quiescent state against the summed tallies.
    fn verify<B: Backend>(&self, b: &B, total: &Tally) -> Result<(), String>;
    /// Breaks the state the check inspects (through `b.atomic`, uncounted).
    /// By default adds one to word 0, which a check of the words' sum
    /// notices.
    fn sabotage<B: Backend>(&self, b: &B) {
        let v = b.load(0).wrapping_add(1);
        b.atomic(
            &mut Tally::default(),
            &crate::harness::mem::Poke { index: 0, value: v },
        );
    }
}

struct Pair<W, B> {
    workload: W,
    backend: B,
}

impl<W: WordWorkload, B: Backend> Instance for Pair<W, B> {
    #[inline]
    fn op(&self, rng: &mut SmallRng, tally: &mut Tally) {
        self.workload.op(&self.backend, rng, tally)
    }
    #[inline]
    fn op_as(&self, _: usize, rng: &mut SmallRng, tally: &mut Tally, kinds: &mut KindTallies) {
        self.workload.op_kinds(&self.backend, rng, tally, kinds)
    }
    fn kinds(&self) -> &'static [&'static str] {
        self.workload.kinds()
    }
    fn verify(&self, total: &Tally) -> Result<(), String> {
        self.workload.verify(&self.backend, total)
    }
    fn sabotage(&self) {
        self.workload.sabotage(&self.backend)
    }
    fn abort_counting(&self) -> AbortCounting {
        self.backend.abort_counting()
    }
}

/// Which word-backed systems to add, besides txmem's variants.
pub struct Systems<'a> {
    /// txmem configurations.
    pub txmem: Vec<Variant>,
    /// txmem's contention policy.
    pub policy: &'a ContentionPolicy,
    /// Lock peers to add.
    pub locks: &'a [LockKind],
    /// Add the `fast-stm` and `stm` peers.
    pub stm_crates: bool,
}

/// Adds one row per system for `workload` to `plan`. `make` builds a fresh
/// workload value for each instance (cheap: parameters only).
pub fn add_rows<W, F>(
    plan: &mut Plan,
    suite: &'static str,
    name: &str,
    systems: &Systems<'_>,
    make: F,
) where
    W: WordWorkload,
    F: Fn() -> W + Clone + Send + Sync + 'static,
{
    for v in &systems.txmem {
        let options = txmem_sys::options(v, systems.policy);
        let mk = make.clone();
        let store = v.store;
        plan.case(suite, name, v.system, &v.note(), move || {
            let workload = mk();
            let layout = workload.layout();
            match store {
                Store::TArray => Box::new(Pair {
                    backend: TxmemArray::new(&layout, options),
                    workload,
                }),
                Store::TWords => Box::new(Pair {
                    backend: TxmemUntyped::new(&layout, options),
                    workload,
                }),
            }
        });
    }
    for &kind in systems.locks {
        let mk = make.clone();
        if kind == LockKind::Fine && make().layout().fine_locks.is_none() {
            plan.skip(
                name,
                kind.system(),
                "no fine-grained locking scheme for this structure (lock coupling not implemented)",
            );
            continue;
        }
        plan.case(suite, name, kind.system(), &kind.note(), move || {
            let workload = mk();
            let backend = Locked::new(&workload.layout(), kind).expect("checked when planned");
            Box::new(Pair { workload, backend })
        });
    }
    if systems.stm_crates {
        let mk = make.clone();
        plan.case(
            suite,
            name,
            System::FastStm,
            &format!("fast-stm {} TVar<u64> per word", peer_version("fast-stm")),
            move || {
                let workload = mk();
                let backend = FastStm::new(&workload.layout());
                Box::new(Pair { workload, backend })
            },
        );
        let mk = make;
        plan.case(
            suite,
            name,
            System::Stm,
            &format!("stm {} TVar<u64> per word", peer_version("stm")),
            move || {
                let workload = mk();
                let backend = StmCrate::new(&workload.layout());
                Box::new(Pair { workload, backend })
            },
        );
    }
}

/// Sum of words `range` read outside any operation (wrapping, so signed
/// balances stored two's-complement sum correctly).
pub fn sum_words<B: Backend>(b: &B, range: std::ops::Range<usize>) -> Word {
    range.fold(0, |s, i| s.wrapping_add(b.load(i)))
}

/// Runs `body` through `b` as an operation of kind `kind`, recording it in
/// `kinds` (if the run counts kinds): its attempts, as the backend counts
/// them in the tally (at least one), and its latency on every
/// [`LATENCY_STRIDE`](crate::harness::kinds::LATENCY_STRIDE)-th operation.
#[inline]
pub fn atomic_of_kind<B: Backend, Bd: crate::harness::mem::Body>(
    b: &B,
    tally: &mut Tally,
    kinds: &mut KindTallies,
    kind: usize,
    body: &Bd,
) -> Bd::Out {
    if kinds.kinds().is_empty() {
        return b.atomic(tally, body);
    }
    let before = tally.attempts;
    let start = kinds.time_next().then(std::time::Instant::now);
    let out = b.atomic(tally, body);
    let latency = start.map(|t| t.elapsed());
    let attempts = u32::try_from(tally.attempts - before).unwrap_or(u32::MAX);
    kinds.record(kind, attempts.max(1), false, latency);
    out
}
