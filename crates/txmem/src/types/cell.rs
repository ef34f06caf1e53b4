//! Storage for one transactional value: inline when small, epoch-managed
//! when not.
//!
//! A value whose type has no drop glue and fits in 8 bytes is stored inline
//! in one atomic word, so a read is a single atomic load (no locks, no
//! tearing, no data race even for types with padding, thanks to
//! `atomic-maybe-uninit`). Any other value lives in a heap allocation behind
//! an atomic pointer; a writer swaps in a new allocation and retires the old
//! one through `crossbeam-epoch`, so readers can use it by reference while
//! pinned.
//!
//! The word itself, and its stand-in under Miri, are in `crate::word`.

use std::marker::PhantomData;
use std::mem::{self, ManuallyDrop, MaybeUninit};
use std::ptr;
use std::sync::atomic::Ordering;

use crossbeam_epoch::Guard;

use crate::item::ItemValue;
use crate::word::AtomicWord;

pub(crate) struct ValueCell<T> {
    word: AtomicWord,
    _owns: PhantomData<T>,
}

// SAFETY: the cell owns a `T` (inline or boxed); sharing it lets any thread
// read (clone/borrow) and, under the version lock, replace that `T`, which
// `T: Send + Sync` permits.
unsafe impl<T: Send + Sync> Sync for ValueCell<T> {}
// SAFETY: as above; moving the cell moves the owned `T`.
unsafe impl<T: Send> Send for ValueCell<T> {}

impl<T> ValueCell<T> {
    /// Whether values of `T` are stored inline.
    pub const INLINE: bool = !mem::needs_drop::<T>()
        && mem::size_of::<T>() <= 8
        && mem::align_of::<T>() <= mem::align_of::<u64>();

    /// The word that stores `value` (for an inline `T`, its bytes; else a
    /// new allocation's address, which the word then owns).
    pub fn encode(value: T) -> MaybeUninit<u64> {
        let mut bits = MaybeUninit::<u64>::uninit();
        if Self::INLINE {
            // SAFETY: `T` fits in (and is no more aligned than) a u64.
            unsafe { ptr::write(bits.as_mut_ptr().cast::<T>(), value) };
        } else {
            let p = Box::into_raw(Box::new(value));
            // SAFETY: a pointer fits in a u64 on supported (64-bit) targets.
            unsafe { ptr::write(bits.as_mut_ptr().cast::<*mut T>(), p) };
        }
        bits
    }

    #[inline]
    fn heap_ptr(bits: &MaybeUninit<u64>) -> *mut T {
        // SAFETY: in heap mode the word always holds a pointer written by `encode`.
        unsafe { ptr::read(bits.as_ptr().cast::<*mut T>()) }
    }

    pub fn new(value: T) -> Self {
        ValueCell {
            word: AtomicWord::new(Self::encode(value)),
            _owns: PhantomData,
        }
    }

