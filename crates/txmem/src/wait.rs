//! Blocking `retry`: sleep until a commit changes something the transaction read.
//!
//! No lost wake-ups, without a fence on the commit path. Waiters are listed
//! in shards by object address, and each shard keeps a count of its
//! waiters. A waiter announces itself (a SeqCst increment of the count of
//! each shard it is listed in) and then re-checks its reads with SeqCst
//! loads; a committer locks its write set (SeqCst read-modify-writes) and
//! then reads the counts of the shards of the objects it wrote (SeqCst). In
//! the single total order of these operations, either the committer sees
//! the waiter's count and wakes it after installing, or the waiter's
//! re-check comes after the committer's lock and sees the item locked or
//! changed, and does not sleep. (The re-check's loads follow a SeqCst fence,
//! since an object may check words of its own with acquire loads; loom
//! found the wake-up lost without it.)
//!
//! Why counts per shard and not one for the process: a count is written at
//! every registration, and waiters on unrelated objects (two pairs of tasks
//! passing tokens through their own queues) would bounce one cache line
//! between their cores at every wait. A commit reads the counts only once
//! some transaction has ever waited ([`EVER_WAITED`], set by the first
//! registration and never cleared), so programs that never block pay one
//! load of a line nobody writes.
//!
//! A waiter is a parked thread (blocking `retry`) or an async task's
//! [`Waker`] (`atomically_async`); both register and re-check the same way,
//! so the argument above covers both. Tasks are woken after the registry's
//! lock is released, since a waker may run the executor's code.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::Waker;

use crossbeam_utils::sync::{Parker, Unparker};
use crossbeam_utils::CachePadded;
use smallvec::SmallVec;

use crate::sync::{fence, protocol_static, AtomicBool, AtomicUsize, Mutex};

/// How to wake a waiter.
enum Wake {
    /// A thread parked in blocking `retry`.
    Thread(Unparker),
    /// An async task whose transaction called `retry`.
    Task(Waker),
}

/// The addresses of the objects a waiter read: inline for the few a
/// waiting transaction usually reads, so that a wait allocates only its
/// place in the registry.
pub(crate) type Objects = SmallVec<[usize; 4]>;

struct Waiter {
    wake: Wake,
    /// Addresses of the objects the waiting transaction read (sorted).
    objects: Objects,
}

/// The registry, in shards by object address, so that waiters on unrelated
/// objects (and the commits that wake them) do not share one lock, one list
/// and one count: a waiter is listed in the shard of each object it read,
/// and a commit looks only in the shards of the objects it wrote.
const SHARDS: usize = 64; // (a shard set fits a u64)

protocol_static! {
    /// Set by the first registration, never cleared: until then no commit
    /// looks at the shards' counts.
    static EVER_WAITED: AtomicBool = AtomicBool::new(false);
}

#[cfg(not(txmem_loom))]
#[allow(clippy::declare_interior_mutable_const)] // (an array initializer)
const NO_WAITERS: CachePadded<AtomicUsize> = CachePadded::new(AtomicUsize::new(0));

/// How many waiters each shard lists, a cache line each.
#[cfg(not(txmem_loom))]
static WAITERS: [CachePadded<AtomicUsize>; SHARDS] = [NO_WAITERS; SHARDS];
#[cfg(txmem_loom)]
loom::lazy_static! {
    static ref WAITERS: [CachePadded<AtomicUsize>; SHARDS] =
        std::array::from_fn(|_| CachePadded::new(AtomicUsize::new(0)));
}

#[allow(clippy::declare_interior_mutable_const)] // (an array initializer)
const EMPTY_SHARD: Mutex<Vec<Arc<Waiter>>> = Mutex::new(Vec::new());
static REGISTRY: [Mutex<Vec<Arc<Waiter>>>; SHARDS] = [EMPTY_SHARD; SHARDS];

/// The shard of the object at `object` (objects are at least 8-aligned;
/// the multiply spreads neighbouring ones).
fn shard_of(object: usize) -> usize {
    ((object as u64 >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58) as usize
}

/// The distinct shards of a waiter's objects, as a bit per shard.
fn shards_of(objects: &[usize]) -> u64 {
    objects.iter().fold(0, |bits, &o| bits | 1 << shard_of(o))
}

/// The shards whose bits are set in `bits`.
fn each_shard(mut bits: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (bits != 0).then(|| {
            let shard = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            shard
        })
    })
}

/// True if some transaction may be blocked in `retry` (read after locking;
/// a commit that gets `true` calls [`wake_readers_of`] after installing).
#[inline]
pub(crate) fn waiters_present() -> bool {
    // Loom models SeqCst operations as acquire/release only, but SeqCst
    // fences in full: under loom, this fence stands for the order the
    // committer's SeqCst lock (a locked instruction on x86) already gives.
    #[cfg(txmem_loom)]
    fence(Ordering::SeqCst);
    EVER_WAITED.load(Ordering::SeqCst)
}

