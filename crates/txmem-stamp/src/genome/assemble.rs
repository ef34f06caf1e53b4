//! Phase 3 (sequential, in every variant) and the verification: follow the
//! links from the one segment without a predecessor, then compare with the
//! gene.

use super::gene::Segment;
use super::parallel::unpack_link;

/// What phases 1 and 2 leave: the unique segments (numbered by position)
/// and each one's successor link, packed as
/// `(id + 1) << 8 | overlap`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The unique segments.
    pub uniques: Vec<Segment>,
    /// `links[i]`: segment `i`'s successor and their overlap, 0 for none.
    pub links: Vec<u64>,
}

/// Rebuilds the sequence the links describe: the unpreceded segment in
/// full, then each successor without its overlap. `Err` if there is not
/// exactly one unpreceded segment or a link is malformed.
pub fn reassemble(outcome: &Outcome) -> Result<Vec<u8>, String> {
    let n = outcome.uniques.len();
    let mut preceded = vec![false; n];
    for &word in &outcome.links {
        if let Some((b, _)) = unpack_link(word) {
            let seen = preceded
                .get_mut(b as usize)
                .ok_or_else(|| format!("genome: a link points past the {n} segments"))?;
            if std::mem::replace(seen, true) {
                return Err(format!("genome: segment {b} has two predecessors"));
            }
        }
    }
    let starts: Vec<usize> = (0..n).filter(|&i| !preceded[i]).collect();
    let &[first] = starts.as_slice() else {
        return Err(format!(
            "genome: {} chains after matching (expected 1)",
            starts.len()
        ));
    };
    let seg = outcome.uniques[first];
    let mut out: Vec<u8> = (0..usize::from(seg.len)).map(|i| seg.code(i)).collect();
    let mut at = first;
    // One chain through distinct predecessors visits each segment once, so
    // this ends; the bound only guards against a malformed outcome.
    for _ in 1..n {
        let Some((b, overlap)) = unpack_link(outcome.links[at]) else {
            break;
        };
        let seg = outcome.uniques[b as usize];
        out.extend((overlap..usize::from(seg.len)).map(|i| seg.code(i)));
        at = b as usize;
    }
    Ok(out)
}

/// The check of every run: the rebuilt sequence is the gene, and the run
/// found as many unique segments as the sequential run.
pub fn verify(
    rebuilt: &[u8],
    gene: &[u8],
    uniques: usize,
    expected_uniques: usize,
) -> Result<(), String> {
    if uniques != expected_uniques {
        return Err(format!(
            "genome: {uniques} unique segments, the sequential run found {expected_uniques}"
        ));
    }
    if rebuilt.len() != gene.len() {
        return Err(format!(
            "genome: rebuilt {} nucleotides, the gene has {}",
            rebuilt.len(),
            gene.len()
        ));
    }
    if let Some(i) = rebuilt.iter().zip(gene).position(|(a, b)| a != b) {
        return Err(format!(
            "genome: the rebuilt gene differs at nucleotide {i}"
        ));
    }
    Ok(())
}
