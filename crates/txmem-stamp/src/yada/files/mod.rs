//! Triangle's mesh files, as STAMP's yada reads them: `PREFIX.node` (the
//! vertices), `PREFIX.ele` (the triangles) and `PREFIX.poly` (the boundary
//! segments). See <https://www.cs.cmu.edu/~quake/triangle.html>.
//!
//! - `.node`: a first line `N 2 [attributes [markers]]`, then `N` lines
//!   `id x y`, followed by that many attributes and markers (ignored).
//! - `.ele`: a first line `T 3 [attributes]`, then `T` lines `id a b c`
//!   (vertex ids), followed by the attributes (ignored).
//! - `.poly` (optional): a first line `0 2 ...` (the vertices are the
//!   `.node` file's), a line `S [markers]`, then `S` lines `id a b
//!   [marker]`; what follows the segments (holes) is ignored.
//!
//! Ids count consecutively from 0 or 1; `#` starts a comment, anywhere on
//! a line; blank lines are skipped.
//!
//! The port refines meshes of the unit square, with the square's sides as
//! the only boundary, so [`read`] also checks what that needs: every
//! vertex in `[0, 1]²`, every triangle of non-zero area (its vertices are
//! put in counter-clockwise order if they are not), every edge shared by
//! at most two triangles, every edge of one triangle (and every segment)
//! on a side of the square, the triangles' areas adding up to the
//! square's, and every edge locally Delaunay.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::mesh::{circumcircle, on_side, orient, Pt, SeqMesh, Tri, NONE};
use crate::files;

/// `prefix` with `ext` appended (`mesh.1` → `mesh.1.node`).
pub fn with_ext(prefix: &Path, ext: &str) -> PathBuf {
    let mut s = OsString::from(prefix.as_os_str());
    s.push(".");
    s.push(ext);
    PathBuf::from(s)
}

/// A file's entries: its non-blank lines with comments removed, each as
/// its line number and tokens.
fn entries(text: &str) -> impl Iterator<Item = (usize, Vec<&str>)> {
    files::lines(text).filter_map(|(n, line)| {
        let line = line.split('#').next().unwrap_or("");
        let tokens: Vec<&str> = line.split_whitespace().collect();
        (!tokens.is_empty()).then_some((n, tokens))
    })
}

/// The parts of a file [`read`] works through: its path, entries and
/// the id its numbering starts from.
struct Table<'t> {
    path: PathBuf,
    entries: Vec<(usize, Vec<&'t str>)>,
}

