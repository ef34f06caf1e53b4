//! Where a `TQueue` keeps its committed elements: a linked list of blocks,
//! each a header and a run of slots in one allocation.
//!
//! Elements are numbered by the count of pushes before them: element `i`
//! lives in slot `i - base` of the block whose `base <= i < base + slots`.
//! A push writes the next slot and, when that fills its block, links a new
//! one, so the last block always has room; a pop moves the queue's head
//! block past a block once every slot in it is popped, and retires it
//! through the epoch. One allocation per block rather than one per
//! element: with small elements a block holds 32 of them (a bounded queue's
//! no more than its capacity, so that a `TMVar` keeps one slot).
//!
//! A popped element stays in its slot until its block is reclaimed (a
//! reader that found it before the pop committed may still be cloning it),
//! so the queue holds at most a block's worth of popped values longer than
//! a list of nodes would.

use std::alloc::{self, Layout};
use std::marker::PhantomData;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

/// A block's header; `slots` slots of `T` follow it in the same allocation
/// (see [`layout`]).
pub(super) struct Block<T> {
    /// The next block, linked by the push that fills this one.
    pub(super) next: AtomicPtr<Block<T>>,
    /// The number of the element in the first slot.
    pub(super) base: u64,
    /// How many slots follow the header.
    slots: usize,
    _values: PhantomData<T>,
}

/// The slots per block for elements of type `T`: about 256 bytes of
/// elements, at least one and at most 32.
pub(super) const fn slots_for<T>() -> usize {
    let size = std::mem::size_of::<T>();
    if size == 0 {
        return 32;
    }
    let n = 256 / size;
    if n < 1 {
        1
    } else if n > 32 {
        32
    } else {
        n
    }
}

/// The layout of a block of `slots` slots and the offset of its first slot
/// (the same for every count).
fn layout<T>(slots: usize) -> (Layout, usize) {
    let (layout, offset) = Layout::new::<Block<T>>()
        .extend(Layout::array::<T>(slots).expect("a block's slots fit in memory"))
        .expect("a block fits in memory");
    (layout.pad_to_align(), offset)
}

impl<T> Block<T> {
    /// A new, empty block of `slots` slots whose first holds element `base`.
    pub(super) fn alloc(base: u64, slots: usize) -> *mut Block<T> {
        debug_assert!(slots > 0);
        let (layout, _) = layout::<T>(slots);
        // SAFETY: the layout is not zero-sized (it holds the header).
        let block = unsafe { alloc::alloc(layout) }.cast::<Block<T>>();
        if block.is_null() {
            alloc::handle_alloc_error(layout);
        }
        // SAFETY: `block` is a fresh allocation laid out for a header first.
        unsafe {
            block.write(Block {
                next: AtomicPtr::new(ptr::null_mut()),
                base,
                slots,
                _values: PhantomData,
            })
        };
        block
    }

    /// The number of the first element past this block.
    #[inline]
    pub(super) fn end(&self) -> u64 {
        self.base + self.slots as u64
    }

    /// A pointer to the slot of element `i` in `block` (initialized or
    /// not).
    ///
    /// # Safety
    /// `block` came from [`alloc`](Self::alloc) and is not freed, and holds
    /// element `i` (`base <= i < end`).
    pub(super) unsafe fn element(block: *const Block<T>, i: u64) -> *mut T {
        // SAFETY: the header is allocated (the caller's promise).
        let index = (i - unsafe { &*block }.base) as usize;
        // SAFETY: as above.
        unsafe { Self::slot(block, index) }
    }

    /// A pointer to slot `index` of `block` (initialized or not).
    ///
    /// # Safety
    /// `block` came from [`alloc`](Self::alloc) and is not freed; `index`
    /// is less than its slot count.
    unsafe fn slot(block: *const Block<T>, index: usize) -> *mut T {
        // SAFETY: the header is allocated (the caller's promise).
        debug_assert!(index < unsafe { &*block }.slots);
        let (_, offset) = layout::<T>(1);
        // SAFETY: the caller's promises keep the address inside the block's
        // allocation, in its run of slots.
        unsafe {
            block
                .cast::<u8>()
                .add(offset)
                .cast::<T>()
                .cast_mut()
                .add(index)
        }
    }

