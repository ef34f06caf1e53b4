//! A per-thread cache of freed node blocks.
//!
//! Every insert or removal that copies a leaf allocates new contents (about
//! 560 bytes for `u64` keys) and retires the old ones through the epoch,
//! which frees them in bursts of dozens when a bag is collected. The
//! system allocator handles such bursts of mid-sized blocks poorly: its
//! per-thread cache holds a handful per size, the rest go through its
//! bins and their consolidation, and under callgrind that was 40% of a
//! single-operation insert. Here a thread keeps the blocks it frees, per
//! layout, and hands them out again: a copy then costs a pop and a push.
//!
//! The cache sits over the global allocator and never changes a layout: a
//! block from [`alloc`] is what `Box::new` would allocate for the same
//! type, and one that [`free`] would keep may as well be freed by `Box`'s
//! drop. So any path may free a node as a `Box`; the cache only saves the
//! allocator's work on the paths that use it.

use std::alloc::Layout;
use std::cell::RefCell;
use std::ptr::NonNull;

/// Blocks kept per layout; more are returned to the allocator. Two epoch
/// bags' worth (contents are retired 64 at a time).
const KEEP: usize = 128;

/// Distinct layouts a thread caches (maps of a few key types); blocks of
/// others go straight to the allocator.
const CLASSES: usize = 4;

/// One thread's free blocks, by layout.
struct Cache {
    classes: Vec<(Layout, Vec<NonNull<u8>>)>,
}

impl Drop for Cache {
    fn drop(&mut self) {
        for (layout, blocks) in &self.classes {
            for &b in blocks {
                // SAFETY: each cached block came from the global allocator
                // with `layout` and is owned by the cache alone.
                unsafe { std::alloc::dealloc(b.as_ptr(), *layout) };
            }
        }
    }
}

thread_local! {
    static CACHE: RefCell<Cache> = const { RefCell::new(Cache { classes: Vec::new() }) };
}

/// An uninitialized block for a `T` (a sized, non-zero-sized type), from
/// this thread's cache or the global allocator; aborts on allocation
/// failure, as `Box::new` does.
pub(super) fn alloc<T>() -> *mut T {
    let layout = Layout::new::<T>();
    debug_assert!(layout.size() > 0);
    let cached = CACHE
        .try_with(|c| {
            let mut c = c.try_borrow_mut().ok()?;
            c.classes
                .iter_mut()
                .find(|(l, _)| *l == layout)
                .and_then(|(_, blocks)| blocks.pop())
        })
        .ok()
        .flatten();
    match cached {
        Some(b) => b.as_ptr().cast(),
        None => {
            // SAFETY: `layout` has a non-zero size (nodes are never
            // zero-sized).
            let p = unsafe { std::alloc::alloc(layout) };
            if p.is_null() {
                std::alloc::handle_alloc_error(layout);
            }
            p.cast()
        }
    }
}

/// Drops the `T` at `p` and keeps its block in this thread's cache (or
/// frees it when the cache is full, gone at thread exit, or busy).
///
/// # Safety
///
/// `p` holds an initialized `T`, was allocated by the global allocator
/// with `Layout::new::<T>()` (by [`alloc`] or as a `Box<T>`), and is not
/// used again.
pub(super) unsafe fn free<T>(p: *mut T) {
    let layout = Layout::new::<T>();
    // SAFETY: per the contract, `p` holds a `T` dropped once, here.
    unsafe { std::ptr::drop_in_place(p) };
    let b = NonNull::new(p.cast::<u8>()).expect("a freed block is not null");
    // (A `T`'s drop may free nodes itself; the cache is not borrowed then.)
    let kept = CACHE
        .try_with(|c| {
            let Ok(mut c) = c.try_borrow_mut() else {
                return false;
            };
            let i = match c.classes.iter().position(|(l, _)| *l == layout) {
                Some(i) => i,
                None if c.classes.len() < CLASSES => {
                    c.classes.push((layout, Vec::with_capacity(KEEP)));
                    c.classes.len() - 1
                }
                None => return false,
            };
            let blocks = &mut c.classes[i].1;
            if blocks.len() < KEEP {
                blocks.push(b);
                true
            } else {
                false
            }
        })
        .unwrap_or(false);
    if !kept {
        // SAFETY: per the contract, allocated with `layout`; the value is
        // dropped and the block unused.
        unsafe { std::alloc::dealloc(b.as_ptr(), layout) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks come back for the same layout, values are dropped once, and
    /// a full cache frees the rest (Miri checks the frees and leaks).
    #[test]
    fn blocks_are_reused_and_values_dropped() {
        let value = std::rc::Rc::new(());
        let mut seen = Vec::new();
        for _ in 0..3 {
            let p = alloc::<[std::rc::Rc<()>; 4]>();
            // SAFETY: a fresh block for this type.
            unsafe { p.write(std::array::from_fn(|_| value.clone())) };
            assert_eq!(std::rc::Rc::strong_count(&value), 5);
            seen.push(p as usize);
            // SAFETY: initialized just above, from `alloc`.
            unsafe { free(p) };
            assert_eq!(std::rc::Rc::strong_count(&value), 1);
        }
        assert!(
            seen.windows(2).all(|w| w[0] == w[1]),
            "the block was reused"
        );
        let many: Vec<*mut u64> = (0..KEEP + 10).map(|_| alloc::<u64>()).collect();
        for p in many {
            // SAFETY: fresh blocks for `u64`, initialized here.
            unsafe {
                p.write(7);
                free(p);
            }
        }
        // A `Box`'s block may be freed through the cache, and vice versa.
        let b = Box::into_raw(Box::new(5u64));
        // SAFETY: a `Box<u64>`'s block has `Layout::new::<u64>()`.
        unsafe { free(b) };
        let p = alloc::<u64>();
        // SAFETY: a fresh block for `u64`; `Box` frees it with its layout.
        drop(unsafe {
            p.write(9);
            Box::from_raw(p)
        });
    }
}
