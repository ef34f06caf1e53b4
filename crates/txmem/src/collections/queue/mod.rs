//! `TQueue<T>`: a FIFO queue whose pushes never conflict. Its committed
//! elements are kept in blocks (`blocks`) and read outside transactions
//! by `committed`; what one transaction pushes is kept as `pushes`
//! describes.

mod blocks;
mod committed;
mod pushes;

use std::fmt;
use std::future::Future;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

use crossbeam_epoch::Guard;
use smallvec::SmallVec;

use crate::error::TxResult;
use crate::item::Item;
use crate::object::{Commit, LockOutcome, TObject};
use crate::tx::{atomically_async, ItemId, Transaction};
use crate::version::TVersion;

use blocks::Block;

/// Item key of the pop side (the pop version; the number of committed
/// elements this transaction pops).
const POP: u64 = 0;
/// Item key of the push side (the push version; the values this transaction
/// pushes, in order).
const PUSH: u64 = 1;

/// A transactional FIFO queue, unbounded or bounded.
///
/// The queue is a linked list of blocks of elements (a two-lock queue): the
/// *pop version* guards the head and the *push version* guards the tail, so
/// installing pushes and installing pops never touch the same word.
///
/// What each operation adds to the transaction (STO thesis ch. 6):
///
/// | operation | read set | write set |
/// |---|---|---|
/// | [`push`](Self::push) (unbounded, or bounded with room to spare) | nothing | the push item: the value is appended at commit |
/// | [`push`](Self::push) on a bounded queue that looks full, or once the push version is read | push and pop versions (exact length) | as above, or `retry` if really full |
/// | [`pop`](Self::pop) / [`try_pop`](Self::try_pop) of a committed element | the pop version (and the push version again, once it is read) | the pop item: the head advances at commit |
/// | pop on a queue with no committed element left | the pop **and push** versions (the queue is empty) | pops the transaction's own first push, if any |
/// | [`peek`](Self::peek) | as pop, without removing | — |
/// | [`len`](Self::len), [`is_empty`](Self::is_empty) | push and pop versions | — |
///
/// The push version, once read (the queue looked empty or full, or
/// [`len`](Self::len) ran), is read again by every later look of the same
/// transaction, so that no attempt sees an element that a push committed
/// after the queue looked empty, or room that a pop made after it looked
/// full.
///
/// Conflicts, therefore: pushes never conflict with each other (they only
/// serialize for an instant at commit, when they append); pops conflict
/// with every concurrent committed pop; a pop that found the queue empty
/// conflicts with any concurrent committed push; pushes and pops of a
/// non-empty queue do not conflict. A transaction pops committed elements
/// first and its own pushes only once the queue is empty, so FIFO order
/// holds.
///
/// A bounded queue ([`bounded`](Self::bounded)) checks its capacity at
/// commit, while it holds the push lock: a push that found room without
/// reading anything aborts at commit if the queue filled up meanwhile, and
/// on re-execution reads the exact length and `retry`s (blocks) until a pop
/// makes room.
///
/// Popped values are cloned out of the queue; the queue drops its copies
/// when their block is reclaimed through the epoch scheme (a block holds
/// up to 32 elements, about 256 bytes of them).
///
/// ```
/// use txmem::{atomically, TQueue};
/// let q = TQueue::new();
/// atomically(|tx| { q.push(tx, 1)?; q.push(tx, 2) });
/// assert_eq!(atomically(|tx| q.try_pop(tx)), Some(1));
/// // A transaction sees its own pushes once the committed ones are gone.
/// let got = atomically(|tx| { q.push(tx, 3)?; Ok((q.try_pop(tx)?, q.try_pop(tx)?)) });
/// assert_eq!(got, (Some(2), Some(3)));
/// ```
pub struct TQueue<T> {
    popv: TVersion,
    pushv: TVersion,
    /// The block holding the front element (element `popped`). Changed
    /// under the pop lock.
    head: AtomicPtr<Block<T>>,
    /// The block the next push writes to (element `pushed`), never full.
    /// Changed under the push lock.
    tail: AtomicPtr<Block<T>>,
    /// Elements ever pushed (changed under the push lock).
    pushed: AtomicU64,
    /// Elements ever popped (changed under the pop lock).
    popped: AtomicU64,
    capacity: u64,
    /// Slots per block (see `blocks`).
    slots: usize,
}

