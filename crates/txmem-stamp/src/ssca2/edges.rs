//! The input: a directed multigraph's edge list, generated.
//!
//! STAMP's ssca2 generates a graph of cliques joined by random edges; this
//! generator keeps its size (2^scale vertices, 8 edges per vertex on
//! average) and its skew through recursive matrix sampling (R-MAT: each
//! edge picks a quadrant of the adjacency matrix with probabilities 0.55,
//! 0.1, 0.1, 0.25, recursively, `scale` times), seeded. Edges may repeat
//! and may be loops, as in SSCA2.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// A generated edge list.
pub struct Edges {
    /// Number of vertices (a power of two).
    pub vertices: usize,
    /// Edges as (from, to) pairs.
    pub list: Vec<(u32, u32)>,
}

impl Edges {
    /// `2^scale` vertices and `per_vertex` edges per vertex, from `seed`.
    pub fn generate(scale: u32, per_vertex: usize, seed: u64) -> Edges {
        assert!((1..=30).contains(&scale), "ssca2: scale must be in 1..=30");
        let vertices = 1usize << scale;
        let mut rng = SmallRng::seed_from_u64(seed);
        let list = (0..vertices * per_vertex)
            .map(|_| {
                let (mut from, mut to) = (0u32, 0u32);
                for _ in 0..scale {
                    let r: f64 = rng.random();
                    let (f, t) = match r {
                        r if r < 0.55 => (0, 0),
                        r if r < 0.65 => (0, 1),
                        r if r < 0.75 => (1, 0),
                        _ => (1, 1),
                    };
                    from = from << 1 | f;
                    to = to << 1 | t;
                }
                (from, to)
            })
            .collect();
        Edges { vertices, list }
    }
}
