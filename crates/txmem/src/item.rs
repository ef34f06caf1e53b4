//! Transaction items: one per (object, subobject key) a transaction touched.
//!
//! An item is what an object records about one of its subobjects (flags,
//! the version read, the pending write); it does not point back to its
//! object. The runtime pairs each item with its object in the tracking set
//! (`tx::state::Entry`), so that the dependency runs one way: the
//! [`TObject`](crate::TObject) trait takes items, and items know nothing of
//! objects.

use std::any::TypeId;
use std::cell::Cell;
use std::marker::PhantomData;
use std::mem::{self, MaybeUninit};
use std::ptr;

/// Item flag: the transaction read this subobject; `read_version` is valid.
pub const READ: u32 = 1 << 0;
/// Item flag: the transaction writes this subobject; the write value is set.
pub const WRITE: u32 = 1 << 1;
/// Item flag: the item's lock is held (set by the runtime after a successful
/// [`TObject::lock`](crate::TObject::lock)).
pub const LOCKED: u32 = 1 << 2;
/// Item flag: call [`TObject::cleanup`](crate::TObject::cleanup) for this item when the transaction ends.
pub const NEEDS_CLEANUP: u32 = 1 << 3;
/// First flag bit free for the object's own use (bits 8..32).
pub const USER_FLAG0: u32 = 1 << 8;
/// The flag bits the runtime reserves (the low byte).
const RUNTIME_FLAGS: u32 = USER_FLAG0 - 1;

/// The runtime's part of a flag word, as stored in [`Item::runtime`].
#[inline(always)]
const fn runtime_bits(flags: u32) -> u8 {
    (flags & RUNTIME_FLAGS) as u8
}

/// A type-erased value that lives inside an item: the pending write (or any
/// per-item state an object keeps). Values of up to 16 bytes are stored
/// inline; larger ones are boxed. The type is checked on every access.
///
/// Only `Send` values go in ([`set`](Self::set) requires it), so a value may
/// move to another thread with its item; the value is `!Sync`, since it
/// lends `&T` for any stored `T`, which need not be `Sync`.
// `repr(C)`, vtable first: see `Item`.
#[repr(C)]
pub struct ItemValue {
    vtable: Option<&'static ValueVTable>,
    buf: MaybeUninit<[usize; 2]>,
    _not_sync: PhantomData<Cell<()>>,
}

/// What an [`ItemValue`] needs to know about the type it stores.
struct ValueVTable {
    type_id: TypeId,
    drop: Option<unsafe fn(*mut MaybeUninit<[usize; 2]>)>,
    clone: fn(&ItemValue) -> ItemValue,
}

const fn fits_inline<T>() -> bool {
    mem::size_of::<T>() <= mem::size_of::<[usize; 2]>()
        && mem::align_of::<T>() <= mem::align_of::<[usize; 2]>()
}

/// The (promoted, `'static`) vtable of `T`.
#[inline]
fn vtable_of<T: Clone + Send + 'static>() -> &'static ValueVTable {
    const {
        &ValueVTable {
            type_id: TypeId::of::<T>(),
            drop: if !fits_inline::<T>() {
                Some(drop_boxed::<T> as unsafe fn(*mut MaybeUninit<[usize; 2]>))
            } else if mem::needs_drop::<T>() {
                Some(drop_inline::<T> as unsafe fn(*mut MaybeUninit<[usize; 2]>))
            } else {
                None
            },
            clone: clone_value::<T>,
        }
    }
}

impl ItemValue {
    const EMPTY: ItemValue = ItemValue {
        buf: MaybeUninit::uninit(),
        vtable: None,
        _not_sync: PhantomData,
    };

    /// True if a value is stored.
    #[inline]
    pub fn is_set(&self) -> bool {
        self.vtable.is_some()
    }

