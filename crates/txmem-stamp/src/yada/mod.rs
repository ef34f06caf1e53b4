//! yada: STAMP's Delaunay mesh refinement (Ruppert's algorithm).
//!
//! The input is a Delaunay triangulation of the unit square. A triangle is
//! *bad* when one of its angles is below the threshold (`-a`, 20 degrees).
//! Bad triangles wait in a shared FIFO; each thread repeatedly takes one
//! and, in one transaction, checks that it is still in the mesh, computes
//! its circumcentre, collects the *cavity* (the triangles whose
//! circumcircle contains that point, found by walking neighbours from the
//! bad triangle), replaces the cavity by the fan joining the new point to
//! the cavity's boundary, relinks the triangles around it, and queues the
//! fan's bad triangles. Transactions conflict when cavities overlap or
//! share a neighbour.
//!
//! **Input.** STAMP reads Triangle's `.node/.ele/.poly` meshes
//! (`ttimeu10000.2`); [`Yada::load`] reads them too (see [`files`]), if
//! they mesh the unit square. The `dev` and `paper` inputs are generated:
//! the Delaunay triangulation of the square's four corners and `points`
//! seeded random points inside it, built by incremental Bowyer–Watson
//! insertion with the same cavity code (see [`mesh::generate`]);
//! [`files::write`] saves one in Triangle's format.
//!
//! **Boundary rule.** The square's edges are never split (no Ruppert
//! segment splitting, where STAMP splits an encroached boundary segment
//! at its midpoint): a bad triangle whose circumcentre is not strictly
//! inside the square is left as it is. Inside the square every insertion
//! is plain Bowyer–Watson, which keeps the mesh a Delaunay triangulation of
//! the square. A cavity that floating-point rounding makes degenerate
//! (near-cocircular points) is also left as it is and reported.
//!
//! Variants: `seq` (a `HashMap` and a `VecDeque`), `typed` (a `THashMap`
//! of triangles and a `TQueue`, see [`par::Typed`]) and `words` (triangle
//! records and a linked FIFO in `TWords`, see [`par::Words`]). Vertex
//! coordinates live in an append-only arena written before they are
//! published and never changed, so they are not tracked.
//!
//! **Verification** after every run: every triangle is counter-clockwise
//! with non-zero area; neighbour links are symmetric and name the shared
//! edge; boundary edges lie on the square; every edge is locally Delaunay
//! (the neighbour's opposite vertex is not strictly inside the
//! circumcircle, up to a relative 1e-9); the areas add up to the square's;
//! and no triangle is left bad except by the boundary rule or a reported
//! degenerate cavity (in `words`, a degenerate record's address may since
//! name another triangle, which is then excused too: a small gap); and the
//! queue is empty. Which points are inserted depends on the order, so the
//! meshes of different runs are not compared.

pub mod files;
pub mod mesh;
pub mod par;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use txmem::{atomically, THashMap, TQueue};

use crate::{timed, App, Input, Measured, Variant};
use mesh::{circumcircle, on_side, orient, Pt, Quality, SeqMesh, Tri, NONE};
use par::{Arena, Typed, Words, Work};

/// The parameters of a yada input.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// Random points inside the unit square (besides its corners).
    pub points: usize,
    /// The minimum angle, in degrees (STAMP's `-a`; a mesh read from a
    /// file is refined with the `paper` input's).
    pub angle: f64,
    /// Seed of the generator.
    pub seed: u64,
}

impl Params {
    /// The inputs: `paper` is 10,000 points (the size of STAMP's
    /// `ttimeu10000.2`) with `-a20`; `dev` is 300 points.
    pub fn of(input: Input) -> Params {
        match input {
            Input::Paper => Params {
                points: 10_000,
                angle: 20.0,
                seed: 1,
            },
            Input::Dev => Params {
                points: 300,
                angle: 20.0,
                seed: 1,
            },
        }
    }
}

/// yada with its input mesh generated or read.
pub struct Yada {
    params: Params,
    quality: Quality,
    /// The input mesh (triangle ids `0..len`) with its bad triangles queued.
    init: SeqMesh,
    /// Triangles in the sequential run's result (sizes the words arena).
    seq_tris: usize,
    /// The prefix of the files the mesh was read from, if it was.
    file: Option<PathBuf>,
}

/// What verification found in a correct mesh.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Summary {
    /// Triangles in the mesh.
    pub triangles: usize,
    /// Bad triangles left by the boundary rule.
    pub bad_on_boundary: usize,
}