// SAFETY: the queue owns values of type `T` in heap blocks; threads clone
// them out (`T: Sync`) and the epoch collector may drop them on another
// thread (`T: Send`). All shared state is atomics.
unsafe impl<T: Send + Sync> Sync for TQueue<T> {}
// SAFETY: as above; moving the queue moves the owned values.
unsafe impl<T: Send> Send for TQueue<T> {}

impl<T: Clone + Send + Sync + 'static> Default for TQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Clone + Send + Sync + 'static> TQueue<T> {
    /// An empty, unbounded queue.
    pub fn new() -> Self {
        Self::with_capacity_limit(u64::MAX)
    }

    /// An empty queue that holds at most `capacity` elements: a push onto a
    /// full queue blocks (`retry`) until a pop makes room.
    ///
    /// # Panics
    /// If `capacity` is zero.
    pub fn bounded(capacity: usize) -> Self {
        assert!(capacity > 0, "TQueue::bounded: capacity must be at least 1");
        Self::with_capacity_limit(capacity as u64)
    }

    /// Appends `value` to a queue that no other thread can reach yet (a
    /// constructor's initial contents), without a transaction.
    ///
    /// # Panics
    /// If the queue is full.
    pub(crate) fn push_unshared(&mut self, value: T) {
        assert!(
            *self.pushed.get_mut() - *self.popped.get_mut() < self.capacity,
            "TQueue: initial contents exceed the capacity"
        );
        // `&mut self` stands in for the push lock that a commit holds.
        self.install_pushes(smallvec::smallvec![value]);
    }

    fn with_capacity_limit(capacity: u64) -> Self {
        let slots = blocks::slots_for::<T>().min(capacity.try_into().unwrap_or(usize::MAX));
        let first = Block::alloc(0, slots);
        TQueue {
            popv: TVersion::new(),
            pushv: TVersion::new(),
            head: AtomicPtr::new(first),
            tail: AtomicPtr::new(first),
            pushed: AtomicU64::new(0),
            popped: AtomicU64::new(0),
            capacity,
            slots,
        }
    }

    /// The capacity (`None` if unbounded).
    pub fn capacity(&self) -> Option<usize> {
        (self.capacity != u64::MAX).then_some(self.capacity as usize)
    }

    /// The `n`-th committed element (0 = front), if any (else null). The
    /// caller is pinned; the result is meaningful only if the pop version is
    /// stable around the call, and the element may be read only then.
    fn nth(&self, n: u64) -> *const T {
        // `popped` first: a pop installs the head before it counts, so a
        // count read here comes with that head or a later one (and a later
        // one starts past the element: `find` says null).
        let i = self.popped.load(Ordering::Acquire) + n;
        let head = self.head.load(Ordering::Acquire);
        if i >= self.pushed.load(Ordering::Acquire) {
            return ptr::null();
        }
        // SAFETY: the head was reachable when loaded, under the caller's
        // pin, and blocks are freed only after every thread pinned when
        // they were retired unpins. Element `i` was written before `pushed`
        // counted it, and its block linked before that.
        unsafe {
            let block = Block::find(head, i);
            if block.is_null() {
                return ptr::null();
            }
            Block::element(block, i)
        }
    }

    /// The committed elements this transaction pops.
    fn own_pops(&self, tx: &Transaction<'_>) -> u64 {
        tx.find_item(self, POP)
            .map_or(0, |pop_id| Self::pops_of(tx, pop_id))
    }

    /// The committed elements the pop item `pop_id` pops.
    fn pops_of(tx: &Transaction<'_>, pop_id: ItemId) -> u64 {
        tx.item_ref(pop_id)
            .write_value::<u64>()
            .copied()
            .unwrap_or(0)
    }

