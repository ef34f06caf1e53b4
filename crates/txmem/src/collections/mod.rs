//! Transactional collections: queues, a semaphore, a one-slot cell, a
//! resizable hash map, an ordered map (a B+ tree), sorted lists and an
//! untyped word STM.
//!
//! Every collection here is a [`TObject`](crate::TObject) built with the same
//! recipe (STO, thesis ch. 3 and 6): the collection chooses *abstract*
//! subobjects — a node, a bucket, the gap after a node, a size counter — and
//! a transaction's reads and writes are items on those subobjects, not on
//! the memory words a structural operation touches. Each type documents,
//! operation by operation, what it adds to the read and write sets and which
//! operations therefore conflict.
//!
//! Techniques shared by several types:
//!
//! * **Placeholders** (thesis §3.1): inserting an absent key links a node
//!   marked *inserting* into the structure at execution time, under the
//!   structure's own short lock. The node makes concurrent inserts of the
//!   same key fail fast, and is invisible to other transactions until the
//!   inserter commits (or unlinked if it aborts). An insert of a new key
//!   therefore reads nothing: inserts of distinct keys never conflict. (An
//!   insert that *reports* the key absent still checks, in the opaque
//!   modes, that the structure word it found agrees with the attempt's
//!   earlier reads, as a read would; it records nothing.)
//! * **Gap / bucket versions**: a read that finds a key *absent* records the
//!   version of the structure around the key (a hash bucket, a B+ tree
//!   leaf, or the gap after the preceding node of a list); placing a
//!   placeholder bumps that version, so a concurrent insert of the key invalidates the
//!   read (no phantoms). When a transaction bumps a version that it has
//!   itself read, it updates its own read item instead of aborting itself
//!   (thesis §5, "TItem modifications"), after checking that the read was
//!   still current.
//! * **Commutative sizes** (the private `size` module): collections keep their element count
//!   in a counter that committing inserts and removes *share-lock* (any
//!   number at once) rather than lock, so inserts never conflict over the
//!   size; only a transaction that asks for the size reads it. The counter
//!   is striped per thread (one cache line per core, up to 16), so
//!   committers on different cores do not even write the same line; reading
//!   the size reads every stripe.
//! * **Epoch reclamation**: removed nodes are retired through
//!   `crossbeam-epoch` and freed once no running transaction can see them.

pub mod btree;
pub mod hashmap;
pub mod list;
pub mod mvar;
mod node;
pub mod queue;
pub mod sem;
pub(crate) mod size;
mod stripes;
mod traits;
pub mod words;

pub use btree::TBTreeMap;
pub use hashmap::{DefaultHashBuilder, THashMap};
pub use list::{TList, TListSet};
pub use mvar::TMVar;
pub use queue::TQueue;
pub use sem::TSem;
pub use traits::{TMap, TSet};
pub use words::{TWords, WordAddr};

use std::ops::Bound;

use crate::error::{Abort, AbortCause};
use crate::tx::Transaction;

/// How many times an operation re-reads a structural word (a bucket or gap
/// version locked by a concurrent structural change) before it yields the
/// processor. Structural locks are held only for a pointer splice.
const STRUCT_SPINS: u32 = 128;

/// Waits for another thread's short structural step: call in a loop while
/// a structural lock word is locked (a splice, a split, a bucket's
/// migration), while a committed removal waits to be unlinked, or while a
/// commit holds a size stripe. Spins first, then yields the processor.
///
/// It never gives up. Each of those holders finishes without waiting for
/// any transaction (structural locks are never held while waiting; a
/// commit's own waits are bounded), so the wait ends however long a
/// preempted holder takes to run again, and aborting would only meet the
/// same holder on the retry. (Waits for another transaction's *conflicting*
/// work, such as its placeholder for the same key, are bounded instead: see
/// [`placeholder_in_the_way`].)
#[inline]
pub(crate) fn struct_wait(spins: &mut u32) {
    *spins = spins.saturating_add(1);
    if *spins < STRUCT_SPINS {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

/// What an operation does when it meets another transaction's uncommitted
/// insert of the same key: the placeholder wins, so an ordinary attempt
/// aborts. An irrevocable one waits instead and then looks again (`Ok`):
/// the inserter cannot commit before it, so it soon aborts and unlinks its
/// placeholder (or, if it was already committing, publishes it).
#[inline]
pub(crate) fn placeholder_in_the_way(tx: &Transaction<'_>, spins: &mut u32) -> Result<(), Abort> {
    if tx.is_irrevocable() {
        struct_wait(spins);
        Ok(())
    } else {
        Err(Abort::new(AbortCause::LockBusy))
    }
}

/// The predicate "strictly before the start of a range" for its start bound
/// (the ordered maps' scans).
pub(crate) fn below_start<K: Ord>(bound: Bound<&K>) -> impl Fn(&K) -> bool + '_ {
    move |k: &K| match bound {
        Bound::Included(lo) => k < lo,
        Bound::Excluded(lo) => k <= lo,
        Bound::Unbounded => false,
    }
}

/// The predicate "not past the end of a range" for its end bound.
pub(crate) fn within_end<K: Ord>(bound: Bound<&K>) -> impl Fn(&K) -> bool + '_ {
    move |k: &K| match bound {
        Bound::Included(hi) => k <= hi,
        Bound::Excluded(hi) => k < hi,
        Bound::Unbounded => true,
    }
}

/// Collects clones of the entries a scan visits (the `range` methods of the
/// ordered maps): `scan` runs the map's scan with the given visitor.
pub(crate) fn collect_scan<K: Clone, V: Clone>(
    scan: impl FnOnce(&mut dyn FnMut(&K, &V) -> bool) -> crate::error::TxResult<()>,
) -> crate::error::TxResult<Vec<(K, V)>> {
    let mut out = Vec::new();
    scan(&mut |k, v| {
        out.push((k.clone(), v.clone()));
        true
    })?;
    Ok(out)
}

/// The abort for a read that found the structure changed under it.
#[inline]
pub(crate) fn inconsistent() -> Abort {
    Abort::new(AbortCause::Opacity)
}

/// Checks that a structure word recorded as read at `recorded` is still
/// current (`now`): other reads between the word's load and its record may
/// have moved the snapshot past a change of the word, and a stale word at or
/// below the new snapshot would pass the opacity check unnoticed. An
/// irrevocable attempt needs no such check (its reads stay valid; see
/// `TxState::acquire_irrevocability`), and structure words do change under
/// it as other transactions place placeholders.
#[inline]
pub(crate) fn still_current(tx: &Transaction<'_>, recorded: u64, now: u64) -> Result<(), Abort> {
    if recorded == now || tx.is_irrevocable() {
        Ok(())
    } else {
        Err(inconsistent())
    }
}
