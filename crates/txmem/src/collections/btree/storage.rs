//! The B+ tree's storage: key entries, the fixed-capacity arrays of node
//! contents, the immutable (copy-on-write) leaf contents and inner nodes,
//! the stable leaf handles, and their allocation and epoch retirement.
//! Every other part of the map reads nodes through these types.

use std::cell::{Cell, UnsafeCell};
use std::mem::MaybeUninit;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicUsize, Ordering};

use crossbeam_epoch::Guard;

use crate::types::cell::ValueCell;
use crate::version::TVersion;

use super::blocks;

/// The most keys a leaf holds and the most children an inner node has
/// (node contents are fixed-size arrays of this many slots).
pub const DEFAULT_FANOUT: usize = 32;
pub(super) const CAP: usize = DEFAULT_FANOUT;

/// A key's entry: what a sorted list's node holds, without links.
pub(in crate::collections) struct Entry<K, V> {
    pub(super) state: TVersion,
    pub(super) key: K,
    pub(super) value: ValueCell<V>,
}

pub(super) type EPtr<K, V> = *const Entry<K, V>;

impl<K, V> Entry<K, V> {
    /// A new boxed entry for `key → value`, marked inserting (a
    /// placeholder), not shared yet.
    pub(super) fn placeholder(key: K, value: V) -> *mut Self {
        let entry = Box::new(Entry {
            state: TVersion::new(),
            key,
            value: ValueCell::new(value),
        });
        entry
            .state
            .set_flags_locked(crate::collections::node::INSERTING);
        Box::into_raw(entry)
    }

    /// The key and value of a [`placeholder`](Self::placeholder) that was
    /// never shared, for another attempt.
    ///
    /// # Safety
    ///
    /// `e` came from `placeholder`, was never published, and is not used
    /// again.
    pub(super) unsafe fn take_back(e: EPtr<K, V>) -> (K, V) {
        // SAFETY: per the contract, the box is ours alone.
        let entry = unsafe { Box::from_raw(e as *mut Self) };
        (entry.key, entry.value.into_inner())
    }
}

/// Up to [`CAP`] values stored inline (so that a node's keys are one
/// allocation with the node): a fixed-capacity vector, filled when the
/// contents are built, and afterwards only ever extended at its end
/// ([`push`](Self::push): a leaf's append in place).
///
/// The first `len` slots are initialized and never change; readers load
/// `len` (acquire) and read only those, so a writer appending at `len` under
/// the leaf's lock touches memory no reader reads until the new length is
/// published (release).
pub(super) struct Slots<T> {
    len: AtomicUsize,
    items: UnsafeCell<[MaybeUninit<T>; CAP]>,
}

impl<T> Slots<T> {
    /// The values of `iter` (at most [`CAP`]).
    pub(super) fn new(iter: impl IntoIterator<Item = T>) -> Self {
        let mut items = [const { MaybeUninit::uninit() }; CAP];
        let mut len = 0;
        for v in iter {
            assert!(len < CAP, "txmem: TBTreeMap node overflow");
            items[len].write(v);
            len += 1;
        }
        Slots {
            len: AtomicUsize::new(len),
            items: UnsafeCell::new(items),
        }
    }

    /// Fills the uninitialized `dst` with clones of `a`, then `mid` (if
    /// any), then clones of `b`, in place (no copy of the whole array).
    ///
    /// # Safety
    ///
    /// `dst` is valid for writes and uninitialized (nothing is dropped). If
    /// a clone panics, the values written so far are leaked, not dropped.
    unsafe fn init(dst: *mut Self, a: &[T], mid: Option<T>, b: &[T])
    where
        T: Clone,
    {
        let n = a.len() + mid.is_some() as usize + b.len();
        assert!(n <= CAP, "txmem: TBTreeMap node overflow");
        // SAFETY: per the contract `dst` is writable; `items` has room for
        // `CAP >= n` values, written once each, and `len` is set last.
        unsafe {
            let mut p = UnsafeCell::raw_get(ptr::addr_of!((*dst).items)) as *mut T;
            for v in a {
                p.write(v.clone());
                p = p.add(1);
            }
            if let Some(m) = mid {
                p.write(m);
                p = p.add(1);
            }
            for v in b {
                p.write(v.clone());
                p = p.add(1);
            }
            ptr::addr_of_mut!((*dst).len).write(AtomicUsize::new(n));
        }
    }

    #[inline]
    pub(super) fn as_slice(&self) -> &[T] {
        let len = self.len.load(Ordering::Acquire);
        // SAFETY: the first `len` slots are initialized (`new`, `init` and
        // `push` write a slot before they count it, `push` with a release
        // store that the acquire load above pairs with) and never change
        // afterwards. The slice covers only those slots, never the one a
        // concurrent `push` writes.
        unsafe { std::slice::from_raw_parts(self.items.get() as *const T, len) }
    }

