//! genome: STAMP's gene sequencing application.
//!
//! A gene is rebuilt from many short, overlapping, partly duplicated
//! segments read off it. Three phases:
//!
//! 1. **Deduplicate** (parallel): every thread inserts its share of the
//!    segments into a shared set, [`DEDUP_BATCH`] per transaction; the
//!    segments a thread's transactions added are unique, and the unique
//!    segments, numbered, are what the next phase works on.
//! 2. **Match** (parallel): for overlap lengths from `s-1` down to 1, every
//!    segment without a predecessor registers under its length-`l` prefix
//!    in that length's table; then (after a barrier) every segment without
//!    a successor looks its length-`l` suffix up and, in one transaction,
//!    links to a registered segment that is still unpreceded and does not
//!    start its own chain (each chain's start knows its end and vice
//!    versa, so links never close a cycle).
//! 3. **Reassemble** (sequential): from the one unpreceded segment, follow
//!    the links, appending each successor minus its overlap.
//!
//! Variants: `seq` uses `std`'s `HashSet` and `HashMap`; `typed` the set
//! and prefix tables as `THashMap`s and the link state in `TArray`s (the
//! `typed` module's docs say why each); `words` the same algorithm over one
//! `TWords` arena of chained hash tables, so a transaction tracks every
//! word its list walks read. Verification: the rebuilt sequence is the
//! gene, and the number of unique segments is the sequential run's.

mod assemble;
mod gene;
mod parallel;
mod seq;
mod typed;
mod words;

use std::sync::OnceLock;

use crate::{timed, App, Input, Measured, Variant};
pub use assemble::{reassemble, verify, Outcome};
pub use gene::{Gene, Segment, MAX_SEGMENT};
pub use parallel::DEDUP_BATCH;

/// The parameters of a genome input, as STAMP's arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// Gene length in nucleotides (`-g`).
    pub gene_len: usize,
    /// Segment length in nucleotides (`-s`, 2..=64).
    pub segment_len: usize,
    /// Number of segments (`-n`; at least those covering the gene).
    pub segments: usize,
    /// Seed of the generator.
    pub seed: u64,
}

impl Params {
    /// The inputs: `paper` is the STO thesis' `-g16384 -s64 -n16777217`;
    /// `dev` is `-g256 -s16 -n4096`.
    pub fn of(input: Input) -> Params {
        let (gene_len, segment_len, segments) = match input {
            Input::Paper => (16_384, 64, 16_777_217),
            Input::Dev => (256, 16, 4_096),
        };
        Params {
            gene_len,
            segment_len,
            segments,
            seed: 1,
        }
    }

    /// An upper bound on the unique segments: no more than the segments,
    /// nor than the gene's start positions.
    fn max_unique(&self, segments: usize) -> usize {
        segments.min(self.gene_len - self.segment_len + 1)
    }
}

/// genome with its gene and segments generated.
pub struct Genome {
    params: Params,
    gene: Gene,
    /// The sequential run's count of unique segments, computed once.
    expected_uniques: OnceLock<usize>,
}

impl Genome {
    /// Generates the gene and segments of `params`.
    pub fn new(params: Params) -> Genome {
        Genome {
            gene: Gene::generate(
                params.gene_len,
                params.segment_len,
                params.segments,
                params.seed,
            ),
            params,
            expected_uniques: OnceLock::new(),
        }
    }

    /// The generated input.
    pub fn gene(&self) -> &Gene {
        &self.gene
    }

    fn expected_uniques(&self) -> usize {
        *self
            .expected_uniques
            .get_or_init(|| seq::sequence(&self.gene.segments).uniques.len())
    }
}

