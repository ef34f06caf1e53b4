//! The redo log of the write-back methods (lazy, NOrec): the words a transaction wrote, each
//! with the bytes written and a mask of which, in the order first written.
//!
//! Every read of a write-back transaction must first ask "did I write this word?", so the
//! question has to be cheap: a 64-bit filter answers "no" for most words in one test, and an
//! open-addressing index answers the rest in a probe or two. Entries remember their index slot,
//! so clearing the log costs one store per entry rather than a sweep of the index.

/// One buffered word.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    /// The 8-byte aligned address.
    pub word: usize,
    /// The bytes written (those outside `mask` are meaningless).
    pub val: u64,
    /// Which bytes of `val` were written.
    pub mask: u64,
    slot: u32,
}

/// The redo log.
#[derive(Clone, Default, Debug)]
pub(crate) struct RedoLog {
    entries: Vec<Entry>,
    /// Open addressing, linear probing: entry position + 1, or 0 for an empty slot. Its length
    /// is a power of two and stays at least twice the number of entries.
    index: Vec<u32>,
    /// Bit `filter_bit(word)` is set for every word with an entry.
    filter: u64,
}

/// Index slots the first write allocates.
const MIN_SLOTS: usize = 64;

/// The mask selecting bytes `off..off + n` of a little-endian word (`off + n <= 8`, `n >= 1`).
#[inline]
pub(crate) fn byte_mask(off: usize, n: usize) -> u64 {
    if n == 8 {
        u64::MAX
    } else {
        ((1u64 << (8 * n)) - 1) << (8 * off)
    }
}

#[inline(always)]
fn filter_bit(word: usize) -> u64 {
    1 << ((word >> 3) & 63)
}

impl RedoLog {
    /// True if no word was written.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// False if `word` certainly has no entry (one bit test).
    #[inline(always)]
    pub fn may_hold(&self, word: usize) -> bool {
        self.filter & filter_bit(word) != 0
    }

    /// The buffered bytes of `word` and their mask, if any were written.
    #[inline(always)]
    pub fn get(&self, word: usize) -> Option<(u64, u64)> {
        if !self.may_hold(word) {
            return None;
        }
        let e = self.entries[self.find(word)?];
        Some((e.val, e.mask))
    }

    /// Buffers the bytes of `val` selected by `mask` for `word`.
    #[inline]
    pub fn insert(&mut self, word: usize, val: u64, mask: u64) {
        // A byte-wise copy writes each word several times in a row: the last entry first.
        if let Some(e) = self.entries.last_mut() {
            if e.word == word {
                e.val = (e.val & !mask) | (val & mask);
                e.mask |= mask;
                return;
            }
        }
        if self.filter & filter_bit(word) != 0 {
            if let Some(i) = self.find(word) {
                let e = &mut self.entries[i];
                e.val = (e.val & !mask) | (val & mask);
                e.mask |= mask;
                return;
            }
        }
        if self.index.len() < 2 * (self.entries.len() + 1) {
            self.grow();
        }
        self.filter |= filter_bit(word);
        let slot = self.free_slot(word);
        self.entries.push(Entry {
            word,
            val: val & mask,
            mask,
            slot: slot as u32,
        });
        self.index[slot] = self.entries.len() as u32;
    }

    /// Replaces the buffered bytes of `[lo, hi)` with what `load` reads of their words now:
    /// those bytes were stored in place since (captured memory). Bytes of the same words
    /// outside the range keep their buffered values.
    pub fn refresh(&mut self, lo: usize, hi: usize, load: impl Fn(usize) -> u64) {
        for e in self
            .entries
            .iter_mut()
            .filter(|e| e.word + 8 > lo && e.word < hi)
        {
            let from = lo.max(e.word) - e.word;
            let to = hi.min(e.word + 8) - e.word;
            let m = byte_mask(from, to - from) & e.mask;
            e.val = (e.val & !m) | (load(e.word) & m);
        }
    }

    /// The entries, in the order their words were first written.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Empties the log, keeping its memory for the next transaction.
    pub fn clear(&mut self) {
        for e in &self.entries {
            self.index[e.slot as usize] = 0;
        }
        self.entries.clear();
        self.filter = 0;
    }

