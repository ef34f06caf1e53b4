//! Per-thread stripes: spreading a word that every committing writer updates
//! over several cache lines.
//!
//! A collection-wide counter that each insert and remove changes (the size)
//! would make those writes bounce one cache line between the cores of
//! otherwise independent transactions. Instead
//! such a counter keeps one cache-padded stripe per slot; a thread always
//! updates the stripe of its own slot, and the rare reader of the whole
//! value reads every stripe.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use crossbeam_utils::CachePadded;

/// The most stripes a counter has, whatever the core count.
const MAX_STRIPES: usize = 16;

/// How many stripes a new counter gets: the number of cores this process may
/// use, rounded up to a power of two, at most [`MAX_STRIPES`].
fn stripe_count() -> usize {
    static COUNT: OnceLock<usize> = OnceLock::new();
    *COUNT.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .next_power_of_two()
            .min(MAX_STRIPES)
    })
}

/// This thread's slot: threads take consecutive slots in the order they
/// first update a striped counter, so concurrent threads use different
/// stripes until there are more threads than stripes.
#[inline]
fn thread_slot() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SLOT: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    SLOT.with(|s| {
        let slot = s.get();
        if slot != usize::MAX {
            return slot;
        }
        let slot = NEXT.fetch_add(1, Ordering::Relaxed);
        s.set(slot);
        slot
    })
}

/// A fixed set of cache-padded stripes of `T`, one per thread slot.
pub(crate) struct Stripes<T> {
    stripes: Box<[CachePadded<T>]>,
}

impl<T> Stripes<T> {
    /// Stripes made by `make`, as many as [`stripe_count`] says.
    pub fn new(make: impl FnMut() -> T) -> Self {
        Self::with_count(stripe_count(), make)
    }

    /// `count` stripes (a power of two) made by `make`.
    pub fn with_count(count: usize, mut make: impl FnMut() -> T) -> Self {
        assert!(
            count.is_power_of_two(),
            "stripe count must be a power of two"
        );
        Stripes {
            stripes: (0..count).map(|_| CachePadded::new(make())).collect(),
        }
    }

    /// The stripe the calling thread updates.
    #[inline]
    pub fn mine(&self) -> &T {
        // The length is a power of two, so the mask keeps the index in range.
        &self.stripes[thread_slot() & (self.stripes.len() - 1)]
    }

    /// Every stripe, in a fixed order (the order to lock them all in).
    #[inline]
    pub fn all(&self) -> impl ExactSizeIterator<Item = &T> + Clone {
        self.stripes.iter().map(|s| &**s)
    }

    /// The first stripe.
    pub fn first(&self) -> &T {
        &self.stripes[0]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn a_thread_keeps_its_stripe() {
        let s = Stripes::with_count(4, || AtomicU64::new(0));
        let mine = s.mine() as *const AtomicU64;
        assert_eq!(s.mine() as *const AtomicU64, mine, "stable per thread");
        assert!(s.all().any(|x| std::ptr::eq(x, mine)), "one of the stripes");
        assert_eq!(s.all().count(), 4);
        let other = std::thread::spawn(move || {
            let again = s.mine() as *const AtomicU64 as usize;
            assert_eq!(s.mine() as *const AtomicU64 as usize, again);
        });
        other.join().unwrap();
    }
}
