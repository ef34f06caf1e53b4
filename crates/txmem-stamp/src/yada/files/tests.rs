//! Round trips and malformed input for the mesh files.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::yada::mesh::Quality;
use crate::yada::verify;

// The unit square with a vertex M on its bottom side: triangles AMD,
// MBC and MCD (the last listed clockwise), ids from 1, with an
// attribute and a marker per vertex and comments.
const NODE: &str = "# A B C D M\n5 2 1 1\n1 0 0 7.5 1\n2 1 0 7.5 1\n3 1 1 7.5 1  # C\n4 0 1 7.5 1\n\n5 0.5 0 7.5 1\n";
const ELE: &str = "3 3 1\n1 1 5 4 0.0\n2 5 2 3 0.0\n3 5 4 3 0.0\n# by hand\n";
const POLY: &str = "0 2 0 1\n5 1\n1 1 5 1\n2 5 2 1\n3 2 3 1\n4 3 4 1\n5 4 1 1\n0\n";

/// Writes the three files (no `.poly` for `None`) under a fresh prefix
/// and reads them.
fn load(node: &str, ele: &str, poly: Option<&str>) -> Result<SeqMesh, String> {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!("txmem-stamp-yada-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let prefix = dir.join(format!("case{}", NEXT.fetch_add(1, Ordering::Relaxed)));
    std::fs::write(with_ext(&prefix, "node"), node).unwrap();
    std::fs::write(with_ext(&prefix, "ele"), ele).unwrap();
    if let Some(poly) = poly {
        std::fs::write(with_ext(&prefix, "poly"), poly).unwrap();
    }
    read(&prefix)
}

#[test]
fn reads_triangles_files_and_links_the_triangles() {
    for poly in [Some(POLY), None] {
        let m = load(NODE, ELE, poly).unwrap();
        assert_eq!(
            m.pts,
            [(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0), (0.5, 0.0)]
        );
        assert_eq!(m.next, 3);
        // The clockwise triangle M D C is turned round.
        assert_eq!(m.tris[&2].v, [4, 2, 3]);
        // MBC and MCD share M–C: each names the other across it.
        assert_eq!(m.tris[&1].n, [NONE, 2, NONE]);
        assert_eq!(m.tris[&2].n[2], 1);
        verify(&m.pts, &m.tris, &HashSet::new(), &Quality::new(0.0)).unwrap();
    }
}

#[test]
fn bad_files_are_named_with_the_line() {
    let non_delaunay = "3 3\n1 1 5 3\n2 1 3 4\n3 5 2 3\n";
    let cases: Vec<((String, String, String), &str)> = vec![
        (
            (NODE.replace("5 0.5 0", "5 1.5 0"), ELE.into(), POLY.into()),
            ".node:8: vertex (1.5, 0) is outside the unit square",
        ),
        (
            (NODE.replace("5 2 1 1", "5 3 1 1"), ELE.into(), POLY.into()),
            ".node:2: dimension 3",
        ),
        (
            (NODE.replace("4 0 1", "6 0 1"), ELE.into(), POLY.into()),
            ".node:6: vertex id 6 out of sequence (expected 4)",
        ),
        (
            (
                NODE.replace("1 0 0 7.5", "2 0 0 7.5"),
                ELE.into(),
                POLY.into(),
            ),
            ".node:3: vertex ids must start from 0 or 1, not 2",
        ),
        (
            (NODE.replace("5 2 1 1", "6 2 1 1"), ELE.into(), POLY.into()),
            ".node: 5 vertices, fewer than the 6 its header declares",
        ),
        (
            (format!("{NODE}6 0.2 0.2 7.5 1\n"), ELE.into(), POLY.into()),
            ".node:9: more vertices than the 5 the header declares",
        ),
        (
            (
                NODE.replace("3 1 1 7.5", "3 1 one 7.5"),
                ELE.into(),
                POLY.into(),
            ),
            ".node:5: `one` is not a coordinate (a number)",
        ),
        (
            (
                NODE.replace("3 1 1 7.5 1", "3 1 1 7.5"),
                ELE.into(),
                POLY.into(),
            ),
            ".node:5: expected `id x y` and 2 more, found 4 numbers",
        ),
        (("".into(), ELE.into(), POLY.into()), ".node: empty"),
        (
            (NODE.into(), ELE.replace("3 3 1\n", "3 6 1\n"), POLY.into()),
            ".ele:1: 6 vertices per triangle",
        ),
        (
            (NODE.into(), ELE.replace("2 5 2 3", "2 5 2 9"), POLY.into()),
            ".ele:3: vertex 9 is not in",
        ),
        (
            (NODE.into(), ELE.replace("1 1 5 4", "1 1 5 2"), POLY.into()),
            ".ele:2: a triangle of zero area",
        ),
        (
            (
                NODE.into(),
                "2 3 1\n1 1 5 4 0\n2 5 4 3 0\n".into(),
                POLY.into(),
            ),
            ".ele:3: edge 5–3 is on the mesh's boundary but not on a side of the unit square",
        ),
        (
            (
                NODE.into(),
                ELE.replace("3 3 1", "4 3 1")
                    .replace("# by hand", "4 5 3 4 0"),
                POLY.into(),
            ),
            ".ele:5: the triangle overlaps the one on line 4",
        ),
        (
            (NODE.into(), non_delaunay.into(), POLY.into()),
            "not Delaunay",
        ),
        (
            (NODE.into(), ELE.into(), POLY.replace("1 1 5 1", "1 1 2 1")),
            ".poly:3: segment 1–2 is not an edge of the mesh",
        ),
        (
            (NODE.into(), ELE.into(), POLY.replace("5 4 1 1", "5 5 4 1")),
            ".poly:7: a segment not on a side of the unit square",
        ),
        (
            (NODE.into(), ELE.into(), POLY.replace("0 2 0 1", "4 2 0 1")),
            ".poly:1: 4 vertices of its own",
        ),
        (
            (NODE.into(), ELE.into(), POLY.replace("5 1\n", "6 1\n")),
            ".poly:8: segment id 0 out of sequence (expected 6)",
        ),
    ];
    for ((node, ele, poly), want) in cases {
        let err = load(&node, &ele, Some(&poly))
            .err()
            .unwrap_or_else(|| panic!("{want}: parsed"));
        assert!(err.contains(want), "want `{want}`, got: {err}");
    }
}

#[test]
fn a_missing_file_is_named() {
    let dir = std::env::temp_dir().join(format!("txmem-stamp-yada-{}", std::process::id()));
    let err = read(&dir.join("absent")).unwrap_err();
    assert!(
        err.contains("absent.node") && err.contains("prefix"),
        "{err}"
    );
}
