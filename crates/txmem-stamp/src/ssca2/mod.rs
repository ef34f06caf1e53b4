//! ssca2: STAMP's graph kernel (SSCA2 kernel 1): build a graph's compact
//! adjacency arrays from an unsorted edge list, in parallel.
//!
//! Three steps, each thread taking a share of the edges: count every
//! vertex's out-degree (one transaction per edge: an increment); turn the
//! degrees into offsets (a prefix sum, sequential, as STAMP's is cheap);
//! place every edge (one transaction per edge: claim the next free slot of
//! its vertex, then write the edge's target there, outside the transaction,
//! into the slot now its own). Transactions are tiny and conflict only when
//! two threads touch the same vertex at once.
//!
//! Variants: `typed` counts degrees with `TCounter`s and claims slots with
//! a `TArray` of cursors; each of its transactions touches one word, so it
//! is written in txmem's single-operation form (`TCounter::add_now`,
//! `TArray::update`: a transaction of its own, committed without a
//! transaction's bookkeeping, and not counted in the statistics). `words`
//! keeps degrees and cursors in `TWords` and runs every transaction in
//! `atomically`, as STAMP's own ssca2 runs `TM_BEGIN`/`TM_END` around
//! each; STAMP's ssca2 uses no datatype, so its typed variant is this
//! one's `words`.
//! Verification: every vertex's adjacency list holds exactly its edges'
//! targets (as a multiset), as the sequential build's does.

mod edges;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;
use std::thread;

use txmem::{atomically, TArray, TCounter, TWords, WordAddr};

use crate::{chunk, timed, App, Input, Measured, Variant};
pub use edges::Edges;

/// The parameters of an ssca2 input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// `2^scale` vertices (`-s`).
    pub scale: u32,
    /// Edges per vertex, on average.
    pub per_vertex: usize,
    /// Seed of the generator.
    pub seed: u64,
}

impl Params {
    /// The inputs: `paper` is the STO thesis' `-s21` (2^21 vertices); `dev`
    /// is 2^12.
    pub fn of(input: Input) -> Params {
        Params {
            scale: match input {
                Input::Paper => 21,
                Input::Dev => 12,
            },
            per_vertex: 8,
            seed: 1,
        }
    }
}

/// A graph in compact adjacency form: vertex `v`'s targets are
/// `targets[offsets[v]..offsets[v + 1]]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Graph {
    /// Where each vertex's list starts in `targets` (one more entry than
    /// vertices: the last is the total).
    pub offsets: Vec<usize>,
    /// Every list's targets, back to back.
    pub targets: Vec<u32>,
}

/// ssca2 with its edges generated.
pub struct Ssca2 {
    params: Params,
    edges: Edges,
    expected: OnceLock<Graph>,
}

/// Where degrees are counted and slots claimed, from several threads.
trait Counts: Sync {
    /// Counts one more edge out of `v`.
    fn count(&self, v: usize);
    /// Vertex `v`'s degree, once counting is over.
    fn degree(&self, v: usize) -> usize;
    /// Claims the next free slot of `v`'s adjacency list: its index within
    /// the list.
    fn claim(&self, v: usize) -> usize;
}

/// Typed: a `TCounter` per vertex for degrees, a `TArray` of cursors.
struct Typed {
    degrees: Vec<TCounter>,
    cursors: TArray<u64>,
}

impl Counts for Typed {
    fn count(&self, v: usize) {
        self.degrees[v].add_now(1);
    }
    fn degree(&self, v: usize) -> usize {
        self.degrees[v].load() as usize
    }
    fn claim(&self, v: usize) -> usize {
        self.cursors.update(v, |c| c + 1) as usize - 1
    }
}

/// Words: degree of `v` at word `2v`, its cursor at `2v + 1`.
struct Words {
    mem: TWords,
    base: WordAddr,
}

impl Words {
    fn increment(&self, a: WordAddr) -> u64 {
        atomically(|tx| {
            let x = self.mem.read(tx, a)?;
            self.mem.write(tx, a, x + 1)?;
            Ok(x)
        })
    }
}

impl Counts for Words {
    fn count(&self, v: usize) {
        self.increment(self.base.offset(2 * v));
    }
    fn degree(&self, v: usize) -> usize {
        self.mem.load(self.base.offset(2 * v)) as usize
    }
    fn claim(&self, v: usize) -> usize {
        self.increment(self.base.offset(2 * v + 1)) as usize
    }
}

impl Ssca2 {
    /// Generates the edges of `params`.
    pub fn new(params: Params) -> Ssca2 {
        Ssca2 {
            edges: Edges::generate(params.scale, params.per_vertex, params.seed),
            params,
            expected: OnceLock::new(),
        }
    }

    /// The sequential build.
    fn build_seq(&self) -> Graph {
        let n = self.edges.vertices;
        let mut offsets = vec![0usize; n + 1];
        for &(from, _) in &self.edges.list {
            offsets[from as usize + 1] += 1;
        }
        for v in 0..n {
            offsets[v + 1] += offsets[v];
        }
        let mut cursor = offsets.clone();
        let mut targets = vec![0u32; self.edges.list.len()];
        for &(from, to) in &self.edges.list {
            targets[cursor[from as usize]] = to;
            cursor[from as usize] += 1;
        }
        Graph { offsets, targets }
    }

