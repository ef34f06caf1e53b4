//! The input: a random gene and the segments sampled from it, seeded.

use std::collections::HashSet;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// The longest segment a [`Segment`] can hold: 64 nucleotides of 2 bits
/// fill a `u128`.
pub const MAX_SEGMENT: usize = 64;

/// The four nucleotides, by their 2-bit codes.
pub const NUCLEOTIDES: [char; 4] = ['A', 'C', 'G', 'T'];

/// A string of up to [`MAX_SEGMENT`] nucleotides packed 2 bits each:
/// nucleotide `i` sits in bits `2i..2i + 2`, so a prefix is a mask of the
/// low bits and a suffix a right shift (both cheap, and both again valid
/// packed strings that hash and compare as plain integers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Segment {
    /// The packed nucleotides; bits beyond `2 * len` are zero.
    pub bits: u128,
    /// The number of nucleotides.
    pub len: u8,
}

impl Segment {
    /// Packs `codes` (each 0..4) into a segment.
    ///
    /// # Panics
    /// If there are more than [`MAX_SEGMENT`] codes.
    pub fn pack(codes: &[u8]) -> Segment {
        assert!(codes.len() <= MAX_SEGMENT, "genome: segment too long");
        let bits = codes
            .iter()
            .enumerate()
            .fold(0u128, |b, (i, &c)| b | u128::from(c & 3) << (2 * i));
        Segment {
            bits,
            len: codes.len() as u8,
        }
    }

    /// The code (0..4) of nucleotide `i`.
    pub fn code(self, i: usize) -> u8 {
        (self.bits >> (2 * i)) as u8 & 3
    }

    /// The first `n` nucleotides, packed.
    pub fn prefix(self, n: usize) -> u128 {
        if n >= MAX_SEGMENT {
            self.bits
        } else {
            self.bits & ((1u128 << (2 * n)) - 1)
        }
    }

    /// The last `n` nucleotides, packed (nucleotide `len - n` first).
    pub fn suffix(self, n: usize) -> u128 {
        self.bits >> (2 * (usize::from(self.len) - n))
    }
}

/// A generated gene and the segments sequenced from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gene {
    /// The gene's nucleotide codes (0..4).
    pub codes: Vec<u8>,
    /// The segments, each `segment_len` long, in generation order
    /// (duplicates included, as a sequencing machine reads them).
    pub segments: Vec<Segment>,
}

/// Redraws of a gene with a repeated overlap-sized substring before the
/// generator accepts one anyway (only tiny genes or segments need more).
const REDRAWS: usize = 16;

impl Gene {
    /// A gene of `length` nucleotides and `count` segments of `segment_len`
    /// nucleotides (or just the covering ones if those are more), from
    /// `seed`.
    ///
    /// The first segments start at `0, s-1, 2(s-1), ...` (and one ends at
    /// the gene's end), so that consecutive ones overlap and every position
    /// is covered; the rest start at random positions. The gene is redrawn
    /// (a few times at most) while two of its positions start the same
    /// `s-1` nucleotides: with distinct `s-1`-mers the longest overlaps
    /// name each segment's successor uniquely, so a correct sequencer
    /// rebuilds the gene exactly.
    ///
    /// # Panics
    /// If `segment_len` is not in `2..=64` or exceeds `length`.
    pub fn generate(length: usize, segment_len: usize, count: usize, seed: u64) -> Gene {
        assert!(
            (2..=MAX_SEGMENT).contains(&segment_len) && segment_len <= length,
            "genome: segment length must be in 2..=64 and at most the gene's"
        );
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut codes = Vec::new();
        for _ in 0..REDRAWS {
            codes = (0..length).map(|_| rng.random_range(0..4u8)).collect();
            if distinct_windows(&codes, segment_len - 1) {
                break;
            }
        }
        let starts = length - segment_len + 1;
        let mut covering: Vec<usize> = (0..starts).step_by(segment_len - 1).collect();
        if covering.last() != Some(&(starts - 1)) {
            covering.push(starts - 1);
        }
        let random = count.saturating_sub(covering.len());
        let segments = covering
            .into_iter()
            .chain((0..random).map(|_| rng.random_range(0..starts)))
            .map(|at| Segment::pack(&codes[at..at + segment_len]))
            .collect();
        Gene { codes, segments }
    }

    /// The gene as letters.
    pub fn letters(&self) -> String {
        self.codes
            .iter()
            .map(|&c| NUCLEOTIDES[usize::from(c)])
            .collect()
    }
}

/// True if no two positions of `codes` start the same `n` nucleotides.
fn distinct_windows(codes: &[u8], n: usize) -> bool {
    let mut seen = HashSet::new();
    codes.windows(n).all(|w| seen.insert(Segment::pack(w)))
}
