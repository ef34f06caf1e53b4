//! The input: points in `dims` dimensions around `blobs` hidden centres.
//!
//! STAMP reads its kmeans points from a text file ([`Points::read`] reads
//! the same format, [`Points::write`] writes it). The `dev` and `paper`
//! inputs are generated instead, seeded, with the shape of STAMP's inputs
//! (`n` points, `d` dimensions, `c` clusters): `blobs` centres drawn
//! uniformly in the unit cube, and each point a centre plus Gaussian noise
//! (σ = 0.1 per dimension).
//!
//! Coordinates are fixed-point: an integer count of `1 / 2^SCALE_BITS`. Sums
//! of coordinates are then exact integers whatever the order of the
//! additions, so every variant and thread count computes bit-identical
//! centres, and a run is verified by comparing it with the sequential one.

use std::io::Write;
use std::path::Path;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::files;

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

    /// Reads STAMP's text format from `path`: a point a line, an id
    /// (ignored; separated from the coordinates by spaces or tabs), then
    /// its coordinates, separated by spaces, tabs or commas; blank lines
    /// are skipped. Coordinates are rounded to the fixed point, and must be
    /// finite and below 2^20 in magnitude (so that sums stay exact).
    pub fn read(path: &Path) -> Result<Points, String> {
        Points::parse(&files::read(path)?, path)
    }

    /// Parses `text`, the contents of `path` (named in errors); see
    /// [`read`](Self::read).
    pub fn parse(text: &str, path: &Path) -> Result<Points, String> {
        const LIMIT: f64 = (1u64 << 20) as f64;
        let scale = f64::from(1u32 << SCALE_BITS);
        let mut dims = 0;
        let mut first = 0;
        let mut coords = Vec::new();
        let mut largest = 0i64;
        for (n, line) in files::lines(text) {
            // As STAMP's strtok calls: the id ends at a space or tab, the
            // coordinates also at commas.
            let line = line.trim_start_matches([' ', '\t']);
            if line.is_empty() {
                continue;
            }
            let id_end = line.find([' ', '\t']).unwrap_or(line.len());
            let before = coords.len();
            for token in line[id_end..]
                .split([' ', '\t', ','])
                .filter(|t| !t.is_empty())
            {
                let x: f64 = files::number(token, "a number").map_err(|e| files::at(path, n, e))?;
                if !x.is_finite() || x.abs() >= LIMIT {
                    return Err(files::at(
                        path,
                        n,
                        format!(
                            "coordinate {token} is not a finite number below 2^20 in magnitude"
                        ),
                    ));
                }
                let q = (x * scale).round() as i64;
                largest = largest.max(q.abs());
                coords.push(q);
            }
            let got = coords.len() - before;
            if got == 0 {
                return Err(files::at(
                    path,
                    n,
                    "a point has no coordinates after its id",
                ));
            }
            if dims == 0 {
                (dims, first) = (got, n);
            } else if got != dims {
                return Err(files::at(
                    path,
                    n,
                    format!(
                        "{got} coordinate{}, but the point on line {first} has {dims}",
                        if got == 1 { "" } else { "s" }
                    ),
                ));
            }
        }
        if dims == 0 {
            return Err(format!("{}: no points", path.display()));
        }
        let points = coords.len() / dims;
        // The totals of a cluster must fit an i64 whatever it holds.
        if (largest as i128) * (points as i128) >= 1i128 << 62 {
            return Err(format!(
                "{}: {points} points with coordinates this large would overflow the fixed-point sums",
                path.display()
            ));
        }
        Ok(Points { dims, coords })
    }

    /// Writes the points to `path` in STAMP's text format: `id x1 x2 ...`,
    /// ids from 1. Each coordinate is written exactly (the shortest decimal
    /// that reads back as the same value), so [`read`](Self::read) returns
    /// the same points.
    pub fn write(&self, path: &Path) -> Result<(), String> {
        let scale = f64::from(1u32 << SCALE_BITS);
        files::write(path, |w| {
            for i in 0..self.len() {
                write!(w, "{}", i + 1)?;
                for &q in self.point(i) {
                    write!(w, " {}", q as f64 / scale)?;
                }
                writeln!(w)?;
            }
            Ok(())
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Points, String> {
        Points::parse(text, Path::new("in.txt"))
    }

    #[test]
    fn reads_stamps_text_format() {
        // Blank lines, tabs, commas, CRLF, and an id separated by a tab.
        let p = parse("1 0.5 0.25\r\n\n  \n2\t-1,2\n3 0.000001 ,  1e-1\n").unwrap();
        assert_eq!(p.dims, 2);
        assert_eq!(p.len(), 3);
        let q = |x: f64| (x * f64::from(1u32 << SCALE_BITS)).round() as i64;
        assert_eq!(
            p.coords,
            [q(0.5), q(0.25), q(-1.0), q(2.0), q(0.000001), q(0.1)]
        );
    }

    #[test]
    fn bad_lines_are_named() {
        let cases = [
            ("1 0.5 x\n", "in.txt:1: `x` is not a number"),
            (
                "1 0.5 0.5\n2 0.5\n",
                "in.txt:2: 1 coordinate, but the point on line 1 has 2",
            ),
            (
                "1 0.5\n\n2 0.5 0.5 0.5\n",
                "in.txt:3: 3 coordinates, but the point on line 1 has 1",
            ),
            (
                "1 0.5\n7\n",
                "in.txt:2: a point has no coordinates after its id",
            ),
            (
                "1,0.5,0.5\n",
                "in.txt:1: a point has no coordinates after its id",
            ),
            ("1 inf\n", "in.txt:1: coordinate inf is not a finite number"),
            ("1 NaN\n", "in.txt:1: coordinate NaN is not a finite number"),
            (
                "1 2e6\n",
                "in.txt:1: coordinate 2e6 is not a finite number below 2^20",
            ),
            ("\n \n", "in.txt: no points"),
        ];
        for (text, want) in cases {
            let err = parse(text)
                .err()
                .unwrap_or_else(|| panic!("{text:?} parsed"));
            assert!(err.starts_with(want), "{text:?}: {err}");
        }
    }

    #[test]
    fn written_points_read_back_exactly() {
        let p = Points::generate(500, 5, 3, 9);
        let file =
            std::env::temp_dir().join(format!("txmem-stamp-points-{}.txt", std::process::id()));
        p.write(&file).unwrap();
        let q = Points::read(&file).unwrap();
        std::fs::remove_file(&file).unwrap();
        assert_eq!((q.dims, q.coords), (p.dims, p.coords));
    }
}