    /// The parallel build on `threads` threads over `counts`.
    fn build_parallel(&self, counts: &dyn Counts, threads: usize) -> Graph {
        let (n, list) = (self.edges.vertices, &self.edges.list);
        let each = |f: &(dyn Fn(u32, u32) + Sync)| {
            thread::scope(|s| {
                for t in 0..threads {
                    s.spawn(move || {
                        for &(from, to) in &list[chunk(list.len(), threads, t)] {
                            f(from, to);
                        }
                    });
                }
            })
        };
        each(&|from, _| counts.count(from as usize));
        let mut offsets = vec![0usize; n + 1];
        for v in 0..n {
            offsets[v + 1] = offsets[v] + counts.degree(v);
        }
        // Each slot is written by the one thread whose transaction claimed
        // it; the atomics only make the sharing safe to express.
        let targets: Vec<AtomicU32> = (0..list.len()).map(|_| AtomicU32::new(0)).collect();
        each(&|from, to| {
            let slot = offsets[from as usize] + counts.claim(from as usize);
            targets[slot].store(to, Ordering::Relaxed);
        });
        Graph {
            offsets,
            targets: targets.into_iter().map(AtomicU32::into_inner).collect(),
        }
    }

    fn expected(&self) -> &Graph {
        self.expected.get_or_init(|| self.build_seq())
    }
}

/// The run's graph must have the sequential one's offsets and, per vertex,
/// the same targets in some order.
fn verify(got: &Graph, expected: &Graph) -> Result<(), String> {
    if got.offsets != expected.offsets {
        let v = (0..got.offsets.len().min(expected.offsets.len()))
            .find(|&v| got.offsets[v] != expected.offsets[v])
            .unwrap_or(0);
        return Err(format!(
            "ssca2: vertex {v}'s list starts at {:?}, the sequential build's at {:?}",
            got.offsets.get(v),
            expected.offsets.get(v)
        ));
    }
    for v in 0..got.offsets.len() - 1 {
        let r = got.offsets[v]..got.offsets[v + 1];
        let mut a = got.targets[r.clone()].to_vec();
        let mut b = expected.targets[r].to_vec();
        a.sort_unstable();
        b.sort_unstable();
        if a != b {
            return Err(format!(
                "ssca2: vertex {v}'s targets differ from the sequential build's"
            ));
        }
    }
    Ok(())
}

impl App for Ssca2 {
    fn name(&self) -> &'static str {
        "ssca2"
    }

    fn variants(&self) -> &'static [Variant] {
        &[Variant::Seq, Variant::Typed, Variant::Words]
    }

    fn describe(&self) -> String {
        format!(
            "-s{} ({} vertices, {} edges; R-MAT generator, seed {})",
            self.params.scale,
            self.edges.vertices,
            self.edges.list.len(),
            self.params.seed
        )
    }

    fn run(&self, variant: Variant, threads: usize) -> Result<Measured, String> {
        let n = self.edges.vertices;
        let threads = threads.max(1);
        // The shared state is built before measuring, as STAMP allocates
        // its arrays before its timer.
        let (got, measured) = match variant {
            Variant::Seq => timed(|| self.build_seq()),
            Variant::Typed => {
                let counts = Typed {
                    degrees: (0..n).map(|_| TCounter::new(0)).collect(),
                    cursors: TArray::new(n, 0),
                };
                timed(|| self.build_parallel(&counts, threads))
            }
            Variant::Words => {
                let mem = TWords::new(2 * n);
                let base = mem.alloc(2 * n);
                let counts = Words { mem, base };
                timed(|| self.build_parallel(&counts, threads))
            }
            Variant::TypedPlus => return Err("ssca2 has no typed-plus variant".into()),
        };
        verify(&got, self.expected())?;
        Ok(measured)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verification_catches_a_misplaced_edge() {
        let app = Ssca2::new(Params::of(Input::Dev));
        let mut wrong = app.expected().clone();
        // Find a vertex with an edge and retarget it.
        let v = (0..wrong.offsets.len() - 1)
            .find(|&v| wrong.offsets[v + 1] > wrong.offsets[v])
            .unwrap();
        wrong.targets[wrong.offsets[v]] ^= 1;
        assert!(verify(&wrong, app.expected()).is_err());
    }

    #[test]
    fn the_generator_is_deterministic_and_skewed() {
        let a = Edges::generate(10, 8, 7);
        assert_eq!(a.list, Edges::generate(10, 8, 7).list);
        assert_ne!(a.list, Edges::generate(10, 8, 8).list);
        // R-MAT skew: vertex 0 (all-zero quadrant choices) is the busiest.
        let zero = a.list.iter().filter(|e| e.0 == 0).count();
        assert!(zero > 8 * 4, "vertex 0 has {zero} out-edges");
    }
}
