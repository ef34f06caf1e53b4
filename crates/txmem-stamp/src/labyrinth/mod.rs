//! labyrinth: STAMP's maze router (Lee's algorithm).
//!
//! Each thread takes the next pair of cells from a shared work queue and
//! routes a path between them in one transaction: it copies the committed
//! grid privately (plain loads, not tracked, as STAMP's copy is), searches
//! a shortest free path on the copy, then reads every cell of the path
//! transactionally, checks that it is still free, and claims it. A cell
//! taken meanwhile aborts the transaction, which starts over from a fresh
//! copy; a pair with no free path is given up. Transactions are long (a
//! path of hundreds of cells) and conflict only where paths cross.
//!
//! Variants: `typed` keeps the grid in a `TArray<u32>` and the work in a
//! `TQueue`; `words` keeps both in `TWords`. Verification: every routed
//! path runs from its source to its destination through adjacent cells,
//! every cell of the grid is claimed by at most one path, no path crosses
//! a wall, and the grid holds exactly the walls and the routed paths.
//! Which pairs get routed depends on the order paths are laid, so the
//! count is reported, not compared.
//!
//! The maze is generated ([`Labyrinth::new`]) or read from a file in
//! STAMP's format ([`Labyrinth::load`], see [`Maze::read`]), walls
//! included. Unlike STAMP, which sorts the pairs longest first, pairs are
//! routed in input order, and a path's length counts cells (STAMP's router
//! can also weigh bends and layer changes).

mod maze;

use std::path::{Path, PathBuf};
use std::thread;

use txmem::{atomically, TArray, TQueue, TWords, Transaction, TxResult, WordAddr};

use crate::{timed, App, Input, Measured, Variant};
pub use maze::Maze;
use maze::{EMPTY, WALL};

/// The parameters of a labyrinth input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// Width of the grid.
    pub x: usize,
    /// Depth of the grid.
    pub y: usize,
    /// Layers of the grid.
    pub z: usize,
    /// Pairs to connect.
    pub paths: usize,
    /// Seed of the generator (generated mazes).
    pub seed: u64,
}

impl Params {
    /// The inputs: `paper` is the STO thesis' 512 × 512 × 7 maze with 512
    /// paths; `dev` is 32 × 32 × 3 with 48.
    pub fn of(input: Input) -> Params {
        match input {
            Input::Paper => Params {
                x: 512,
                y: 512,
                z: 7,
                paths: 512,
                seed: 1,
            },
            Input::Dev => Params {
                x: 32,
                y: 32,
                z: 3,
                paths: 48,
                seed: 1,
            },
        }
    }
}

/// The routed paths, by pair (`None`: not routed), and the final grid.
pub struct Routing {
    /// Path `i`'s cells from source to destination, if it was routed.
    pub paths: Vec<Option<Vec<usize>>>,
    /// Every cell's owner (`i + 1` for path `i`, 0 for free, `u32::MAX`
    /// for a wall).
    pub grid: Vec<u32>,
}

/// The shared grid and work list of one run.
trait Board: Sync {
    /// The next pair to route, if any (a transaction).
    fn next(&self) -> Option<usize>;
    /// The committed value of cell `c` (not tracked).
    fn load(&self, c: usize) -> u32;
    /// Claims free cell `c` for path `id` in the running transaction;
    /// false (nothing written) if another path holds it.
    fn claim<'e>(&'e self, tx: &mut Transaction<'e>, c: usize, id: u32) -> TxResult<bool>;
}

/// Routes `pair` on a private copy of `board`'s grid and claims the path's
/// cells for path `id` in one transaction; a cell taken since the copy was
/// made starts the transaction over from a fresh copy. `None` if no free
/// path remains.
fn lay(
    board: &dyn Board,
    maze: &Maze,
    id: u32,
    pair: (usize, usize),
    scratch: &mut Scratch,
) -> Option<Vec<usize>> {
    atomically(|tx| {
        let Some(path) = scratch.route(maze, board, pair) else {
            return Ok(None);
        };
        for &c in &path[1..path.len() - 1] {
            if !board.claim(tx, c, id)? {
                return Err(tx.abort());
            }
        }
        Ok(Some(path))
    })
}

/// A thread's private copy of the grid and the search's distances.
#[derive(Default)]
pub struct Scratch {
    copy: Vec<u32>,
    dist: Vec<u32>,
}