    /// Finds the element this transaction would pop next. Returns the pop
    /// item and the committed element (`Some`), or `None` if the committed
    /// queue is empty for this transaction (its pop and push versions are
    /// then read).
    fn front_element<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
    ) -> TxResult<(ItemId, Option<*const T>)> {
        let _ = tx.guard();
        let pop_id = tx.item(self, POP);
        let skip = Self::pops_of(tx, pop_id);
        let element = tx.observe(pop_id, &self.popv, || self.nth(skip))?;
        if !element.is_null() && !self.push_side_read(tx) {
            return Ok((pop_id, Some(element)));
        }
        // Empty as far as committed pushes go: make the emptiness part of
        // the read set through the push version (a concurrent committed push
        // invalidates it), and look once more under that version. Once the
        // push version is in the read set (an earlier look found the queue
        // empty, or `len`), every look goes through here: an element the pop
        // side finds may have been pushed since, and re-reading the push
        // version aborts the attempt before it can see that element.
        #[cfg(test)]
        crate::test_hook::run(&tests::BETWEEN_LOOKS);
        let push_id = tx.item(self, PUSH);
        let element = tx.observe(push_id, &self.pushv, || self.nth(skip))?;
        // The walk also depends on the head, which the pop version guards:
        // a pop committed since the first look would have moved it. When
        // both reads repeat earlier ones, nothing else revalidates them, so
        // check the pop version again (a change aborts the attempt).
        tx.observe(pop_id, &self.popv, || ())?;
        Ok((pop_id, (!element.is_null()).then_some(element)))
    }

    /// True if this transaction has read the push version.
    fn push_side_read(&self, tx: &Transaction<'_>) -> bool {
        tx.find_item(self, PUSH)
            .is_some_and(|id| tx.item_ref(id).is_read())
    }

    /// Appends `value` at the tail. Adds nothing to the read set (see the
    /// type docs for bounded queues). On a full bounded queue, blocks
    /// (`retry`) until there is room.
    pub fn push<'env>(&'env self, tx: &mut Transaction<'env>, value: T) -> TxResult<()> {
        match self.try_push(tx, value)? {
            Ok(()) => Ok(()),
            Err(_) => Err(tx.retry()),
        }
    }

    /// Appends `value` unless the (bounded) queue is full, in which case the
    /// value comes back in `Err` (and the full queue is in the read set).
    pub fn try_push<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        value: T,
    ) -> TxResult<Result<(), T>> {
        let push_id = tx.item(self, PUSH);
        if self.capacity != u64::MAX {
            let (pending, own_pops) = {
                let (values, own_pops) = pushes::pending::<T>(tx.item_ref(push_id));
                (values.len() as u64, own_pops)
            };
            // A racy estimate first: if there is clearly room, read nothing
            // (commit re-checks under the push lock). Not once the exact
            // length is in the read set (an earlier push found the queue
            // full, or `len`): the estimate could then show room that a pop
            // committed since made, which that length contradicts.
            let estimate = self
                .pushed
                .load(Ordering::Acquire)
                .saturating_sub(self.popped.load(Ordering::Acquire));
            if self.push_side_read(tx)
                || estimate.saturating_sub(own_pops) + pending + 1 > self.capacity
            {
                let len = self.len(tx)? as u64;
                if len + 1 > self.capacity {
                    return Ok(Err(value));
                }
            }
        }
        pushes::push(tx.item_mut(push_id), value);
        Ok(Ok(()))
    }

    /// Removes and returns the front element, or `None` if the queue is
    /// empty (which then stays in the read set: a concurrent committed push
    /// aborts this transaction).
    pub fn try_pop<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<Option<T>> {
        if let (pop_id, Some(element)) = self.front_element(tx)? {
            // SAFETY: `element` was found under a stable pop version while this
            // transaction is pinned (`front_element` pinned it); blocks are
            // freed only after that pin is released, and a slot's value is
            // never changed once pushed.
            let v = Some(unsafe { &*element }.clone());
            let item = tx.item_mut(pop_id);
            let n = item.write_value::<u64>().copied().unwrap_or(0);
            item.set_write(n + 1);
            if self.capacity != u64::MAX {
                let push_id = tx.item(self, PUSH);
                pushes::count_own_pop::<T>(tx.item_mut(push_id));
            }
            return Ok(v);
        }
        // The committed queue is empty: take this transaction's own first push.
        let push_id = tx.item(self, PUSH);
        if pushes::pending::<T>(tx.item_ref(push_id)).0.is_empty() {
            return Ok(None);
        }
        let item = tx.item_mut(push_id);
        let v = pushes::take_first(item);
        item.mark_write();
        Ok(v)
    }

    /// Removes and returns the front element, blocking (`retry`) while the
    /// queue is empty.
    pub fn pop<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<T> {
        match self.try_pop(tx)? {
            Some(v) => Ok(v),
            None => Err(tx.retry()),
        }
    }

    /// [`pop`](Self::pop) as an async transaction of its own: the task
    /// waits (without blocking its thread) while the queue is empty. See
    /// [`atomically_async`] for cancel safety.
    pub fn pop_async(&self) -> impl Future<Output = T> + Send + '_ {
        atomically_async(move |tx| self.pop(tx))
    }

    /// [`push`](Self::push) as an async transaction of its own: on a full
    /// bounded queue the task waits (without blocking its thread) until
    /// there is room.
    pub fn push_async(&self, value: T) -> impl Future<Output = ()> + Send + '_ {
        atomically_async(move |tx| self.push(tx, value.clone()))
    }

    /// The front element without removing it (reads as a pop does).
    pub fn peek<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<Option<T>> {
        if let (_, Some(element)) = self.front_element(tx)? {
            // SAFETY: as in `try_pop`.
            return Ok(Some(unsafe { &*element }.clone()));
        }
        let push_id = tx.item(self, PUSH);
        Ok(pushes::pending::<T>(tx.item_ref(push_id))
            .0
            .first()
            .cloned())
    }

    /// The number of elements, as this transaction sees them. Reads both
    /// versions: conflicts with every concurrent committed push and pop.
    pub fn len<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<usize> {
        let push_id = tx.item(self, PUSH);
        let pushed = tx.observe(push_id, &self.pushv, || self.pushed.load(Ordering::Acquire))?;
        let pop_id = tx.item(self, POP);
        let popped = tx.observe(pop_id, &self.popv, || self.popped.load(Ordering::Acquire))?;
        let own_pops = self.own_pops(tx);
        let pending = pushes::pending::<T>(tx.item_ref(push_id)).0.len() as u64;
        Ok(pushed.saturating_sub(popped).saturating_sub(own_pops) as usize + pending as usize)
    }

    /// True if the queue has no element for this transaction.
    pub fn is_empty<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<bool> {
        Ok(self.peek(tx)?.is_none())
    }

    fn install_pops(&self, n: u64, guard: &Guard) {
        let popped = self.popped.load(Ordering::Relaxed) + n;
        let mut head = self.head.load(Ordering::Relaxed);
        // SAFETY: we hold the pop lock at the version this transaction read,
        // so the `n` elements it popped still follow the head, and the
        // blocks they fill are linked (a push links the next block when it
        // fills one).
        while popped >= unsafe { &*head }.end() {
            let next = unsafe { &*head }.next.load(Ordering::Acquire);
            debug_assert!(!next.is_null(), "a filled block has a successor");
            let old = head;
            // SAFETY: every element of the old block is popped and it is
            // now unreachable from the head; readers pinned before this
            // point may still hold it, so free it through the epoch. `T:
            // Send` lets the collector drop its values elsewhere.
            unsafe {
                let slots = self.slots;
                guard.defer_unchecked(move || Block::free(old, slots));
            }
            head = next;
        }
        self.head.store(head, Ordering::Release);
        self.popped.fetch_add(n, Ordering::AcqRel);
    }

    fn install_pushes(&self, values: SmallVec<[T; 1]>) {
        let n = values.len() as u64;
        let mut i = self.pushed.load(Ordering::Relaxed);
        let mut tail = self.tail.load(Ordering::Relaxed);
        for v in values {
            // SAFETY: we hold the push lock: `tail` is the last block, it has
            // room for element `i` (a filled block gets a successor at
            // once), and that slot was never written.
            unsafe {
                Block::element(tail, i).write(v);
                i += 1;
                if i == (*tail).end() {
                    let next = Block::alloc(i, self.slots);
                    (*tail).next.store(next, Ordering::Release);
                    tail = next;
                }
            }
        }
        self.tail.store(tail, Ordering::Release);
        // Counts the elements only now, once written and linked: readers
        // take `pushed` as what they may read.
        self.pushed.fetch_add(n, Ordering::AcqRel);
    }
}

