//! The maze: a 3-D grid of cells, its walls and the pairs of cells to
//! connect, and Lee's routing on a private copy of the grid.
//!
//! STAMP reads its mazes from files (`random-x512-y512-z7-n512.txt`);
//! [`Maze::read`] reads the same format and [`Maze::write`] writes it. The
//! `dev` and `paper` mazes are generated instead, seeded, as STAMP's are
//! made: `paths` pairs of distinct cells, no cell used twice, no walls.

use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::path::Path;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::files;

/// A free cell.
pub const EMPTY: u32 = 0;

/// A wall: no path uses the cell.
pub const WALL: u32 = u32::MAX;

/// The most cells a maze file may ask for (a grid is copied per thread
/// and per attempt, so this bounds memory).
const MAX_CELLS: usize = 1 << 26;

/// The grid's shape, its walls and the pairs to connect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Maze {
    /// Width of the grid.
    pub x: usize,
    /// Depth of the grid.
    pub y: usize,
    /// Layers of the grid.
    pub z: usize,
    /// (source, destination) cell indexes; path `i` is marked `i + 1`.
    /// Cell `(x, y, z)` is index `x + X * (y + Y * z)`.
    pub pairs: Vec<(usize, usize)>,
    /// Wall cells, none of them an endpoint.
    pub walls: Vec<usize>,
}

impl Maze {
    /// `paths` random pairs in an `x × y × z` grid, from `seed`.
    pub fn generate(x: usize, y: usize, z: usize, paths: usize, seed: u64) -> Maze {
        let cells = x * y * z;
        assert!(2 * paths <= cells, "labyrinth: too many paths for the grid");
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut used = vec![false; cells];
        let mut pick = |rng: &mut SmallRng| loop {
            let c = rng.random_range(0..cells);
            if !used[c] {
                used[c] = true;
                return c;
            }
        };
        let pairs = (0..paths)
            .map(|_| (pick(&mut rng), pick(&mut rng)))
            .collect();
        Maze {
            x,
            y,
            z,
            pairs,
            walls: Vec::new(),
        }
    }

    /// Reads a maze in STAMP's format from `path`, a line each:
    /// `d X Y Z` (the grid: once, before or after the rest), `p x1 y1 z1
    /// x2 y2 z2` (a pair to connect; routed in file order), `w x y z` (a
    /// wall), `# ...` (a comment, also after a line's numbers); blank
    /// lines are skipped. Coordinates
    /// count from 0. No cell may be the endpoint of two pairs or both a
    /// wall and an endpoint.
    pub fn read(path: &Path) -> Result<Maze, String> {
        Maze::parse(&files::read(path)?, path)
    }