    #[inline(always)]
    fn home(&self, word: usize) -> usize {
        // Fibonacci hashing of the word number; the index length is a power of two.
        let h = ((word >> 3) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (h >> (64 - self.index.len().trailing_zeros())) as usize
    }

    /// The position in `entries` of `word`'s entry.
    #[inline(always)]
    fn find(&self, word: usize) -> Option<usize> {
        if self.index.is_empty() {
            return None;
        }
        let m = self.index.len() - 1;
        let mut s = self.home(word);
        loop {
            match self.index[s] {
                0 => return None,
                p if self.entries[p as usize - 1].word == word => return Some(p as usize - 1),
                _ => s = (s + 1) & m,
            }
        }
    }

    /// The first empty slot on `word`'s probe sequence (the index has room).
    #[inline(always)]
    fn free_slot(&self, word: usize) -> usize {
        let m = self.index.len() - 1;
        let mut s = self.home(word);
        while self.index[s] != 0 {
            s = (s + 1) & m;
        }
        s
    }

    /// Doubles the index (or makes the first one) and reinserts every entry.
    #[cold]
    fn grow(&mut self) {
        let slots = (self.index.len() * 2).max(MIN_SLOTS);
        self.index.clear();
        self.index.resize(slots, 0);
        for i in 0..self.entries.len() {
            let s = self.free_slot(self.entries[i].word);
            self.index[s] = i as u32 + 1;
            self.entries[i].slot = s as u32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A refresh takes memory's bytes inside the range, keeps the buffered ones outside it,
    /// and leaves unbuffered bytes alone.
    #[test]
    fn a_refresh_replaces_only_the_bytes_of_its_range() {
        let mut log = RedoLog::default();
        log.insert(0x1000, 0x0102_0304_0506_0708, u64::MAX);
        log.insert(0x1008, 0x1111_1111_1111_1111, 0x0000_0000_ffff_ffff);
        log.insert(0x1010, 0x2222_2222_2222_2222, u64::MAX);
        // Memory holds 0xaa.. in every byte; the range is bytes 0x1004..0x100c.
        log.refresh(0x1004, 0x100c, |_| 0xaaaa_aaaa_aaaa_aaaa);
        assert_eq!(log.get(0x1000), Some((0xaaaa_aaaa_0506_0708, u64::MAX)));
        assert_eq!(log.get(0x1008), Some((0xaaaa_aaaa, 0x0000_0000_ffff_ffff)));
        assert_eq!(log.get(0x1010), Some((0x2222_2222_2222_2222, u64::MAX)));
    }

    #[test]
    fn byte_masks_select_the_written_bytes() {
        assert_eq!(byte_mask(0, 8), u64::MAX);
        assert_eq!(byte_mask(0, 1), 0xff);
        assert_eq!(byte_mask(3, 2), 0xffff << 24);
        assert_eq!(byte_mask(7, 1), 0xff << 56);
        assert_eq!(byte_mask(4, 4), 0xffff_ffff_0000_0000);
        assert_eq!(byte_mask(2, 1), 0xff_0000);
    }

    /// A random sequence of masked writes, lookups and clears agrees with a map model.
    #[test]
    fn agrees_with_a_map() {
        let mut log = RedoLog::default();
        let mut model: HashMap<usize, (u64, u64)> = HashMap::new();
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for step in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Few distinct words, so rewrites and probe chains are common; sizes past the
            // first index so it grows.
            let word = 0x1000 + ((x as usize >> 8) % 300) * 8;
            let mask = match x % 4 {
                0 => u64::MAX,
                1 => 0xff << (8 * (x >> 2 & 7)),
                2 => 0xffff_ffff,
                _ => 0xffff_ffff_0000_0000,
            };
            if step % 5000 == 4999 {
                log.clear();
                model.clear();
            } else if x.is_multiple_of(3) {
                assert_eq!(log.get(word), model.get(&word).copied(), "step {step}");
            } else {
                log.insert(word, x, mask);
                let e = model.entry(word).or_insert((0, 0));
                e.0 = (e.0 & !mask) | (x & mask);
                e.1 |= mask;
            }
        }
        let mut words: Vec<usize> = log.entries().iter().map(|e| e.word).collect();
        words.sort();
        let mut want: Vec<usize> = model.keys().copied().collect();
        want.sort();
        assert_eq!(words, want);
    }
}