impl<T: Clone + Send + Sync + 'static> TObject for TQueue<T> {
    fn lock(&self, item: &mut Item, commit: &Commit<'_>) -> LockOutcome {
        if item.key() == POP {
            return commit.lock_version(&self.popv, item);
        }
        let outcome = commit.lock_version(&self.pushv, item);
        if outcome == LockOutcome::Acquired && self.capacity != u64::MAX {
            // Capacity check under the push lock: `pushed` is exact, and
            // `popped` only grows, so the room we compute can only be an
            // underestimate.
            let (values, own_pops) = pushes::pending::<T>(item);
            let n = values.len() as u64;
            let len = self
                .pushed
                .load(Ordering::Acquire)
                .saturating_sub(self.popped.load(Ordering::Acquire));
            if len.saturating_sub(own_pops) + n > self.capacity {
                self.pushv.unlock_unchanged(item.read_version());
                return LockOutcome::Stale;
            }
        }
        outcome
    }

    fn check(&self, item: &Item, _: &Commit<'_>) -> bool {
        let v = if item.key() == POP {
            &self.popv
        } else {
            &self.pushv
        };
        v.still_valid(item.read_version(), item.is_locked())
    }

    fn install(&self, item: &mut Item, commit: &Commit<'_>) {
        if item.key() == POP {
            let n = item.write_value::<u64>().copied().unwrap_or(0);
            self.install_pops(n, commit.guard());
            self.popv
                .unlock_to(TVersion::next_after(item.read_version(), commit.version()));
        } else {
            let values = pushes::take_all::<T>(item);
            let changed = !values.is_empty();
            self.install_pushes(values);
            if changed {
                self.pushv
                    .unlock_to(TVersion::next_after(item.read_version(), commit.version()));
            } else {
                self.pushv.unlock_unchanged(item.read_version());
            }
        }
    }

    fn unlock(&self, item: &mut Item) {
        if item.key() == POP {
            self.popv.unlock_unchanged(item.read_version());
        } else {
            self.pushv.unlock_unchanged(item.read_version());
        }
    }
}

