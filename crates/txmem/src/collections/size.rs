//! A commutative size counter, striped per thread, whose versions writers
//! *share-lock*.
//!
//! Collections count their elements here. A committing insert or remove must
//! change the count atomically with its other writes (a transaction that
//! reads the size must not see the count of a half-installed commit), yet
//! two inserts must not conflict over the count — and, on a multicore, should
//! not even write the same cache line. So the counter is split into
//! [stripes](super::stripes), each a version word and a partial count, and a
//! committer only ever touches its own thread's stripe, under a
//! reader-writer discipline on that stripe's word:
//!
//! * a committing transaction that changes the count but never read it
//!   takes a **share** of its stripe (any number of committers hold shares
//!   at once); so does a single-operation insert or removal
//!   ([`try_share`](SizeCounter::try_share), [`install_share`](SizeCounter::install_share));
//! * installing adds the delta to the stripe's count, bumps the stripe's
//!   version (to at least the commit version, for TL2 opacity) and drops the
//!   share;
//! * a read of the size waits until no stripe is shared or locked, sums the
//!   counts, and checks that every stripe word is unchanged around that sum
//!   (a double collect). It records the largest stripe version as its read
//!   version (comparable with the clock, for the runtime's opacity check)
//!   and the *sum* of the stripe versions in the item: versions only grow,
//!   so an unchanged sum means that no stripe changed, which is what `check`
//!   tests;
//! * a committing transaction that *read* the size and also changes it
//!   locks **every** stripe exclusively (in stripe order, so two of them
//!   cannot deadlock), and only if the sum it read is still current.
//!
//! Word layout of a stripe: bit 0 exclusive lock, bits 1..20 the number of
//! shares, bits 20.. the version divided by [`VERSION_STEP`].

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use crate::error::TxResult;
use crate::item::{Item, USER_FLAG0};
use crate::object::{Commit, LockOutcome};
use crate::tx::{ItemId, Transaction};
use crate::version::VERSION_STEP;

use super::stripes::Stripes;
use super::{inconsistent, struct_wait};

const EXCL: u64 = 1;
const SHARE: u64 = 2;
const SHARE_MASK: u64 = (1 << VSHIFT) - 2;
const VSHIFT: u32 = 20;
const BUSY_MASK: u64 = EXCL | SHARE_MASK;

/// Item flag: this item holds a share of its thread's stripe.
const HOLDS_SHARE: u32 = USER_FLAG0 << 20;
/// Item flag: this item holds every stripe exclusively.
const HOLDS_EXCL: u32 = USER_FLAG0 << 21;

/// Bounded waits of a commit for a busy stripe (unbounded when irrevocable).
const LOCK_SPINS: u32 = 256;

#[inline]
fn version_units(word: u64) -> u64 {
    word >> VSHIFT
}

/// One stripe: a version word and this stripe's part of the count.
struct Stripe {
    word: AtomicU64,
    count: AtomicI64,
}

/// What a size item carries: the transaction's pending change of the count
/// and, once it has read the size, the version sum it saw.
#[derive(Clone, Copy, Debug, Default)]
struct SizeState {
    delta: i64,
    seen_sum: u64,
}

/// A consistent view of all stripes.
struct Snapshot {
    count: i64,
    /// The sum of the stripes' versions (in version units).
    sum: u64,
    /// The largest stripe version (in version units).
    max: u64,
}

/// See the module documentation.
pub(crate) struct SizeCounter {
    stripes: Stripes<Stripe>,
}

impl SizeCounter {
    pub fn new(count: i64) -> Self {
        let counter = SizeCounter {
            stripes: Stripes::new(|| Stripe {
                word: AtomicU64::new(0),
                count: AtomicI64::new(0),
            }),
        };
        counter
            .stripes
            .first()
            .count
            .store(count, Ordering::Relaxed);
        counter
    }

    /// Sum and maximum of the stripe versions, or `None` if a stripe is
    /// shared or locked.
    #[inline]
    fn versions(&self) -> Option<(u64, u64)> {
        let mut sum = 0;
        let mut max = 0;
        for s in self.stripes.all() {
            // Sequentially consistent, as `TVersion::load`: the largest is
            // recorded as a read that a snapshot bound may accept.
            let w = s.word.load(Ordering::SeqCst);
            if w & BUSY_MASK != 0 {
                return None;
            }
            sum += version_units(w);
            max = max.max(version_units(w));
        }
        Some((sum, max))
    }

    /// A double collect: versions, counts (and `also`), versions again;
    /// `None` if a stripe was busy or changed in between.
    #[inline]
    fn snapshot<R>(&self, also: impl FnOnce() -> R) -> Option<(Snapshot, R)> {
        let (sum, max) = self.versions()?;
        let count = self
            .stripes
            .all()
            .map(|s| s.count.load(Ordering::Acquire))
            .sum();
        let r = also();
        (self.versions()? == (sum, max)).then_some((Snapshot { count, sum, max }, r))
    }