    /// Parses `text`, the contents of `path` (named in errors); see
    /// [`read`](Self::read).
    pub fn parse(text: &str, path: &Path) -> Result<Maze, String> {
        let mut dims: Option<([usize; 3], usize)> = None;
        // Coordinates with their line, checked once the grid is known.
        let mut pairs: Vec<([usize; 6], usize)> = Vec::new();
        let mut walls: Vec<([usize; 3], usize)> = Vec::new();
        for (n, line) in files::lines(text) {
            let line = line.trim_start();
            let Some(code) = line.chars().next() else {
                continue;
            };
            // As STAMP's `sscanf(" %c %li ...")`: the numbers may follow
            // the letter without a space, and a comment may follow them.
            let rest = &line[code.len_utf8()..];
            let rest = rest.split('#').next().unwrap_or("");
            let numbers = || -> Result<Vec<usize>, String> {
                rest.split_whitespace()
                    .map(|t| files::number::<usize>(t, "a coordinate (an integer from 0)"))
                    .collect::<Result<_, _>>()
                    .map_err(|e| files::at(path, n, e))
            };
            let count = |want: usize, form: &str| -> Result<Vec<usize>, String> {
                let v = numbers()?;
                if v.len() != want {
                    return Err(files::at(
                        path,
                        n,
                        format!("`{code}` takes {want} numbers ({form}), found {}", v.len()),
                    ));
                }
                Ok(v)
            };
            match code {
                '#' => {}
                'd' => {
                    let v = count(3, "d X Y Z")?;
                    if let Some((_, first)) = dims {
                        return Err(files::at(
                            path,
                            n,
                            format!("a second grid size (the first is on line {first})"),
                        ));
                    }
                    if v.contains(&0) {
                        return Err(files::at(
                            path,
                            n,
                            "every grid dimension must be at least 1",
                        ));
                    }
                    let cells = v[0].checked_mul(v[1]).and_then(|c| c.checked_mul(v[2]));
                    if cells.is_none_or(|c| c > MAX_CELLS) {
                        return Err(files::at(
                            path,
                            n,
                            format!("a grid of more than {MAX_CELLS} cells"),
                        ));
                    }
                    dims = Some(([v[0], v[1], v[2]], n));
                }
                'p' => {
                    let v = count(6, "p x1 y1 z1 x2 y2 z2")?;
                    if v[..3] == v[3..] {
                        return Err(files::at(
                            path,
                            n,
                            "a path's source and destination are the same cell",
                        ));
                    }
                    pairs.push((v.try_into().expect("six numbers"), n));
                }
                'w' => {
                    let v = count(3, "w x y z")?;
                    walls.push((v.try_into().expect("three numbers"), n));
                }
                other => {
                    return Err(files::at(
                        path,
                        n,
                        format!("unknown line `{other}` (expected d, p, w or #)"),
                    ))
                }
            }
        }
        let Some(([x, y, z], _)) = dims else {
            return Err(format!(
                "{}: no grid size (a `d X Y Z` line)",
                path.display()
            ));
        };
        if pairs.is_empty() {
            return Err(format!(
                "{}: no pairs to connect (`p` lines)",
                path.display()
            ));
        }
        let cell = |c: &[usize], n: usize| {
            if c[0] < x && c[1] < y && c[2] < z {
                Ok(c[0] + x * (c[1] + y * c[2]))
            } else {
                Err(files::at(
                    path,
                    n,
                    format!(
                        "({}, {}, {}) is outside the {x} x {y} x {z} grid",
                        c[0], c[1], c[2]
                    ),
                ))
            }
        };
        // Each special cell and the line that made it so.
        let mut wall_at: HashMap<usize, usize> = HashMap::new();
        for (c, n) in &walls {
            wall_at.entry(cell(c, *n)?).or_insert(*n);
        }
        let mut end_at: HashMap<usize, usize> = HashMap::new();
        let mut maze = Maze {
            x,
            y,
            z,
            pairs: Vec::with_capacity(pairs.len()),
            walls: Vec::new(),
        };
        for (c, n) in &pairs {
            let (s, d) = (cell(&c[..3], *n)?, cell(&c[3..], *n)?);
            for (e, xyz) in [(s, &c[..3]), (d, &c[3..])] {
                let (a, b, cz) = (xyz[0], xyz[1], xyz[2]);
                if let Some(w) = wall_at.get(&e) {
                    return Err(files::at(
                        path,
                        *n,
                        format!("endpoint ({a}, {b}, {cz}) is a wall (line {w})"),
                    ));
                }
                if let Some(first) = end_at.insert(e, *n) {
                    return Err(files::at(
                        path,
                        *n,
                        format!(
                            "({a}, {b}, {cz}) is already an endpoint of the path on line {first}"
                        ),
                    ));
                }
            }
            maze.pairs.push((s, d));
        }
        maze.walls = wall_at.into_keys().collect();
        maze.walls.sort_unstable();
        Ok(maze)
    }