impl Yada {
    /// Generates the input of `params`.
    pub fn new(params: Params) -> Yada {
        let quality = Quality::new(params.angle);
        let init = mesh::generate(params.points, params.seed, &quality);
        Yada::with_mesh(params, quality, init, None)
    }

    /// Reads the mesh of `prefix` (`PREFIX.node`, `PREFIX.ele` and, if
    /// present, `PREFIX.poly`; see [`files::read`]), to be refined with
    /// the `paper` input's angle.
    pub fn load(prefix: &Path) -> Result<Yada, String> {
        let mut init = files::read(prefix)?;
        let params = Params {
            points: init.pts.len(),
            ..Params::of(Input::Paper)
        };
        let quality = Quality::new(params.angle);
        mesh::queue_bad(&mut init, &quality);
        Ok(Yada::with_mesh(
            params,
            quality,
            init,
            Some(prefix.to_path_buf()),
        ))
    }

    fn with_mesh(params: Params, quality: Quality, init: SeqMesh, file: Option<PathBuf>) -> Yada {
        let mut m = init.clone();
        mesh::refine_seq(&mut m, &quality);
        Yada {
            params,
            quality,
            seq_tris: m.tris.len(),
            init,
            file,
        }
    }

    /// The input mesh's triangles, by id.
    fn init_tris(&self) -> Vec<Tri> {
        (0..self.init.next).map(|i| self.init.tris[&i]).collect()
    }

    fn bad(&self) -> Vec<u64> {
        self.init.queue.iter().copied().collect()
    }
}

/// Checks that `tris` (over vertices `pts`) is a Delaunay triangulation of
/// the unit square refined under `q`, allowing bad triangles only by the
/// boundary rule or in `degenerate`.
pub fn verify(
    pts: &[Pt],
    tris: &HashMap<u64, Tri>,
    degenerate: &HashSet<u64>,
    q: &Quality,
) -> Result<Summary, String> {
    let point = |v: u32| {
        pts.get(v as usize)
            .copied()
            .ok_or_else(|| format!("yada: vertex {v} does not exist"))
    };
    let mut area = 0.0;
    let mut bad_on_boundary = 0;
    for (&id, t) in tris {
        let c = [point(t.v[0])?, point(t.v[1])?, point(t.v[2])?];
        let o = orient(c[0], c[1], c[2]);
        if o <= 0.0 {
            return Err(format!("yada: triangle {id} is not counter-clockwise"));
        }
        area += o / 2.0;
        let (centre, r2) = circumcircle(c[0], c[1], c[2]);
        for s in 0..3 {
            let (a, b) = (t.v[(s + 1) % 3], t.v[(s + 2) % 3]);
            let nb = t.n[s];
            if nb == NONE {
                if !on_side(point(a)?, point(b)?) {
                    return Err(format!(
                        "yada: triangle {id} has no neighbour across an interior edge"
                    ));
                }
                continue;
            }
            let u = tris
                .get(&nb)
                .ok_or_else(|| format!("yada: triangle {id} links to {nb}, not in the mesh"))?;
            let Some(j) = (0..3).find(|&j| u.n[j] == id) else {
                return Err(format!(
                    "yada: triangle {id} links to {nb}, which does not link back"
                ));
            };
            if (u.v[(j + 1) % 3], u.v[(j + 2) % 3]) != (b, a) {
                return Err(format!(
                    "yada: triangles {id} and {nb} link but share no edge"
                ));
            }
            let d = point(u.v[j])?;
            let dx = (d.0 - centre.0).powi(2) + (d.1 - centre.1).powi(2);
            if dx < r2 * (1.0 - 1e-9) {
                return Err(format!(
                    "yada: not Delaunay: a vertex of {nb} lies inside the circumcircle of {id}"
                ));
            }
        }
        if q.bad(c) {
            if q.refine_at(c).is_none() {
                bad_on_boundary += 1;
            } else if !degenerate.contains(&id) {
                return Err(format!("yada: triangle {id} is still bad"));
            }
        }
    }
    if (area - 1.0).abs() > 1e-9 {
        return Err(format!(
            "yada: the triangles cover an area of {area}, not the square's 1"
        ));
    }
    Ok(Summary {
        triangles: tris.len(),
        bad_on_boundary,
    })
}

/// The degenerate cavities of all threads.
fn degenerate(work: &[Work]) -> HashSet<u64> {
    work.iter()
        .flat_map(|w| w.degenerate.iter().copied())
        .collect()
}