impl Scratch {
    /// Copies the committed grid and searches it.
    fn route(
        &mut self,
        maze: &Maze,
        board: &dyn Board,
        (src, dst): (usize, usize),
    ) -> Option<Vec<usize>> {
        self.copy.clear();
        self.copy.extend((0..maze.cells()).map(|c| board.load(c)));
        maze.route(&self.copy, src, dst, &mut self.dist)
    }
}

/// Typed: the grid in a `TArray<u32>`, the work in a `TQueue`.
struct Typed {
    grid: TArray<u32>,
    work: TQueue<usize>,
}

impl Board for Typed {
    fn next(&self) -> Option<usize> {
        atomically(|tx| self.work.try_pop(tx))
    }
    fn load(&self, c: usize) -> u32 {
        self.grid.load(c)
    }
    fn claim<'e>(&'e self, tx: &mut Transaction<'e>, c: usize, id: u32) -> TxResult<bool> {
        if self.grid.get(tx, c)? != EMPTY {
            return Ok(false);
        }
        self.grid.set(tx, c, id)?;
        Ok(true)
    }
}

/// Words: cell `c` at word `c`, the work cursor at the word after the grid.
struct Words {
    mem: TWords,
    base: WordAddr,
    cells: usize,
    pairs: usize,
}

impl Board for Words {
    fn next(&self) -> Option<usize> {
        let cursor = self.base.offset(self.cells);
        atomically(|tx| {
            let i = self.mem.read(tx, cursor)? as usize;
            if i == self.pairs {
                return Ok(None);
            }
            self.mem.write(tx, cursor, i as u64 + 1)?;
            Ok(Some(i))
        })
    }
    fn load(&self, c: usize) -> u32 {
        self.mem.load(self.base.offset(c)) as u32
    }
    fn claim<'e>(&'e self, tx: &mut Transaction<'e>, c: usize, id: u32) -> TxResult<bool> {
        let a = self.base.offset(c);
        if self.mem.read(tx, a)? != u64::from(EMPTY) {
            return Ok(false);
        }
        self.mem.write(tx, a, u64::from(id))?;
        Ok(true)
    }
}

/// labyrinth with its maze generated or read.
pub struct Labyrinth {
    params: Params,
    maze: Maze,
    /// The file the maze was read from, if it was.
    file: Option<PathBuf>,
}

impl Labyrinth {
    /// Generates the maze of `params`.
    pub fn new(params: Params) -> Labyrinth {
        Labyrinth {
            maze: Maze::generate(params.x, params.y, params.z, params.paths, params.seed),
            params,
            file: None,
        }
    }

    /// Reads the maze from `path` (STAMP's format, see [`Maze::read`]).
    pub fn load(path: &Path) -> Result<Labyrinth, String> {
        let maze = Maze::read(path)?;
        Ok(Labyrinth {
            params: Params {
                x: maze.x,
                y: maze.y,
                z: maze.z,
                paths: maze.pairs.len(),
                seed: 0,
            },
            maze,
            file: Some(path.to_path_buf()),
        })
    }

    /// The initial grid: the walls, and every pair's endpoints marked with
    /// its id, so that no other path runs through them.
    fn initial_grid(&self) -> Vec<u32> {
        let mut grid = vec![EMPTY; self.maze.cells()];
        for &w in &self.maze.walls {
            grid[w] = WALL;
        }
        for (i, &(s, d)) in self.maze.pairs.iter().enumerate() {
            grid[s] = i as u32 + 1;
            grid[d] = i as u32 + 1;
        }
        grid
    }

    /// The sequential router.
    pub fn route_seq(&self) -> Routing {
        let mut grid = self.initial_grid();
        let mut dist = Vec::new();
        let paths = self
            .maze
            .pairs
            .iter()
            .enumerate()
            .map(|(i, &(s, d))| {
                let path = self.maze.route(&grid, s, d, &mut dist)?;
                for &c in &path[1..path.len() - 1] {
                    grid[c] = i as u32 + 1;
                }
                Some(path)
            })
            .collect();
        Routing { paths, grid }
    }

    /// The parallel router on `threads` threads over `board`.
    fn route_parallel(&self, board: &dyn Board, threads: usize) -> Vec<Option<Vec<usize>>> {
        let maze = &self.maze;
        let mut paths: Vec<Option<Vec<usize>>> = vec![None; maze.pairs.len()];
        let laid: Vec<Vec<(usize, Vec<usize>)>> = thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(move || {
                        let mut scratch = Scratch::default();
                        let mut mine = Vec::new();
                        while let Some(i) = board.next() {
                            if let Some(p) =
                                lay(board, maze, i as u32 + 1, maze.pairs[i], &mut scratch)
                            {
                                mine.push((i, p));
                            }
                        }
                        mine
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a labyrinth thread panicked"))
                .collect()
        });
        for (i, p) in laid.into_iter().flatten() {
            paths[i] = Some(p);
        }
        paths
    }
}

