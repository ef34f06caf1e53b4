//! NAS Parallel Benchmarks analogues (MG, FT, LU): real integer kernels on simulated memory,
//! checked against the host's run of the same kernel; see the parent module for the
//! calibration.

use super::{check_words, Checker, FlaskApp, Sizes};
use crate::config::SimConfig;
use crate::cpu::Cpu;
use crate::engine::rng::hash64;
use crate::simulation::executor::Sim;
use crate::workloads::barrier::Barrier;
use crate::workloads::{sim_with_lines, WorkloadError};

/// MG: stencil iterations, and planes of the grid per CPU (each one a boundary plane).
const MG_ITERS: u64 = 4;
const MG_PLANES_PER_CPU: u64 = 2;
/// MG: the smallest plane side.
const MG_MIN_SIDE: u64 = 4;
/// FT: iterations of transform and transpose; the smallest side.
const FT_ITERS: u64 = 3;
const FT_MIN_SIDE: u64 = 8;
/// LU: sweeps, rows per CPU, and the fewest column blocks.
const LU_SWEEPS: u64 = 3;
const LU_ROWS_PER_CPU: u64 = 4;
const LU_MIN_BLOCKS: u64 = 2;

/// Tag of the grids' initial values.
const GRID_TAG: u64 = 0x6e70_6200 << 32;

/// Builds the machine for one NPB kernel sized to about `total_ops` accesses.
pub(super) fn build(
    cfg: &SimConfig,
    s: &Sizes,
    app: FlaskApp,
    total_ops: u64,
) -> Result<(Sim, Checker), WorkloadError> {
    match app {
        FlaskApp::Mg => Mg::sized(s, total_ops).build(cfg, s),
        FlaskApp::Ft => Ft::sized(s, total_ops).build(cfg, s),
        // Lu (only NPB apps come here).
        _ => Lu::sized(s, total_ops).build(cfg, s),
    }
}

/// Initial value of cell `i` of a grid.
fn init(seed: u64, i: u64) -> u64 {
    hash64(seed ^ GRID_TAG ^ i)
}

/// Writes the initial grid of `cells` words at `addr`; returns the host's copy.
fn init_grid(sim: &mut Sim, seed: u64, addr: u64, cells: u64) -> Vec<u64> {
    let g: Vec<u64> = (0..cells).map(|i| init(seed, i)).collect();
    for (i, &v) in g.iter().enumerate() {
        sim.write(addr + 8 * i as u64, v);
    }
    g
}

/// `[start, end)` of part `k` of `n` items split over `parts` (the first `n % parts` parts
/// take one more).
fn part(n: u64, parts: usize, k: usize) -> (u64, u64) {
    let (p, k) = (parts as u64, k as u64);
    let start = k * (n / p) + k.min(n % p);
    (start, start + n / p + u64::from(k < n % p))
}

/// The MG kernel: a 7-point stencil on an `n`×`n`×`z` grid, `z` = 2 planes per CPU.
#[derive(Clone, Copy, Debug)]
struct Mg {
    n: u64,
    z: u64,
}

/// MG's update of a cell from its value and the sum of its (up to six) neighbours.
fn mg_cell(c: u64, neighbours: u64) -> u64 {
    c.wrapping_mul(2).wrapping_add(neighbours)
}

impl Mg {
    fn sized(s: &Sizes, total_ops: u64) -> Mg {
        let z = MG_PLANES_PER_CPU * s.cpus as u64;
        // Seven loads and a store per cell and iteration.
        let side = (total_ops / (MG_ITERS * z * 8)).isqrt();
        Mg {
            n: side.max(MG_MIN_SIDE),
            z,
        }
    }

    fn cells(&self) -> u64 {
        self.n * self.n * self.z
    }

    /// The neighbours of cell (x, y, z) inside the grid, as cell indices.
    fn neighbours(&self, x: u64, y: u64, z: u64) -> impl Iterator<Item = u64> {
        let (n, nz) = (self.n, self.z);
        let at = move |x: u64, y: u64, z: u64| (z * n + y) * n + x;
        [
            (x > 0).then(|| at(x - 1, y, z)),
            (x + 1 < n).then(|| at(x + 1, y, z)),
            (y > 0).then(|| at(x, y - 1, z)),
            (y + 1 < n).then(|| at(x, y + 1, z)),
            (z > 0).then(|| at(x, y, z - 1)),
            (z + 1 < nz).then(|| at(x, y, z + 1)),
        ]
        .into_iter()
        .flatten()
    }

