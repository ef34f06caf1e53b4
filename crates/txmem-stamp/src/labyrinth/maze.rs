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
    /// wall), `# ...` (a comment); blank lines are skipped. Coordinates
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
            // the letter without a space.
            let rest = &line[code.len_utf8()..];
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
