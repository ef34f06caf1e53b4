//! The maze: a 3-D grid of cells and the pairs of cells to connect, and
//! Lee's routing on a private copy of the grid.
//!
//! STAMP reads its mazes from files (`random-x512-y512-z7-n512.txt`: only
//! endpoints, no walls); these are generated instead, seeded: `paths`
//! pairs of distinct cells, no cell used twice.

use std::collections::VecDeque;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// A free cell.
pub const EMPTY: u32 = 0;

/// The grid's shape and the pairs to connect.
pub struct Maze {
    /// Width of the grid.
    pub x: usize,
    /// Depth of the grid.
    pub y: usize,
    /// Layers of the grid.
    pub z: usize,
    /// (source, destination) cell indexes; path `i` is marked `i + 1`.
    pub pairs: Vec<(usize, usize)>,
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
        Maze { x, y, z, pairs }
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
