//! A record: its key, a stamp saying which write produced it, and its
//! fields, whose bytes are a function of the key and the stamp so that
//! the check can tell a record from a mix of two writes or a record filed
//! under the wrong key.
//!
//! # Representation
//!
//! txmem keeps each committed value in its own allocation and hands
//! transactions a reference to it (`get_with`, scans) or a clone (`get`).
//! The workload never clones a record: reads copy the fields out through
//! a reference (what a database returns to its client), and every write
//! builds a new record. So what a record's layout decides is how many
//! allocations a read touches and a write makes:
//!
//! * fields of up to [`INLINE`] bytes (YCSB's default 10 × 10 B included)
//!   are stored inline, so a record is one allocation: a read follows one
//!   pointer from the map's node to the record, and a write allocates once
//!   for the transaction's pending value and once when it is installed;
//! * larger fields go to a boxed slice (one more pointer and allocation),
//!   where the copy, not the allocation, dominates anyway.
//!
//! Fields are not stored separately: YCSB reads every field by default
//! (`readallfields=true`), and since a txmem value is replaced whole, a
//! write of one field would build the whole record just the same.

use crate::hash::mix64;
use rand_xoshiro::rand_core::{Rng, SeedableRng};
use rand_xoshiro::SplitMix64;

/// Fields up to this many bytes are stored inside the record.
pub const INLINE: usize = 112;

/// Stamps of blind updates have this bit set; the rest of the stamps are
/// read-modify-write counts.
const BLIND: u64 = 1 << 63;
/// Bits of a blind update's stamp that hold the worker's sequence number.
const SEQ_BITS: u32 = 40;
/// The most worker indexes a blind stamp can name.
pub const STAMP_WORKERS: usize = 1 << (63 - SEQ_BITS);

/// What wrote a record, decoded from its stamp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stamp {
    /// Loaded or inserted (0), then read-modify-written this many times.
    Version(u64),
    /// A blind update: worker `worker`'s update number `seq` (counting
    /// from 0 over the updates it committed).
    Update {
        /// The worker index.
        worker: usize,
        /// The update's number among the worker's committed updates.
        seq: u64,
    },
}

impl Stamp {
    /// The stamp's encoding in a record.
    pub fn encode(self) -> u64 {
        match self {
            Stamp::Version(v) => {
                debug_assert!(v < BLIND);
                v
            }
            Stamp::Update { worker, seq } => {
                debug_assert!(worker < STAMP_WORKERS && seq < 1 << SEQ_BITS);
                BLIND | (worker as u64) << SEQ_BITS | seq
            }
        }
    }

    /// The stamp a record's word encodes.
    pub fn decode(word: u64) -> Stamp {
        if word & BLIND == 0 {
            Stamp::Version(word)
        } else {
            Stamp::Update {
                worker: ((word & !BLIND) >> SEQ_BITS) as usize,
                seq: word & ((1 << SEQ_BITS) - 1),
            }
        }
    }
}

/// A record's fields.
#[derive(Clone)]
enum Fields {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<[u8]>),
}

/// One record of the table.
#[derive(Clone)]
pub struct Record {
    key: u64,
    stamp: u64,
    fields: Fields,
}

impl Record {
    /// The record `key` holds after the write stamped `stamp`, with
    /// `size` bytes of fields.
    pub fn new(key: u64, stamp: Stamp, size: usize) -> Record {
        let stamp = stamp.encode();
        let fields = if size <= INLINE {
            let mut bytes = [0u8; INLINE];
            fill(key, stamp, &mut bytes[..size]);
            Fields::Inline {
                len: size as u8,
                bytes,
            }
        } else {
            let mut bytes = vec![0u8; size].into_boxed_slice();
            fill(key, stamp, &mut bytes);
            Fields::Heap(bytes)
        };
        Record { key, stamp, fields }
    }

    /// The key the record says it belongs to.
    #[inline]
    pub fn key(&self) -> u64 {
        self.key
    }

    /// The write that produced the record.
    #[inline]
    pub fn stamp(&self) -> Stamp {
        Stamp::decode(self.stamp)
    }

    /// The fields' bytes.
    #[inline]
    pub fn fields(&self) -> &[u8] {
        match &self.fields {
            Fields::Inline { len, bytes } => &bytes[..*len as usize],
            Fields::Heap(b) => b,
        }
    }

    /// True if the fields are exactly those the record's key and stamp
    /// call for.
    pub fn fields_match(&self) -> bool {
        let have = self.fields();
        let mut want = vec![0u8; have.len()];
        fill(self.key, self.stamp, &mut want);
        have == want.as_slice()
    }

    /// A copy of the record claiming key `key` (for the corruption hook).
    pub fn filed_as(&self, key: u64) -> Record {
        Record {
            key,
            ..self.clone()
        }
    }
}

/// Fills `out` with the bytes of the write of `key` stamped `stamp`: a
/// SplitMix64 sequence seeded from both.
fn fill(key: u64, stamp: u64, out: &mut [u8]) {
    let mut rng = SplitMix64::seed_from_u64(mix64(key ^ stamp.rotate_left(32)));
    for chunk in out.chunks_mut(8) {
        let word = rng.next_u64().to_le_bytes();
        chunk.copy_from_slice(&word[..chunk.len()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_round_trip() {
        for s in [
            Stamp::Version(0),
            Stamp::Version(12345),
            Stamp::Update { worker: 0, seq: 0 },
            Stamp::Update {
                worker: STAMP_WORKERS - 1,
                seq: (1 << SEQ_BITS) - 1,
            },
        ] {
            assert_eq!(Stamp::decode(s.encode()), s);
        }
    }

    #[test]
    fn records_inline_and_on_the_heap_check_their_fields() {
        for size in [1, 7, 100, INLINE, INLINE + 1, 1000] {
            let r = Record::new(42, Stamp::Update { worker: 3, seq: 9 }, size);
            assert_eq!(r.fields().len(), size);
            assert!(r.fields_match(), "size {size}");
            assert_eq!(r.key(), 42);
            let moved = r.filed_as(43);
            assert!(
                !moved.fields_match(),
                "size {size}: a record under another key"
            );
            let other = Record::new(42, Stamp::Version(1), size);
            assert_ne!(other.fields(), r.fields(), "size {size}");
        }
    }
}
