//! `TList<T>` and `TListSet<T>`: sorted singly linked lists (thesis ch. 6).
//!
//! Each node has a *state* version (commit lock; *inserting* and *deleted*
//! flags) and a *gap* version covering the interval between it and its
//! successor; the list head has a gap version too. The element count lives
//! in a share-locked size counter (the crate's `collections::size`), which
//! only `len` and `is_empty` read.
//!
//! Item keys: a node's state is keyed by its address, the gap after a node
//! by `address | 1` (the head's gap by 1), the size counter by 2.
//!
//! # Structural changes
//!
//! There is no list-wide lock. A node's link changes only while its gap
//! word is locked (the word's own lock bit):
//!
//! * an insert links its placeholder after the node `p` that its search
//!   ended on by locking `p`'s gap *at the word the search saw*; if the gap
//!   moved meanwhile, it searches again;
//! * an unlink (of a node whose removal committed, or of an abandoned
//!   placeholder) finds the node's predecessor, locks the predecessor's gap
//!   and then the node's own gap, splices, flags the node's gap *unlinked*
//!   and retires the node through the epoch. If either lock is busy it
//!   releases what it holds and starts over.
//!
//! Whoever holds a gap lock holds it for a pointer splice and waits for
//! nothing meanwhile, so there is no deadlock, and a reader or writer that
//! finds a gap locked simply waits for it. Inserts and removes at different
//! places touch different gap words and proceed in parallel.
//!
//! Searches read links without locks, pinned to the epoch for the whole
//! operation (a transaction stays pinned for its whole attempt). A node is
//! retired only once it is unlinked, and a search only ever reaches nodes
//! that were linked at some moment after it pinned (the successor of a
//! linked node is linked; an unlinked node keeps the successor it had when
//! it was unlinked, and nothing is linked after it since: its gap is
//! flagged), so no search reaches freed memory.
//!
//! # Why transactions see whole commits
//!
//! Every committed change of a list's contents changes a word that each
//! read depending on it recorded:
//!
//! * an insert links its placeholder (flagged *inserting*, invisible to
//!   others) at execution time, which bumps the gap version of its
//!   predecessor; it becomes visible when its commit clears the flag in the
//!   node's state;
//! * a removal sets the *deleted* flag in the node's state at commit, then
//!   unlinks the node (bumping the gaps around it to at least the commit
//!   version).
//!
//! A lookup records the state of the node it finds (or, when the element is
//! absent, the gap where it would be and the states of invisible nodes
//! equal to it); a scan (`range`, `to_vec`, `first`, `last`) records the
//! state of every node it passes and every gap it crosses. An insert into a
//! scanned interval therefore changes a gap the scan recorded (if linked
//! after the scan passed) or the state of a placeholder it recorded (if
//! linked before); a removal or an insert's commit changes a node state it
//! recorded. A transaction that read an interval and then inserts into it
//! keeps the whole interval covered: its read of the predecessor's gap moves
//! to the gap's new version and a read of the new node's gap is added.
//!
//! Node states are read with [`Transaction::observe`], which waits for (or,
//! past a bound, aborts at) a locked state. A commit locks every node state
//! it changes before it installs any and publishes versions of at least its
//! commit version, so a read of a state sees it before the commit or after
//! its install, never half-way, and a transaction whose reads straddle a
//! commit has read one word before it and another after it. Then:
//!
//! * **Serializability.** A committing transaction validates every word it
//!   recorded; all still current means that no commit changed anything it
//!   read, so it serializes at its validation, as the STO protocol has it.
//!   (Read-only transactions in the opaque modes skip that validation; the
//!   next two points serialize them at their snapshot.)
//! * **Opacity, [`Opacity::Tl2`](crate::Opacity::Tl2).** Take a commit C
//!   whose words the attempt reads. If the attempt reads a word C
//!   installed at a version above its snapshot bound, the runtime
//!   revalidates every earlier read first, and a word read before C locked
//!   it fails that check. If the version is at or below the bound, C's
//!   commit version is too, so the bound was read from the clock after C
//!   read it, which C does only once it holds all its locks: every read the
//!   attempt makes after reading its bound finds C's words locked (and
//!   waits) or installed, and reads made before a bound that an extension
//!   moved forward were revalidated after it. Either way no attempt goes on with a view that
//!   mixes words from before and after C. Gaps follow the same rule for
//!   removals: a gap's version is never older than a removal committed in
//!   its interval (an unlink bumps the predecessor's gap to at least the
//!   commit version, and a new node's gap starts at its predecessor's
//!   version). Gap bumps made by links are not commits and change no
//!   contents; they only invalidate reads.
//! * **Opacity, [`Opacity::Revalidate`](crate::Opacity::Revalidate).** Each
//!   read revalidates the whole read set, so after every read all recorded
//!   words are current at once: the attempt has seen the list as it was at
//!   that moment.
//!
//! [`Opacity::None`](crate::Opacity::None) promises nothing while an attempt
//! runs; every committing transaction, read-only or not, is validated.
//!
//! `len` reads the size counter, whose version every committed insert or
//! remove with a non-zero net change bumps (under a share lock held from the
//! commit's lock phase to its install), with the same version rules.