    /// Calls `f` with a reference to the current value. The caller validates
    /// the surrounding version, so the value may already be stale, but it is
    /// always a complete, live `T`.
    ///
    /// Heap values are read under a pin taken *before* the pointer is
    /// loaded: a pin taken after the load would not protect the allocation
    /// it names, which a writer may retire and the epoch may free in
    /// between. Callers outside any transaction (`TBox::load`,
    /// `TBox::update`) rely on this pin alone.
    #[inline]
    pub fn with<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        if Self::INLINE {
            let bits = self.word.load(Ordering::Acquire);
            // SAFETY: the word holds the bytes of a `T` written by `encode`
            // (in one atomic store, so never torn). `T` has no drop glue, so
            // the bitwise copy owns nothing; ManuallyDrop keeps it undropped.
            let copy = ManuallyDrop::new(unsafe { ptr::read(bits.as_ptr().cast::<T>()) });
            f(&copy)
        } else {
            let _guard = crossbeam_epoch::pin();
            let bits = self.word.load(Ordering::Acquire);
            #[cfg(test)]
            crate::test_hook::run(&tests::AFTER_LOAD);
            // SAFETY: we pinned before loading the pointer, so the allocation
            // it names was reachable while we were pinned; a writer that
            // replaced it retires it through the epoch, which cannot free it
            // until we unpin. Published values are never mutated.
            f(unsafe { &*Self::heap_ptr(&bits) })
        }
    }

    /// The atomic word itself, for a write the runtime stores at commit
    /// (`tx::words`). Inline values only: a heap value's word owns an
    /// allocation, which a bare store would leak.
    #[inline]
    pub fn word(&self) -> &AtomicWord {
        debug_assert!(Self::INLINE);
        &self.word
    }

    /// The encoded word of an inline value, for a copy kept elsewhere
    /// (`history`). The caller holds the version lock.
    #[inline]
    pub fn raw_bits(&self) -> MaybeUninit<u64> {
        debug_assert!(Self::INLINE);
        self.word.load(Ordering::Relaxed)
    }

    /// The inline value that `bits` encode.
    ///
    /// # Safety
    ///
    /// `bits` must come from [`raw_bits`](Self::raw_bits) of a cell of the
    /// same `T` (values stored inline have no drop glue, so the copy owns
    /// nothing the cell still owns).
    #[inline]
    pub unsafe fn decode_inline(bits: MaybeUninit<u64>) -> T {
        debug_assert!(Self::INLINE);
        // SAFETY: by the caller's contract the word holds a `T`, written by
        // `encode`.
        unsafe { ptr::read(bits.as_ptr().cast::<T>()) }
    }

    /// Replaces the value. The caller holds the version lock (one writer at a time).
    #[inline]
    pub fn store<'g>(&self, value: T, guard: impl FnOnce() -> &'g Guard) {
        self.store_bits(Self::encode(value), guard);
    }

    /// [`store`](Self::store) of a heap value already boxed (`p` from
    /// `Box::into_raw`, owned by the caller until now).
    #[inline]
    fn store_raw<'g>(&self, p: *mut T, guard: impl FnOnce() -> &'g Guard) {
        debug_assert!(!Self::INLINE);
        let mut bits = MaybeUninit::<u64>::uninit();
        // SAFETY: a pointer fits in a u64 on supported (64-bit) targets.
        unsafe { ptr::write(bits.as_mut_ptr().cast::<*mut T>(), p) };
        self.store_bits(bits, guard);
    }

    /// Publishes an encoded word and retires the old value.
    #[inline]
    fn store_bits<'g>(&self, new: MaybeUninit<u64>, guard: impl FnOnce() -> &'g Guard) {
        // The caller holds the version lock, so no other writer races with
        // this load/store pair (no locked exchange needed).
        let old = self.word.load(Ordering::Relaxed);
        self.word.store(new, Ordering::Release);
        if !Self::INLINE {
            let old = Self::heap_ptr(&old);
            // SAFETY: the old allocation is unreachable for new readers;
            // those still pinned may read it until the epoch advances, after
            // which it is dropped exactly once. `T: Send` (required by every
            // public type holding a cell) lets another thread drop it.
            unsafe {
                guard().defer_unchecked(move || drop(Box::from_raw(old)));
            }
        }
    }

    /// Replaces the value with the pending write of type `T` that `pending`
    /// holds, if any; returns whether there was one. A heap value moves in
    /// with its allocation where the pending write was boxed (a value too
    /// large for the item's inline buffer), instead of being copied into a
    /// new one. The caller holds the version lock.
    #[inline]
    pub fn store_pending<'g>(
        &self,
        pending: &mut ItemValue,
        guard: impl FnOnce() -> &'g Guard,
    ) -> bool
    where
        T: Clone + 'static,
    {
        if Self::INLINE {
            return match pending.take::<T>() {
                Some(v) => {
                    self.store(v, guard);
                    true
                }
                None => false,
            };
        }
        match pending.take_boxed::<T>() {
            Some(b) => {
                self.store_raw(Box::into_raw(b), guard);
                true
            }
            None => false,
        }
    }

    /// Mutable access when the cell is not shared.
    #[cfg(not(txmem_loom))]
    pub fn get_mut(&mut self) -> &mut T {
        let p = self.word.as_ptr();
        if Self::INLINE {
            // SAFETY: `&mut self` is exclusive and the word holds a `T`.
            unsafe { &mut *p.cast::<T>() }
        } else {
            // SAFETY: as above; the word holds a live owned allocation.
            unsafe { &mut *Self::heap_ptr(&*p) }
        }
    }

    #[cfg(not(txmem_loom))]
    pub fn into_inner(self) -> T {
        let this = ManuallyDrop::new(self);
        // SAFETY: `this` is never used or dropped again.
        let bits = unsafe { ptr::read(this.word.as_ptr()) };
        if Self::INLINE {
            // SAFETY: the word holds a `T`; ownership moves to the caller.
            unsafe { ptr::read(bits.as_ptr().cast::<T>()) }
        } else {
            // SAFETY: the allocation came from `Box::into_raw` and is owned by the cell.
            *unsafe { Box::from_raw(Self::heap_ptr(&bits)) }
        }
    }
}

