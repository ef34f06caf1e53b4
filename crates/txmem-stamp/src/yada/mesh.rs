//! Geometry, the mesh interface every variant implements, the cavity
//! insertion they all share, the sequential mesh and the input generator.

use std::collections::{HashMap, VecDeque};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use txmem::TxResult;

/// A point of the plane.
pub type Pt = (f64, f64);

/// "No neighbour": the edge lies on the domain's boundary.
pub const NONE: u64 = u64::MAX;

/// Circumcentres closer than this to the boundary of the unit square count
/// as outside it (the boundary rule).
const MARGIN: f64 = 1e-9;

/// A triangle: vertex ids in counter-clockwise order, and the id of the
/// neighbour across the edge opposite each vertex (`NONE` on the boundary).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tri {
    /// Vertex ids, counter-clockwise.
    pub v: [u32; 3],
    /// `n[i]`: the triangle across the edge `v[i+1]`–`v[i+2]`.
    pub n: [u64; 3],
}

/// Twice the signed area of `abc` (positive when counter-clockwise).
pub fn orient(a: Pt, b: Pt, c: Pt) -> f64 {
    (b.0 - a.0) * (c.1 - a.1) - (b.1 - a.1) * (c.0 - a.0)
}

/// Positive when `d` lies strictly inside the circumcircle of the
/// counter-clockwise triangle `abc`.
pub fn incircle(a: Pt, b: Pt, c: Pt, d: Pt) -> f64 {
    let (adx, ady) = (a.0 - d.0, a.1 - d.1);
    let (bdx, bdy) = (b.0 - d.0, b.1 - d.1);
    let (cdx, cdy) = (c.0 - d.0, c.1 - d.1);
    (adx * adx + ady * ady) * (bdx * cdy - cdx * bdy)
        + (bdx * bdx + bdy * bdy) * (cdx * ady - adx * cdy)
        + (cdx * cdx + cdy * cdy) * (adx * bdy - bdx * ady)
}

/// The circumcentre of `abc` and the squared circumradius.
pub fn circumcircle(a: Pt, b: Pt, c: Pt) -> (Pt, f64) {
    // Relative to `a`, which keeps the cancellation small.
    let (bx, by) = (b.0 - a.0, b.1 - a.1);
    let (cx, cy) = (c.0 - a.0, c.1 - a.1);
    let d = 2.0 * (bx * cy - by * cx);
    let (b2, c2) = (bx * bx + by * by, cx * cx + cy * cy);
    let ux = (cy * b2 - by * c2) / d;
    let uy = (bx * c2 - cx * b2) / d;
    ((a.0 + ux, a.1 + uy), ux * ux + uy * uy)
}

/// True if the segment `ab` lies on a side of the unit square (both ends
/// exactly on the same side).
pub fn on_side(a: Pt, b: Pt) -> bool {
    (a.0 == 0.0 && b.0 == 0.0)
        || (a.0 == 1.0 && b.0 == 1.0)
        || (a.1 == 0.0 && b.1 == 0.0)
        || (a.1 == 1.0 && b.1 == 1.0)
}

fn dist2(a: Pt, b: Pt) -> f64 {
    (a.0 - b.0).powi(2) + (a.1 - b.1).powi(2)
}

/// The quality rule: which triangles are bad and which of those are
/// refined.
#[derive(Clone, Copy, Debug)]
pub struct Quality {
    /// `sin` of the minimum angle: a triangle is bad when its shortest
    /// edge is below `2 R sin(angle)` (the law of sines: the shortest edge
    /// is opposite the smallest angle).
    sin_min: f64,
}

impl Quality {
    /// Triangles with an angle below `degrees` are bad.
    pub fn new(degrees: f64) -> Quality {
        Quality {
            sin_min: degrees.to_radians().sin(),
        }
    }

    /// True if the triangle `abc` has an angle below the threshold.
    pub fn bad(&self, [a, b, c]: [Pt; 3]) -> bool {
        let (_, r2) = circumcircle(a, b, c);
        let shortest = dist2(a, b).min(dist2(b, c)).min(dist2(c, a));
        shortest < 4.0 * r2 * self.sin_min * self.sin_min
    }