impl App for Yada {
    fn name(&self) -> &'static str {
        "yada"
    }

    fn variants(&self) -> &'static [Variant] {
        &[Variant::Seq, Variant::Typed, Variant::Words]
    }

    fn describe(&self) -> String {
        let p = &self.params;
        let mesh = match &self.file {
            Some(f) => format!("mesh of {} vertices from {}", p.points, f.display()),
            None => format!(
                "Delaunay mesh of {} random points in the unit square, seed {}",
                p.points, p.seed
            ),
        };
        format!(
            "-a{} ({mesh}: {} triangles, {} bad)",
            p.angle,
            self.init.tris.len(),
            self.init.queue.len()
        )
    }

    fn run(&self, variant: Variant, threads: usize) -> Result<Measured, String> {
        let threads = threads.max(1);
        let q = &self.quality;
        let (pts, tris, degenerate, measured) = match variant {
            Variant::Seq => {
                let mut m = self.init.clone();
                let (degen, measured) = timed(|| mesh::refine_seq(&mut m, q));
                (m.pts, m.tris, degen.into_iter().collect(), measured)
            }
            Variant::Typed => {
                let init = self.init_tris();
                let s = Typed {
                    tris: THashMap::with_capacity(self.seq_tris),
                    queue: TQueue::new(),
                    pts: Arena::new(&self.init.pts),
                };
                for part in (0..init.len() as u64).collect::<Vec<_>>().chunks(256) {
                    atomically(|tx| {
                        part.iter()
                            .try_for_each(|&i| s.tris.set(tx, i, init[i as usize]))
                    });
                }
                for part in self.bad().chunks(256) {
                    atomically(|tx| part.iter().try_for_each(|&i| s.queue.push(tx, i)));
                }
                let (work, measured) = timed(|| s.run(threads, q));
                if s.queue.load_len() != 0 {
                    return Err("yada: work left in the queue".into());
                }
                let ids = (0..init.len() as u64).chain(work.iter().flat_map(|w| w.created.clone()));
                let tris = s.collect(ids);
                if tris.len() != s.tris.load_len() {
                    return Err(format!(
                        "yada: the map holds {} triangles, {} of them created by the run",
                        s.tris.load_len(),
                        tris.len()
                    ));
                }
                (s.pts.to_vec(), tris, degenerate(&work), measured)
            }
            Variant::Words => {
                let init = self.init_tris();
                // Removed records and popped nodes are reused, so room for
                // a few times the final mesh is plenty.
                let capacity = 64 + 3 * self.seq_tris * 7 + 2 * 2 * self.seq_tris;
                let (s, addr) = Words::new(capacity, &self.init.pts, &init, &self.bad());
                let (work, measured) = timed(|| s.run(threads, q));
                if !s.queue_is_empty() {
                    return Err("yada: work left in the queue".into());
                }
                let ids = addr
                    .into_iter()
                    .chain(work.iter().flat_map(|w| w.created.clone()));
                let tris = s.collect(ids);
                (s.pts.to_vec(), tris, degenerate(&work), measured)
            }
            Variant::TypedPlus => return Err("yada has no typed-plus variant".into()),
        };
        verify(&pts, &tris, &degenerate, q)?;
        Ok(measured)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app() -> Yada {
        Yada::new(Params::of(Input::Dev))
    }

    /// A larger input, where `words` records are freed and reused while
    /// queued ids still name them (a retry once inserted a stale
    /// circumcentre there).
    #[test]
    fn transactional_variants_survive_record_reuse_and_conflicts() {
        let app = Yada::new(Params {
            points: 2_000,
            angle: 20.0,
            seed: 3,
        });
        for _ in 0..5 {
            for variant in [Variant::Typed, Variant::Words] {
                app.run(variant, 4)
                    .unwrap_or_else(|e| panic!("{variant} x4: {e}"));
            }
        }
    }

    #[test]
    fn the_input_is_valid_and_the_refinement_removes_bad_triangles() {
        let app = app();
        let none = HashSet::new();
        // The input is a valid Delaunay triangulation, but has bad triangles.
        let err = verify(&app.init.pts, &app.init.tris, &none, &app.quality).unwrap_err();
        assert!(err.contains("still bad"), "{err}");
        let mut m = app.init.clone();
        let degen = mesh::refine_seq(&mut m, &app.quality);
        let degen: HashSet<u64> = degen.into_iter().collect();
        let s = verify(&m.pts, &m.tris, &degen, &app.quality).unwrap();
        assert!(s.triangles > app.init.tris.len());
    }

    /// Flips the edge opposite vertex `s` of triangle `t`, relinking the
    /// neighbours: still a triangulation, no longer Delaunay.
    fn flip(m: &mut HashMap<u64, Tri>, pts: &[Pt], t: u64, s: usize) -> bool {
        let x = m[&t];
        let nb = x.n[s];
        if nb == NONE {
            return false;
        }
        let y = m[&nb];
        let j = (0..3).find(|&j| y.n[j] == t).unwrap();
        let (a, b, c, d) = (x.v[s], x.v[(s + 1) % 3], x.v[(s + 2) % 3], y.v[j]);
        let p = |v: u32| pts[v as usize];
        if orient(p(a), p(b), p(d)) <= 1e-6 || orient(p(a), p(d), p(c)) <= 1e-6 {
            return false;
        }
        let (t_ab, t_ca) = (x.n[(s + 2) % 3], x.n[(s + 1) % 3]);
        let (n_dc, n_bd) = (y.n[(j + 2) % 3], y.n[(j + 1) % 3]);
        m.insert(
            t,
            Tri {
                v: [a, b, d],
                n: [n_bd, nb, t_ab],
            },
        );
        m.insert(
            nb,
            Tri {
                v: [a, d, c],
                n: [n_dc, t_ca, t],
            },
        );
        let mut relink = |id: u64, from: u64, to: u64| {
            if id != NONE {
                let u = m.get_mut(&id).unwrap();
                let k = (0..3).find(|&k| u.n[k] == from).unwrap();
                u.n[k] = to;
            }
        };
        relink(n_bd, nb, t);
        relink(t_ca, t, nb);
        true
    }

    #[test]
    fn verification_catches_broken_meshes() {
        let app = app();
        let mut m = app.init.clone();
        let degen: HashSet<u64> = mesh::refine_seq(&mut m, &app.quality).into_iter().collect();
        let q = &app.quality;
        verify(&m.pts, &m.tris, &degen, q).unwrap();
        // An interior edge whose flip is legal.
        let mut ids: Vec<u64> = m.tris.keys().copied().collect();
        ids.sort_unstable();
        let mut flipped = m.tris.clone();
        let done = ids
            .iter()
            .any(|&t| (0..3).any(|s| flip(&mut flipped, &m.pts, t, s)));
        assert!(done);
        let err = verify(&m.pts, &flipped, &degen, q).unwrap_err();
        assert!(err.contains("Delaunay"), "{err}");
        // An asymmetric link.
        let mut broken = m.tris.clone();
        let (&id, t) = broken.iter().find(|(_, t)| t.n[0] != NONE).unwrap();
        let mut t = *t;
        t.n[0] = *ids.iter().find(|&&o| o != id && o != t.n[0]).unwrap();
        broken.insert(id, t);
        let err = verify(&m.pts, &broken, &degen, q).unwrap_err();
        assert!(err.contains("link"), "{err}");
        // A missing triangle: a hole (an interior edge without neighbour,
        // or area lost).
        let mut holed = m.tris.clone();
        holed.remove(&ids[ids.len() / 2]);
        assert!(verify(&m.pts, &holed, &degen, q).is_err());
    }

    #[test]
    fn a_saved_mesh_loads_as_the_same_input() {
        let app = app();
        let dir = std::env::temp_dir().join(format!("txmem-stamp-yada-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let prefix = dir.join("dev");
        let written = files::write(&app.init, &prefix).unwrap();
        assert_eq!(written.len(), 3);
        let loaded = Yada::load(&prefix).unwrap();
        assert_eq!(loaded.init.pts, app.init.pts);
        assert_eq!(loaded.init.tris, app.init.tris);
        assert_eq!(loaded.init.queue, app.init.queue);
        let (mut a, mut b) = (app.init.clone(), loaded.init.clone());
        assert_eq!(
            mesh::refine_seq(&mut a, &app.quality),
            mesh::refine_seq(&mut b, &loaded.quality)
        );
        assert_eq!(a.tris, b.tris);
        for variant in [Variant::Typed, Variant::Words] {
            loaded
                .run(variant, 2)
                .unwrap_or_else(|e| panic!("{variant}: {e}"));
        }
    }

    #[test]
    fn the_generator_is_deterministic() {
        let q = Quality::new(20.0);
        let a = mesh::generate(200, 7, &q);
        let b = mesh::generate(200, 7, &q);
        assert_eq!(a.pts, b.pts);
        assert_eq!(a.tris, b.tris);
        assert_eq!(a.queue, b.queue);
        let c = mesh::generate(200, 8, &q);
        assert_ne!(a.pts, c.pts);
        // Euler: a triangulation of a square with n vertices, 4 on the
        // hull, has 2n - 6 triangles (2 per interior point plus 2).
        assert_eq!(a.tris.len(), 2 * 200 + 2);
    }
}
