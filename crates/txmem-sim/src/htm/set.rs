//! A small open-addressing map from `u64` keys to `u64` values that clears in time
//! proportional to its size and keeps its allocation, for per-transaction read/write sets.

/// Map from `u64` to `u64`, insertion-ordered iteration, no allocation once warmed up.
#[derive(Clone, Debug)]
pub struct U64Map {
    /// `key + 1` per slot, 0 = empty.
    slots: Vec<u64>,
    /// Index into `items` per slot.
    index: Vec<u32>,
    items: Vec<(u64, u64)>,
}

impl Default for U64Map {
    fn default() -> Self {
        U64Map {
            slots: vec![0; 16],
            index: vec![0; 16],
            items: Vec::new(),
        }
    }
}

#[inline]
fn hash(k: u64) -> u64 {
    (k ^ (k >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

impl U64Map {
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
    #[inline]
    pub fn contains(&self, key: u64) -> bool {
        !self.items.is_empty() && self.slot_of(key).1
    }

    /// The value of `key`.
    #[inline]
    pub fn get(&self, key: u64) -> Option<u64> {
        if self.items.is_empty() {
            return None;
        }
        match self.slot_of(key) {
            (i, true) => Some(self.items[self.index[i] as usize].1),
            _ => None,
        }
    }

    /// Inserts or overwrites; returns true when `key` was new.
    pub fn insert(&mut self, key: u64, value: u64) -> bool {
        let (i, found) = self.slot_of(key);
        if found {
            self.items[self.index[i] as usize].1 = value;
            return false;
        }
        self.slots[i] = key + 1;
        self.index[i] = self.items.len() as u32;
        self.items.push((key, value));
        if self.items.len() * 2 > self.slots.len() {
            self.grow();
        }
        true
    }

    fn grow(&mut self) {
        let n = self.slots.len() * 2;
        self.slots = vec![0; n];
        self.index = vec![0; n];
        for (j, &(k, _)) in self.items.iter().enumerate() {
            let (i, _) = self.slot_of(k);
            self.slots[i] = k + 1;
            self.index[i] = j as u32;
        }
    }

    /// Removes every key, keeping the allocation.
    pub fn clear(&mut self) {
        if self.items.len() * 8 < self.slots.len() {
            for &(k, _) in &self.items {
                let (i, _) = self.slot_of(k);
                self.slots[i] = 0;
            }
        } else {
            self.slots.iter_mut().for_each(|s| *s = 0);
        }
        self.items.clear();
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
        fn behaves_like_a_btreemap(ops in proptest::collection::vec((0u64..64, 0u64..5, any::<bool>()), 0..200)) {
            let mut m = U64Map::default();
            let mut model = std::collections::BTreeMap::new();
            for (k, v, clear) in ops {
                if clear && v == 0 {
                    m.clear();
                    model.clear();
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
