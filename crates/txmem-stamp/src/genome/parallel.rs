//! The parallel sequencer, over any shared state that implements
//! [`Shared`] (the typed and the words variants): the phases, the thread
//! shares and the barriers; what a transaction does is the state's job.

use std::sync::Barrier;
use std::thread;

use super::gene::Segment;
use super::Outcome;
use crate::chunk;

/// Segments inserted into the set per transaction (STAMP's chunk size).
pub const DEDUP_BATCH: usize = 12;

/// Packs "linked to `id` with an overlap of `overlap` nucleotides" into a
/// word; 0 means no link, so zeroed memory starts unlinked.
pub fn pack_link(id: u32, overlap: usize) -> u64 {
    (u64::from(id) + 1) << 8 | overlap as u64
}

/// The `(id, overlap)` a [`pack_link`] word names, or `None` for 0.
pub fn unpack_link(word: u64) -> Option<(u32, usize)> {
    (word != 0).then(|| ((word >> 8) as u32 - 1, (word & 0xff) as usize))
}

/// A segment reference in a word: `id + 1`, 0 meaning none (or, in the
/// chain fields, the segment itself), so zeroed memory needs no setup.
pub fn pack_id(id: u32) -> u64 {
    u64::from(id) + 1
}

/// The id a [`pack_id`] word names, or `own` for 0.
pub fn unpack_id_or(word: u64, own: u32) -> u32 {
    if word == 0 {
        own
    } else {
        (word - 1) as u32
    }
}

/// The shared state of a transactional variant.
///
/// Unique segments are numbered `0..n` once deduplication is over; every
/// segment has a successor link, a predecessor, and chain information: a
/// chain's start knows its end and its end knows its start, so a link
/// never closes a cycle.
pub trait Shared: Sync {
    /// Inserts `batch` into the segment set in one transaction; returns
    /// the segments this transaction added (so each unique segment is
    /// returned once, to the thread that added it).
    fn dedup(&self, batch: &[Segment]) -> Vec<Segment>;

    /// Registers unique segment `id` under its length-`overlap` prefix
    /// `prefix`, in one transaction.
    fn register(&self, overlap: usize, prefix: u128, id: u32);

    /// In one transaction: links unique segment `id` (with no successor)
    /// to a segment registered under `suffix` at `overlap` that has no
    /// predecessor and does not start `id`'s own chain. Returns whether it
    /// linked.
    fn link(&self, overlap: usize, suffix: u128, id: u32) -> bool;

    /// True if `id` has no predecessor (committed state).
    fn unpreceded(&self, id: u32) -> bool;

    /// `id`'s successor link as [`pack_link`] packs it (committed state).
    fn successor(&self, id: u32) -> u64;
}

/// Runs deduplication and matching on `threads` threads over `shared`.
pub fn sequence<S: Shared>(shared: &S, segments: &[Segment], threads: usize) -> Outcome {
    let threads = threads.max(1);
    // Phase 1: every thread inserts its share, a batch per transaction, and
    // keeps what it added; the unique segments are their concatenation.
    let uniques: Vec<Segment> = thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    segments[chunk(segments.len(), threads, t)]
                        .chunks(DEDUP_BATCH)
                        .flat_map(|batch| shared.dedup(batch))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("genome: a dedup thread panicked"))
            .collect()
    });
    let len = uniques.first().map_or(0, |s| usize::from(s.len));
    // Phase 2: longest overlaps first, so each segment meets its true
    // successor before any shorter, accidental match.
    let barrier = Barrier::new(threads);
    thread::scope(|s| {
        for t in 0..threads {
            let (uniques, barrier) = (&uniques, &barrier);
            s.spawn(move || {
                let mine = chunk(uniques.len(), threads, t);
                for overlap in (1..len).rev() {
                    for id in mine.clone() {
                        if shared.unpreceded(id as u32) {
                            shared.register(overlap, uniques[id].prefix(overlap), id as u32);
                        }
                    }
                    barrier.wait();
                    for id in mine.clone() {
                        if shared.successor(id as u32) == 0 {
                            shared.link(overlap, uniques[id].suffix(overlap), id as u32);
                        }
                    }
                    // Registration at the next length reads the links made here.
                    barrier.wait();
                }
            });
        }
    });
    let links = (0..uniques.len() as u32)
        .map(|id| shared.successor(id))
        .collect();
    Outcome { uniques, links }
}
