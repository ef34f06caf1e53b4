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

use std::marker::PhantomData;
use std::mem::{self, ManuallyDrop, MaybeUninit};
use std::ptr;
use std::sync::atomic::Ordering;

use atomic_maybe_uninit::AtomicMaybeUninit;
use crossbeam_epoch::Guard;

pub(crate) struct ValueCell<T> {
    word: AtomicMaybeUninit<u64>,
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

    fn encode(value: T) -> MaybeUninit<u64> {
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
            word: AtomicMaybeUninit::new(Self::encode(value)),
            _owns: PhantomData,
        }
    }

    /// Calls `f` with a reference to the current value. The caller validates
    /// the surrounding version, so the value may already be stale, but it is
    /// always a complete, live `T`.
    #[inline]
    pub fn with<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        let bits = self.word.load(Ordering::Acquire);
        if Self::INLINE {
            // SAFETY: the word holds the bytes of a `T` written by `encode`
            // (in one atomic store, so never torn). `T` has no drop glue, so
            // the bitwise copy owns nothing; ManuallyDrop keeps it undropped.
            let copy = ManuallyDrop::new(unsafe { ptr::read(bits.as_ptr().cast::<T>()) });
            f(&copy)
        } else {
            let _guard = crossbeam_epoch::pin();
            // SAFETY: the allocation is retired only through the epoch after
            // being unlinked, and we are pinned, so it is live; it is never
            // mutated after publication.
            f(unsafe { &*Self::heap_ptr(&bits) })
        }
    }

    /// Replaces the value. The caller holds the version lock (one writer at a time).
    #[inline]
    pub fn store<'g>(&self, value: T, guard: impl FnOnce() -> &'g Guard) {
        let new = Self::encode(value);
        // The caller holds the version lock, so no other writer races with
        // this load/store pair (no locked exchange needed).
        let old = self.word.load(Ordering::Relaxed);
        self.word.store(new, Ordering::Release);
        if !Self::INLINE {
            let old = Self::heap_ptr(&old) as usize;
            // SAFETY: the old allocation is unreachable for new readers;
            // those still pinned may read it until the epoch advances, after
            // which it is dropped exactly once. `T: Send` (required by every
            // public type holding a cell) lets another thread drop it.
            unsafe {
                guard().defer_unchecked(move || drop(Box::from_raw(old as *mut T)));
            }
        }
    }

    /// Mutable access when the cell is not shared.
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