/// Every routed path is a chain of adjacent cells from its source to its
/// destination, marked with its id in the grid; the grid holds nothing
/// else but the walls, untouched, and unrouted pairs' endpoints.
fn verify(maze: &Maze, routing: &Routing) -> Result<usize, String> {
    let mut expected = vec![EMPTY; maze.cells()];
    for &w in &maze.walls {
        expected[w] = WALL;
    }
    for (i, &(s, d)) in maze.pairs.iter().enumerate() {
        let id = i as u32 + 1;
        expected[s] = id;
        expected[d] = id;
        let Some(path) = &routing.paths[i] else {
            continue;
        };
        if path.first() != Some(&s) || path.last() != Some(&d) {
            return Err(format!(
                "labyrinth: path {id} does not run from its source to its destination"
            ));
        }
        for w in path.windows(2) {
            if !maze.neighbours(w[0]).any(|n| n == w[1]) {
                return Err(format!(
                    "labyrinth: path {id} jumps from cell {} to {}",
                    w[0], w[1]
                ));
            }
        }
        for &c in &path[1..path.len() - 1] {
            if expected[c] == WALL {
                return Err(format!("labyrinth: path {id} runs through wall cell {c}"));
            }
            if expected[c] != EMPTY {
                return Err(format!(
                    "labyrinth: cell {c} is on path {id} and path {}",
                    expected[c]
                ));
            }
            expected[c] = id;
        }
    }
    if let Some(c) = (0..maze.cells()).find(|&c| routing.grid[c] != expected[c]) {
        return Err(format!(
            "labyrinth: cell {c} holds {} in the grid, the paths say {}",
            routing.grid[c], expected[c]
        ));
    }
    Ok(routing.paths.iter().flatten().count())
}