    /// True if the stored value has type `T`.
    #[inline]
    fn holds<T: Clone + 'static>(&self) -> bool {
        // By type id, not vtable address: the promoted vtable of a type is
        // duplicated across codegen units, so an address test mostly misses.
        self.vtable.is_some_and(|v| v.type_id == TypeId::of::<T>())
    }

    /// Stores `value`, dropping any previous value. (`Clone` is required so
    /// that [`Transaction::or_else`](crate::Transaction::or_else) can save and
    /// restore pending writes.)
    ///
    /// Values must be `Send`, and the holder is not `Sync`:
    ///
    /// ```compile_fail
    /// let mut v = txmem::item::ItemValue::default();
    /// v.set(std::rc::Rc::new(1)); // `Rc` is not `Send`
    /// ```
    ///
    /// ```compile_fail
    /// fn shared<T: Sync>() {}
    /// shared::<txmem::item::ItemValue>();
    /// ```
    #[inline]
    pub fn set<T: Clone + Send + 'static>(&mut self, value: T) {
        if let Some(slot) = self.get_mut::<T>() {
            // Same type: overwrite in place (the common "write twice" case).
            *slot = value;
            return;
        }
        self.clear();
        if fits_inline::<T>() {
            // SAFETY: `buf` is large and aligned enough for `T` (checked by
            // `fits_inline`) and holds no live value after `clear`.
            unsafe { ptr::write(self.buf.as_mut_ptr().cast::<T>(), value) };
        } else {
            let boxed = Box::into_raw(Box::new(value));
            // SAFETY: a raw pointer fits in the buffer's first word.
            unsafe { ptr::write(self.buf.as_mut_ptr().cast::<*mut T>(), boxed) };
        }
        self.vtable = Some(vtable_of::<T>());
    }

    /// A copy of the stored value (empty if none is stored).
    pub fn duplicate(&self) -> ItemValue {
        match self.vtable {
            Some(v) => (v.clone)(self),
            None => ItemValue::EMPTY,
        }
    }

    /// A pointer to the stored `T` for reading only: an inline value's
    /// pointer derives from a shared borrow of `buf`, so writing through it
    /// is undefined behaviour (use [`slot_mut`](Self::slot_mut) for that).
    #[inline]
    fn slot<T: Clone + 'static>(&self) -> Option<*const T> {
        if !self.holds::<T>() {
            return None;
        }
        let base = self.buf.as_ptr();
        Some(if fits_inline::<T>() {
            base.cast::<T>()
        } else {
            // SAFETY: for boxed values the first word holds the box pointer,
            // written by `set` for this very type.
            unsafe { *base.cast::<*const T>() }
        })
    }

    /// A pointer to the stored `T` that may be written through or moved out
    /// of: an inline value's pointer derives from a unique borrow of `buf`;
    /// a boxed value's is the box's own (`Box::into_raw` in `set`).
    #[inline]
    fn slot_mut<T: Clone + 'static>(&mut self) -> Option<*mut T> {
        if !self.holds::<T>() {
            return None;
        }
        let base = self.buf.as_mut_ptr();
        Some(if fits_inline::<T>() {
            base.cast::<T>()
        } else {
            // SAFETY: for boxed values the first word holds the box pointer,
            // written by `set` for this very type.
            unsafe { *base.cast::<*mut T>() }
        })
    }

    /// The stored value, if one of type `T` is stored.
    #[inline]
    pub fn get<T: Clone + 'static>(&self) -> Option<&T> {
        // SAFETY: `slot` returns a pointer to a live `T` owned by `self`,
        // valid for reads while `self` is borrowed.
        self.slot::<T>().map(|p| unsafe { &*p })
    }

    /// The stored value, mutably, if one of type `T` is stored.
    #[inline]
    pub fn get_mut<T: Clone + 'static>(&mut self) -> Option<&mut T> {
        // SAFETY: `slot_mut` returns a pointer to a live `T` owned by
        // `self`, derived from `&mut self`, which makes the access unique.
        self.slot_mut::<T>().map(|p| unsafe { &mut *p })
    }

    /// Moves the stored value out, leaving the slot empty.
    #[inline]
    pub fn take<T: Clone + 'static>(&mut self) -> Option<T> {
        let p = self.slot_mut::<T>()?;
        // SAFETY: `p` points to a live `T`; after reading it we give up the
        // slot's ownership (and free the box without dropping its content).
        let value = unsafe { ptr::read(p) };
        if !fits_inline::<T>() {
            // SAFETY: `p` came from `Box::into_raw` of a `Box<T>`; the value
            // was moved out above, so free the allocation only.
            unsafe { drop(Box::from_raw(p.cast::<MaybeUninit<T>>())) };
        }
        self.vtable = None;
        Some(value)
    }

    /// Moves the stored value out in a box: the box it is stored in, if
    /// it is too large to be stored inline (no new allocation), else a new
    /// one.
    #[inline]
    pub(crate) fn take_boxed<T: Clone + 'static>(&mut self) -> Option<Box<T>> {
        let p = self.slot_mut::<T>()?;
        let boxed = if fits_inline::<T>() {
            // SAFETY: `p` points to a live inline `T`, whose ownership moves
            // out here (the slot is marked empty below).
            Box::new(unsafe { ptr::read(p) })
        } else {
            // SAFETY: `p` came from `Box::into_raw` of a `Box<T>` in `set`;
            // the box's ownership moves out here.
            unsafe { Box::from_raw(p) }
        };
        self.vtable = None;
        Some(boxed)
    }

    /// Drops the stored value, if any.
    #[inline]
    pub fn clear(&mut self) {
        if let Some(v) = self.vtable.take() {
            if let Some(drop_fn) = v.drop {
                // SAFETY: `drop_fn` belongs to the stored type and the value
                // is still live.
                unsafe { drop_fn(&mut self.buf) };
            }
        }
    }
}

