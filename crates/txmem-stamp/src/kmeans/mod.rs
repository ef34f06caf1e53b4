//! kmeans: STAMP's clustering application.
//!
//! Points are assigned to the nearest of `k` centres; each thread takes a
//! contiguous share of the points and adds each point to its cluster's
//! running totals in a transaction of its own (the only shared writes);
//! once every thread is done, the new centres are the totals' means. The
//! rounds repeat until fewer than `threshold` of the points change cluster
//! (or 500 rounds, STAMP's limit).
//!
//! Variants: `typed` keeps each total in a `TCounter` (adds commute; a
//! point is `dims + 1` items); `words` in `TWords` (each total read and
//! written back); `typed-plus` makes a cluster's totals one
//! [`ClusterTotals`] object whose additions commute (a point is one item).
//!
//! Totals are exact integers (see [`Points`]), so every variant at every
//! thread count computes the same centres and memberships as the
//! sequential run, bit for bit: that is the verification.
//!
//! The input is generated ([`Kmeans::new`]) or read from a file in STAMP's
//! text format ([`Kmeans::load`]); a file gives only the points, and the
//! clusters and threshold are then the `paper` input's.
//!
//! Unlike STAMP, the initial centres are points spread evenly through the
//! input rather than random ones, the points are never z-score transformed
//! (STAMP's `-z`), and one cluster count is run (STAMP's `-m` equal to
//! `-n`).

mod accumulate;
mod cluster;
mod points;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::thread;

use crate::{chunk, timed, App, Input, Measured, Variant};
use accumulate::{Counters, Totals, Words};
pub use cluster::ClusterTotals;
use cluster::Clusters;
pub use points::Points;
use points::SCALE_BITS;

/// STAMP's cap on rounds.
const MAX_ROUNDS: usize = 500;

/// The parameters of a kmeans input.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// Points.
    pub points: usize,
    /// Dimensions.
    pub dims: usize,
    /// Hidden centres the points are drawn around (generated inputs).
    pub blobs: usize,
    /// Clusters to find (STAMP's `-m` and `-n`, here equal).
    pub clusters: usize,
    /// Stop once fewer than this fraction of the points change cluster
    /// (`-t`).
    pub threshold: f64,
    /// Seed of the generator (generated inputs).
    pub seed: u64,
}

impl Params {
    /// The inputs: `paper` is the STO thesis' `-m160 -n160 -t0.01` on
    /// 262,144 points of 32 dimensions around 16 centres; `dev` is small.
    pub fn of(input: Input) -> Params {
        match input {
            Input::Paper => Params {
                points: 262_144,
                dims: 32,
                blobs: 16,
                clusters: 160,
                threshold: 0.01,
                seed: 1,
            },
            Input::Dev => Params {
                points: 4_096,
                dims: 8,
                blobs: 4,
                clusters: 16,
                threshold: 0.01,
                seed: 1,
            },
        }
    }
}

/// The result of a clustering.
#[derive(Clone, Debug, PartialEq)]
pub struct Clustering {
    /// The centres, `centres[k * dims + d]`.
    pub centres: Vec<f64>,
    /// Each point's cluster.
    pub membership: Vec<u32>,
    /// Rounds run.
    pub rounds: usize,
}

/// kmeans with its points generated or read.
pub struct Kmeans {
    params: Params,
    points: Points,
    /// The file the points were read from, if they were.
    file: Option<PathBuf>,
    /// The sequential answer, computed at the first verification.
    expected: OnceLock<Clustering>,
}

impl Kmeans {
    /// Generates the points of `params`.
    pub fn new(params: Params) -> Kmeans {
        assert!(
            params.clusters > 0 && params.clusters <= params.points,
            "kmeans: need 1..=points clusters"
        );
        let points = Points::generate(params.points, params.dims, params.blobs, params.seed);
        Kmeans::with_points(params, points, None)
    }