mod committed;
mod object;
mod scan;
mod search;
mod sorted;
mod update;

use std::fmt;
use std::ops::RangeBounds;

use crate::error::TxResult;
use crate::tx::Transaction;

use super::node::NodeCollection;
use sorted::SortedList;

/// The methods [`TListSet`] and [`TList`] share word for word (`$noun`
/// names the type in their docs).
macro_rules! shared_list_api {
    ($noun:literal) => {
        /// The elements within `range`, in order (clones), with phantom
        /// protection: an element inserted into the range by a transaction
        /// committing meanwhile makes this one abort.
        pub fn range<'env>(
            &'env self,
            tx: &mut Transaction<'env>,
            range: impl RangeBounds<T>,
        ) -> TxResult<Vec<T>> {
            self.inner.range(tx, range)
        }
        /// The largest element (a walk of the whole list).
        pub fn last<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<Option<T>> {
            self.inner.last(tx)
        }
        /// The number of elements (reads the size counter).
        pub fn len<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<usize> {
            self.inner.tx_len(tx)
        }
        #[doc = concat!("True if the ", $noun, " is empty (reads the size counter).")]
        pub fn is_empty<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<bool> {
            Ok(self.inner.tx_len(tx)? == 0)
        }
        /// Every element in order: [`range`](Self::range) over everything.
        pub fn to_vec<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<Vec<T>> {
            self.inner.range(tx, ..)
        }
        /// The committed elements, outside any transaction (as of one moment).
        pub fn load_vec(&self) -> Vec<T> {
            self.inner.committed_range(..)
        }
        /// True if an element equal to `x` is committed, outside any transaction.
        pub fn load_contains(&self, x: &T) -> bool {
            self.inner.committed_get(x).is_some()
        }
        /// The committed elements within `range`, outside any transaction (as
        /// of one moment).
        pub fn load_range(&self, range: impl RangeBounds<T>) -> Vec<T> {
            self.inner.committed_range(range)
        }
        /// The smallest committed element, outside any transaction.
        pub fn load_first(&self) -> Option<T> {
            self.inner.committed_first()
        }
        /// The largest committed element, outside any transaction.
        pub fn load_last(&self) -> Option<T> {
            self.inner.committed_last()
        }
        /// The committed number of elements, outside any transaction.
        pub fn load_len(&self) -> usize {
            self.inner.committed_len()
        }
    };
}

