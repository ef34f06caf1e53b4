//! `TxState`, what one thread keeps for its transactions, and the tracking
//! set: one entry per (object, key) the running attempt touched.
//!
//! Why one reused state per thread: a steady-state transaction then
//! allocates nothing (the vectors keep their capacity), and reaching it is a
//! thread-local access. The state is plain data with the tracking set's
//! lookup; each protocol step adds its methods in its own file (`read`,
//! `irrevocable`, `attempt`, `commit`, ...).
//!
//! Why a scan before an index: see `index`.

use std::cell::OnceCell;
use std::mem::MaybeUninit;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use crossbeam_epoch::Guard;

use super::commit::lock::Commit;
use super::index::{self, ItemIndex};
use crate::item::{Item, ItemValue};
use crate::object::TObject;
use crate::options::Opacity;
use crate::version::TVersion;
use crate::word::AtomicWord;

/// A handler registered with `on_commit` or `on_abort`, its borrows erased
/// (see `handlers`).
pub(super) type Handler = Box<dyn FnOnce()>;

/// One entry of the tracking set: an item and the object it belongs to.
///
/// The object pointer is the runtime's (it calls the object's commit steps
/// through it); the item is the object's. The entry derefs to its item, so
/// the protocol reads an entry's flags as the item's.
//
// The object pointer comes first: the item's fields then sit at the offsets
// their placement was measured at, relative to the wide stores that write
// a new entry and to cache lines (see `Item`).
// With the item first, a pointer to the entry would be a pointer to the
// item and the commit loops would save an address add per call, but at the
// buffer alignment glibc gives (32 mod 64) one of those stores would
// straddle two lines.
#[repr(C)]
pub(super) struct Entry {
    pub(super) object: NonNull<dyn TObject>,
    item: Item,
}

// A cache line's size per entry.
const _: () = assert!(std::mem::size_of::<Entry>() == 64);

impl Entry {
    #[inline]
    fn new(object: NonNull<dyn TObject>, key: u64) -> Self {
        Entry {
            object,
            item: Item::new(key),
        }
    }

    /// The address identifying the entry's object.
    #[inline]
    pub(super) fn object_addr(&self) -> usize {
        self.object.as_ptr() as *const () as usize
    }
}

impl Deref for Entry {
    type Target = Item;
    #[inline(always)]
    fn deref(&self) -> &Item {
        &self.item
    }
}

impl DerefMut for Entry {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Item {
        &mut self.item
    }
}

/// A read recorded without an item (see `read::TxState::observe_logged`):
/// the version word it saw, and the subobject, for the lock-ownership test
/// at commit and for blocking waits.
pub(super) struct LoggedRead {
    pub(super) version: NonNull<TVersion>,
    pub(super) word: u64,
    pub(super) object: usize,
    pub(super) key: u64,
}

/// A write of a value stored inline in one atomic word, buffered without
/// an item (see `words`): what to lock, what to store where, and the
/// subobject's name for lookups and wake-ups.
pub(super) struct WordWrite {
    pub(super) version: NonNull<TVersion>,
    pub(super) word: NonNull<AtomicWord>,
    /// The encoded value (no drop glue: inline values own nothing).
    pub(super) bits: MaybeUninit<u64>,
    pub(super) object: usize,
    pub(super) key: u64,
    /// The version word at which the attempt read the subobject before
    /// its first write, if that read was taken over from the read log
    /// (see `words::write_word`); `NOT_READ` otherwise.
    pub(super) read: u64,
    /// The version word the commit locked it at (meaningful while locked).
    pub(super) locked_at: u64,
}

impl WordWrite {
    /// The `read` of a word write that holds no read (a locked word, which
    /// no read records).
    pub(super) const NOT_READ: u64 = u64::MAX;
}

/// An open `or_else` branch: the tracking set's length and handler counts
/// when it began, and the items it changed that predate it (see
/// `savepoint`); likewise for the word log.
pub(super) struct Savepoint {
    pub(super) len: usize,
    pub(super) words: usize,
    /// Word writes before the branch that it overwrote: (position, value).
    pub(super) word_log: Vec<(usize, MaybeUninit<u64>)>,
    pub(super) commit_handlers: usize,
    pub(super) abort_handlers: usize,
    pub(super) log: Vec<Saved>,
}

/// An item as it was before a branch first changed it.
pub(super) struct Saved {
    pub(super) pos: usize,
    pub(super) flags: u32,
    pub(super) read_version: u64,
    pub(super) value: ItemValue,
}

/// The read-tracking knobs of an attempt's options (`Mode::tracking` in
/// `context`), as bits, so that a mode still fits one word.
pub(super) struct Tracking;

impl Tracking {
    /// Every read goes to the tracking set (no read log).
    pub(super) const NO_UNTRACKED_READS: u8 = 1;
    /// Reads never look for the transaction's own writes.
    pub(super) const NO_READ_MY_WRITES: u8 = 2;
}