    /// The point to insert for a bad triangle: its circumcentre, or `None`
    /// when that falls outside the open unit square (the boundary rule:
    /// boundary edges are never split, so such a triangle stays as it is).
    pub fn refine_at(&self, p: [Pt; 3]) -> Option<Pt> {
        if !self.bad(p) {
            return None;
        }
        let (c, _) = circumcircle(p[0], p[1], p[2]);
        let inside = |x: f64| x > MARGIN && x < 1.0 - MARGIN;
        (inside(c.0) && inside(c.1)).then_some(c)
    }
}

/// A mesh as the refinement sees it: the sequential structures, or a
/// transaction's view of the shared ones. Every method may abort (`Err`),
/// which the caller propagates.
pub trait Mesh {
    /// The coordinates of vertex `v`.
    fn point(&self, v: u32) -> Pt;
    /// Adds a vertex (not undone on abort: an unreferenced vertex is
    /// harmless).
    fn add_point(&mut self, p: Pt) -> u32;
    /// Triangle `id`, if it is in the mesh.
    fn tri(&mut self, id: u64) -> TxResult<Option<Tri>>;
    /// Sets neighbour `slot` of triangle `id` to `nb`.
    fn link(&mut self, id: u64, slot: usize, nb: u64) -> TxResult<()>;
    /// Removes triangle `id`.
    fn remove(&mut self, id: u64) -> TxResult<()>;
    /// A fresh id for a triangle about to be [`put`](Self::put).
    fn fresh_id(&mut self) -> TxResult<u64>;
    /// Adds triangle `t` as `id`.
    fn put(&mut self, id: u64, t: Tri) -> TxResult<()>;
    /// Queues triangle `id` for refinement.
    fn push_bad(&mut self, id: u64) -> TxResult<()>;

    /// The corners of `t`.
    fn corners(&self, t: &Tri) -> [Pt; 3] {
        t.v.map(|v| self.point(v))
    }
}

/// What a cavity insertion did.
pub struct Inserted {
    /// The triangles of the cavity, now removed.
    pub removed: Vec<u64>,
    /// The fan of new triangles.
    pub added: Vec<u64>,
}