    fn build(self, cfg: &SimConfig, s: &Sizes) -> Result<(Sim, Checker), WorkloadError> {
        let cells = self.cells();
        let lines = 2 * cells.div_ceil(s.wpl()) + Barrier::LINES;
        let mut sim = sim_with_lines(cfg, lines)?;
        let grid_lines = cells.div_ceil(s.wpl());
        let grids = [sim.alloc_lines(grid_lines), sim.alloc_lines(grid_lines)];
        let mut host = init_grid(&mut sim, cfg.seed, grids[0], cells);
        let barrier = Barrier::new(&mut sim, s.cpus);
        let mg = self;
        for k in 0..s.cpus {
            let (z0, z1) = part(mg.z, s.cpus, k);
            let mut waiter = barrier.waiter();
            sim.spawn(k, move |cpu| async move {
                for t in 0..MG_ITERS as usize {
                    let (src, dst) = (grids[t % 2], grids[1 - t % 2]);
                    mg.planes(&cpu, src, dst, z0, z1).await;
                    waiter.wait(&cpu).await;
                }
            });
        }
        // The host's run of the same kernel.
        let mut next = vec![0; cells as usize];
        for _ in 0..MG_ITERS {
            for z in 0..mg.z {
                for y in 0..mg.n {
                    for x in 0..mg.n {
                        let i = ((z * mg.n + y) * mg.n + x) as usize;
                        let sum = mg
                            .neighbours(x, y, z)
                            .fold(0u64, |a, j| a.wrapping_add(host[j as usize]));
                        next[i] = mg_cell(host[i], sum);
                    }
                }
            }
            std::mem::swap(&mut host, &mut next);
        }
        let last = grids[MG_ITERS as usize % 2];
        let check = move |sim: &Sim| check_words(sim, last, cells, "MG grid", |i| host[i as usize]);
        Ok((sim, Box::new(check)))
    }

    /// Updates planes `z0..z1` of `dst` from `src`.
    async fn planes(&self, cpu: &Cpu, src: u64, dst: u64, z0: u64, z1: u64) {
        for z in z0..z1 {
            for y in 0..self.n {
                for x in 0..self.n {
                    let i = (z * self.n + y) * self.n + x;
                    // Independent loads: they overlap, as an out-of-order core's would.
                    let c = cpu.load_overlapped(src + 8 * i).await;
                    let mut sum = 0u64;
                    for j in self.neighbours(x, y, z) {
                        sum = sum.wrapping_add(cpu.load_overlapped(src + 8 * j).await);
                    }
                    cpu.store_overlapped(dst + 8 * i, mg_cell(c, sum)).await;
                }
            }
        }
    }
}

/// The FT kernel: an `n`×`n` array (`n` a power of two), rows split over the CPUs.
#[derive(Clone, Copy, Debug)]
struct Ft {
    n: u64,
}

/// FT's row transform in iteration `t`: an odd twiddle per element (invertible), then an
/// integer Walsh–Hadamard butterfly over the row.
fn ft_row(row: &mut [u64], r: u64, t: u64) {
    for (j, x) in row.iter_mut().enumerate() {
        *x = x.wrapping_mul(2 * (j as u64 + r + t) + 1);
    }
    let n = row.len();
    let mut h = 1;
    while h < n {
        for i in (0..n).step_by(2 * h) {
            for j in i..i + h {
                let (a, b) = (row[j], row[j + h]);
                row[j] = a.wrapping_add(b);
                row[j + h] = a.wrapping_sub(b);
            }
        }
        h *= 2;
    }
}

impl Ft {
    fn sized(s: &Sizes, total_ops: u64) -> Ft {
        // Transform (a load and a store per element) and transpose (the same): 4 n² per
        // iteration.
        let fit = (total_ops / (4 * FT_ITERS)).isqrt().max(1);
        let n = if fit.is_power_of_two() {
            fit
        } else {
            fit.next_power_of_two() / 2
        };
        // At least a row per CPU.
        let min = FT_MIN_SIDE.max((s.cpus as u64).next_power_of_two());
        Ft { n: n.max(min) }
    }

    fn build(self, cfg: &SimConfig, s: &Sizes) -> Result<(Sim, Checker), WorkloadError> {
        let n = self.n;
        let cells = n * n;
        let lines = 2 * cells.div_ceil(s.wpl()) + Barrier::LINES;
        let mut sim = sim_with_lines(cfg, lines)?;
        let a = sim.alloc_lines(cells.div_ceil(s.wpl()));
        let b = sim.alloc_lines(cells.div_ceil(s.wpl()));
        let mut host = init_grid(&mut sim, cfg.seed, a, cells);
        let barrier = Barrier::new(&mut sim, s.cpus);
        let log_n = u64::from(n.trailing_zeros());
        for k in 0..s.cpus {
            let (r0, r1) = part(n, s.cpus, k);
            let mut waiter = barrier.waiter();
            sim.spawn(k, move |cpu| async move {
                let (mut cur, mut other) = (a, b);
                let mut row = vec![0u64; n as usize];
                for t in 0..FT_ITERS {
                    for r in r0..r1 {
                        let base = cur + 8 * r * n;
                        for (j, x) in row.iter_mut().enumerate() {
                            *x = cpu.load_overlapped(base + 8 * j as u64).await;
                        }
                        ft_row(&mut row, r, t);
                        // The butterflies work in registers and the L1: their arithmetic
                        // costs time, not accesses.
                        cpu.compute(n * log_n / 2).await;
                        for (j, &x) in row.iter().enumerate() {
                            cpu.store_overlapped(base + 8 * j as u64, x).await;
                        }
                    }
                    waiter.wait(&cpu).await;
                    // The transpose: a column of every other CPU's rows into a row of ours.
                    for r in r0..r1 {
                        for j in 0..n {
                            let v = cpu.load_overlapped(cur + 8 * (j * n + r)).await;
                            cpu.store_overlapped(other + 8 * (r * n + j), v).await;
                        }
                    }
                    waiter.wait(&cpu).await;
                    std::mem::swap(&mut cur, &mut other);
                }
            });
        }
        let mut next = vec![0; cells as usize];
        for t in 0..FT_ITERS {
            for r in 0..n as usize {
                let row = &mut host[r * n as usize..(r + 1) * n as usize];
                ft_row(row, r as u64, t);
            }
            for r in 0..n as usize {
                for j in 0..n as usize {
                    next[r * n as usize + j] = host[j * n as usize + r];
                }
            }
            std::mem::swap(&mut host, &mut next);
        }
        let last = if FT_ITERS.is_multiple_of(2) { a } else { b };
        let check =
            move |sim: &Sim| check_words(sim, last, cells, "FT array", |i| host[i as usize]);
        Ok((sim, Box::new(check)))
    }
}