    /// Writes the maze to `path` in STAMP's format (see
    /// [`read`](Self::read)): the grid size, the walls, then the pairs in
    /// order.
    pub fn write(&self, path: &Path) -> Result<(), String> {
        files::write(path, |w| {
            writeln!(
                w,
                "# labyrinth: {} x {} x {} grid, {} walls, {} paths",
                self.x,
                self.y,
                self.z,
                self.walls.len(),
                self.pairs.len()
            )?;
            writeln!(w, "d {} {} {}", self.x, self.y, self.z)?;
            for &c in &self.walls {
                let (a, b, c) = self.coords(c);
                writeln!(w, "w {a} {b} {c}")?;
            }
            for &(s, d) in &self.pairs {
                let (s, d) = (self.coords(s), self.coords(d));
                writeln!(w, "p {} {} {} {} {} {}", s.0, s.1, s.2, d.0, d.1, d.2)?;
            }
            Ok(())
        })
    }

    /// Cell `c`'s coordinates `(x, y, z)`.
    pub fn coords(&self, c: usize) -> (usize, usize, usize) {
        (c % self.x, c / self.x % self.y, c / (self.x * self.y))
    }

    /// Number of cells.
    pub fn cells(&self) -> usize {
        self.x * self.y * self.z
    }

    /// The cells next to `c` (up to six), in a fixed order.
    pub fn neighbours(&self, c: usize) -> impl Iterator<Item = usize> + '_ {
        let (x, y) = (self.x, self.y);
        let (cx, cy, cz) = (c % x, c / x % y, c / (x * y));
        [
            (cx > 0).then(|| c - 1),
            (cx + 1 < x).then(|| c + 1),
            (cy > 0).then(|| c - x),
            (cy + 1 < y).then(|| c + x),
            (cz > 0).then(|| c - x * y),
            (cz + 1 < self.z).then(|| c + x * y),
        ]
        .into_iter()
        .flatten()
    }

    /// Lee's algorithm on `grid` (a private copy): a shortest path of free
    /// cells from `src` to `dst` (both included), or `None`. `dist` is
    /// scratch space of the grid's size.
    pub fn route(
        &self,
        grid: &[u32],
        src: usize,
        dst: usize,
        dist: &mut Vec<u32>,
    ) -> Option<Vec<usize>> {
        dist.clear();
        dist.resize(self.cells(), u32::MAX);
        dist[src] = 0;
        let mut frontier = VecDeque::from([src]);
        while let Some(c) = frontier.pop_front() {
            if c == dst {
                break;
            }
            for n in self.neighbours(c) {
                if dist[n] == u32::MAX && (grid[n] == EMPTY || n == dst) {
                    dist[n] = dist[c] + 1;
                    frontier.push_back(n);
                }
            }
        }
        if dist[dst] == u32::MAX {
            return None;
        }
        // Trace back: from the destination, step to any neighbour one
        // closer to the source (the first in neighbour order).
        let mut path = vec![dst];
        let mut c = dst;
        while c != src {
            c = self
                .neighbours(c)
                .find(|&n| dist[n] == dist[c] - 1)
                .expect("a cell at distance d > 0 has a neighbour at d - 1");
            path.push(c);
        }
        path.reverse();
        Some(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Maze, String> {
        Maze::parse(text, Path::new("maze.txt"))
    }

    #[test]
    fn reads_stamps_maze_format() {
        let m = parse(
            "# a comment\n\np 0 0 0 3 2 1 # the first\nd4 3 2\n  w 1 0 0\nw 1 0 0\nw 2 2 1\np 1 1 0 0 2 1\n",
        )
        .unwrap();
        assert_eq!((m.x, m.y, m.z), (4, 3, 2));
        // (x, y, z) is x + 4 (y + 3 z).
        assert_eq!(m.pairs, [(0, 3 + 4 * (2 + 3)), (1 + 4, 4 * (2 + 3))]);
        assert_eq!(
            m.walls,
            [1, 2 + 4 * (2 + 3)],
            "a wall listed twice is one wall"
        );
        assert_eq!(m.coords(3 + 4 * (2 + 3)), (3, 2, 1));
    }

    #[test]
    fn bad_lines_are_named() {
        let cases = [
            ("d 4 4 1\nq 1 2 3\n", "maze.txt:2: unknown line `q`"),
            (
                "d 4 4\n",
                "maze.txt:1: `d` takes 3 numbers (d X Y Z), found 2",
            ),
            ("d 4 4 1\np 0 0 0 1 1\n", "maze.txt:2: `p` takes 6 numbers"),
            (
                "d 4 4 1\np 0 0 0 1 1 0 7\n",
                "maze.txt:2: `p` takes 6 numbers",
            ),
            ("d 4 4 1\nw 1 1\n", "maze.txt:2: `w` takes 3 numbers"),
            (
                "d 4 4 1\np 0 0 0 1 x 0\n",
                "maze.txt:2: `x` is not a coordinate",
            ),
            (
                "d 4 4 1\np 0 0 0 -1 1 0\n",
                "maze.txt:2: `-1` is not a coordinate",
            ),
            (
                "d 4 4 1\np 0 0 0 1.5 1 0\n",
                "maze.txt:2: `1.5` is not a coordinate",
            ),
            (
                "d 4 4 1\n\nd 4 4 1\n",
                "maze.txt:3: a second grid size (the first is on line 1)",
            ),
            (
                "d 4 0 1\n",
                "maze.txt:1: every grid dimension must be at least 1",
            ),
            ("d 100000 100000 100\n", "maze.txt:1: a grid of more than"),
            (
                "d 4 4 1\np 1 1 0 1 1 0\n",
                "maze.txt:2: a path's source and destination are the same cell",
            ),
            (
                "d 4 4 1\np 0 0 0 4 0 0\n",
                "maze.txt:2: (4, 0, 0) is outside the 4 x 4 x 1 grid",
            ),
            (
                "d 4 4 1\np 0 0 0 1 1 0\nw 0 0 1\n",
                "maze.txt:3: (0, 0, 1) is outside",
            ),
            (
                "d 4 4 1\np 0 0 0 1 1 0\np 2 2 0 1 1 0\n",
                "maze.txt:3: (1, 1, 0) is already an endpoint of the path on line 2",
            ),
            (
                "w 1 1 0\nd 4 4 1\np 0 0 0 1 1 0\n",
                "maze.txt:3: endpoint (1, 1, 0) is a wall (line 1)",
            ),
            ("p 0 0 0 1 1 0\n", "maze.txt: no grid size"),
            ("d 4 4 1\nw 1 1 0\n", "maze.txt: no pairs to connect"),
        ];
        for (text, want) in cases {
            let err = parse(text)
                .err()
                .unwrap_or_else(|| panic!("{text:?} parsed"));
            assert!(err.starts_with(want), "{text:?}: {err}");
        }
    }

    #[test]
    fn routes_go_around_walls() {
        // A wall across the grid but for its last row: the path from one
        // side to the other must go round the wall's end.
        let m = parse("d 5 5 1\nw 2 0 0\nw 2 1 0\nw 2 2 0\nw 2 3 0\np 0 0 0 4 0 0\n").unwrap();
        let mut grid = vec![EMPTY; m.cells()];
        for &w in &m.walls {
            grid[w] = WALL;
        }
        let (s, d) = m.pairs[0];
        let path = m.route(&grid, s, d, &mut Vec::new()).unwrap();
        assert!(path.iter().all(|c| !m.walls.contains(c)));
        assert_eq!(path.len(), 13, "down 4, across 4, up 4");
        // Walled in: no route.
        grid[1] = WALL;
        grid[5] = WALL;
        assert!(m.route(&grid, s, d, &mut Vec::new()).is_none());
    }

    #[test]
    fn written_mazes_read_back_the_same() {
        let mut m = Maze::generate(9, 7, 3, 12, 4);
        // Walls on cells no pair uses.
        let ends: Vec<usize> = m.pairs.iter().flat_map(|&(s, d)| [s, d]).collect();
        m.walls = (0..m.cells())
            .step_by(5)
            .filter(|c| !ends.contains(c))
            .collect();
        let file =
            std::env::temp_dir().join(format!("txmem-stamp-maze-{}.txt", std::process::id()));
        m.write(&file).unwrap();
        let back = Maze::read(&file).unwrap();
        std::fs::remove_file(&file).unwrap();
        assert_eq!(back, m);
    }
}
