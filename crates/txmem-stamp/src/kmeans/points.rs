//! The input: points in `dims` dimensions around `blobs` hidden centres.
//!
//! STAMP reads its kmeans points from files made by its own generator; those
//! files are not available here, so the points are generated, seeded, with
//! the same shape (`n` points, `d` dimensions, `c` clusters): `blobs`
//! centres drawn uniformly in the unit cube, and each point a centre plus
//! Gaussian noise (σ = 0.1 per dimension).
//!
//! Coordinates are fixed-point: an integer count of `1 / 2^SCALE_BITS`. Sums
//! of coordinates are then exact integers whatever the order of the
//! additions, so every variant and thread count computes bit-identical
//! centres, and a run is verified by comparing it with the sequential one.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Fixed-point scale: a coordinate `q` stands for `q / 2^SCALE_BITS`.
pub const SCALE_BITS: u32 = 20;

/// Generated points, row-major: point `i`'s coordinates are
/// `coords[i * dims..(i + 1) * dims]`.
pub struct Points {
    /// Dimensions of each point.
    pub dims: usize,
    /// Fixed-point coordinates, row-major.
    pub coords: Vec<i64>,
}

impl Points {
    /// `n` points in `dims` dimensions around `blobs` centres, from `seed`.
    pub fn generate(n: usize, dims: usize, blobs: usize, seed: u64) -> Points {
        let mut rng = SmallRng::seed_from_u64(seed);
        let centres: Vec<f64> = (0..blobs * dims).map(|_| rng.random::<f64>()).collect();
        let mut coords = Vec::with_capacity(n * dims);
        for _ in 0..n {
            let c = rng.random_range(0..blobs);
            for d in 0..dims {
                let x = centres[c * dims + d] + 0.1 * gaussian(&mut rng);
                coords.push((x * f64::from(1u32 << SCALE_BITS)).round() as i64);
            }
        }
        Points { dims, coords }
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.coords.len() / self.dims
    }

    /// True if there are no points.
    pub fn is_empty(&self) -> bool {
        self.coords.is_empty()
    }

    /// Point `i`'s coordinates.
    pub fn point(&self, i: usize) -> &[i64] {
        &self.coords[i * self.dims..(i + 1) * self.dims]
    }
}

/// A standard normal sample (Box–Muller).
fn gaussian(rng: &mut SmallRng) -> f64 {
    let u1: f64 = rng.random::<f64>().max(f64::MIN_POSITIVE);
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}
