//! The ownership records: a fixed table of versioned locks, one per hashed 8-byte word, and the
//! global version clock.
//!
//! An orec holds either a version (the clock value of the last commit that wrote a word mapped to
//! it) or, with [`LOCKED`] set, the id of the transaction committing into it. The table is fixed
//! in size, so no transaction can "run out" of orecs: unrelated words that hash to the same orec
//! only cause false conflicts.

use std::sync::atomic::{AtomicU64, Ordering};

/// log2 of the number of orecs: 2^20 orecs, 8 MiB, few false conflicts for working sets up to a
/// few hundred thousand words.
const OREC_BITS: u32 = 20;
const OREC_COUNT: usize = 1 << OREC_BITS;

/// The bit that marks an orec as locked by a committing transaction (the rest is its owner id).
pub(crate) const LOCKED: u64 = 1 << 63;

/// The global version clock. A committing writer takes `fetch_add(1) + 1` as its write version.
pub(crate) static CLOCK: AtomicU64 = AtomicU64::new(0);

static OREC_TABLE: [AtomicU64; OREC_COUNT] = [const { AtomicU64::new(0) }; OREC_COUNT];

/// The orec index of the word holding `addr`.
#[inline]
pub(crate) fn index(addr: usize) -> usize {
    // Words, not bytes, so that every byte of a word shares one orec; the high bits are folded
    // in so that arrays far apart in memory do not line up on the same orecs.
    let w = addr >> 3;
    (w ^ (w >> OREC_BITS)) & (OREC_COUNT - 1)
}

#[inline]
pub(crate) fn orec(idx: usize) -> &'static AtomicU64 {
    &OREC_TABLE[idx]
}

/// Stamps the orec of every word of `[addr, addr+len)` with `version`: used by serial writers,
/// which write in place, so that a transaction that waited through them and revalidates (an
/// upgrade to irrevocable) sees that the words changed.
pub(crate) fn stamp(addr: usize, len: usize, version: u64) {
    if len == 0 {
        return;
    }
    let mut w = addr & !7;
    while w < addr + len {
        orec(index(w)).store(version, Ordering::Release);
        w += 8;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_of_a_word_shares_its_orec_and_neighbours_do_not() {
        let base = 0x7f00_1234_5670usize;
        for b in 0..8 {
            assert_eq!(index(base + b), index(base));
        }
        assert_ne!(index(base), index(base + 8));
        assert!(index(usize::MAX) < OREC_COUNT);
    }

    #[test]
    fn stamp_covers_every_word_touched() {
        // An unaligned range over three words.
        let addr = 0x1000_0006usize;
        stamp(addr, 12, 77);
        for w in [0x1000_0000usize, 0x1000_0008, 0x1000_0010] {
            assert_eq!(orec(index(w)).load(Ordering::Relaxed), 77);
        }
        assert_ne!(orec(index(0x1000_0018)).load(Ordering::Relaxed), 77);
    }
}
