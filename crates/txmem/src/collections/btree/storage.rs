//! The B+ tree's storage: key entries, the fixed-capacity arrays of node
//! contents, the immutable (copy-on-write) leaf contents and inner nodes,
//! the stable leaf handles, and their allocation and epoch retirement.
//! Every other part of the map reads nodes through these types.

use std::cell::Cell;
use std::mem::MaybeUninit;
use std::ptr;
use std::sync::atomic::AtomicPtr;

use crossbeam_epoch::Guard;

use crate::types::cell::ValueCell;
use crate::version::TVersion;

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

/// Up to [`CAP`] values stored inline (so that a node's keys are one
/// allocation with the node): a fixed-capacity vector, filled once when
/// the immutable contents are built.
pub(super) struct Slots<T> {
    len: usize,
    items: [MaybeUninit<T>; CAP],
}

impl<T> Slots<T> {
    /// The values of `iter` (at most [`CAP`]).
    pub(super) fn new(iter: impl IntoIterator<Item = T>) -> Self {
        let mut s = Slots {
            len: 0,
            items: [const { MaybeUninit::uninit() }; CAP],
        };
        for v in iter {
            assert!(s.len < CAP, "txmem: TBTreeMap node overflow");
            s.items[s.len].write(v);
            s.len += 1;
        }
        s
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
            let mut p = ptr::addr_of_mut!((*dst).items) as *mut T;
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
            ptr::addr_of_mut!((*dst).len).write(n);
        }
    }

    #[inline]
    pub(super) fn as_slice(&self) -> &[T] {
        // SAFETY: the first `len` slots are initialized (`new` writes them
        // in order and counts them) and never change afterwards.
        unsafe { std::slice::from_raw_parts(self.items.as_ptr() as *const T, self.len) }
    }
}

impl<T> Drop for Slots<T> {
    fn drop(&mut self) {
        // SAFETY: the first `len` slots are initialized and dropped once,
        // here.
        unsafe {
            ptr::drop_in_place(ptr::slice_from_raw_parts_mut(
                self.items.as_mut_ptr() as *mut T,
                self.len,
            ))
        }
    }
}

/// The immutable contents of a leaf.
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
        let mut b = Box::<Self>::new_uninit();
        let p = b.as_mut_ptr();
        // SAFETY: `p` is a fresh allocation for a `LeafData`; every field is
        // written exactly once before `assume_init`.
        unsafe {
            Slots::init(ptr::addr_of_mut!((*p).keys), ka, km, kb);
            Slots::init(ptr::addr_of_mut!((*p).entries), ea, em, eb);
            ptr::addr_of_mut!((*p).high).write(high);
            ptr::addr_of_mut!((*p).next).write(next);
            Box::into_raw(b.assume_init())
        }
    }
}

impl<K, V> LeafData<K, V> {
    #[inline]
    pub(super) fn keys(&self) -> &[K] {
        self.keys.as_slice()
    }

    #[inline]
    pub(super) fn entries(&self) -> &[EPtr<K, V>] {
        self.entries.as_slice()
    }
}

/// A leaf handle: its version and its current contents. Its interval
/// starts at `low` (none: unbounded), which never changes.
pub(super) struct Leaf<K, V> {
    pub(super) version: TVersion,
    pub(super) data: AtomicPtr<LeafData<K, V>>,
    pub(super) low: Option<K>,
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
/// readers) until no pinned thread can hold them. Every insert retires a
/// leaf's contents, faster than the epoch collector's background pace (a
/// few bags per hundred pins), so every 64 retirements the thread hands its
/// bag over and collects (`Guard::flush`).
///
/// # Safety
///
/// `p` came from `Box::into_raw`, is no longer reachable from the map, and
/// is retired once. `T` may be dropped on another thread (`T: Send` in
/// effect: contents hold keys and entry pointers of a `Send` map).
pub(super) unsafe fn retire_box<T>(guard: &Guard, p: *mut T) {
    let addr = p as usize;
    // SAFETY: per the contract; pinned readers may still hold `p`.
    unsafe { guard.defer_unchecked(move || drop(Box::from_raw(addr as *mut T))) }
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
