//! The sequential variant: the same phases over `std` collections, one
//! thread, no transactions.

use std::collections::{HashMap, HashSet};

use super::gene::Segment;
use super::parallel::{pack_id, pack_link, unpack_id_or};
use super::Outcome;

/// Deduplicates and matches `segments` (the sequential baseline).
pub fn sequence(segments: &[Segment]) -> Outcome {
    // Grown as needed: the unique segments are usually far fewer than the
    // segments, and a table sized for all of them would miss the cache.
    let mut seen = HashSet::new();
    let uniques: Vec<Segment> = segments
        .iter()
        .copied()
        .filter(|&s| seen.insert(s))
        .collect();
    let n = uniques.len();
    let len = uniques.first().map_or(0, |s| usize::from(s.len));
    let mut next = vec![0u64; n];
    let mut has_prev = vec![false; n];
    // As in the shared variants: a chain's start knows its end, its end its
    // start (0 for "itself").
    let mut chain_start = vec![0u64; n];
    let mut chain_end = vec![0u64; n];
    for overlap in (1..len).rev() {
        let mut by_prefix: HashMap<u128, Vec<u32>> = HashMap::new();
        for (id, seg) in uniques.iter().enumerate() {
            if !has_prev[id] {
                by_prefix
                    .entry(seg.prefix(overlap))
                    .or_default()
                    .push(id as u32);
            }
        }
        for (a, seg) in uniques.iter().enumerate() {
            if next[a] != 0 {
                continue;
            }
            let Some(candidates) = by_prefix.get(&seg.suffix(overlap)) else {
                continue;
            };
            let start = unpack_id_or(chain_start[a], a as u32);
            let found = candidates
                .iter()
                .copied()
                .find(|&b| b != start && !has_prev[b as usize]);
            if let Some(b) = found {
                let end = unpack_id_or(chain_end[b as usize], b);
                next[a] = pack_link(b, overlap);
                has_prev[b as usize] = true;
                chain_end[start as usize] = pack_id(end);
                chain_start[end as usize] = pack_id(start);
            }
        }
    }
    Outcome {
        uniques,
        links: next,
    }
}