    fn with_points(params: Params, points: Points, file: Option<PathBuf>) -> Kmeans {
        Kmeans {
            params,
            points,
            file,
            expected: OnceLock::new(),
        }
    }

    /// Reads the points from `path` (STAMP's text format, see
    /// [`Points::read`]) and clusters them with the `paper` input's
    /// clusters and threshold.
    pub fn load(path: &Path) -> Result<Kmeans, String> {
        let points = Points::read(path)?;
        let paper = Params::of(Input::Paper);
        if points.len() < paper.clusters {
            return Err(format!(
                "{}: {} points, fewer than the {} clusters to find",
                path.display(),
                points.len(),
                paper.clusters
            ));
        }
        let params = Params {
            points: points.len(),
            dims: points.dims,
            blobs: 0,
            seed: 0,
            ..paper
        };
        Ok(Kmeans::with_points(
            params,
            points,
            Some(path.to_path_buf()),
        ))
    }

    /// Clusters the points with `threads` threads adding to `totals` (or,
    /// with `None`, sequentially into plain vectors).
    pub fn cluster(&self, totals: Option<&mut dyn Totals>, threads: usize) -> Clustering {
        let p = &self.params;
        let n = self.points.len();
        // Initial centres: `clusters` points spread evenly through the input.
        let mut centres: Vec<f64> = (0..p.clusters)
            .flat_map(|k| self.points.point(k * n / p.clusters).to_vec())
            .map(to_float)
            .collect();
        let mut membership = vec![u32::MAX; n];
        let mut totals = totals;
        let mut rounds = 0;
        while rounds < MAX_ROUNDS {
            rounds += 1;
            let (delta, counts, sums) = match totals.as_deref_mut() {
                None => self.round_seq(&centres, &mut membership),
                Some(t) => self.round_parallel(&centres, &mut membership, t, threads),
            };
            for k in 0..p.clusters {
                if counts[k] > 0 {
                    for d in 0..p.dims {
                        centres[k * p.dims + d] = to_float(sums[k * p.dims + d]) / counts[k] as f64;
                    }
                }
            }
            if (delta as f64) < p.threshold * n as f64 {
                break;
            }
        }
        Clustering {
            centres,
            membership,
            rounds,
        }
    }

    /// One round, sequentially: changed memberships, counts and sums.
    fn round_seq(&self, centres: &[f64], membership: &mut [u32]) -> (usize, Vec<i64>, Vec<i64>) {
        let (k, dims) = (self.params.clusters, self.params.dims);
        let mut counts = vec![0i64; k];
        let mut sums = vec![0i64; k * dims];
        let mut delta = 0;
        let mut x = vec![0.0; dims];
        for (i, m) in membership.iter_mut().enumerate() {
            let p = self.points.point(i);
            let c = nearest(centres, p, &mut x);
            delta += usize::from(*m != c as u32);
            *m = c as u32;
            counts[c] += 1;
            for (s, &x) in sums[c * dims..(c + 1) * dims].iter_mut().zip(p) {
                *s += x;
            }
        }
        (delta, counts, sums)
    }

    /// One round on `threads` threads, each point added to `totals` in a
    /// transaction of its own.
    fn round_parallel(
        &self,
        centres: &[f64],
        membership: &mut [u32],
        totals: &mut dyn Totals,
        threads: usize,
    ) -> (usize, Vec<i64>, Vec<i64>) {
        let dims = self.params.dims;
        let n = membership.len();
        let shared: &dyn Totals = totals;
        let delta = thread::scope(|s| {
            let mut rest = membership;
            let mut handles = Vec::new();
            for t in 0..threads {
                let range = chunk(n, threads, t);
                let (mine, tail) = rest.split_at_mut(range.len());
                rest = tail;
                handles.push(s.spawn(move || {
                    let mut delta = 0;
                    let mut x = vec![0.0; dims];
                    for (m, i) in mine.iter_mut().zip(range) {
                        let p = self.points.point(i);
                        let c = nearest(centres, p, &mut x);
                        delta += usize::from(*m != c as u32);
                        *m = c as u32;
                        shared.add(c, p);
                    }
                    delta
                }));
            }
            handles
                .into_iter()
                .map(|h| h.join().expect("a kmeans thread panicked"))
                .sum()
        });
        let (counts, sums) = totals.drain();
        (delta, counts, sums)
    }

