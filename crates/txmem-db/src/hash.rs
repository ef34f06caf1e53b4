//! The mixing the workloads share: SplitMix64's finalizer and the hasher of
//! their hash maps.

use std::hash::{BuildHasher, Hasher};

/// SplitMix64's finalizer: a bijection on `u64` whose every output bit
/// depends on every input bit. A hash, not a generator: the generator is
/// `rand_xoshiro::SplitMix64` (its output is this of a counter stepped by
/// the golden ratio).
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The hasher of the workloads' hash maps: a multiply-rotate combine of the
/// key's words and a final avalanche ([`mix64`]), so that packed keys, which
/// differ mostly in their high bits (TPC-C's districts), and consecutive
/// record numbers (YCSB's) spread over a table's low bits. About a
/// nanosecond per key word, against tens for the standard library's
/// SipHash, which resists hash flooding that keys drawn by the workloads
/// themselves cannot attempt.
#[derive(Clone, Copy, Debug, Default)]
pub struct KeyHasher;

impl BuildHasher for KeyHasher {
    type Hasher = KeyHash;
    #[inline]
    fn build_hasher(&self) -> KeyHash {
        KeyHash(0)
    }
}

/// The state of [`KeyHasher`].
#[derive(Clone, Copy, Debug)]
pub struct KeyHash(u64);

impl Hasher for KeyHash {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.write_u64(u64::from(i));
    }
    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.write_u64(u64::from(i));
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.write_u64(u64::from(i));
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(23) ^ i).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        mix64(self.0)
    }
}