impl<T> Drop for TQueue<T> {
    fn drop(&mut self) {
        let pushed = *self.pushed.get_mut();
        let mut block = *self.head.get_mut();
        while !block.is_null() {
            // SAFETY: `&mut self` is exclusive; every block from the head on
            // is owned by the queue (retired blocks are owned by the epoch),
            // and a block's slots hold values up to element `pushed`
            // (popped ones included: they are cloned out, never moved).
            unsafe {
                let next = *(*block).next.get_mut();
                let live = pushed.saturating_sub((*block).base);
                Block::free(block, live.min(self.slots as u64) as usize);
                block = next;
            }
        }
    }
}

impl<T: Clone + Send + Sync + fmt::Debug + 'static> fmt::Debug for TQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.load_vec()).finish()
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::sync::Mutex;

    use super::TQueue;
    use crate::test_hook;
    use crate::{Opacity, TxOptions};

    thread_local! {
        /// The hook point in `front_element` between its look under the pop
        /// version and its look under the push version.
        pub(super) static BETWEEN_LOOKS: test_hook::Slot = const { RefCell::new(None) };
    }

    /// A transaction counts one element (`len` reads both versions), then
    /// peeks; between the peek's two looks another thread pops the
    /// element. The second look walks from the moved head and finds nothing;
    /// unless the pop version is checked again, the attempt sees a queue of
    /// one element that is empty, and (read-only, opaque) commits that.
    #[test]
    fn a_pop_between_the_two_looks_of_a_peek_is_noticed() {
        for mode in [Opacity::Tl2, Opacity::Revalidate, Opacity::None] {
            let q: &'static TQueue<u32> = Box::leak(Box::new(TQueue::new()));
            let opts = TxOptions::new().opacity(mode);
            opts.run(|tx| q.push(tx, 1));
            let seen = Mutex::new(Vec::new());
            let mut first = true;
            let committed = opts.run(|tx| {
                let len = q.len(tx)?;
                if std::mem::take(&mut first) {
                    test_hook::install(&BETWEEN_LOOKS, move || {
                        std::thread::spawn(move || {
                            assert_eq!(
                                TxOptions::new().opacity(mode).run(|tx| q.try_pop(tx)),
                                Some(1)
                            );
                        })
                        .join()
                        .unwrap();
                    });
                }
                let front = q.peek(tx)?;
                seen.lock().unwrap().push((len, front));
                Ok((len, front))
            });
            let consistent = |&(len, front): &(usize, Option<u32>)| (len == 0) == front.is_none();
            assert!(consistent(&committed), "{mode:?}: committed {committed:?}");
            if mode != Opacity::None {
                for s in seen.lock().unwrap().iter() {
                    assert!(consistent(s), "{mode:?}: an attempt saw {s:?}");
                }
            }
        }
    }
}