    fn expected(&self) -> &Clustering {
        self.expected.get_or_init(|| self.cluster(None, 1))
    }
}

/// The index of the centre nearest to `p` (the first of equals). `x` is scratch room for
/// `p`'s coordinates as floats (one per dimension), converted once rather than once per
/// centre.
fn nearest(centres: &[f64], p: &[i64], x: &mut [f64]) -> usize {
    for (x, &q) in x.iter_mut().zip(p) {
        *x = to_float(q);
    }
    let mut best = (f64::INFINITY, 0);
    for (k, c) in centres.chunks_exact(x.len()).enumerate() {
        let dist = squared_distance(c, x);
        if dist < best.0 {
            best = (dist, k);
        }
    }
    best.1
}

/// The squared Euclidean distance of `a` and `b`, summed in four running sums: floating-point
/// addition is not associative, so with one sum the compiler must add the squares one after
/// another; four independent sums keep four lanes busy.
fn squared_distance(a: &[f64], b: &[f64]) -> f64 {
    let mut sums = [0.0f64; 4];
    let (a4, a_rest) = a.split_at(a.len() / 4 * 4);
    let (b4, b_rest) = b.split_at(a4.len());
    for (a, b) in a4.chunks_exact(4).zip(b4.chunks_exact(4)) {
        for i in 0..4 {
            let d = a[i] - b[i];
            sums[i] += d * d;
        }
    }
    for (a, b) in a_rest.iter().zip(b_rest) {
        let d = a - b;
        sums[0] += d * d;
    }
    (sums[0] + sums[1]) + (sums[2] + sums[3])
}

fn to_float(q: i64) -> f64 {
    q as f64 / f64::from(1u32 << SCALE_BITS)
}

impl App for Kmeans {
    fn name(&self) -> &'static str {
        "kmeans"
    }

    fn variants(&self) -> &'static [Variant] {
        &[
            Variant::Seq,
            Variant::Typed,
            Variant::Words,
            Variant::TypedPlus,
        ]
    }

    fn describe(&self) -> String {
        let p = &self.params;
        let from = match &self.file {
            Some(f) => format!("from {}", f.display()),
            None => format!("{} hidden centres (seed {})", p.blobs, p.seed),
        };
        format!(
            "-m{k} -n{k} -t{} on {} points, {} dimensions, {from}",
            p.threshold,
            p.points,
            p.dims,
            k = p.clusters
        )
    }

    fn run(&self, variant: Variant, threads: usize) -> Result<Measured, String> {
        let (c, d) = (self.params.clusters, self.params.dims);
        let threads = threads.max(1);
        let (got, measured) = match variant {
            Variant::Seq => timed(|| self.cluster(None, 1)),
            Variant::Typed => {
                let mut totals = Counters::new(c, d);
                timed(|| self.cluster(Some(&mut totals), threads))
            }
            Variant::Words => {
                let mut totals = Words::new(c, d);
                timed(|| self.cluster(Some(&mut totals), threads))
            }
            Variant::TypedPlus => {
                let mut totals = Clusters::new(c, d);
                timed(|| self.cluster(Some(&mut totals), threads))
            }
        };
        verify(&got, self.expected())?;
        Ok(measured)
    }
}