impl App for Labyrinth {
    fn name(&self) -> &'static str {
        "labyrinth"
    }

    fn variants(&self) -> &'static [Variant] {
        &[Variant::Seq, Variant::Typed, Variant::Words]
    }

    fn describe(&self) -> String {
        let p = &self.params;
        let from = match &self.file {
            Some(f) => format!("{} walls, from {}", self.maze.walls.len(), f.display()),
            None => format!("generated endpoints, seed {}", p.seed),
        };
        format!("{}x{}x{} maze, {} paths ({from})", p.x, p.y, p.z, p.paths)
    }

    fn run(&self, variant: Variant, threads: usize) -> Result<Measured, String> {
        let threads = threads.max(1);
        let init = self.initial_grid();
        let pairs = self.maze.pairs.len();
        let (routing, measured) = match variant {
            Variant::Seq => timed(|| self.route_seq()),
            Variant::Typed => {
                let board = Typed {
                    grid: TArray::from_fn(init.len(), |c| init[c]),
                    work: TQueue::new(),
                };
                atomically(|tx| (0..pairs).try_for_each(|i| board.work.push(tx, i)));
                let (paths, measured) = timed(|| self.route_parallel(&board, threads));
                let grid = (0..init.len()).map(|c| board.grid.load(c)).collect();
                (Routing { paths, grid }, measured)
            }
            Variant::Words => {
                let mem = TWords::new(init.len() + 1);
                let base = mem.alloc(init.len() + 1);
                let marked: Vec<usize> = (0..init.len()).filter(|&c| init[c] != EMPTY).collect();
                for chunk in marked.chunks(256) {
                    atomically(|tx| {
                        chunk
                            .iter()
                            .try_for_each(|&c| mem.write(tx, base.offset(c), u64::from(init[c])))
                    });
                }
                let board = Words {
                    mem,
                    base,
                    cells: init.len(),
                    pairs,
                };
                let (paths, measured) = timed(|| self.route_parallel(&board, threads));
                let grid = (0..init.len()).map(|c| board.load(c)).collect();
                (Routing { paths, grid }, measured)
            }
            Variant::TypedPlus => return Err("labyrinth has no typed-plus variant".into()),
        };
        let routed = verify(&self.maze, &routing)?;
        if routed == 0 {
            return Err("labyrinth: no path was routed".into());
        }
        Ok(measured)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verification_catches_crossing_and_broken_paths() {
        let app = Labyrinth::new(Params::of(Input::Dev));
        let good = app.route_seq();
        assert!(verify(&app.maze, &good).unwrap() > 0);
        // A path with a cell removed no longer connects its neighbours.
        let i = good
            .paths
            .iter()
            .position(|p| p.as_ref().is_some_and(|p| p.len() > 3))
            .unwrap();
        let mut broken = Routing {
            paths: good.paths.clone(),
            grid: good.grid.clone(),
        };
        broken.paths[i].as_mut().unwrap().remove(1);
        assert!(verify(&app.maze, &broken).is_err());
        // A grid cell claimed by no path.
        let mut stray = Routing {
            paths: good.paths.clone(),
            grid: good.grid.clone(),
        };
        let free = (0..stray.grid.len())
            .find(|&c| stray.grid[c] == EMPTY)
            .unwrap();
        stray.grid[free] = 1;
        assert!(verify(&app.maze, &stray).is_err());
    }

    /// A path private to this test process.
    fn tmp(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("txmem-stamp-labyrinth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    #[test]
    fn a_saved_maze_loads_as_the_same_input() {
        let app = Labyrinth::new(Params::of(Input::Dev));
        let file = tmp("dev.txt");
        app.maze.write(&file).unwrap();
        let loaded = Labyrinth::load(&file).unwrap();
        assert_eq!(loaded.maze, app.maze);
        assert_eq!(loaded.route_seq().paths, app.route_seq().paths);
    }

    #[test]
    fn walls_are_never_routed_through_and_verification_checks_them() {
        let mut app = Labyrinth::new(Params::of(Input::Dev));
        // A wall on every third cell no pair uses.
        let ends: Vec<usize> = app.maze.pairs.iter().flat_map(|&(s, d)| [s, d]).collect();
        app.maze.walls = (0..app.maze.cells())
            .step_by(3)
            .filter(|c| !ends.contains(c))
            .collect();
        let file = tmp("walls.txt");
        app.maze.write(&file).unwrap();
        let app = Labyrinth::load(&file).unwrap();
        assert_eq!(
            app.maze.walls.len(),
            (0..app.maze.cells())
                .step_by(3)
                .filter(|c| !ends.contains(c))
                .count()
        );
        for variant in [Variant::Seq, Variant::Typed, Variant::Words] {
            app.run(variant, 2)
                .unwrap_or_else(|e| panic!("{variant}: {e}"));
        }
        let good = app.route_seq();
        let wall = app.maze.walls[0];
        assert_eq!(good.grid[wall], WALL);
        assert!(verify(&app.maze, &good).is_ok());
        // A wall cleared in the grid.
        let mut cleared = Routing {
            paths: good.paths.clone(),
            grid: good.grid.clone(),
        };
        cleared.grid[wall] = EMPTY;
        assert!(verify(&app.maze, &cleared).is_err());
        // A path through a wall: a detour from its source into a wall
        // cell next to it and back.
        let (i, w) = good
            .paths
            .iter()
            .enumerate()
            .find_map(|(i, p)| {
                let s = p.as_ref()?[0];
                let w = app
                    .maze
                    .neighbours(s)
                    .find(|n| app.maze.walls.contains(n))?;
                Some((i, w))
            })
            .expect("a routed path starts next to a wall");
        let mut through = Routing {
            paths: good.paths.clone(),
            grid: good.grid.clone(),
        };
        let p = through.paths[i].as_mut().unwrap();
        p.splice(1..1, [w, p[0]]);
        let err = verify(&app.maze, &through).unwrap_err();
        assert!(err.contains("through wall"), "{err}");
    }

    #[test]
    fn the_generator_is_deterministic() {
        let a = Maze::generate(16, 16, 2, 20, 5);
        assert_eq!(a.pairs, Maze::generate(16, 16, 2, 20, 5).pairs);
        assert_ne!(a.pairs, Maze::generate(16, 16, 2, 20, 6).pairs);
        let mut cells: Vec<usize> = a.pairs.iter().flat_map(|&(s, d)| [s, d]).collect();
        cells.sort_unstable();
        cells.dedup();
        assert_eq!(cells.len(), 40, "no cell is an endpoint twice");
    }

    #[test]
    fn routes_are_shortest_on_an_empty_grid() {
        let maze = Maze {
            x: 5,
            y: 5,
            z: 1,
            pairs: vec![(0, 24)],
            walls: Vec::new(),
        };
        let grid = vec![EMPTY; 25];
        let path = maze.route(&grid, 0, 24, &mut Vec::new()).unwrap();
        assert_eq!(path.len(), 9, "4 steps right and 4 down");
    }
}