impl App for Genome {
    fn name(&self) -> &'static str {
        "genome"
    }

    fn variants(&self) -> &'static [Variant] {
        &[Variant::Seq, Variant::Typed, Variant::Words]
    }

    fn describe(&self) -> String {
        let p = &self.params;
        format!(
            "-g{} -s{} -n{} ({} segments generated, seed {})",
            p.gene_len,
            p.segment_len,
            p.segments,
            self.gene.segments.len(),
            p.seed
        )
    }

    fn run(&self, variant: Variant, threads: usize) -> Result<Measured, String> {
        let segments = &self.gene.segments;
        let (len, max_unique) = (
            self.params.segment_len,
            self.params.max_unique(segments.len()),
        );
        // Shared state is allocated before measuring, as STAMP allocates
        // its tables before its timer; reassembly is measured, as STAMP's
        // sequencer includes it.
        let phases = |run: &dyn Fn() -> Outcome| {
            timed(|| {
                let outcome = run();
                let rebuilt = reassemble(&outcome);
                (outcome, rebuilt)
            })
        };
        let ((outcome, rebuilt), measured) = match variant {
            Variant::Seq => phases(&|| seq::sequence(segments)),
            Variant::Typed => {
                let shared = typed::Typed::new(max_unique, len);
                phases(&|| parallel::sequence(&shared, segments, threads))
            }
            Variant::Words => {
                let shared = words::Words::new(max_unique, len, threads);
                phases(&|| parallel::sequence(&shared, segments, threads))
            }
            Variant::TypedPlus => return Err("genome has no typed-plus variant".into()),
        };
        verify(
            &rebuilt?,
            &self.gene.codes,
            outcome.uniques.len(),
            self.expected_uniques(),
        )?;
        Ok(measured)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_segments_link_at_shorter_overlaps() {
        // Too few segments to cover every start position: gaps leave some
        // segments to link at shorter overlaps, after the longest level.
        let app = Genome::new(Params {
            gene_len: 2048,
            segment_len: 32,
            segments: 4096,
            seed: 3,
        });
        let outcome = seq::sequence(&app.gene().segments);
        let overlaps: Vec<usize> = outcome
            .links
            .iter()
            .filter_map(|&l| parallel::unpack_link(l).map(|(_, o)| o))
            .collect();
        assert!(overlaps.iter().any(|&o| o < 30), "no short overlap");
        for (variant, threads) in [(Variant::Seq, 1), (Variant::Typed, 4), (Variant::Words, 4)] {
            app.run(variant, threads)
                .unwrap_or_else(|e| panic!("{variant} x{threads}: {e}"));
        }
    }

    #[test]
    fn verification_catches_a_wrong_reassembly() {
        let app = Genome::new(Params::of(Input::Dev));
        let gene = &app.gene().codes;
        let n = app.expected_uniques();
        assert!(verify(gene, gene, n, n).is_ok());
        let mut wrong = gene.clone();
        wrong[100] ^= 1;
        assert!(verify(&wrong, gene, n, n).is_err());
        assert!(verify(&gene[1..], gene, n, n).is_err());
        assert!(verify(gene, gene, n - 1, n).is_err());
    }

    #[test]
    fn reassembly_refuses_broken_links() {
        let app = Genome::new(Params::of(Input::Dev));
        let mut outcome = seq::sequence(&app.gene().segments);
        assert_eq!(reassemble(&outcome).as_ref(), Ok(&app.gene().codes));
        // Cut one link: two chains.
        let cut = outcome.links.iter().position(|&l| l != 0).unwrap();
        outcome.links[cut] = 0;
        assert!(reassemble(&outcome).is_err());
    }

    #[test]
    fn the_generator_is_deterministic_and_covers_the_gene() {
        let a = Gene::generate(300, 20, 500, 7);
        assert_eq!(a, Gene::generate(300, 20, 500, 7));
        assert_ne!(a.codes, Gene::generate(300, 20, 500, 8).codes);
        assert_eq!(a.codes.len(), 300);
        assert_eq!(a.segments.len(), 500);
        assert!(a.segments.iter().all(|s| s.len == 20));
        // The first segment starts the gene; one ends it.
        let last = Segment::pack(&a.codes[280..]);
        assert_eq!(a.segments[0], Segment::pack(&a.codes[..20]));
        assert!(a.segments.contains(&last));
    }

    #[test]
    fn segments_pack_prefixes_and_suffixes() {
        let codes: Vec<u8> = (0..64).map(|i| (i * 7 % 4) as u8).collect();
        let s = Segment::pack(&codes);
        assert!((0..64).all(|i| s.code(i) == codes[i]));
        assert_eq!(s.prefix(64), s.bits);
        assert_eq!(s.suffix(64), s.bits);
        assert_eq!(s.prefix(5), Segment::pack(&codes[..5]).bits);
        assert_eq!(s.suffix(5), Segment::pack(&codes[59..]).bits);
    }
}