/// The run's clustering must be the sequential one, exactly.
fn verify(got: &Clustering, expected: &Clustering) -> Result<(), String> {
    if got.rounds != expected.rounds {
        return Err(format!(
            "kmeans: {} rounds, the sequential run took {}",
            got.rounds, expected.rounds
        ));
    }
    if let Some(i) =
        (0..got.membership.len()).find(|&i| got.membership[i] != expected.membership[i])
    {
        return Err(format!(
            "kmeans: point {i} is in cluster {}, the sequential run put it in {}",
            got.membership[i], expected.membership[i]
        ));
    }
    if got.centres != expected.centres {
        return Err("kmeans: the centres differ from the sequential run's".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every length (the four-wide part, the rest, both) against a plain sum, and the
    /// nearest centre against a search by hand.
    #[test]
    fn distances_and_the_nearest_centre() {
        for len in 0..11 {
            let a: Vec<f64> = (0..len).map(|i| i as f64 * 0.75 - 2.0).collect();
            let b: Vec<f64> = (0..len).map(|i| (i * i) as f64 * 0.125).collect();
            let plain: f64 = a.iter().zip(&b).map(|(x, y)| (x - y) * (x - y)).sum();
            let d = squared_distance(&a, &b);
            assert!(
                (d - plain).abs() <= 1e-9 * plain.max(1.0),
                "len {len}: {d} vs {plain}"
            );
        }
        let one = 1i64 << SCALE_BITS;
        // Three centres in 5 dimensions; a point as far from the first as from the second
        // goes to the first.
        let centres = [[0.0; 5], [2.0; 5], [4.0; 5]].concat();
        let mut x = [0.0; 5];
        assert_eq!(nearest(&centres, &[one * 3 / 2; 5], &mut x), 1);
        assert_eq!(nearest(&centres, &[one; 5], &mut x), 0);
        assert_eq!(nearest(&centres, &[one * 5; 5], &mut x), 2);
        assert_eq!(x, [5.0; 5]);
    }

    #[test]
    fn the_dev_input_takes_several_rounds() {
        let app = Kmeans::new(Params::of(Input::Dev));
        assert!(app.expected().rounds > 1);
    }

    #[test]
    fn verification_catches_a_wrong_clustering() {
        let app = Kmeans::new(Params::of(Input::Dev));
        let mut wrong = app.expected().clone();
        wrong.membership[17] = (wrong.membership[17] + 1) % 16;
        assert!(verify(&wrong, app.expected()).is_err());
        let mut wrong = app.expected().clone();
        wrong.centres[3] += 1e-9;
        assert!(verify(&wrong, app.expected()).is_err());
    }

    /// A path private to this test process.
    fn tmp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("txmem-stamp-kmeans-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    #[test]
    fn saved_points_load_as_the_same_input() {
        let p = Params::of(Input::Dev);
        let app = Kmeans::new(p);
        let file = tmp("dev.txt");
        app.points.write(&file).unwrap();
        let loaded = Kmeans::load(&file).unwrap();
        assert_eq!(loaded.points.coords, app.points.coords);
        assert_eq!(loaded.params.clusters, Params::of(Input::Paper).clusters);
        // At the dev input's clusters, the same clustering.
        let again = Kmeans::with_points(p, Points::read(&file).unwrap(), None);
        assert_eq!(again.cluster(None, 1), app.cluster(None, 1));
    }

    #[test]
    fn loading_needs_as_many_points_as_clusters() {
        let file = tmp("few.txt");
        std::fs::write(&file, "1 0.5\n2 0.25\n").unwrap();
        let err = Kmeans::load(&file).err().unwrap();
        assert!(
            err.contains("2 points, fewer than the 160 clusters"),
            "{err}"
        );
    }

    #[test]
    fn the_generator_is_deterministic() {
        let p = Params::of(Input::Dev);
        assert_eq!(
            Points::generate(100, 4, 3, p.seed).coords,
            Points::generate(100, 4, 3, p.seed).coords
        );
        assert_ne!(
            Points::generate(100, 4, 3, 1).coords,
            Points::generate(100, 4, 3, 2).coords
        );
    }
}
