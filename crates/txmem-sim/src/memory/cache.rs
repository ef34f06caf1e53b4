//! A set-associative cache with true LRU replacement, holding only tags (values live in
//! [`Memory`](super::values::Memory); coherence state lives in the protocol).

/// Tags of a set-associative cache, stored flat: `sets * ways` entries.
#[derive(Clone, Debug)]
pub struct SetAssocCache {
    ways: usize,
    set_mask: u64,
    /// `line + 1` per way; 0 means invalid.
    tags: Vec<u64>,
    /// Last-use stamp per way.
    stamps: Vec<u64>,
    clock: u64,
}

impl SetAssocCache {
    /// A cache of `lines` lines in `ways`-way sets (`lines / ways` must be a power of two).
    pub fn new(lines: usize, ways: usize) -> Self {
        let sets = lines / ways;
        debug_assert!(sets.is_power_of_two());
        SetAssocCache {
            ways,
            set_mask: sets as u64 - 1,
            tags: vec![0; lines],
            stamps: vec![0; lines],
            clock: 0,
        }
    }

    #[inline]
    fn base(&self, line: u64) -> usize {
        (line & self.set_mask) as usize * self.ways
    }

    #[inline]
    fn find(&self, line: u64) -> Option<usize> {
        let b = self.base(line);
        let tag = line + 1;
        self.tags[b..b + self.ways]
            .iter()
            .position(|&t| t == tag)
            .map(|k| b + k)
    }

    /// Whether `line` is present (no LRU update).
    #[inline]
    pub fn contains(&self, line: u64) -> bool {
        self.find(line).is_some()
    }

    /// Looks `line` up and marks it most recently used on a hit.
    #[inline]
    pub fn touch(&mut self, line: u64) -> bool {
        match self.find(line) {
            Some(i) => {
                self.clock += 1;
                self.stamps[i] = self.clock;
                true
            }
            None => false,
        }
    }

    /// The line that inserting `line` would evict (`None` if present or a way is free).
    pub fn victim(&self, line: u64) -> Option<u64> {
        if self.contains(line) {
            return None;
        }
        let b = self.base(line);
        let mut best = b;
        for i in b..b + self.ways {
            if self.tags[i] == 0 {
                return None;
            }
            if self.stamps[i] < self.stamps[best] {
                best = i;
            }
        }
        Some(self.tags[best] - 1)
    }

    /// Inserts `line` as most recently used; returns the evicted line, if any.
    #[inline]
    pub fn insert(&mut self, line: u64) -> Option<u64> {
        if self.touch(line) {
            return None;
        }
        let b = self.base(line);
        let ways = self.ways;
        // The set's ways as slices: one bounds check for the set, none per way.
        let (tags, stamps) = (&mut self.tags[b..b + ways], &mut self.stamps[b..b + ways]);
        let mut best = 0;
        for (i, (&t, &s)) in tags.iter().zip(stamps.iter()).enumerate() {
            if t == 0 {
                best = i;
                break;
            }
            if s < stamps[best] {
                best = i;
            }
        }
        let old = tags[best];
        tags[best] = line + 1;
        self.clock += 1;
        stamps[best] = self.clock;
        if old == 0 {
            None
        } else {
            Some(old - 1)
        }
    }

    /// Removes `line`; returns whether it was present.
    #[inline]
    pub fn remove(&mut self, line: u64) -> bool {
        match self.find(line) {
            Some(i) => {
                self.tags[i] = 0;
                self.stamps[i] = 0;
                true
            }
            None => false,
        }
    }

    /// Every line present (for invariant checks).
    pub fn lines(&self) -> impl Iterator<Item = u64> + '_ {
        self.tags.iter().filter(|&&t| t != 0).map(|t| t - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_evicts_least_recently_used() {
        // 2 sets x 2 ways: even lines map to set 0.
        let mut c = SetAssocCache::new(4, 2);
        assert_eq!(c.insert(0), None);
        assert_eq!(c.insert(2), None);
        assert!(c.touch(0));
        assert_eq!(c.victim(4), Some(2));
        assert_eq!(c.insert(4), Some(2));
        assert!(c.contains(0) && c.contains(4) && !c.contains(2));
        assert_eq!(c.insert(1), None);
        assert!(c.remove(0));
        assert_eq!(c.victim(6), None);
    }
}

/// A cache split into banks interleaved by line address (bank `line % banks`), each a
/// [`SetAssocCache`] indexed by the rest of the address, so every set of every bank is used.
#[derive(Clone, Debug)]
pub struct BankedCache {
    banks: Vec<SetAssocCache>,
    shift: u32,
}

impl BankedCache {
    /// `banks` banks (a power of two) sharing `lines` lines in `ways`-way sets.
    pub fn new(lines: usize, ways: usize, banks: usize) -> Self {
        debug_assert!(banks.is_power_of_two());
        BankedCache {
            banks: (0..banks)
                .map(|_| SetAssocCache::new(lines / banks, ways))
                .collect(),
            shift: banks.trailing_zeros(),
        }
    }

    #[inline]
    fn split(&self, line: u64) -> (usize, u64) {
        let mask = (1u64 << self.shift) - 1;
        ((line & mask) as usize, line >> self.shift)
    }

    /// Looks `line` up and marks it most recently used on a hit.
    #[inline]
    pub fn touch(&mut self, line: u64) -> bool {
        let (b, key) = self.split(line);
        self.banks[b].touch(key)
    }

    /// Inserts `line` as most recently used; returns the evicted line, if any.
    #[inline]
    pub fn insert(&mut self, line: u64) -> Option<u64> {
        let (b, key) = self.split(line);
        self.banks[b]
            .insert(key)
            .map(|k| (k << self.shift) | b as u64)
    }

    /// Whether `line` is present (no LRU update).
    pub fn contains(&self, line: u64) -> bool {
        let (b, key) = self.split(line);
        self.banks[b].contains(key)
    }
}

#[cfg(test)]
mod banked_tests {
    use super::*;

    #[test]
    fn banks_interleave_by_line_and_use_every_set() {
        // 4 banks of 2 sets x 1 way.
        let mut c = BankedCache::new(8, 1, 4);
        for line in 0..8 {
            assert_eq!(c.insert(line), None, "line {line} has a set of its own");
        }
        // Line 8 shares bank 0 and set 0 with line 0 only.
        assert_eq!(c.insert(8), Some(0));
        assert!(c.contains(8) && c.contains(4) && !c.contains(0));
    }
}