/// Inserts vertex `pv` at `p` (Bowyer–Watson): `seed` is a triangle of
/// the mesh whose circumcircle contains `p`. The cavity is every triangle
/// reachable from `seed` through neighbours whose circumcircle contains
/// `p`; it is replaced by the fan joining `p` to the cavity's boundary,
/// and new bad triangles that `q` would refine are queued. Returns `None`
/// (having written nothing) when rounding makes the fan degenerate.
pub fn insert<M: Mesh>(
    m: &mut M,
    seed: (u64, Tri),
    pv: u32,
    p: Pt,
    q: Option<&Quality>,
) -> TxResult<Option<Inserted>> {
    let mut cavity = vec![seed];
    let mut outside: Vec<(u64, Tri)> = Vec::new();
    // Boundary edges (a, b) counter-clockwise as seen from the cavity, with
    // the triangle beyond (or NONE) and the cavity triangle they belong to.
    let mut edges: Vec<(u32, u32, u64, u64)> = Vec::new();
    let mut i = 0;
    while i < cavity.len() {
        let (id, t) = cavity[i];
        i += 1;
        for s in 0..3 {
            let (a, b, nb) = (t.v[(s + 1) % 3], t.v[(s + 2) % 3], t.n[s]);
            if nb == NONE || outside.iter().any(|o| o.0 == nb) {
                edges.push((a, b, nb, id));
                continue;
            }
            if cavity.iter().any(|c| c.0 == nb) {
                continue;
            }
            let nt = m
                .tri(nb)?
                .unwrap_or_else(|| panic!("yada: triangle {id} links to {nb}, not in the mesh"));
            let [x, y, z] = m.corners(&nt);
            if incircle(x, y, z, p) > 0.0 {
                cavity.push((nb, nt));
            } else {
                outside.push((nb, nt));
                edges.push((a, b, nb, id));
            }
        }
    }
    // Every fan triangle must be properly counter-clockwise, and the
    // boundary must be one closed loop (each vertex starts and ends one
    // edge); rounding near cocircular points can break either.
    for &(a, b, _, _) in &edges {
        let (pa, pb) = (m.point(a), m.point(b));
        if orient(p, pa, pb) <= 1e-12 * dist2(p, pa).sqrt() * dist2(p, pb).sqrt() {
            return Ok(None);
        }
    }
    let after: Vec<Option<usize>> = edges
        .iter()
        .map(|e| edges.iter().position(|f| f.0 == e.1))
        .collect();
    let before: Vec<Option<usize>> = edges
        .iter()
        .map(|e| edges.iter().position(|f| f.1 == e.0))
        .collect();
    if after.iter().chain(&before).any(Option::is_none) {
        return Ok(None);
    }
    let ids = (0..edges.len())
        .map(|_| m.fresh_id())
        .collect::<TxResult<Vec<u64>>>()?;
    for (k, &(a, b, nb, from)) in edges.iter().enumerate() {
        // The fan triangle (p, a, b): across p–b lies the one starting at
        // b, across p–a the one ending at a.
        let t = Tri {
            v: [pv, a, b],
            n: [nb, ids[after[k].unwrap()], ids[before[k].unwrap()]],
        };
        m.put(ids[k], t)?;
        if nb != NONE {
            let o = &outside.iter().find(|o| o.0 == nb).unwrap().1;
            let slot = (0..3).find(|&s| o.n[s] == from).unwrap();
            m.link(nb, slot, ids[k])?;
        }
        if let Some(q) = q {
            if q.refine_at(m.corners(&t)).is_some() {
                m.push_bad(ids[k])?;
            }
        }
    }
    for &(id, _) in &cavity {
        m.remove(id)?;
    }
    Ok(Some(Inserted {
        removed: cavity.into_iter().map(|c| c.0).collect(),
        added: ids,
    }))
}

/// What refining one queued triangle did.
#[derive(Debug)]
pub enum Outcome {
    /// It had already been removed by another refinement.
    Gone,
    /// The boundary rule (or, for reused ids, a triangle that is not bad).
    Skipped,
    /// Rounding made the cavity degenerate; the triangle stays.
    Degenerate,
    /// Refined: the cavity removed.
    Refined(Vec<u64>),
}

/// Refines triangle `id` if it is still in the mesh: inserts its
/// circumcentre.
pub fn refine<M: Mesh>(m: &mut M, id: u64, q: &Quality) -> TxResult<Outcome> {
    let Some(t) = m.tri(id)? else {
        return Ok(Outcome::Gone);
    };
    let Some(c) = q.refine_at(m.corners(&t)) else {
        return Ok(Outcome::Skipped);
    };
    let pv = m.add_point(c);
    Ok(match insert(m, (id, t), pv, c, Some(q))? {
        Some(ins) => Outcome::Refined(ins.removed),
        None => Outcome::Degenerate,
    })
}

/// The sequential mesh: a hash map of triangles, a FIFO of bad ones.
#[derive(Clone, Debug, Default)]
pub struct SeqMesh {
    /// Vertex coordinates, by id.
    pub pts: Vec<Pt>,
    /// The triangles, by id.
    pub tris: HashMap<u64, Tri>,
    /// Triangles to refine.
    pub queue: VecDeque<u64>,
    /// The next fresh triangle id.
    pub next: u64,
}

