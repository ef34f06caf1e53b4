//! Item lookup: a linear scan for small transactions, a hash index past a cutoff.
//!
//! STO found that below about 16 items a scan beats hashing. txmem's items
//! are smaller and its scan cheaper per item, but its hash probe cheaper
//! too: `scripts/measure-lookup-cutoff.sh` (callgrind instruction counts per
//! transaction, each item read then written) puts the crossover between 8
//! and 12 items, so the index is built past 10 (table in
//! `docs/results/`).

use std::sync::atomic::{AtomicUsize, Ordering};

/// Item count past which the hash index is built (the default; see
/// [`set_item_index_cutoff`]).
pub const HASH_CUTOFF: usize = 10;

static CUTOFF: AtomicUsize = AtomicUsize::new(HASH_CUTOFF);

/// Sets the item count past which transactions index their items by hash
/// (for measuring the cutoff; `usize::MAX` never indexes, 0 always does).
/// Takes effect for transactions that begin afterwards.
pub fn set_item_index_cutoff(n: usize) {
    CUTOFF.store(n, Ordering::Relaxed);
}

/// The item count past which transactions index their items (see
/// [`set_item_index_cutoff`]).
#[inline]
pub fn item_index_cutoff() -> usize {
    CUTOFF.load(Ordering::Relaxed)
}

/// The smallest table.
const MIN_SLOTS: usize = 64;

/// An open-addressing table mapping (object address, key) to item positions.
///
/// The table in use is `slots[..=mask]`; the vector keeps the largest size
/// any transaction needed. A table starts at the size the last transaction
/// ended with (so a run of big transactions does not regrow it each time),
/// halved after each transaction that filled less than an eighth of it (so
/// that after a big one, small transactions soon use, and clear, only a
/// small part). Every slot past `mask` is zero.
pub(crate) struct ItemIndex {
    /// Slot values are item position + 1; 0 marks an empty slot.
    slots: Vec<u32>,
    mask: usize,
    len: usize,
    /// The size the next table starts at.
    hint: usize,
}

#[inline]
fn hash(addr: usize, key: u64) -> usize {
    let h =
        (addr as u64 ^ key.wrapping_mul(0x9E37_79B9_7F4A_7C15)).wrapping_mul(0xD6E8_FEB8_6659_FD93);
    (h ^ (h >> 32)) as usize
}

impl ItemIndex {
    pub const fn new() -> Self {
        ItemIndex {
            slots: Vec::new(),
            mask: 0,
            len: 0,
            hint: MIN_SLOTS,
        }
    }

    pub fn clear(&mut self) {
        if self.len > 0 {
            let size = self.mask + 1;
            self.hint = if self.len * 8 < size {
                (size / 2).max(MIN_SLOTS)
            } else {
                size
            };
            self.slots[..size].fill(0);
            self.len = 0;
        }
    }

    /// Makes `slots[..cap]` the (empty) table.
    fn use_slots(&mut self, cap: usize) {
        if self.slots.len() < cap {
            self.slots = vec![0; cap];
        } else {
            self.slots[..cap].fill(0);
        }
        self.mask = cap - 1;
        self.len = 0;
    }

    /// Finds the position of (addr, key) given a way to read the key of a position.
    #[inline]
    pub fn find(
        &self,
        addr: usize,
        key: u64,
        key_of: impl Fn(usize) -> (usize, u64),
    ) -> Option<usize> {
        let mut i = hash(addr, key) & self.mask;
        loop {
            let s = self.slots[i];
            if s == 0 {
                return None;
            }
            let pos = (s - 1) as usize;
            if key_of(pos) == (addr, key) {
                return Some(pos);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Adds a position; grows (rehashing everything through `key_of`) at half load.
    pub fn insert(
        &mut self,
        addr: usize,
        key: u64,
        pos: usize,
        key_of: impl Fn(usize) -> (usize, u64),
    ) {
        if (self.len + 1) * 2 > self.mask + 1 {
            self.use_slots(((self.mask + 1) * 2).max(MIN_SLOTS));
            for p in 0..pos {
                let (a, k) = key_of(p);
                self.put(a, k, p);
            }
        }
        self.put(addr, key, pos);
    }

    #[inline]
    fn put(&mut self, addr: usize, key: u64, pos: usize) {
        let mut i = hash(addr, key) & self.mask;
        while self.slots[i] != 0 {
            i = (i + 1) & self.mask;
        }
        self.slots[i] = pos as u32 + 1;
        self.len += 1;
    }

    /// Indexes positions `0..n` from scratch (when crossing the cutoff).
    pub fn build(&mut self, n: usize, key_of: impl Fn(usize) -> (usize, u64)) {
        self.use_slots((n * 4).next_power_of_two().max(self.hint));
        for p in 0..n {
            let (a, k) = key_of(p);
            self.put(a, k, p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(n: usize) -> Vec<(usize, u64)> {
        (0..n).map(|i| (0x1000 + (i % 7) * 64, i as u64)).collect()
    }

    #[test]
    fn a_small_table_after_a_big_one_uses_and_clears_only_its_part() {
        let mut idx = ItemIndex::new();
        let big = keys(1000);
        idx.build(big.len(), |p| big[p]);
        assert!(idx.mask + 1 >= 4000);
        for (p, &(a, k)) in big.iter().enumerate() {
            assert_eq!(idx.find(a, k, |q| big[q]), Some(p));
        }
        idx.clear();
        assert!(idx.slots.iter().all(|&s| s == 0));
        // Each small transaction after the big one halves the next table.
        let small = keys(20);
        let mut sizes = Vec::new();
        for _ in 0..8 {
            idx.build(small.len(), |p| small[p]);
            sizes.push(idx.mask + 1);
            idx.clear();
        }
        assert_eq!(sizes[0], 4096, "starts where the big one ended");
        assert!(
            sizes.windows(2).all(|w| w[1] == (w[0] / 2).max(128)),
            "{sizes:?}"
        );
        assert_eq!(
            *sizes.last().unwrap(),
            128,
            "down to what the small set needs"
        );
        idx.build(small.len(), |p| small[p]);
        let mut grown = small.clone();
        for p in small.len()..200 {
            grown.push((0x9000, p as u64));
            let (a, k) = grown[p];
            idx.insert(a, k, p, |q| grown[q]);
        }
        for (p, &(a, k)) in grown.iter().enumerate() {
            assert_eq!(idx.find(a, k, |q| grown[q]), Some(p));
        }
        assert_eq!(idx.find(0x9000, 5000, |q| grown[q]), None);
        idx.clear();
        assert!(
            idx.slots.iter().all(|&s| s == 0),
            "every slot is empty again"
        );
    }
}