/// A transactional sorted set (a sorted linked list without duplicates).
///
/// Elements are compared with `Ord`; an element may carry more than its
/// ordering key (a key-value pair ordered by key, say), and
/// [`get`](Self::get) returns the stored element equal to a probe.
///
/// What each operation adds to the transaction:
///
/// | operation | read set | write set |
/// |---|---|---|
/// | [`insert`](Self::insert) of an absent element | nothing (but see below) | the new node (a placeholder linked now), +1 size |
/// | `insert` of a present element (returns `false`) | the element's node | — |
/// | [`remove`](Self::remove) of a present element | the element's node | the node (deleted and unlinked at commit), −1 size |
/// | [`contains`](Self::contains) / [`get`](Self::get), element present | the element's node | — |
/// | `contains` / `get` / `remove`, element absent | the gap where it would be (and any invisible nodes equal to it) | — |
/// | [`range`](Self::range) / [`to_vec`](Self::to_vec) | every node in the range and every gap from the one before it to the one after its last node | — |
/// | [`first`](Self::first) | every node and gap from the head to the first element | — |
/// | [`last`](Self::last) | the last element's node and every node and gap after it | — |
/// | [`len`](Self::len) / [`is_empty`](Self::is_empty) | the size counter | — |
///
/// Inserts of distinct elements never conflict (the thesis' placeholder
/// technique: the insert links its node at execution time and reads
/// nothing). Linking bumps the gap version of the preceding node, which
/// invalidates concurrent reads of that interval (no phantoms). A
/// transaction that read an interval and then inserts into it keeps it
/// covered instead of aborting itself: its gap read moves to the new
/// version, and it also reads the new node's gap, so an insert committed by
/// another transaction after the new node still conflicts. Iteration
/// conflicts only with commits that change the part of the list it went
/// through; `len` with any commit that changes the size.
///
/// **Removing, then inserting an equal element in one transaction**: the
/// insert stores the new element in a new node and returns `true`; the
/// removed node is still deleted at commit. So `remove(&x)` followed by
/// `insert(y)` with `y == x` leaves `y` in the set, not `x` (they may
/// differ beyond the ordering key), and other transactions that read `x`
/// conflict with the commit.
///
/// ```
/// use txmem::{atomically, TListSet};
/// let s = TListSet::new();
/// atomically(|tx| { s.insert(tx, 3)?; s.insert(tx, 1)?; s.insert(tx, 2) });
/// assert!(!atomically(|tx| s.insert(tx, 2)));
/// assert_eq!(atomically(|tx| s.to_vec(tx)), vec![1, 2, 3]);
/// assert_eq!(atomically(|tx| s.range(tx, 2..)), vec![2, 3]);
/// assert_eq!(atomically(|tx| s.last(tx)), Some(3));
/// assert!(atomically(|tx| s.remove(tx, &1)));
/// assert_eq!(s.load_vec(), vec![2, 3]);
/// ```
pub struct TListSet<T> {
    inner: SortedList<T>,
}

impl<T: Ord + Clone + Send + Sync + 'static> Default for TListSet<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Ord + Clone + Send + Sync + 'static> TListSet<T> {
    /// An empty set.
    pub fn new() -> Self {
        TListSet {
            inner: SortedList::new(false),
        }
    }
    /// Inserts `x` if no equal element is present; returns whether it did.
    pub fn insert<'env>(&'env self, tx: &mut Transaction<'env>, x: T) -> TxResult<bool> {
        self.inner.insert(tx, x)
    }
    /// Removes the element equal to `x`; returns whether there was one.
    pub fn remove<'env>(&'env self, tx: &mut Transaction<'env>, x: &T) -> TxResult<bool> {
        self.inner.remove(tx, x)
    }
    /// True if an element equal to `x` is present.
    pub fn contains<'env>(&'env self, tx: &mut Transaction<'env>, x: &T) -> TxResult<bool> {
        self.inner.contains(tx, x)
    }
    /// The stored element equal to `x` (a clone), if any.
    pub fn get<'env>(&'env self, tx: &mut Transaction<'env>, x: &T) -> TxResult<Option<T>> {
        self.inner.get(tx, x)
    }
    /// The smallest element.
    pub fn first<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<Option<T>> {
        self.inner.first(tx)
    }
    /// The committed element equal to `x`, outside any transaction.
    pub fn load(&self, x: &T) -> Option<T> {
        self.inner.committed_get(x)
    }
    shared_list_api!("set");
}

