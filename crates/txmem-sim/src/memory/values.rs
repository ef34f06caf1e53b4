//! Simulated main memory: real 64-bit values at byte addresses, plus a bump allocator.

/// Simulated memory. Addresses are byte addresses; every access is one aligned 8-byte word.
#[derive(Clone, Debug)]
pub struct Memory {
    words: Vec<u64>,
    next_free: u64,
}

impl Memory {
    /// Zero-filled memory of `bytes` bytes (a multiple of 8).
    pub fn new(bytes: u64) -> Self {
        Memory {
            words: vec![0; (bytes / 8) as usize],
            next_free: 0,
        }
    }

    /// Size in bytes.
    pub fn size_bytes(&self) -> u64 {
        self.words.len() as u64 * 8
    }

    /// Index of the word at `addr`, or a message saying why the address is invalid.
    #[inline]
    pub fn word_index(&self, addr: u64) -> Result<usize, String> {
        if !addr.is_multiple_of(8) {
            return Err(format!(
                "simulated access to unaligned address {addr:#x} (must be 8-byte aligned)"
            ));
        }
        let w = (addr / 8) as usize;
        if w >= self.words.len() {
            return Err(format!(
                "simulated access to address {addr:#x} outside memory of {} bytes",
                self.size_bytes()
            ));
        }
        Ok(w)
    }

    /// The word at index `w`.
    #[inline]
    pub fn get(&self, w: usize) -> u64 {
        self.words[w]
    }

    /// Sets the word at index `w`.
    #[inline]
    pub fn set(&mut self, w: usize, v: u64) {
        self.words[w] = v;
    }

    /// Reserves `bytes` bytes aligned to `align` (a power of two), or `None` when memory is full.
    pub fn alloc(&mut self, bytes: u64, align: u64) -> Option<u64> {
        let align = align.max(8);
        let start = self.next_free.checked_add(align - 1)? & !(align - 1);
        let end = start.checked_add(bytes.max(8).next_multiple_of(8))?;
        if end > self.size_bytes() {
            return None;
        }
        self.next_free = end;
        Some(start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alloc_aligns_and_runs_out() {
        let mut m = Memory::new(256);
        assert_eq!(m.alloc(8, 8), Some(0));
        assert_eq!(m.alloc(8, 64), Some(64));
        assert_eq!(m.alloc(100, 64), Some(128));
        assert_eq!(m.alloc(32, 8), None);
        assert!(m.word_index(3).is_err());
        assert!(m.word_index(256).is_err());
        assert_eq!(m.word_index(16), Ok(2));
    }
}