impl<T> Drop for ValueCell<T> {
    fn drop(&mut self) {
        if !Self::INLINE {
            let bits = self.word.load(Ordering::Relaxed);
            // SAFETY: `&mut self` is exclusive, so no reader can still use the
            // current allocation; retired older ones are owned by the epoch.
            unsafe { drop(Box::from_raw(Self::heap_ptr(&bits))) }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::collections::HashSet;
    use std::sync::Mutex;

    use super::ValueCell;
    use crate::item::ItemValue;
    use crate::test_hook;

    /// A pending write too large for the item's inline buffer moves into
    /// the cell with its allocation; a smaller heap value is boxed once;
    /// an inline one is copied.
    #[test]
    fn a_boxed_pending_write_moves_in_with_its_allocation() {
        let guard = crossbeam_epoch::pin();
        let big = ValueCell::new([0u64; 8]);
        let mut pending = ItemValue::default();
        pending.set([7u64; 8]);
        let before = pending.get::<[u64; 8]>().unwrap() as *const [u64; 8];
        assert!(big.store_pending(&mut pending, || &guard));
        assert!(!pending.is_set(), "the pending write was moved out");
        assert_eq!(
            big.with(|v| v as *const [u64; 8]),
            before,
            "same allocation"
        );
        assert_eq!(big.with(|v| v[3]), 7);
        assert!(
            !big.store_pending(&mut pending, || &guard),
            "nothing pending"
        );

        let mid = ValueCell::new((0u64, 0u64));
        pending.set((1u64, 2u64));
        assert!(mid.store_pending(&mut pending, || &guard));
        assert_eq!(mid.with(|v| *v), (1, 2));

        let small = ValueCell::new(0u32);
        pending.set(9u32);
        assert!(small.store_pending(&mut pending, || &guard));
        assert_eq!(small.with(|v| *v), 9);
    }

    thread_local! {
        /// The hook point in `with` between loading a heap pointer and
        /// dereferencing it.
        pub(super) static AFTER_LOAD: test_hook::Slot = const { RefCell::new(None) };
    }

    /// Addresses of `Tracked` values dropped so far.
    static DROPPED: Mutex<Option<HashSet<usize>>> = Mutex::new(None);

    fn was_dropped(addr: usize) -> bool {
        DROPPED
            .lock()
            .unwrap()
            .as_ref()
            .is_some_and(|s| s.contains(&addr))
    }

    struct Tracked(#[allow(dead_code)] u64);

    impl Drop for Tracked {
        fn drop(&mut self) {
            let addr = self as *const Tracked as usize;
            DROPPED
                .lock()
                .unwrap()
                .get_or_insert_with(HashSet::new)
                .insert(addr);
        }
    }

    /// A reader outside any transaction loads the pointer; before it uses
    /// it, a writer replaces the value and drives the epoch as far as it
    /// will go. The reader must still hold a live allocation. With the pin
    /// taken after the load (the old order), the epoch advances past the
    /// retirement and the allocation is freed under the reader.
    #[test]
    fn a_loaded_heap_pointer_outlives_a_concurrent_replacement() {
        let cell: &'static ValueCell<Tracked> = Box::leak(Box::new(ValueCell::new(Tracked(1))));
        let old = cell.with(|v| v as *const Tracked as usize);
        test_hook::install(&AFTER_LOAD, move || {
            let guard = crossbeam_epoch::pin();
            cell.store(Tracked(2), || &guard);
            drop(guard);
            // Push the retirement out and advance the epoch; give up
            // after a bound (it never frees while the reader is pinned).
            // (Fewer rounds under Miri, which checks any use after free
            // itself.)
            for _ in 0..if cfg!(miri) { 50 } else { 2_000 } {
                crossbeam_epoch::pin().flush();
                if was_dropped(old) {
                    break;
                }
                std::thread::yield_now();
            }
        });
        // Checked inside the read, while the reader is pinned: once it
        // unpins, any thread may free the old value.
        let (seen, freed) = cell.with(|v| {
            let addr = v as *const Tracked as usize;
            (addr, was_dropped(addr))
        });
        assert_eq!(
            seen, old,
            "the reader loaded the value before the writer ran"
        );
        assert!(
            !freed,
            "the value a reader was using was freed under it (pin taken after the load)"
        );
    }
}