impl Mesh for SeqMesh {
    fn point(&self, v: u32) -> Pt {
        self.pts[v as usize]
    }
    fn add_point(&mut self, p: Pt) -> u32 {
        self.pts.push(p);
        (self.pts.len() - 1) as u32
    }
    fn tri(&mut self, id: u64) -> TxResult<Option<Tri>> {
        Ok(self.tris.get(&id).copied())
    }
    fn link(&mut self, id: u64, slot: usize, nb: u64) -> TxResult<()> {
        self.tris.get_mut(&id).expect("linked triangle").n[slot] = nb;
        Ok(())
    }
    fn remove(&mut self, id: u64) -> TxResult<()> {
        self.tris.remove(&id);
        Ok(())
    }
    fn fresh_id(&mut self) -> TxResult<u64> {
        self.next += 1;
        Ok(self.next - 1)
    }
    fn put(&mut self, id: u64, t: Tri) -> TxResult<()> {
        self.tris.insert(id, t);
        Ok(())
    }
    fn push_bad(&mut self, id: u64) -> TxResult<()> {
        self.queue.push_back(id);
        Ok(())
    }
}

/// Runs refinement on `m` until its queue is empty; returns the
/// triangles left bad because their cavity was degenerate.
pub fn refine_seq(m: &mut SeqMesh, q: &Quality) -> Vec<u64> {
    let mut degenerate = Vec::new();
    while let Some(id) = m.queue.pop_front() {
        if let Ok(Outcome::Degenerate) = refine(m, id, q) {
            degenerate.push(id);
        }
    }
    degenerate
}

/// The triangle of `m` containing `p`, by walking from `start` towards
/// `p` (a visibility walk, which terminates on a Delaunay mesh).
fn locate(m: &SeqMesh, mut cur: u64, p: Pt) -> u64 {
    'walk: loop {
        let t = m.tris[&cur];
        for s in 0..3 {
            let (a, b) = (
                m.pts[t.v[(s + 1) % 3] as usize],
                m.pts[t.v[(s + 2) % 3] as usize],
            );
            if orient(a, b, p) < 0.0 && t.n[s] != NONE {
                cur = t.n[s];
                continue 'walk;
            }
        }
        return cur;
    }
}

/// The generated input: the Delaunay triangulation of the unit square's
/// corners and `points` uniformly random points inside it (seeded), built
/// by inserting the points one at a time with the same cavity insertion
/// the refinement uses (Bowyer–Watson), starting from the square split
/// into two triangles. Triangle ids are `0..len`; the bad triangles that
/// will be refined are queued in id order.
pub fn generate(points: usize, seed: u64, q: &Quality) -> SeqMesh {
    let mut m = SeqMesh {
        pts: vec![(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)],
        ..SeqMesh::default()
    };
    m.tris.insert(
        0,
        Tri {
            v: [0, 1, 2],
            n: [NONE, 1, NONE],
        },
    );
    m.tris.insert(
        1,
        Tri {
            v: [0, 2, 3],
            n: [NONE, NONE, 0],
        },
    );
    m.next = 2;
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut last = 0;
    for _ in 0..points {
        let p = (
            rng.random_range(0.001..0.999),
            rng.random_range(0.001..0.999),
        );
        let at = locate(&m, last, p);
        let pv = m.add_point(p);
        let t = m.tris[&at];
        // A point whose insertion would be degenerate (rounding) is dropped.
        if let Ok(Some(ins)) = insert(&mut m, (at, t), pv, p, None) {
            last = ins.added[0];
        }
    }
    // Renumber the triangles 0..len in a deterministic order.
    let mut old: Vec<u64> = m.tris.keys().copied().collect();
    old.sort_unstable();
    let new_id: HashMap<u64, u64> = old
        .iter()
        .enumerate()
        .map(|(i, &o)| (o, i as u64))
        .collect();
    let tris = old
        .iter()
        .map(|o| {
            let t = m.tris[o];
            let n = t.n.map(|x| if x == NONE { NONE } else { new_id[&x] });
            (new_id[o], Tri { v: t.v, n })
        })
        .collect::<HashMap<_, _>>();
    m.tris = tris;
    m.next = old.len() as u64;
    queue_bad(&mut m, q);
    m
}

/// Queues, in id order, the triangles of `m` (ids `0..m.next`) that `q`
/// would refine.
pub fn queue_bad(m: &mut SeqMesh, q: &Quality) {
    m.queue = (0..m.next)
        .filter(|id| q.refine_at(m.corners(&m.tris[id])).is_some())
        .collect();
}
