//! A small open-addressing map from `u64` keys to `u64` values that clears in time
//! proportional to its size and keeps its allocation, for per-transaction read/write sets.

/// Map from `u64` to `u64`, insertion-ordered iteration, no allocation once warmed up.
/// Up to [`SMALL`] entries it is a plain vector searched linearly (transactions are usually
/// that small); beyond that an open-addressing index is built.
#[derive(Clone, Debug, Default)]
pub struct U64Map {
    items: Vec<(u64, u64)>,
    /// Whether `index` is in use (kept allocated, but unused, after a clear).
    hashed: bool,
    /// The open-addressing index of large maps, boxed so that the many small maps of
    /// transaction frames stay small.
    index: Option<Box<HashIndex>>,
}

/// Open-addressing index of a [`U64Map`]: a slot per power-of-two bucket.
#[derive(Clone, Debug, Default)]
struct HashIndex {
    /// `key + 1` per slot, 0 = empty.
    slots: Vec<u64>,
    /// Index into `items` per slot.
    at: Vec<u32>,
}

impl HashIndex {
    #[inline]
    fn slot_of(&self, key: u64) -> (usize, bool) {
        let mask = self.slots.len() - 1;
        let mut i = (hash(key) >> 32) as usize & mask;
        loop {
            let s = self.slots[i];
            if s == 0 {
                return (i, false);
            }
            if s == key + 1 {
                return (i, true);
            }
            i = (i + 1) & mask;
        }
    }
}

/// Entries kept without a hash index.
pub const SMALL: usize = 8;

#[inline]
fn hash(k: u64) -> u64 {
    (k ^ (k >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

impl U64Map {
    /// Index in `items` of `key`. The linear search of small maps is inlined; the hashed
    /// lookup is not (large sets are rare).
    #[inline(always)]
    fn position(&self, key: u64) -> Option<usize> {
        if self.hashed {
            self.hashed_position(key)
        } else {
            self.items.iter().position(|e| e.0 == key)
        }
    }

    #[inline(never)]
    fn hashed_position(&self, key: u64) -> Option<usize> {
        let h = self.index.as_ref()?;
        match h.slot_of(key) {
            (i, true) => Some(h.at[i] as usize),
            _ => None,
        }
    }

    /// Number of keys.
    #[inline]
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether there are no keys.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Whether `key` is present.
    #[inline(always)]
    pub fn contains(&self, key: u64) -> bool {
        self.position(key).is_some()
    }

    /// The value of `key`.
    #[inline(always)]
    pub fn get(&self, key: u64) -> Option<u64> {
        self.position(key).map(|i| self.items[i].1)
    }

    /// Inserts or overwrites; returns true when `key` was new.
    #[inline(always)]
    pub fn insert(&mut self, key: u64, value: u64) -> bool {
        match self.position(key) {
            Some(i) => {
                self.items[i].1 = value;
                false
            }
            None => {
                self.push_new(key, value);
                true
            }
        }
    }

    /// ORs `bits` into the value of `key` (inserting it with value `bits` when absent);
    /// returns the previous value (0 when absent).
    #[inline(always)]
    pub fn or_insert(&mut self, key: u64, bits: u64) -> u64 {
        match self.position(key) {
            Some(i) => {
                let e = &mut self.items[i].1;
                let old = *e;
                *e |= bits;
                old
            }
            None => {
                self.push_new(key, bits);
                0
            }
        }
    }

    /// Appends `key`, known to be absent.
    #[inline(always)]
    fn push_new(&mut self, key: u64, value: u64) {
        if !self.hashed && self.items.len() < SMALL {
            self.items.push((key, value));
        } else {
            self.push_new_slow(key, value);
        }
    }

    #[inline(never)]
    fn push_new_slow(&mut self, key: u64, value: u64) {
        self.items.push((key, value));
        if !self.hashed {
            // Just grew past SMALL.
            self.rebuild(64);
            return;
        }
        let n = self.items.len();
        let h = self.index.as_mut().expect("a hashed map has an index");
        let (i, found) = h.slot_of(key);
        debug_assert!(!found);
        h.slots[i] = key + 1;
        h.at[i] = (n - 1) as u32;
        if n * 2 > h.slots.len() {
            let grown = h.slots.len() * 2;
            self.rebuild(grown);
        }
    }

    fn rebuild(&mut self, n: usize) {
        let h = self.index.get_or_insert_with(Box::default);
        let n = n.max(h.slots.len());
        h.slots.clear();
        h.slots.resize(n, 0);
        h.at.clear();
        h.at.resize(n, 0);
        for (j, &(k, _)) in self.items.iter().enumerate() {
            let (i, _) = h.slot_of(k);
            h.slots[i] = k + 1;
            h.at[i] = j as u32;
        }
        self.hashed = true;
    }

    /// Removes every key, keeping the allocations.
    #[inline(always)]
    pub fn clear(&mut self) {
        if self.hashed {
            self.clear_index();
        }
        self.items.clear();
    }

    #[inline(never)]
    fn clear_index(&mut self) {
        // Zeroing only the used slots while probing would break probe chains: fill.
        if let Some(h) = &mut self.index {
            h.slots.iter_mut().for_each(|s| *s = 0);
        }
        self.hashed = false;
    }

    /// Entries in insertion order.
    #[inline]
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (u64, u64)> + '_ {
        self.items.iter().copied()
    }

    /// Keys in insertion order.
    #[inline]
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = u64> + '_ {
        self.items.iter().map(|&(k, _)| k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn behaves_like_a_btreemap(ops in proptest::collection::vec((0u64..64, 0u64..5, any::<bool>()), 0..300)) {
            let mut m = U64Map::default();
            let mut model = std::collections::BTreeMap::new();
            for (k, v, clear) in ops {
                if clear && v == 0 {
                    m.clear();
                    model.clear();
                } else if clear {
                    let old = model.get(&k).copied();
                    model.insert(k, old.unwrap_or(0) | v);
                    prop_assert_eq!(m.or_insert(k, v), old.unwrap_or(0));
                } else {
                    prop_assert_eq!(m.insert(k, v), model.insert(k, v).is_none());
                }
                prop_assert_eq!(m.len(), model.len());
                prop_assert_eq!(m.get(k), model.get(&k).copied());
            }
            for (k, v) in &model {
                prop_assert_eq!(m.get(*k), Some(*v));
            }
        }
    }
}