fn clone_value<T: Clone + Send + 'static>(v: &ItemValue) -> ItemValue {
    let mut out = ItemValue::EMPTY;
    if let Some(x) = v.get::<T>() {
        out.set(x.clone());
    }
    out
}

unsafe fn drop_inline<T>(buf: *mut MaybeUninit<[usize; 2]>) {
    // SAFETY: the caller guarantees `buf` holds a live inline `T`.
    unsafe { ptr::drop_in_place(buf.cast::<T>()) }
}

unsafe fn drop_boxed<T>(buf: *mut MaybeUninit<[usize; 2]>) {
    // SAFETY: the caller guarantees `buf`'s first word is a pointer obtained
    // from `Box::into_raw::<T>` that nobody else owns.
    unsafe { drop(Box::from_raw(*buf.cast::<*mut T>())) }
}

impl Drop for ItemValue {
    #[inline]
    fn drop(&mut self) {
        if let Some(drop_fn) = self.vtable.and_then(|v| v.drop) {
            // SAFETY: `drop_fn` belongs to the stored type and the value is
            // still live (taking or clearing resets the vtable).
            unsafe { drop_fn(&mut self.buf) };
        }
    }
}

impl Default for ItemValue {
    fn default() -> Self {
        Self::EMPTY
    }
}

impl std::fmt::Debug for ItemValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ItemValue")
            .field("set", &self.is_set())
            .finish()
    }
}

/// One entry of a transaction's tracking set: a subobject of a transactional
/// object, with what the transaction did to it.
///
/// Objects create items through [`Transaction::item`](crate::Transaction::item)
/// and interpret their fields in their [`TObject`](crate::TObject)
/// callbacks. The runtime guarantees at most one item per (object, key).
//
// `repr(C)` because the field order is a matter of speed. A new item is
// written with a few wide zeroing stores, and the words read right after
// (the value's vtable, "is a write pending?") must sit where those stores
// can forward them to the loads: at the start of an aligned 16-byte store.
// Loads that began inside such a store, as in the order Rust picked, waited
// for it to retire and cost an increment transaction a fifth of its time.
// The tracking-set entry puts the 16-byte object pointer in front of the
// item, so these offsets are the ones measured with the pointer in front.
#[repr(C)]
pub struct Item {
    key: u64,
    pub(crate) read_version: u64,
    /// The pending write value (or other per-item state of the object).
    pub value: ItemValue,
    /// The runtime's flag bits (`READ` .. `NEEDS_CLEANUP`, the low byte of
    /// the flag word), apart from the object's own (`user`). The hot paths
    /// set them with byte stores and read them back as a byte: a wider load
    /// of a byte just stored cannot be forwarded from the store buffer and
    /// stalls until the store retires.
    runtime: u8,
    /// The object-specific bits (`USER_FLAG0` and up; the low byte is zero).
    user: u32,
    /// `Send` but not `Sync`, as when the item held its object's pointer:
    /// its value may be of any type, and the item never leaves its
    /// transaction's thread.
    _not_sync: PhantomData<Cell<()>>,
}

// With its object pointer, an entry is a cache line's size.
const _: () = assert!(std::mem::size_of::<Item>() == 48);

impl Item {
    #[inline]
    pub(crate) fn new(key: u64) -> Self {
        Item {
            key,
            runtime: 0,
            user: 0,
            read_version: 0,
            value: ItemValue::EMPTY,
            _not_sync: PhantomData,
        }
    }

    /// The subobject key given when the item was created.
    #[inline]
    pub fn key(&self) -> u64 {
        self.key
    }

    /// All flag bits.
    #[inline]
    pub fn flags(&self) -> u32 {
        self.user | u32::from(self.runtime)
    }

    /// True if every bit of `flag` is set.
    #[inline]
    pub fn has(&self, flag: u32) -> bool {
        // Each part tested on its own: for a constant `flag` only the part
        // it names is loaded (see `runtime`).
        let (runtime, user) = (runtime_bits(flag), flag & !RUNTIME_FLAGS);
        self.runtime & runtime == runtime && self.user & user == user
    }

    /// Sets flag bits (use the `USER_FLAG*` range for object-specific flags;
    /// `READ`/`WRITE` are set through [`observe`](Self::observe) and
    /// [`set_write`](Self::set_write)).
    #[inline]
    pub fn set_flags(&mut self, flag: u32) {
        self.runtime |= runtime_bits(flag);
        self.user |= flag & !RUNTIME_FLAGS;
    }