impl<'t> Table<'t> {
    fn new(path: PathBuf, text: &'t str) -> Table<'t> {
        Table {
            entries: entries(text).collect(),
            path,
        }
    }

    /// An error at line `n`.
    fn at(&self, n: usize, what: impl std::fmt::Display) -> String {
        files::at(&self.path, n, what)
    }

    /// Token `i` of entry `(n, t)` as a `T`.
    fn get<T: std::str::FromStr>(
        &self,
        (n, t): &(usize, Vec<&str>),
        i: usize,
        what: &str,
    ) -> Result<T, String> {
        let token = t
            .get(i)
            .ok_or_else(|| self.at(*n, format!("missing {what}")))?;
        files::number(token, what).map_err(|e| self.at(*n, e))
    }

    /// The `count` entries from entry `skip` on (`what`: their name, and
    /// its plural), with their ids checked to be consecutive from 0 or 1;
    /// `exact`: no entries may follow them.
    fn rows(
        &self,
        skip: usize,
        count: usize,
        (what, whats): (&str, &str),
        exact: bool,
    ) -> Result<&[(usize, Vec<&'t str>)], String> {
        let rows = &self.entries[skip.min(self.entries.len())..];
        if rows.len() < count {
            return Err(format!(
                "{}: {} {whats}, fewer than the {count} its header declares",
                self.path.display(),
                rows.len()
            ));
        }
        if exact && rows.len() > count {
            return Err(self.at(
                rows[count].0,
                format!("more {whats} than the {count} the header declares"),
            ));
        }
        let rows = &rows[..count];
        let mut base = 0;
        for (i, row) in rows.iter().enumerate() {
            let id: u64 = self.get(row, 0, &format!("a {what} id (an integer)"))?;
            if i == 0 {
                if id > 1 {
                    return Err(self.at(
                        row.0,
                        format!("{what} ids must start from 0 or 1, not {id}"),
                    ));
                }
                base = id;
            } else if id != base + i as u64 {
                return Err(self.at(
                    row.0,
                    format!(
                        "{what} id {id} out of sequence (expected {})",
                        base + i as u64
                    ),
                ));
            }
        }
        Ok(rows)
    }

    /// Entry `(n, t)` must have between `min` and `max` tokens.
    fn width(
        &self,
        (n, t): &(usize, Vec<&str>),
        min: usize,
        max: usize,
        form: &str,
    ) -> Result<(), String> {
        if t.len() < min || t.len() > max {
            return Err(self.at(*n, format!("expected {form}, found {} numbers", t.len())));
        }
        Ok(())
    }
}

/// Reads the mesh of `prefix` (`PREFIX.node`, `PREFIX.ele`, and
/// `PREFIX.poly` if it exists), with triangle ids `0..len` in `.ele` order
/// and vertices in `.node` order, and checks that the port can refine it
/// (see the module docs). The queue is left empty.
pub fn read(prefix: &Path) -> Result<SeqMesh, String> {
    let node_path = with_ext(prefix, "node");
    let node_text = files::read(&node_path).map_err(|e| {
        format!("{e} (yada's input is a prefix: it reads PREFIX.node, PREFIX.ele and PREFIX.poly)")
    })?;
    let nodes = Table::new(node_path, &node_text);
    let Some(head) = nodes.entries.first() else {
        return Err(format!("{}: empty", nodes.path.display()));
    };
    nodes.width(head, 2, 4, "`vertices 2 [attributes [markers]]`")?;
    let n: usize = nodes.get(head, 0, "a vertex count")?;
    let dim: usize = nodes.get(head, 1, "a dimension")?;
    if dim != 2 {
        return Err(nodes.at(head.0, format!("dimension {dim}: yada's meshes are 2-D")));
    }
    let attrs: usize = if head.1.len() > 2 {
        nodes.get(head, 2, "an attribute count")?
    } else {
        0
    };
    let markers: usize = if head.1.len() > 3 {
        nodes.get(head, 3, "a marker count (0 or 1)")?
    } else {
        0
    };
    if markers > 1 {
        return Err(nodes.at(head.0, "the marker count must be 0 or 1"));
    }
    // `rows` checks the count against the file before anything is sized
    // by it.
    let rows = nodes.rows(1, n, ("vertex", "vertices"), true)?;
    let width = 3usize.saturating_add(attrs).saturating_add(markers);
    let mut pts: Vec<Pt> = Vec::with_capacity(rows.len());
    let mut base = 0;
    let form = format!("`id x y` and {} more", width - 3);
    for (i, row) in rows.iter().enumerate() {
        nodes.width(row, width, width, &form)?;
        if i == 0 {
            base = nodes.get::<usize>(row, 0, "an id")?;
        }
        let x: f64 = nodes.get(row, 1, "a coordinate (a number)")?;
        let y: f64 = nodes.get(row, 2, "a coordinate (a number)")?;
        if !(0.0..=1.0).contains(&x) || !(0.0..=1.0).contains(&y) {
            return Err(nodes.at(
                row.0,
                format!("vertex ({x}, {y}) is outside the unit square: the port refines meshes of [0, 1]² only"),
            ));
        }
        pts.push((x, y));
    }
    // A vertex's id in the files.
    let file_id = |v: u32| v as usize + base;
    // A vertex reference in another file, as an index into `pts`.
    let vertex = |t: &Table, row: &(usize, Vec<&str>), i: usize| -> Result<u32, String> {
        let id: usize = t.get(row, i, "a vertex id (an integer)")?;
        match id.checked_sub(base).filter(|&v| v < pts.len()) {
            Some(v) => Ok(v as u32),
            None => Err(t.at(
                row.0,
                format!("vertex {id} is not in {}", nodes.path.display()),
            )),
        }
    };

    let ele_path = with_ext(prefix, "ele");
    let ele_text = files::read(&ele_path)?;
    let eles = Table::new(ele_path, &ele_text);
    let Some(head) = eles.entries.first() else {
        return Err(format!("{}: empty", eles.path.display()));
    };
    eles.width(head, 2, 3, "`triangles 3 [attributes]`")?;
    let count: usize = eles.get(head, 0, "a triangle count")?;
    let corners: usize = eles.get(head, 1, "a vertex count per triangle")?;
    if corners != 3 {
        return Err(eles.at(
            head.0,
            format!("{corners} vertices per triangle: only 3 (linear triangles) are supported"),
        ));
    }
    let attrs: usize = if head.1.len() > 2 {
        eles.get(head, 2, "an attribute count")?
    } else {
        0
    };
    let rows = eles.rows(1, count, ("triangle", "triangles"), true)?;
    if rows.is_empty() {
        return Err(format!("{}: no triangles", eles.path.display()));
    }
    let mut tris: Vec<Tri> = Vec::with_capacity(count);
    let mut area = 0.0;
    let width = 4usize.saturating_add(attrs);
    let form = format!("`id a b c` and {attrs} more");
    for row in rows {
        eles.width(row, width, width, &form)?;
        let mut v = [
            vertex(&eles, row, 1)?,
            vertex(&eles, row, 2)?,
            vertex(&eles, row, 3)?,
        ];
        let p = v.map(|v| pts[v as usize]);
        let o = orient(p[0], p[1], p[2]);
        if o == 0.0 || v[0] == v[1] || v[1] == v[2] || v[2] == v[0] {
            return Err(eles.at(row.0, "a triangle of zero area"));
        }
        if o < 0.0 {
            v.swap(1, 2);
        }
        area += o.abs() / 2.0;
        tris.push(Tri { v, n: [NONE; 3] });
    }
    let line = |t: usize| rows[t].0;

    // Link the triangles across shared edges. Both are counter-clockwise,
    // so a shared edge runs a→b in one and b→a in the other.
    let mut sides: HashMap<(u32, u32), (usize, usize)> = HashMap::with_capacity(3 * count);
    for (t, tri) in tris.iter().enumerate() {
        for s in 0..3 {
            let (a, b) = (tri.v[(s + 1) % 3], tri.v[(s + 2) % 3]);
            if let Some(&(u, _)) = sides.get(&(a, b)) {
                return Err(eles.at(
                    line(t),
                    format!(
                        "the triangle overlaps the one on line {} (both run along edge {}–{} the same way)",
                        line(u),
                        file_id(a),
                        file_id(b)
                    ),
                ));
            }
            sides.insert((a, b), (t, s));
        }
    }
    for (t, tri) in tris.iter_mut().enumerate() {
        for s in 0..3 {
            let (a, b) = (tri.v[(s + 1) % 3], tri.v[(s + 2) % 3]);
            if let Some(&(u, _)) = sides.get(&(b, a)) {
                tri.n[s] = u as u64;
            } else if !on_side(pts[a as usize], pts[b as usize]) {
                return Err(eles.at(
                    line(t),
                    format!(
                        "edge {}–{} is on the mesh's boundary but not on a side of the unit square: the port refines meshes of [0, 1]² only",
                        file_id(a),
                        file_id(b)
                    ),
                ));
            }
        }
    }
    if (area - 1.0).abs() > 1e-9 {
        return Err(format!(
            "{}: the triangles cover an area of {area}, not the unit square's 1 (they overlap)",
            eles.path.display()
        ));
    }
    for (t, tri) in tris.iter().enumerate() {
        let (centre, r2) = circumcircle(
            pts[tri.v[0] as usize],
            pts[tri.v[1] as usize],
            pts[tri.v[2] as usize],
        );
        for s in 0..3 {
            let u = tri.n[s];
            if u == NONE {
                continue;
            }
            let (a, b) = (tri.v[(s + 1) % 3], tri.v[(s + 2) % 3]);
            let far = tris[u as usize].v[sides[&(b, a)].1];
            let d = pts[far as usize];
            if (d.0 - centre.0).powi(2) + (d.1 - centre.1).powi(2) < r2 * (1.0 - 1e-9) {
                return Err(eles.at(
                    line(t),
                    format!(
                        "not Delaunay: a vertex of the triangle on line {} lies inside this one's circumcircle (yada refines Delaunay triangulations)",
                        line(u as usize)
                    ),
                ));
            }
        }
    }

    let poly_path = with_ext(prefix, "poly");
    if poly_path.exists() {
        let poly_text = files::read(&poly_path)?;
        let poly = Table::new(poly_path, &poly_text);
        let Some(head) = poly.entries.first() else {
            return Err(format!("{}: empty", poly.path.display()));
        };
        let own: usize = poly.get(head, 0, "a vertex count")?;
        if own != 0 {
            return Err(poly.at(head.0, format!("{own} vertices of its own: the vertices must be the .node file's (a count of 0)")));
        }
        let Some(seg_head) = poly.entries.get(1) else {
            return Err(format!("{}: no segment count", poly.path.display()));
        };
        let segments: usize = poly.get(seg_head, 0, "a segment count")?;
        let seg_markers: usize = if seg_head.1.len() > 1 {
            poly.get(seg_head, 1, "a marker count (0 or 1)")?
        } else {
            0
        };
        for row in poly.rows(2, segments, ("segment", "segments"), false)? {
            poly.width(
                row,
                3,
                3usize.saturating_add(seg_markers),
                "`id a b [marker]`",
            )?;
            let (a, b) = (vertex(&poly, row, 1)?, vertex(&poly, row, 2)?);
            if !sides.contains_key(&(a, b)) && !sides.contains_key(&(b, a)) {
                return Err(poly.at(
                    row.0,
                    format!(
                        "segment {}–{} is not an edge of the mesh",
                        file_id(a),
                        file_id(b)
                    ),
                ));
            }
            if !on_side(pts[a as usize], pts[b as usize]) {
                return Err(poly.at(
                    row.0,
                    "a segment not on a side of the unit square: the port's only boundary is the square's",
                ));
            }
        }
    }

    Ok(SeqMesh {
        pts,
        next: tris.len() as u64,
        tris: tris
            .into_iter()
            .enumerate()
            .map(|(i, t)| (i as u64, t))
            .collect(),
        ..SeqMesh::default()
    })
}

/// Writes `mesh` (triangle ids `0..len`) to `PREFIX.node`, `PREFIX.ele`
/// and `PREFIX.poly` (its boundary edges as segments, which STAMP needs),
/// numbered from 0, and returns the three paths. Coordinates are written
/// exactly (the shortest decimal that reads back as the same value), so
/// [`read`] returns the same mesh.
pub fn write(mesh: &SeqMesh, prefix: &Path) -> Result<Vec<PathBuf>, String> {
    let count = mesh.tris.len() as u64;
    let tri = |i: u64| {
        mesh.tris
            .get(&i)
            .ok_or_else(|| format!("yada: the mesh's triangle ids are not 0..{count}"))
    };
    let tris = (0..count).map(tri).collect::<Result<Vec<&Tri>, String>>()?;
    let node = with_ext(prefix, "node");
    files::write(&node, |w| {
        writeln!(w, "{} 2 0 0", mesh.pts.len())?;
        for (i, p) in mesh.pts.iter().enumerate() {
            writeln!(w, "{i} {} {}", p.0, p.1)?;
        }
        Ok(())
    })?;
    let ele = with_ext(prefix, "ele");
    files::write(&ele, |w| {
        writeln!(w, "{count} 3 0")?;
        for (i, t) in tris.iter().enumerate() {
            writeln!(w, "{i} {} {} {}", t.v[0], t.v[1], t.v[2])?;
        }
        Ok(())
    })?;
    let boundary: Vec<(u32, u32)> = tris
        .iter()
        .flat_map(|t| {
            (0..3)
                .filter(|&s| t.n[s] == NONE)
                .map(|s| (t.v[(s + 1) % 3], t.v[(s + 2) % 3]))
        })
        .collect();
    let poly = with_ext(prefix, "poly");
    files::write(&poly, |w| {
        writeln!(w, "0 2 0 0")?;
        writeln!(w, "{} 0", boundary.len())?;
        for (i, (a, b)) in boundary.iter().enumerate() {
            writeln!(w, "{i} {a} {b}")?;
        }
        writeln!(w, "0")
    })?;
    Ok(vec![node, ele, poly])
}

#[cfg(test)]
mod tests;
