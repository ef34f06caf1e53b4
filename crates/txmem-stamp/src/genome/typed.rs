//! The typed variant's shared state: txmem's datatypes.
//!
//! * The segment set is a `THashMap<Segment, ()>` filled with
//!   `insert_if_absent`: inserts of distinct segments never conflict, and a
//!   duplicate costs one read of the present key.
//! * Each overlap length has its own `THashMap<u128, Vec<u32>>` from a
//!   prefix to the segments registered under it: a lookup is one item
//!   whatever the number of candidates, and only registrations of the same
//!   prefix conflict.
//! * The link state is four `TArray`s indexed by unique segment: ids are
//!   dense, and one version per element (rather than one record per
//!   segment) keeps a link that writes a chain end's `chain_start` from
//!   conflicting with a reader of that segment's `prev`. The arrays use the
//!   packings of [`parallel`](super::parallel), 0 for "none" (or "itself"
//!   for the chain fields).

use txmem::{atomically, TArray, THashMap};

use super::gene::Segment;
use super::parallel::{pack_id, pack_link, unpack_id_or, Shared};

/// Shared state over txmem's datatypes.
pub struct Typed {
    set: THashMap<Segment, ()>,
    /// `prefixes[l]`: length-`l` prefix → segments registered under it.
    prefixes: Vec<THashMap<u128, Vec<u32>>>,
    /// Successor link ([`pack_link`]).
    next: TArray<u64>,
    /// Predecessor ([`pack_id`]).
    prev: TArray<u64>,
    /// At a chain's end: its start ([`pack_id`], 0 for itself).
    chain_start: TArray<u64>,
    /// At a chain's start: its end ([`pack_id`], 0 for itself).
    chain_end: TArray<u64>,
}

impl Typed {
    /// State for at most `max_unique` unique segments of `len` nucleotides.
    pub fn new(max_unique: usize, len: usize) -> Typed {
        Typed {
            set: THashMap::with_capacity(max_unique),
            prefixes: (0..len).map(|_| THashMap::new()).collect(),
            next: TArray::new(max_unique, 0),
            prev: TArray::new(max_unique, 0),
            chain_start: TArray::new(max_unique, 0),
            chain_end: TArray::new(max_unique, 0),
        }
    }
}

impl Shared for Typed {
    fn dedup(&self, batch: &[Segment]) -> Vec<Segment> {
        atomically(|tx| {
            let mut added = Vec::new();
            for &seg in batch {
                if self.set.insert_if_absent(tx, seg, ())? {
                    added.push(seg);
                }
            }
            Ok(added)
        })
    }

    fn register(&self, overlap: usize, prefix: u128, id: u32) {
        let table = &self.prefixes[overlap];
        atomically(|tx| {
            let mut ids = table.get(tx, &prefix)?.unwrap_or_default();
            ids.push(id);
            table.set(tx, prefix, ids)
        });
    }

    fn link(&self, overlap: usize, suffix: u128, id: u32) -> bool {
        let i = id as usize;
        atomically(|tx| {
            let Some(candidates) = self.prefixes[overlap].get(tx, &suffix)? else {
                return Ok(false);
            };
            let start = unpack_id_or(self.chain_start.get(tx, i)?, id);
            for b in candidates {
                if b == start || self.prev.get(tx, b as usize)? != 0 {
                    continue;
                }
                let end = unpack_id_or(self.chain_end.get(tx, b as usize)?, b);
                self.next.set(tx, i, pack_link(b, overlap))?;
                self.prev.set(tx, b as usize, pack_id(id))?;
                self.chain_end.set(tx, start as usize, pack_id(end))?;
                self.chain_start.set(tx, end as usize, pack_id(start))?;
                return Ok(true);
            }
            Ok(false)
        })
    }

    fn unpreceded(&self, id: u32) -> bool {
        self.prev.load(id as usize) == 0
    }

    fn successor(&self, id: u32) -> u64 {
        self.next.load(id as usize)
    }
}