/// Wakes every waiter that read one of `written` objects. Called after
/// [`waiters_present`] said `true`, with the written objects still locked
/// or just installed: a shard's count is read after the lock, as the module
/// docs require.
#[inline]
pub(crate) fn wake_readers_of(written: impl Iterator<Item = usize> + Clone) {
    // The shards written, each once (a write set rarely spans many), and of
    // those the ones where someone waits: most commits find none.
    let mut seen = 0u64;
    let mut listed = 0u64;
    for object in written.clone() {
        let shard = shard_of(object);
        let bit = 1 << shard;
        if seen & bit == 0 {
            seen |= bit;
            if WAITERS[shard].load(Ordering::SeqCst) != 0 {
                listed |= bit;
            }
        }
    }
    if listed != 0 {
        wake_listed(listed, written);
    }
}

/// Wakes the waiters of the shards in `listed` that read one of `written`.
#[inline(never)]
fn wake_listed(listed: u64, written: impl Iterator<Item = usize> + Clone) {
    // (Inline: a commit usually wakes a task or two, and an allocation
    // here would be paid at every wake.)
    let mut tasks: SmallVec<[Waker; 2]> = SmallVec::new();
    for shard in each_shard(listed) {
        let reg = REGISTRY[shard].lock();
        for w in reg.iter() {
            if written.clone().any(|a| w.objects.binary_search(&a).is_ok()) {
                match &w.wake {
                    Wake::Thread(unparker) => unparker.unpark(),
                    Wake::Task(waker) => tasks.push(waker.clone()),
                }
            }
        }
    }
    // (A waiter listed in two shards may be woken twice: harmless.)
    for waker in tasks {
        waker.wake();
    }
}

/// Sorts and dedups the read objects of a transaction about to wait.
fn wait_set(mut objects: Objects) -> Objects {
    assert!(
        !objects.is_empty(),
        "txmem: retry() in a transaction that read nothing would block forever"
    );
    objects.sort_unstable();
    objects.dedup();
    objects
}

/// Adds `waiter` to the registry, then announces it (see the module docs
/// for why in this order, before the caller's re-check).
fn register(waiter: Waiter) -> Arc<Waiter> {
    let me = Arc::new(waiter);
    for shard in each_shard(shards_of(&me.objects)) {
        REGISTRY[shard].lock().push(me.clone());
        WAITERS[shard].fetch_add(1, Ordering::SeqCst);
    }
    // A read first: once set, the flag's line stays shared.
    if !EVER_WAITED.load(Ordering::SeqCst) {
        EVER_WAITED.store(true, Ordering::SeqCst);
    }
    // The re-check that follows reads versions through the objects' own
    // checks, some with acquire loads only: this fence keeps every one of
    // them after the announcement in the single total order (x86's locked
    // increment already does; the memory model needs the fence).
    fence(Ordering::SeqCst);
    me
}

fn deregister(me: &Arc<Waiter>) {
    for shard in each_shard(shards_of(&me.objects)) {
        WAITERS[shard].fetch_sub(1, Ordering::SeqCst);
        let mut reg = REGISTRY[shard].lock();
        if let Some(i) = reg.iter().position(|w| Arc::ptr_eq(w, me)) {
            reg.swap_remove(i);
        }
    }
}

/// An async task's place among the waiters: its waker is woken by the first
/// commit that writes one of the objects it read. Dropping it leaves the
/// registry (a future dropped while it waits leaves nothing behind).
pub(crate) struct Registration(Arc<Waiter>);

impl Drop for Registration {
    fn drop(&mut self) {
        deregister(&self.0);
    }
}

/// Registers `waker` for a change to one of `objects`. The caller then
/// re-checks its reads: if they are still valid it may wait for the wake;
/// if not, it drops the registration and reruns at once.
pub(crate) fn register_task(objects: Objects, waker: &Waker) -> Registration {
    Registration(register(Waiter {
        wake: Wake::Task(waker.clone()),
        objects: wait_set(objects),
    }))
}

/// How many waiters wait on the object at `object` (tests: the registry is
/// global, so they count only their own objects).
#[cfg(test)]
pub(crate) fn waiting_on(object: usize) -> usize {
    REGISTRY[shard_of(object)]
        .lock()
        .iter()
        .filter(|w| w.objects.binary_search(&object).is_ok())
        .count()
}

thread_local! {
    static PARKER: Parker = Parker::new();
}

/// Blocks until `still_valid` returns false. `objects` are the addresses of
/// the objects read.
pub(crate) fn block_until_changed(objects: Objects, still_valid: impl Fn() -> bool) {
    let objects = wait_set(objects);
    PARKER.with(|parker| {
        let me = register(Waiter {
            wake: Wake::Thread(parker.unparker().clone()),
            objects,
        });
        while still_valid() {
            parker.park();
        }
        deregister(&me);
    });
}