    /// Drops the values in slots `..live` and frees the block.
    ///
    /// # Safety
    /// `block` came from [`alloc`](Self::alloc), nobody else can reach it
    /// any more, and exactly its first `live` slots hold values.
    pub(super) unsafe fn free(block: *mut Block<T>, live: usize) {
        // SAFETY: the header is allocated (the caller's promise).
        let slots = unsafe { &*block }.slots;
        debug_assert!(live <= slots);
        for i in 0..live {
            // SAFETY: slot `i` holds a value (the caller's promise), dropped
            // once, here.
            unsafe { ptr::drop_in_place(Self::slot(block, i)) };
        }
        let (layout, _) = layout::<T>(slots);
        // SAFETY: allocated by `alloc` with this layout; the header has no
        // drop glue beyond its fields, which own nothing.
        unsafe { alloc::dealloc(block.cast::<u8>(), layout) };
    }

    /// The block holding element `i`, reached from `block` through the
    /// links; null if `i` is before `block` (the caller read an outdated
    /// head) or past the linked blocks.
    ///
    /// # Safety
    /// `block` and every block linked from it stay allocated for the call
    /// (the caller is pinned, and `block` was reachable from the head when
    /// it pinned).
    pub(super) unsafe fn find(mut block: *const Block<T>, i: u64) -> *const Block<T> {
        // SAFETY: allocated for the call (the caller's promise).
        if i < unsafe { &*block }.base {
            return ptr::null();
        }
        // SAFETY: as above, for each block reached.
        while i >= unsafe { &*block }.end() {
            block = unsafe { &*block }.next.load(Ordering::Acquire);
            if block.is_null() {
                return ptr::null();
            }
        }
        block
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_hold_about_256_bytes_of_slots() {
        assert_eq!(slots_for::<u64>(), 32);
        assert_eq!(slots_for::<[u8; 24]>(), 10);
        assert_eq!(slots_for::<[u8; 1000]>(), 1);
        assert_eq!(slots_for::<()>(), 32);
        assert_eq!(slots_for::<u8>(), 32);
    }

    #[test]
    fn slots_hold_values_until_the_block_is_freed() {
        let tracker = std::sync::Arc::new(());
        let n = 4;
        let block = Block::<std::sync::Arc<()>>::alloc(64, n);
        for i in 0..3 {
            // SAFETY: a fresh block; each slot written once.
            unsafe { Block::element(block, 64 + i).write(tracker.clone()) };
        }
        assert_eq!(std::sync::Arc::strong_count(&tracker), 4);
        // SAFETY: allocated above.
        unsafe {
            assert_eq!(Block::find(block, 64 + 2), block.cast_const());
            assert!(Block::find(block, 63).is_null(), "before the block");
            assert!(Block::find(block, 64 + n as u64).is_null(), "past it");
            Block::free(block, 3);
        }
        assert_eq!(std::sync::Arc::strong_count(&tracker), 1);
    }

    /// Pushes and pops in transactions of several sizes, so that elements
    /// cross block boundaries in pushes, pops and reads (Miri runs this one:
    /// the queue's raw slots, retirement and drop).
    #[test]
    fn elements_cross_blocks_in_order_and_are_dropped_once() {
        use crate::{atomically, TQueue};
        use std::sync::Arc;
        let tracker = Arc::new(());
        let q = TQueue::new();
        let per_block = slots_for::<(u64, Arc<()>)>() as u64;
        let mut next_in = 0u64;
        let mut next_out = 0u64;
        for round in 0..6u64 {
            let n = per_block + round; // more than a block per push
            atomically(|tx| {
                for k in 0..n {
                    q.push(tx, (next_in + k, tracker.clone()))?;
                }
                Ok(())
            });
            next_in += n;
            let take = n - 2;
            let got = atomically(|tx| {
                let front = q.peek(tx)?.map(|(i, _)| i);
                let mut got = Vec::new();
                for _ in 0..take {
                    got.push(q.pop(tx)?.0);
                }
                Ok((front, got))
            });
            assert_eq!(got.0, Some(next_out));
            assert_eq!(got.1, (next_out..next_out + take).collect::<Vec<_>>());
            next_out += take;
            let left: Vec<u64> = q.load_vec().into_iter().map(|(i, _)| i).collect();
            assert_eq!(left, (next_out..next_in).collect::<Vec<_>>());
        }
        // Dropping the queue drops the values of its own blocks, popped or
        // not: every element from the head block's first on. (Retired
        // blocks wait for the epoch, which may free some meanwhile too.)
        let own = next_in - next_out / per_block * per_block;
        let before = Arc::strong_count(&tracker);
        drop(q);
        let after = Arc::strong_count(&tracker);
        assert!(
            before - after >= own as usize,
            "{before} -> {after}, own {own}"
        );
    }
}