/// A transactional sorted list that may hold equal elements (a sorted
/// multiset).
///
/// Same machinery and conflict rules as [`TListSet`], except that
/// [`insert`](Self::insert) never checks for presence, so it reads nothing
/// at all and never fails: any two inserts commute. A new element goes
/// before the elements equal to it, so [`get`](Self::get) and
/// [`remove`](Self::remove) find the one inserted last.
///
/// | operation | read set | write set |
/// |---|---|---|
/// | [`insert`](Self::insert) | nothing (but see [`TListSet`] on inserting into a range read before) | the new node (a placeholder linked now), +1 size |
/// | [`remove`](Self::remove), element present | the node removed (the first equal element visible) | that node (deleted and unlinked at commit), −1 size |
/// | [`contains`](Self::contains) / [`get`](Self::get), element present | the first equal element's node (and invisible equal nodes before it) | — |
/// | `contains` / `get` / `remove`, element absent | the gap where it would be (and any invisible nodes equal to it) | — |
/// | [`range`](Self::range) / [`to_vec`](Self::to_vec) | every node in the range and every gap from the one before it to the one after its last node | — |
/// | [`first`](Self::first) | every node and gap from the head to the first element | — |
/// | [`last`](Self::last) | the last element's node and every node and gap after it | — |
/// | [`len`](Self::len) / [`is_empty`](Self::is_empty) | the size counter | — |
///
/// **Removing, then inserting an equal element in one transaction**: as
/// any insert, the insert adds a new node (before the equal ones); the
/// removed node is still deleted at commit. The list ends up holding the
/// new element, not the removed one.
///
/// ```
/// use txmem::{atomically, TList};
/// let l = TList::new();
/// atomically(|tx| { l.insert(tx, 2)?; l.insert(tx, 1)?; l.insert(tx, 2) });
/// assert_eq!(atomically(|tx| l.to_vec(tx)), vec![1, 2, 2]);
/// assert_eq!(atomically(|tx| l.range(tx, 2..=2)), vec![2, 2]);
/// assert!(atomically(|tx| l.remove(tx, &2)));
/// assert_eq!(atomically(|tx| l.len(tx)), 2);
/// assert_eq!(l.load_first(), Some(1));
/// ```
pub struct TList<T> {
    inner: SortedList<T>,
}

impl<T: Ord + Clone + Send + Sync + 'static> Default for TList<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Ord + Clone + Send + Sync + 'static> TList<T> {
    /// An empty list.
    pub fn new() -> Self {
        TList {
            inner: SortedList::new(true),
        }
    }
    /// Inserts `x` in order (before any equal elements).
    pub fn insert<'env>(&'env self, tx: &mut Transaction<'env>, x: T) -> TxResult<()> {
        self.inner.insert(tx, x).map(|_| ())
    }
    /// Removes one element equal to `x` (the first in the list); returns
    /// whether there was one.
    pub fn remove<'env>(&'env self, tx: &mut Transaction<'env>, x: &T) -> TxResult<bool> {
        self.inner.remove(tx, x)
    }
    /// True if an element equal to `x` occurs.
    pub fn contains<'env>(&'env self, tx: &mut Transaction<'env>, x: &T) -> TxResult<bool> {
        self.inner.contains(tx, x)
    }
    /// The first element equal to `x` (a clone), if any: the one inserted
    /// last.
    pub fn get<'env>(&'env self, tx: &mut Transaction<'env>, x: &T) -> TxResult<Option<T>> {
        self.inner.get(tx, x)
    }
    /// The smallest element (the first in the list).
    pub fn first<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<Option<T>> {
        self.inner.first(tx)
    }
    /// The first committed element equal to `x`, outside any transaction.
    pub fn load(&self, x: &T) -> Option<T> {
        self.inner.committed_get(x)
    }
    shared_list_api!("list");
}

impl<T: Ord + Clone + Send + Sync + fmt::Debug + 'static> fmt::Debug for TListSet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.load_vec()).finish()
    }
}

impl<T: Ord + Clone + Send + Sync + fmt::Debug + 'static> fmt::Debug for TList<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.load_vec()).finish()
    }
}