/// The state of one thread's transaction, reused across transactions so that
/// a steady-state transaction allocates nothing.
pub(crate) struct TxState {
    pub(super) items: Vec<Entry>,
    /// Reads of subobjects the attempt has not written, logged without an
    /// item (STO's read-only items): a word-STM-sized entry each, no lookup.
    pub(super) reads: Vec<LoggedRead>,
    /// Writes of inline word values, buffered without items (see `words`).
    pub(super) words: Vec<WordWrite>,
    /// During commit, how many of `words` (a prefix) are locked.
    pub(super) words_locked: usize,
    /// The word log's index past the cutoff, as `index` for items.
    pub(super) word_index: ItemIndex,
    pub(super) words_indexed: bool,
    /// A one-word filter of the subobjects the attempt holds items or word
    /// writes for, one bit set per entry as it is created (see
    /// `filter_bit`): a subobject whose bit is clear has neither, so
    /// creating its entry needs no search, and a read of it cannot meet the
    /// attempt's own write (see `may_have_written`).
    pub(super) item_filter: u64,
    /// Untracked reads are off: every read takes the tracking set.
    pub(super) tracked_only: bool,
    /// Read-my-writes is off: reads never look for the attempt's writes.
    pub(super) no_read_my_writes: bool,
    /// The `Tracking` bits the two flags above were set for.
    pub(super) tracking: u8,
    pub(super) index: ItemIndex,
    pub(super) indexed: bool,
    /// True once `item_mut` handed out an item or a word was written: until
    /// then the transaction holds no write and no item needs cleanup (the
    /// read-only fast path).
    pub(super) mutated: bool,
    /// The structure word this attempt last published by a change of its
    /// own (an insert's placeholder), as (object address, item key, word):
    /// a later check of that structure at exactly that word needs no
    /// opacity check (see `read::TxState::check_unrecorded`). Cleared when
    /// a mutated attempt ends.
    pub(super) own_word: Option<(usize, u64, u64)>,
    /// True once the attempt used anything rare that `finish` must undo: the
    /// item index, a savepoint, a handler, irrevocability. One flag, so that
    /// an ordinary attempt ends with one test.
    pub(super) rare: bool,
    /// Snapshot bound for TL2 opacity, kept from one attempt to the next
    /// (see [`begin`](Self::begin)).
    pub(super) start: u64,
    /// The kept bound proved stale (an attempt had to extend its snapshot,
    /// or aborted): the next attempt takes its bound from the clock.
    pub(super) stale_start: bool,
    /// The attempt is a snapshot attempt of a read-only transaction (see
    /// [`TxOptions::read_only`](crate::TxOptions::read_only)): its reads
    /// are checked against `start` and not logged, so a read that would
    /// extend the snapshot, a write, a `retry` or an upgrade to
    /// irrevocability aborts it instead.
    pub(super) snapshot: bool,
    /// In a snapshot attempt, the version past which a write surely began
    /// after the attempt did, so that the value before it may be read (see
    /// `types::history`): `start` if the attempt advanced the clock to
    /// take it, else one step more.
    pub(super) history_bound: u64,
    /// The snapshot attempt ended because it met a version past its
    /// snapshot (not because it wrote or waited): another snapshot attempt,
    /// from a fresh clock, may succeed.
    pub(super) snapshot_stale: bool,
    pub(super) opacity: Opacity,
    /// Held while the attempt runs irrevocably (see `irrevocable`).
    pub(super) irrevocable: Option<crate::sync::Token>,
    /// Set by `become_irrevocable` when the attempt must restart irrevocably.
    pub(super) wants_irrevocable: bool,
    /// True once the program itself asked for irrevocability in this
    /// attempt (as opposed to the runtime serializing a starving transaction).
    pub(super) user_irrevocable: bool,
    pub(super) guard: OnceCell<Guard>,
    pub(super) on_commit: Vec<Handler>,
    pub(super) on_abort: Vec<Handler>,
    /// The handlers `finish` kept for the attempt's outcome, to run once the
    /// transaction is left.
    pub(super) ready: Vec<Handler>,
    pub(super) savepoints: Vec<Savepoint>,
}

impl TxState {
    pub(crate) const fn new() -> Self {
        TxState {
            items: Vec::new(),
            reads: Vec::new(),
            words: Vec::new(),
            words_locked: 0,
            word_index: ItemIndex::new(),
            words_indexed: false,
            item_filter: 0,
            tracked_only: false,
            no_read_my_writes: false,
            tracking: 0,
            index: ItemIndex::new(),
            indexed: false,
            mutated: false,
            own_word: None,
            rare: false,
            start: 0,
            stale_start: true,
            snapshot: false,
            history_bound: 0,
            snapshot_stale: false,
            opacity: Opacity::Tl2,
            irrevocable: None,
            wants_irrevocable: false,
            user_irrevocable: false,
            guard: OnceCell::new(),
            on_commit: Vec::new(),
            on_abort: Vec::new(),
            ready: Vec::new(),
            savepoints: Vec::new(),
        }
    }

