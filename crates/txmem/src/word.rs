//! The atomic word an inline value lives in: a cell's (`types::cell`), a
//! saved previous value's (`types::history`), and the target of a buffered
//! word write (`tx::words`), which the runtime stores at commit.
//!
//! Under Miri, which cannot run `atomic-maybe-uninit`'s inline assembly,
//! and under loom, which must see every access to order it, the word is a
//! stand-in of the same interface (`miri_word`, `loom_word`).

#[cfg(not(any(miri, txmem_loom)))]
use atomic_maybe_uninit::AtomicMaybeUninit;

/// The atomic word that holds an encoded value.
#[cfg(not(any(miri, txmem_loom)))]
pub(crate) type AtomicWord = AtomicMaybeUninit<u64>;
#[cfg(all(txmem_loom, not(miri)))]
pub(crate) use loom_word::AtomicWord;
#[cfg(miri)]
pub(crate) use miri_word::AtomicWord;

/// Loom's stand-in: a loom `AtomicU64`, so that loom orders a value's
/// stores and loads with the version words around them, as the hardware
/// does. (With a plain atomic, loom may pair a value stored in real memory
/// with a version load it chose to answer stale, a pairing no machine
/// produces, and report a torn read that cannot happen.)
///
/// An encoded word goes in as a `u64`, so a loom model may only keep
/// values whose eight bytes are all initialized (`u64`, `i64`) in its
/// boxes and arrays. Nothing here gives a pointer to the word, so the
/// loom build has no `TBox::get_mut`, `TBox::into_inner` or
/// `TArray::get_mut`.
#[cfg(all(txmem_loom, not(miri)))]
mod loom_word {
    use std::mem::MaybeUninit;
    use std::sync::atomic::Ordering;

    pub(crate) struct AtomicWord(loom::sync::atomic::AtomicU64);

    impl AtomicWord {
        pub fn new(bits: MaybeUninit<u64>) -> Self {
            // SAFETY: loom models store only fully initialized words (see
            // the module's documentation).
            AtomicWord(loom::sync::atomic::AtomicU64::new(unsafe {
                bits.assume_init()
            }))
        }

        pub fn load(&self, order: Ordering) -> MaybeUninit<u64> {
            MaybeUninit::new(self.0.load(order))
        }

        pub fn store(&self, bits: MaybeUninit<u64>, order: Ordering) {
            // SAFETY: as in `new`.
            self.0.store(unsafe { bits.assume_init() }, order)
        }
    }
}

/// Miri's stand-in for `AtomicMaybeUninit<u64>`.
///
/// Miri's atomics carry only initialized bytes, and an encoded word may
/// hold uninitialized ones (a value smaller than the word, padding as in
/// `(u8, u32)`, the unused payload of `Option<u32>`'s `None`) as well as a
/// pointer whose provenance must survive (a heap value's box, an inline
/// reference). So each stored word goes, as it is, into an immutable
/// allocation of its own, and the atomic is the pointer to it: a copy of a
/// `MaybeUninit<u64>` keeps every byte, initialized or not, and every
/// pointer's provenance.
///
/// The bytes are read non-atomically after the pointer is loaded, so a
/// store publishes with at least `Release` and a load takes at least
/// `Acquire` (stronger than the caller's ordering only where it asked for
/// `Relaxed`: history's saves, published in production by the slot's
/// unlock, and loads made under the slot's lock). A replaced allocation may
/// still be read by a reader that loaded its pointer, and nothing tells when
/// the last one is done, so it is never freed (run Miri with
/// `-Zmiri-ignore-leaks`; crossbeam-epoch's pending garbage needs it too).
#[cfg(miri)]
mod miri_word {
    use std::mem::MaybeUninit;
    use std::sync::atomic::{AtomicPtr, Ordering};

    pub(crate) struct AtomicWord(AtomicPtr<MaybeUninit<u64>>);

    fn publish(order: Ordering) -> Ordering {
        match order {
            Ordering::Relaxed | Ordering::Release => Ordering::Release,
            other => other,
        }
    }

    fn observe(order: Ordering) -> Ordering {
        match order {
            Ordering::Relaxed | Ordering::Acquire => Ordering::Acquire,
            other => other,
        }
    }

    impl AtomicWord {
        #[inline]
        pub fn new(bits: MaybeUninit<u64>) -> Self {
            AtomicWord(AtomicPtr::new(Box::into_raw(Box::new(bits))))
        }

        #[inline]
        pub fn load(&self, order: Ordering) -> MaybeUninit<u64> {
            let p = self.0.load(observe(order));
            // SAFETY: `p` came from `Box::into_raw` in `new` or `store` and
            // is never freed while the word is shared (see the type's
            // documentation); its bytes were written before it was
            // published with `Release`, which this `Acquire` load saw.
            unsafe { p.read() }
        }

        #[inline]
        pub fn store(&self, bits: MaybeUninit<u64>, order: Ordering) {
            self.0.store(Box::into_raw(Box::new(bits)), publish(order));
        }

        /// The word's bytes, for access when the word is not shared.
        #[inline]
        pub fn as_ptr(&self) -> *mut MaybeUninit<u64> {
            self.0.load(Ordering::Acquire)
        }
    }

    impl Drop for AtomicWord {
        fn drop(&mut self) {
            // SAFETY: `&mut self` is exclusive, so no reader still holds the
            // current allocation (only replaced ones may outlive their
            // readers, and those are left alone); it came from
            // `Box::into_raw` and is freed once.
            drop(unsafe { Box::from_raw(*self.0.get_mut()) });
        }
    }
}