    /// Clears flag bits.
    #[inline]
    pub fn clear_flags(&mut self, flag: u32) {
        self.runtime &= !runtime_bits(flag);
        self.user &= !(flag & !RUNTIME_FLAGS);
    }

    /// Replaces every flag bit (restoring a saved [`flags`](Self::flags)).
    #[inline]
    pub(crate) fn restore_flags(&mut self, flags: u32) {
        self.runtime = runtime_bits(flags);
        self.user = flags & !RUNTIME_FLAGS;
    }

    /// True if the transaction read this subobject.
    #[inline]
    pub fn is_read(&self) -> bool {
        self.runtime & READ as u8 != 0
    }

    /// True if the transaction writes this subobject.
    #[inline]
    pub fn is_write(&self) -> bool {
        self.runtime & WRITE as u8 != 0
    }

    /// True while the runtime holds this item's lock during commit.
    #[inline]
    pub fn is_locked(&self) -> bool {
        self.runtime & LOCKED as u8 != 0
    }

    /// The version recorded when the subobject was read.
    #[inline]
    pub fn read_version(&self) -> u64 {
        self.read_version
    }

    /// Records a read of the subobject at `version` (adds the item to the
    /// read set). A second call overwrites the version: objects must make
    /// sure repeated reads are consistent, as [`Transaction::observe`] does.
    ///
    /// [`Transaction::observe`]: crate::Transaction::observe
    #[inline]
    pub fn observe(&mut self, version: u64) {
        self.read_version = version;
        self.runtime |= READ as u8;
    }

    /// Stores a version word in the item without adding it to the read set
    /// (for example the word seen just before locking a write-only item).
    #[inline]
    pub fn remember_version(&mut self, version: u64) {
        self.read_version = version;
    }

    /// Drops the item from the read set.
    #[inline]
    pub fn forget_read(&mut self) {
        self.runtime &= !(READ as u8);
    }

    /// Adds the item to the write set with `value` as its pending write.
    #[inline]
    pub fn set_write<T: Clone + Send + 'static>(&mut self, value: T) {
        self.value.set(value);
        self.runtime |= WRITE as u8;
    }

    /// Marks the item as written without a value (objects that keep the
    /// pending change elsewhere, such as a counter delta in the flags).
    #[inline]
    pub fn mark_write(&mut self) {
        self.runtime |= WRITE as u8;
    }

    /// Removes the item from the write set and drops its pending value.
    #[inline]
    pub fn clear_write(&mut self) {
        self.value.clear();
        self.runtime &= !(WRITE as u8);
    }

    /// The pending write value, if it has type `T`.
    #[inline]
    pub fn write_value<T: Clone + 'static>(&self) -> Option<&T> {
        self.value.get::<T>()
    }

    #[inline]
    pub(crate) fn set_locked(&mut self, locked: bool) {
        if locked {
            self.runtime |= LOCKED as u8;
        } else {
            self.runtime &= !(LOCKED as u8);
        }
    }
}

impl std::fmt::Debug for Item {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Item")
            .field("key", &self.key)
            .field("flags", &format_args!("{:#b}", self.flags()))
            .field("read_version", &self.read_version)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn small_and_large_values_round_trip() {
        let mut v = ItemValue::default();
        v.set(7u64);
        assert_eq!(v.get::<u64>(), Some(&7));
        assert_eq!(v.get::<u32>(), None, "wrong type is refused");
        v.set([1u64; 8]);
        assert_eq!(v.get::<[u64; 8]>(), Some(&[1u64; 8]));
        *v.get_mut::<[u64; 8]>().unwrap() = [2; 8];
        assert_eq!(v.take::<[u64; 8]>(), Some([2; 8]));
        assert!(!v.is_set());
    }

    #[test]
    fn values_are_dropped_exactly_once() {
        let tracker = Arc::new(());
        let mut v = ItemValue::default();
        v.set(tracker.clone());
        assert_eq!(Arc::strong_count(&tracker), 2);
        v.set(tracker.clone()); // same type: overwrite drops the old one
        assert_eq!(Arc::strong_count(&tracker), 2);
        v.set(vec![tracker.clone(), tracker.clone()]); // boxed path? (24 bytes)
        assert_eq!(Arc::strong_count(&tracker), 3);
        let taken = v.take::<Vec<Arc<()>>>().unwrap();
        assert_eq!(Arc::strong_count(&tracker), 3);
        drop(taken);
        assert_eq!(Arc::strong_count(&tracker), 1);
        v.set(tracker.clone());
        let copy = v.duplicate();
        assert_eq!(Arc::strong_count(&tracker), 3);
        drop(copy);
        drop(v);
        assert_eq!(Arc::strong_count(&tracker), 1);
    }
}