    #[inline]
    pub(super) fn commit_ctx(&self, version: u64) -> Commit<'_> {
        Commit {
            version,
            irrevocable: self.irrevocable.is_some(),
            guard: &self.guard,
        }
    }

    #[inline]
    fn key_of(items: &[Entry]) -> impl Fn(usize) -> (usize, u64) + '_ {
        move |p| (items[p].object_addr(), items[p].key())
    }

    #[inline(always)]
    pub(super) fn find(&self, addr: usize, key: u64) -> Option<usize> {
        if self.indexed {
            self.index.find(addr, key, Self::key_of(&self.items))
        } else if self.item_filter & filter_bit(addr, key) == 0 {
            None
        } else {
            self.items
                .iter()
                .position(|it| it.object_addr() == addr && it.key() == key)
        }
    }

    /// The position of the item for (`object`, `key`), created if missing.
    ///
    /// The common case, a small unindexed set with room to grow, is a
    /// filter test, a short scan only if the filter cannot rule the item
    /// out, and a push; creating the index, growing the vector and indexed
    /// lookups are out of line.
    #[inline(always)]
    pub(super) fn find_or_insert(&mut self, object: NonNull<dyn TObject>, key: u64) -> usize {
        if self.indexed {
            return self.find_or_insert_indexed(object, key);
        }
        let addr = object.as_ptr() as *const () as usize;
        let bit = filter_bit(addr, key);
        if self.item_filter & bit != 0 {
            if let Some(p) = self
                .items
                .iter()
                .position(|it| it.object_addr() == addr && it.key() == key)
            {
                return p;
            }
        }
        let pos = self.items.len();
        if pos == self.items.capacity() || pos >= index::item_index_cutoff() {
            return self.insert_slow(object, key);
        }
        self.push_item(object, key, bit);
        pos
    }

    /// Appends the item for (`object`, `key`), whose filter bit is `bit`.
    #[inline(always)]
    fn push_item(&mut self, object: NonNull<dyn TObject>, key: u64, bit: u64) {
        self.items.push(Entry::new(object, key));
        self.item_filter |= bit;
    }

    /// [`find_or_insert`](Self::find_or_insert) once the items are indexed.
    #[inline(never)]
    fn find_or_insert_indexed(&mut self, object: NonNull<dyn TObject>, key: u64) -> usize {
        let addr = object.as_ptr() as *const () as usize;
        if let Some(p) = self.index.find(addr, key, Self::key_of(&self.items)) {
            return p;
        }
        let pos = self.items.len();
        self.push_item(object, key, filter_bit(addr, key));
        self.index.insert(addr, key, pos, Self::key_of(&self.items));
        pos
    }

    /// Appends a new item when the vector must grow or the set crosses the
    /// index cutoff (then indexes it).
    #[cold]
    #[inline(never)]
    fn insert_slow(&mut self, object: NonNull<dyn TObject>, key: u64) -> usize {
        let pos = self.items.len();
        self.push_item(
            object,
            key,
            filter_bit(object.as_ptr() as *const () as usize, key),
        );
        if self.items.len() > index::item_index_cutoff() {
            self.index
                .build(self.items.len(), Self::key_of(&self.items));
            self.indexed = true;
            self.rare = true;
        }
        pos
    }

    /// The subobjects the attempt holds an item or a word write for.
    pub(crate) fn item_count(&self) -> usize {
        self.items.len() + self.words.len()
    }

    /// True unless the attempt certainly has not written (`addr`, `key`).
    /// An attempt that has handed out no item for mutation has written
    /// nothing: one test. Otherwise the item filter answers (it covers
    /// every item, read or written: an item read now may be written later,
    /// and a subobject with an item is cheap to look up anyway).
    #[inline(always)]
    pub(super) fn may_have_written(&self, addr: usize, key: u64) -> bool {
        // (Two tests rather than one `||`: the common case, nothing
        // written and tracking on, then costs two compares of flags.)
        if !self.mutated {
            return self.tracked_only;
        }
        if self.tracked_only {
            return true;
        }
        !self.no_read_my_writes && self.item_filter & filter_bit(addr, key) != 0
    }
}

/// The filter bit of a subobject (items and word writes alike): six bits
/// mixed from its address (whose low bits are alignment) and its key (an
/// index, or a node address).
#[inline(always)]
pub(super) fn filter_bit(addr: usize, key: u64) -> u64 {
    let h = (addr as u64 >> 4) ^ key ^ (key >> 6);
    1 << (h & 63)
}