    /// Appends `v` after the last value.
    ///
    /// # Safety
    ///
    /// No other `push` on these slots runs concurrently (the caller holds
    /// the lock of the leaf that owns them), and there is room
    /// (`len < CAP`).
    pub(super) unsafe fn push(&self, v: T) {
        let len = self.len.load(Ordering::Relaxed);
        assert!(len < CAP, "txmem: TBTreeMap node overflow");
        // SAFETY: slot `len` is uninitialized and no reader reads it (they
        // read below the published length); the caller excludes other
        // writers. Published by the release store.
        unsafe { (self.items.get() as *mut T).add(len).write(v) };
        self.len.store(len + 1, Ordering::Release);
    }
}

impl<T> Drop for Slots<T> {
    fn drop(&mut self) {
        let len = *self.len.get_mut();
        // SAFETY: the first `len` slots are initialized and dropped once,
        // here.
        unsafe {
            ptr::drop_in_place(ptr::slice_from_raw_parts_mut(
                self.items.get_mut().as_mut_ptr() as *mut T,
                len,
            ))
        }
    }
}

/// The contents of a leaf: immutable but for appends at the end, in place,
/// under the leaf's lock ([`LeafData::append`]).
pub(super) struct LeafData<K, V> {
    /// Sorted, distinct keys (`keys[i]` is the key of `entries[i]`).
    pub(super) keys: Slots<K>,
    pub(super) entries: Slots<EPtr<K, V>>,
    /// The exclusive upper end of the leaf's interval (none: unbounded).
    pub(super) high: Option<K>,
    /// The leaf to the right (null at the right edge).
    pub(super) next: *const Leaf<K, V>,
}

/// A prefix, an optional middle value and a suffix (of a node's array).
type Spliced<'a, T> = (&'a [T], Option<T>, &'a [T]);

impl<K: Clone, V> LeafData<K, V> {
    /// New boxed contents, built in place: the keys `ka`, `km`, `kb` and the
    /// entries `ea`, `em`, `eb` (each a prefix, an optional middle value and
    /// a suffix), the high key and the right link.
    pub(super) fn boxed(
        (ka, km, kb): Spliced<'_, K>,
        (ea, em, eb): Spliced<'_, EPtr<K, V>>,
        high: Option<K>,
        next: *const Leaf<K, V>,
    ) -> *mut Self {
        let p = blocks::alloc::<Self>();
        // SAFETY: `p` is a fresh block for a `LeafData` (`Box`'s layout, so
        // it may be freed as a `Box`); every field is written exactly once.
        unsafe {
            Slots::init(ptr::addr_of_mut!((*p).keys), ka, km, kb);
            Slots::init(ptr::addr_of_mut!((*p).entries), ea, em, eb);
            ptr::addr_of_mut!((*p).high).write(high);
            ptr::addr_of_mut!((*p).next).write(next);
        }
        p
    }
}

impl<K, V> LeafData<K, V> {
    #[inline]
    pub(super) fn keys(&self) -> &[K] {
        self.keys.as_slice()
    }

    /// The entries, at least as many as [`keys`](Self::keys) returned
    /// before (an append publishes the entry first): index them by a
    /// position in keys read earlier.
    #[inline]
    pub(super) fn entries(&self) -> &[EPtr<K, V>] {
        self.entries.as_slice()
    }

    /// Appends `key` and its entry `e` after the last key, in place.
    ///
    /// # Safety
    ///
    /// The caller holds the lock of the leaf whose current contents these
    /// are, `key` sorts after every key here, and there is room.
    pub(super) unsafe fn append(&self, key: K, e: EPtr<K, V>) {
        // The entry first: a reader indexes entries by a position it found
        // in the keys, so the entries must never be fewer than the keys it
        // saw.
        // SAFETY: per the contract (the leaf's lock excludes other appends).
        unsafe {
            self.entries.push(e);
            self.keys.push(key);
        }
    }
}

/// A leaf handle: its version and its current contents. Its interval
/// starts at `low` (none: unbounded), which never changes.
pub(super) struct Leaf<K, V> {
    pub(super) version: TVersion,
    pub(super) data: AtomicPtr<LeafData<K, V>>,
    pub(super) low: Option<K>,
    /// Where the last placement into this leaf went (its index among the
    /// keys; [`NO_PLACE`]: none yet). A hint, written after placements and
    /// read by splits, under the leaf's lock or not: a stale value only
    /// moves a split point.
    pub(super) last_place: AtomicU32,
}

/// [`Leaf::last_place`] of a leaf nothing was placed into yet.
pub(super) const NO_PLACE: u32 = u32::MAX;

impl<K, V> Leaf<K, V> {
    /// A leaf handle over `data`, covering keys from `low`, at `version`.
    pub(super) fn new(version: TVersion, data: *mut LeafData<K, V>, low: Option<K>) -> Self {
        Leaf {
            version,
            data: AtomicPtr::new(data),
            low,
            last_place: AtomicU32::new(NO_PLACE),
        }
    }

    /// Notes that a placement went to index `i` of the keys.
    #[inline]
    pub(super) fn placed_at(&self, i: usize) {
        self.last_place.store(i as u32, Ordering::Relaxed);
    }