/// The LU kernel: a wavefront over `rows`×`blocks`·`width` cells, rows split over the CPUs.
#[derive(Clone, Copy, Debug)]
struct Lu {
    rows: u64,
    blocks: u64,
    /// Columns per block (the unit a CPU hands on to the next).
    width: u64,
}

/// LU's update of a cell from its old value and the new values above and to the left.
fn lu_cell(me: u64, up: u64, left: u64, sweep: u64) -> u64 {
    me.wrapping_mul(3)
        .wrapping_add(up)
        .wrapping_add(left.wrapping_mul(5))
        .wrapping_add(sweep)
}

impl Lu {
    fn sized(s: &Sizes, total_ops: u64) -> Lu {
        let rows = LU_ROWS_PER_CPU * s.cpus as u64;
        let width = 2 * s.wpl();
        // Two loads and a store per cell and sweep.
        let blocks = total_ops / (LU_SWEEPS * rows * width * 3);
        Lu {
            rows,
            blocks: blocks.max(LU_MIN_BLOCKS),
            width,
        }
    }

    fn cols(&self) -> u64 {
        self.blocks * self.width
    }

    fn build(self, cfg: &SimConfig, s: &Sizes) -> Result<(Sim, Checker), WorkloadError> {
        let (rows, cols) = (self.rows, self.cols());
        let cells = rows * cols;
        // One progress flag per CPU, each on its own line.
        let lines = cells.div_ceil(s.wpl()) + s.cpus as u64 + Barrier::LINES;
        let mut sim = sim_with_lines(cfg, lines)?;
        let g = sim.alloc_lines(cells.div_ceil(s.wpl()));
        let flags = sim.alloc_lines(s.cpus as u64);
        let mut host = init_grid(&mut sim, cfg.seed, g, cells);
        let barrier = Barrier::new(&mut sim, s.cpus);
        let (lb, lu) = (s.lb, self);
        let at = move |i: u64, j: u64| g + 8 * (i * cols + j);
        for k in 0..s.cpus {
            let (i0, i1) = part(rows, s.cpus, k);
            let mut waiter = barrier.waiter();
            sim.spawn(k, move |cpu| async move {
                for sweep in 0..LU_SWEEPS {
                    for b in 0..lu.blocks {
                        let done = sweep * lu.blocks + b + 1;
                        if k > 0 {
                            // The row above ours is the previous CPU's: wait for its block.
                            let above = flags + (k as u64 - 1) * lb;
                            cpu.spin_until(above, |v| v >= done).await;
                        }
                        for i in i0..i1 {
                            let j0 = b * lu.width;
                            let mut left = if j0 == 0 {
                                0
                            } else {
                                cpu.load(at(i, j0 - 1)).await
                            };
                            for j in j0..j0 + lu.width {
                                let up = if i == 0 {
                                    0
                                } else {
                                    cpu.load_overlapped(at(i - 1, j)).await
                                };
                                let me = cpu.load_overlapped(at(i, j)).await;
                                left = lu_cell(me, up, left, sweep);
                                cpu.store_overlapped(at(i, j), left).await;
                            }
                        }
                        // Publish the block once its stores are done.
                        cpu.fence().await;
                        cpu.store(flags + k as u64 * lb, done).await;
                    }
                    waiter.wait(&cpu).await;
                }
            });
        }
        // Row by row is a valid order of the wavefront: every cell sees the same inputs.
        let c = cols as usize;
        for sweep in 0..LU_SWEEPS {
            for i in 0..rows as usize {
                for j in 0..c {
                    let up = if i == 0 { 0 } else { host[(i - 1) * c + j] };
                    let left = if j == 0 { 0 } else { host[i * c + j - 1] };
                    host[i * c + j] = lu_cell(host[i * c + j], up, left, sweep);
                }
            }
        }
        let check = move |sim: &Sim| check_words(sim, g, cells, "LU grid", |i| host[i as usize]);
        Ok((sim, Box::new(check)))
    }
}