    /// The committed count, outside any transaction (a consistent value:
    /// the count of some moment at which no commit was half-installed).
    pub fn load(&self) -> i64 {
        let mut spins = 0;
        loop {
            if let Some((snap, ())) = self.snapshot(|| ()) {
                return snap.count;
            }
            struct_wait(&mut spins);
        }
    }

    /// The sum of the stripes' counts, each read on its own (no snapshot):
    /// a recent count for heuristics such as a resize trigger, not a value
    /// any transaction may observe.
    #[inline]
    pub fn estimate(&self) -> i64 {
        self.stripes
            .all()
            .map(|s| s.count.load(Ordering::Relaxed))
            .sum()
    }

    /// Reads the committed count inside a transaction, recording the read in
    /// item `id`, after calling `also` under the same consistent versions
    /// (for collections that read their whole structure under this version).
    pub fn observe_with<'env, R>(
        &self,
        tx: &mut Transaction<'env>,
        id: ItemId,
        mut also: impl FnMut() -> R,
    ) -> TxResult<(i64, R)> {
        let mut spins = 0;
        let (snap, r) = loop {
            match self.snapshot(&mut also) {
                Some(found) => break found,
                None => struct_wait(&mut spins),
            }
        };
        let item = tx.item_ref(id);
        if item.is_read() {
            // A repeated read must see what the first one saw.
            return if Self::state(item).seen_sum == snap.sum {
                Ok((snap.count, r))
            } else {
                Err(inconsistent())
            };
        }
        let item = tx.item_mut(id);
        let state = SizeState {
            seen_sum: snap.sum,
            ..Self::state(item)
        };
        item.value.set(state);
        tx.record_read(id, snap.max * VERSION_STEP)?;
        Ok((snap.count, r))
    }

    #[inline]
    fn state(item: &Item) -> SizeState {
        item.value.get::<SizeState>().copied().unwrap_or_default()
    }

    /// Adds `delta` to the item's pending delta (the item becomes a write).
    #[inline]
    pub fn add_pending(item: &mut Item, delta: i64) {
        let mut state = Self::state(item);
        state.delta += delta;
        item.value.set(state);
        item.mark_write();
    }

    /// The item's pending delta.
    #[inline]
    pub fn pending(item: &Item) -> i64 {
        Self::state(item).delta
    }

    /// Waits (bounded unless the transaction must succeed) after a failed
    /// attempt to take a stripe; false when the commit should give up.
    #[inline]
    fn wait(spins: &mut u32, commit: &Commit<'_>) -> bool {
        *spins += 1;
        if !commit.must_succeed() && *spins > LOCK_SPINS {
            return false;
        }
        if *spins > 64 {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
        true
    }

    /// Takes a share of this thread's stripe for a committer that changes
    /// the count (or every stripe, for one that also read it). Inlined into
    /// the collections' `lock`: the common case is one compare-and-swap.
    #[inline]
    pub fn lock(&self, item: &mut Item, commit: &Commit<'_>) -> LockOutcome {
        if item.is_read() {
            return self.lock_all(item, commit);
        }
        if Self::pending(item) == 0 {
            // Nothing to change and nothing read: no lock needed.
            return LockOutcome::Acquired;
        }
        if self.try_share() {
            item.set_flags(HOLDS_SHARE);
            return LockOutcome::Acquired;
        }
        Self::lock_share_contended(self.stripes.mine(), item, commit)
    }

    /// One attempt to take a share of this thread's stripe (for a committer
    /// that changes the count and never read it): false if the stripe is
    /// locked exclusively or the compare-and-swap lost a race.
    #[inline]
    pub fn try_share(&self) -> bool {
        let stripe = self.stripes.mine();
        let cur = stripe.word.load(Ordering::Relaxed);
        cur & EXCL == 0
            && stripe
                .word
                .compare_exchange(cur, cur + SHARE, Ordering::SeqCst, Ordering::Relaxed)
                .is_ok()
    }

    /// Adds `delta` to this thread's stripe, publishes a stripe version of at
    /// least `commit_version` and drops the share [`try_share`](Self::try_share)
    /// took.
    #[inline]
    pub fn install_share(&self, delta: i64, commit_version: u64) {
        let stripe = self.stripes.mine();
        stripe.count.fetch_add(delta, Ordering::AcqRel);
        let target = commit_version / VERSION_STEP;
        let mut cur = stripe.word.load(Ordering::Relaxed);
        loop {
            let bumped = (version_units(cur) + 1).max(target);
            let new = (bumped << VSHIFT) | ((cur & SHARE_MASK) - SHARE);
            match stripe
                .word
                .compare_exchange_weak(cur, new, Ordering::SeqCst, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(c) => cur = c,
            }
        }
    }

    /// Drops a share [`try_share`](Self::try_share) took, changing nothing.
    #[inline]
    pub fn drop_share(&self) {
        self.stripes.mine().word.fetch_sub(SHARE, Ordering::SeqCst);
    }

    /// [`lock`](Self::lock)'s share after the first attempt failed.
    #[cold]
    #[inline(never)]
    fn lock_share_contended(stripe: &Stripe, item: &mut Item, commit: &Commit<'_>) -> LockOutcome {
        let mut spins = 0u32;
        loop {
            let cur = stripe.word.load(Ordering::Relaxed);
            if cur & EXCL == 0 {
                if stripe
                    .word
                    .compare_exchange(cur, cur + SHARE, Ordering::SeqCst, Ordering::Relaxed)
                    .is_ok()
                {
                    item.set_flags(HOLDS_SHARE);
                    return LockOutcome::Acquired;
                }
                continue;
            }
            if !Self::wait(&mut spins, commit) {
                return LockOutcome::Busy;
            }
        }
    }

    /// Locks every stripe exclusively for a transaction that read the size,
    /// if the versions it read are still current.
    #[cold]
    #[inline(never)]
    fn lock_all(&self, item: &mut Item, commit: &Commit<'_>) -> LockOutcome {
        let mut spins = 0u32;
        for (held, stripe) in self.stripes.all().enumerate() {
            loop {
                let cur = stripe.word.load(Ordering::Relaxed);
                if cur & BUSY_MASK == 0
                    && stripe
                        .word
                        .compare_exchange(cur, cur | EXCL, Ordering::SeqCst, Ordering::Relaxed)
                        .is_ok()
                {
                    break;
                }
                if !Self::wait(&mut spins, commit) {
                    self.release(held);
                    return LockOutcome::Busy;
                }
            }
        }
        let sum: u64 = self
            .stripes
            .all()
            .map(|s| version_units(s.word.load(Ordering::Relaxed)))
            .sum();
        if sum != Self::state(item).seen_sum {
            self.release(self.stripes.all().len());
            return LockOutcome::Stale;
        }
        item.set_flags(HOLDS_EXCL);
        LockOutcome::Acquired
    }

    /// Drops the exclusive lock of the first `n` stripes.
    fn release(&self, n: usize) {
        for s in self.stripes.all().take(n) {
            s.word.fetch_and(!EXCL, Ordering::SeqCst);
        }
    }

    pub fn check(&self, item: &Item) -> bool {
        let mut sum = 0;
        for s in self.stripes.all() {
            let w = s.word.load(Ordering::SeqCst);
            if w & BUSY_MASK != 0 {
                return false;
            }
            sum += version_units(w);
        }
        sum == Self::state(item).seen_sum
    }

    /// Applies the pending delta and publishes a new stripe version, dropping
    /// what [`lock`](Self::lock) took. Inlined like `lock`: the common case
    /// (a share) is an add and a compare-and-swap on this thread's stripe.
    #[inline]
    pub fn install(&self, item: &mut Item, commit: &Commit<'_>) {
        let held = item.flags() & (HOLDS_SHARE | HOLDS_EXCL);
        if held == 0 {
            return;
        }
        if held == HOLDS_EXCL {
            return self.install_exclusive(item, commit);
        }
        // A share is taken only for a non-zero delta: always add and bump.
        self.install_share(Self::pending(item), commit.version());
        item.clear_flags(HOLDS_SHARE);
    }

    /// [`install`](Self::install) for a committer holding every stripe.
    #[cold]
    #[inline(never)]
    fn install_exclusive(&self, item: &mut Item, commit: &Commit<'_>) {
        let delta = Self::pending(item);
        let stripe = self.stripes.mine();
        if delta != 0 {
            stripe.count.fetch_add(delta, Ordering::AcqRel);
        }
        let target = commit.version() / VERSION_STEP;
        // Publish a new version on this thread's stripe (which also clears
        // its lock bit), then unlock the rest.
        let cur = stripe.word.load(Ordering::Relaxed);
        let bumped = (version_units(cur) + 1).max(target);
        stripe.word.store(bumped << VSHIFT, Ordering::SeqCst);
        for s in self.stripes.all() {
            if !std::ptr::eq(s, stripe) {
                s.word.fetch_and(!EXCL, Ordering::SeqCst);
            }
        }
        item.clear_flags(HOLDS_EXCL);
    }

    pub fn unlock(&self, item: &mut Item) {
        if item.has(HOLDS_SHARE) {
            self.drop_share();
        } else if item.has(HOLDS_EXCL) {
            self.release(self.stripes.all().len());
        }
        item.clear_flags(HOLDS_SHARE | HOLDS_EXCL);
    }
}