    /// True if the last placement went just before index `i`: keys arrive
    /// here in ascending order.
    #[inline]
    pub(super) fn follows_last_place(&self, i: usize) -> bool {
        let last = self.last_place.load(Ordering::Relaxed);
        last != NO_PLACE && last as usize + 1 == i
    }
}

/// An inner node: immutable once published (a change copies the path from
/// the changed node to the root and swaps the root pointer).
pub(super) struct InnerData<K> {
    /// 1: the children are leaves; otherwise inner nodes one level lower.
    pub(super) level: u32,
    /// Separators: child `i` covers keys in `[keys[i-1], keys[i])`.
    pub(super) keys: Slots<K>,
    /// `*const Leaf` (level 1) or `*const InnerData` (higher levels).
    pub(super) children: Slots<*const ()>,
}

thread_local! {
    /// Contents this thread retired since it last flushed its epoch bag.
    static RETIRED: Cell<u32> = const { Cell::new(0) };
}

/// Defers dropping the boxed contents `p` (replaced, unreachable for new
/// readers) until no pinned thread can hold them; the block then goes to
/// the collecting thread's [`blocks`] cache. Every insert retires a
/// leaf's contents, faster than the epoch collector's background pace (a
/// few bags per hundred pins), so every 64 retirements the thread hands its
/// bag over and collects (`Guard::flush`).
///
/// # Safety
///
/// `p` came from `Box::into_raw` or [`blocks::alloc`], is no longer
/// reachable from the map, and is retired once. `T` may be dropped on
/// another thread (`T: Send` in effect: contents hold keys and entry
/// pointers of a `Send` map).
pub(super) unsafe fn retire_box<T>(guard: &Guard, p: *mut T) {
    // SAFETY: per the contract; pinned readers may still hold `p`. A
    // `Box<T>`'s block has `T`'s layout, as `blocks::free` requires.
    unsafe { guard.defer_unchecked(move || blocks::free(p)) }
    let n = RETIRED.with(|r| {
        let n = r.get() + 1;
        r.set(n % 64);
        n
    });
    if n == 64 {
        guard.flush();
    }
}

/// A position found by a descent: a leaf, the version word at which its
/// contents `data` were read, and those contents.
pub(super) struct LeafPos<K, V> {
    pub(super) leaf: *const Leaf<K, V>,
    pub(super) word: u64,
    pub(super) data: *const LeafData<K, V>,
}

/// What a structural insert did: the leaf's version change, and the new
/// right leaf (with its initial version) if the leaf split.
pub(super) struct Linked<K, V> {
    pub(super) leaf: *const Leaf<K, V>,
    pub(super) old: u64,
    pub(super) new: u64,
    pub(super) split: Option<(*const Leaf<K, V>, u64)>,
}

/// Contents are reached only while pinned (inner nodes also under the
/// structure lock, which every change of them holds), or with `&mut` to the
/// map.
///
/// # Safety
///
/// `p` points at live contents for the caller's chosen lifetime.
#[inline]
pub(super) unsafe fn deref<'a, T>(p: *const T) -> &'a T {
    // SAFETY: per the contract.
    unsafe { &*p }
}

/// Frees the inner node `node` and the inner nodes below it (not the
/// leaves).
///
/// # Safety
///
/// The map is being dropped: `node` is part of its current tree, which no
/// one else can reach, and each inner node there has exactly one parent.
pub(super) unsafe fn free_inner<K>(node: *mut InnerData<K>) {
    // SAFETY: per the contract; the node came from `Box::into_raw`.
    let d = unsafe { Box::from_raw(node) };
    if d.level > 1 {
        for &c in d.children.as_slice() {
            // SAFETY: children of a node above level 1 are inner nodes of
            // the same tree.
            unsafe { free_inner(c as *mut InnerData<K>) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Slots shared between an appending and a reading thread, as a leaf
    /// shares its contents.
    struct Shared(Slots<Box<usize>>);

    // SAFETY: the test has one pushing thread (the leaf lock's role) and
    // readers that use only `as_slice`, the protocol `push` documents.
    unsafe impl Sync for Shared {}

    impl Shared {
        fn slots(&self) -> &Slots<Box<usize>> {
            &self.0
        }
    }

    /// A reader racing with appends sees a prefix of them, each value
    /// whole (boxed, so that a slot read before it is written is caught
    /// by Miri as well as by the comparison).
    #[test]
    fn a_reader_sees_a_prefix_of_concurrent_pushes() {
        let s = Shared(Slots::new((0..2).map(Box::new)));
        std::thread::scope(|scope| {
            scope.spawn(|| {
                for i in 2..CAP {
                    // SAFETY: the only pushing thread; `i < CAP` leaves room.
                    unsafe { s.slots().push(Box::new(i)) };
                }
            });
            scope.spawn(|| loop {
                let seen = s.slots().as_slice();
                for (i, v) in seen.iter().enumerate() {
                    assert_eq!(**v, i);
                }
                if seen.len() == CAP {
                    break;
                }
                std::thread::yield_now();
            });
        });
        assert_eq!(s.0.as_slice().len(), CAP);
    }
}
