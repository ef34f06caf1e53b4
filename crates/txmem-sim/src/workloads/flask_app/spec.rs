//! SPEC CPU2006 in rate mode (astar, hmmer, omnetpp): private streams beside an OS core;
//! see the parent module for the calibration.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use super::{check_words, Checker, Faults, FlaskApp, Sizes};
use crate::config::SimConfig;
use crate::cpu::Cpu;
use crate::engine::rng::hash64;
use crate::engine::rng::SplitMix64;
use crate::simulation::executor::Sim;
use crate::workloads::{share, sim_with_lines, WorkloadError};

/// Lines of the OS's run-queue and timer region that every core touches.
const OS_LINES: u64 = 32;
/// Operations between two system calls of a stream.
const SYSCALL_EVERY: u64 = 1000;
/// Run-queue lines a system call reads.
const SYSCALL_READS: u64 = 2;
/// Cycles of kernel work between two OS ticks.
const OS_TICK_CYCLES: u64 = 200;

/// Bytes a node needs: its link and its visit count.
const NODE_BYTES: u64 = 16;

/// Tags that keep the initial values of different arrays apart.
const SWEEP_TAG: u64 = 0x5eed_5eed << 32;
const LINK_TAG: u64 = 0x11c4 << 48;

/// How a node visit picks the next node.
#[derive(Clone, Copy, Debug)]
enum Walk {
    /// Follow the link: a pointer chase round one random cycle through every node.
    Chase,
    /// A graph walk: one of the `fanout` nodes from the link on (neighbours lie together).
    Graph { fanout: u64 },
}

/// One stream's shape (per app; see the parent module's table).
#[derive(Clone, Copy, Debug)]
struct Shape {
    /// Lines of the sequentially swept array.
    sweep_lines: u64,
    /// A store after every `store_every`-th word swept.
    store_every: u64,
    /// Nodes in the heap (its link, then its visit count; one line each, or 16 bytes if a
    /// line is smaller).
    nodes: u64,
    /// Bytes from one node to the next.
    node_bytes: u64,
    walk: Walk,
    /// Percentage of steps that visit a node (the others sweep).
    node_pct: u64,
    /// Cycles of work per node visit.
    node_work: u64,
}

impl Shape {
    fn of(app: FlaskApp, s: &Sizes) -> Shape {
        let streams = (s.cpus as u64 - 1).max(1);
        let node_bytes = s.lb.max(NODE_BYTES);
        let nodes = |bytes: u64| (bytes / node_bytes).max(2);
        match app {
            FlaskApp::Hmmer => Shape {
                sweep_lines: s.lines(s.private / 2, 1),
                store_every: 4,
                nodes: 0,
                node_bytes,
                walk: Walk::Chase,
                node_pct: 0,
                node_work: 0,
            },
            FlaskApp::Astar => Shape {
                sweep_lines: s.lines(2 * s.private, 1),
                store_every: 8,
                nodes: nodes(2 * s.private),
                node_bytes,
                walk: Walk::Graph { fanout: 16 },
                node_pct: 50,
                node_work: 4,
            },
            // Omnetpp (only SPEC apps come here).
            _ => Shape {
                sweep_lines: s.lines(s.private / 8, 1),
                store_every: 2,
                // Over 4 LLCs in all: the chase goes to memory.
                nodes: nodes(4 * s.llc / streams),
                node_bytes,
                walk: Walk::Chase,
                node_pct: 60,
                node_work: 4,
            },
        }
    }
}

/// Where one stream's data lie.
#[derive(Clone, Copy, Debug)]
struct Layout {
    sweep: u64,
    nodes: u64,
    result: u64,
}

/// What a stream computed, handed to the host when it ends.
#[derive(Debug)]
struct StreamEnd {
    /// Wrapping sum of the values the stream loaded (what it also stored in its result line).
    acc: u64,
    /// The sweep array as the stream left it (the host copy it kept).
    sweep: Vec<u64>,
    /// Visits per node.
    visits: Vec<u64>,
    syscalls: u64,
}

/// The shared OS region and its counters.
#[derive(Clone, Copy, Debug)]
struct Os {
    runq: u64,
    timer: u64,
    syscalls: u64,
    done: u64,
}

/// Initial value of word `i` of `core`'s sweep array.
fn sweep_init(seed: u64, core: usize, i: u64) -> u64 {
    hash64(seed ^ SWEEP_TAG ^ ((core as u64) << 40) ^ i)
}

/// Builds the machine: CPU 0 the OS, CPUs 1.. one stream each, `total_ops` split over them.
pub(super) fn build(
    cfg: &SimConfig,
    s: &Sizes,
    app: FlaskApp,
    total_ops: u64,
) -> Result<(Sim, Checker), WorkloadError> {
    if s.cpus < 2 {
        return Err(WorkloadError::Check(format!(
            "{} needs at least 2 CPUs (one runs the OS), the machine has {}",
            app.name(),
            s.cpus
        )));
    }
    let shape = Shape::of(app, s);
    let streams = s.cpus - 1;
    let node_lines = (shape.nodes * shape.node_bytes).div_ceil(s.lb);
    let per_stream = shape.sweep_lines + node_lines + 1;
    let mut sim = sim_with_lines(cfg, OS_LINES + 3 + streams as u64 * per_stream)?;
    let lb = s.lb;
    let wpl = s.wpl();
    let os = Os {
        runq: sim.alloc_lines(OS_LINES),
        timer: sim.alloc_lines(1),
        syscalls: sim.alloc_lines(1),
        done: sim.alloc_lines(1),
    };
    let faults = Faults::default();
    let ends: Rc<RefCell<Vec<Option<StreamEnd>>>> =
        Rc::new(RefCell::new((0..streams).map(|_| None).collect()));
    let ticks = Rc::new(Cell::new(0u64));

    let os_ticks = ticks.clone();
    sim.spawn(0, move |cpu| async move {
        let mut n = 0;
        while cpu.load(os.done).await < streams as u64 {
            cpu.fetch_add(os.timer, 1).await;
            let q = os.runq + cpu.random_below(OS_LINES) * lb;
            let v = cpu.load(q).await;
            cpu.store(q, v + 1).await;
            n += 1;
            cpu.compute(OS_TICK_CYCLES).await;
        }
        os_ticks.set(n);
    });

    let mut layouts = Vec::with_capacity(streams);
    for i in 0..streams {
        let core = i + 1;
        let l = Layout {
            sweep: sim.alloc_lines(shape.sweep_lines),
            nodes: sim.alloc_lines(node_lines),
            result: sim.alloc_lines(1),
        };
        let sweep: Vec<u64> = (0..shape.sweep_lines * wpl)
            .map(|w| sweep_init(cfg.seed, core, w))
            .collect();
        for (w, &v) in sweep.iter().enumerate() {
            sim.write(l.sweep + 8 * w as u64, v);
        }
        let links = node_links(&shape, cfg.seed ^ LINK_TAG ^ core as u64);
        for (n, &to) in links.iter().enumerate() {
            let nb = shape.node_bytes;
            sim.write(l.nodes + n as u64 * nb, l.nodes + u64::from(to) * nb);
        }
        layouts.push(l);
        let st = Stream {
            shape,
            l,
            lb,
            os,
            budget: share(total_ops, streams, i),
            faults: faults.clone(),
        };
        let ends = ends.clone();
        sim.spawn(core, move |cpu| async move {
            let end = st.run(&cpu, sweep, links).await;
            ends.borrow_mut()[i] = Some(end);
        });
    }

    let seed = cfg.seed;
    let check = move |sim: &Sim| -> Result<(), String> {
        faults.result()?;
        let ends = ends.borrow();
        let mut syscalls = 0;
        for (i, (l, end)) in layouts.iter().zip(ends.iter()).enumerate() {
            let core = i + 1;
            let end = end
                .as_ref()
                .ok_or_else(|| format!("stream on CPU {core} did not finish"))?;
            syscalls += end.syscalls;
            let got = sim.read(l.result);
            if got != end.acc {
                return Err(format!(
                    "CPU {core}: result {got:#x}, but the values it loaded sum to {:#x}",
                    end.acc
                ));
            }
            let what = format!("CPU {core}'s sweep array");
            check_words(sim, l.sweep, end.sweep.len() as u64, &what, |w| {
                end.sweep[w as usize]
            })?;
            for (n, &v) in end.visits.iter().enumerate() {
                let got = sim.read(l.nodes + n as u64 * shape.node_bytes + 8);
                if got != v {
                    return Err(format!(
                        "CPU {core}: node {n} counts {got} visits, the stream made {v}"
                    ));
                }
            }
            // The links are read-only: any change is a lost or misplaced store.
            let links = node_links(&shape, seed ^ LINK_TAG ^ core as u64);
            for (n, &to) in links.iter().enumerate() {
                let nb = shape.node_bytes;
                if sim.read(l.nodes + n as u64 * nb) != l.nodes + u64::from(to) * nb {
                    return Err(format!("CPU {core}: node {n}'s link changed"));
                }
            }
        }
        let (timer, calls) = (sim.read(os.timer), sim.read(os.syscalls));
        let runq: u64 = (0..OS_LINES).map(|q| sim.read(os.runq + q * lb)).sum();
        if timer != ticks.get() || runq != ticks.get() {
            return Err(format!(
                "OS: timer {timer}, run-queue updates {runq}, ticks made {}",
                ticks.get()
            ));
        }
        if calls != syscalls || sim.read(os.done) != streams as u64 {
            return Err(format!(
                "OS: {calls} system calls counted, the streams made {syscalls}"
            ));
        }
        Ok(())
    };
    Ok((sim, Box::new(check)))
}

/// Each node's link (a node index), drawn on the host from `seed`: one random cycle through
/// every node for a chase (Sattolo's shuffle), any node for a graph.
fn node_links(shape: &Shape, seed: u64) -> Vec<u32> {
    let n = shape.nodes;
    let mut rng = SplitMix64::new(seed);
    match shape.walk {
        Walk::Chase => {
            let mut order: Vec<u32> = (0..n as u32).collect();
            for i in (1..n as usize).rev() {
                order.swap(i, rng.below(i as u64) as usize);
            }
            let mut links = vec![0; n as usize];
            for i in 0..n as usize {
                links[order[i] as usize] = order[(i + 1) % n as usize];
            }
            links
        }
        Walk::Graph { .. } => (0..n).map(|_| rng.below(n) as u32).collect(),
    }
}

/// One stream's program.
struct Stream {
    shape: Shape,
    l: Layout,
    lb: u64,
    os: Os,
    /// Memory operations to make (system calls included).
    budget: u64,
    faults: Faults,
}

impl Stream {
    /// Runs the stream over its sweep array (`sweep`, the host copy of its initial values)
    /// and its nodes (`links`); returns what it computed.
    async fn run(self, cpu: &Cpu, mut sweep: Vec<u64>, links: Vec<u32>) -> StreamEnd {
        let Stream {
            shape: sh,
            l,
            lb,
            os,
            budget,
            faults,
        } = self;
        let core = cpu.core();
        let mut visits = vec![0u64; sh.nodes as usize];
        let (mut acc, mut ops, mut cursor, mut node, mut syscalls) = (0u64, 0, 0, 0, 0);
        let mut next_syscall = SYSCALL_EVERY;
        while ops < budget {
            if ops >= next_syscall {
                cpu.fetch_add(os.syscalls, 1).await;
                for _ in 0..SYSCALL_READS {
                    cpu.load(os.runq + cpu.random_below(OS_LINES) * lb).await;
                }
                ops += 1 + SYSCALL_READS;
                next_syscall += SYSCALL_EVERY;
                syscalls += 1;
            }
            if sh.node_pct > 0 && cpu.random_below(100) < sh.node_pct {
                // A node visit: the link is needed before the next node can be found, so
                // these loads block (no overlap), as a pointer chase does.
                let a = l.nodes + node as u64 * sh.node_bytes;
                let link = cpu.load(a).await;
                let want = l.nodes + u64::from(links[node]) * sh.node_bytes;
                faults.expect(link, want, || format!("CPU {core}, link of node {node}"));
                let v = cpu.load(a + 8).await;
                faults.expect(v, visits[node], || format!("CPU {core}, node {node}"));
                cpu.store(a + 8, v + 1).await;
                visits[node] += 1;
                acc = acc.wrapping_add(link);
                cpu.compute(sh.node_work).await;
                let to = (link.wrapping_sub(l.nodes) / sh.node_bytes) % sh.nodes;
                node = match sh.walk {
                    Walk::Chase => to,
                    Walk::Graph { fanout } => (to + cpu.random_below(fanout)) % sh.nodes,
                } as usize;
                ops += 3;
            } else {
                // A sweep step: independent of the last, so it overlaps.
                let i = cursor;
                cursor = (cursor + 1) % sweep.len();
                let a = l.sweep + 8 * i as u64;
                let v = cpu.load_overlapped(a).await;
                faults.expect(v, sweep[i], || format!("CPU {core}, sweep word {i}"));
                acc = acc.wrapping_add(v);
                ops += 1;
                if (i as u64).is_multiple_of(sh.store_every) {
                    let nv = v.wrapping_mul(3).wrapping_add(1);
                    cpu.store_overlapped(a, nv).await;
                    sweep[i] = nv;
                    ops += 1;
                }
            }
        }
        cpu.store(l.result, acc).await;
        cpu.fence().await;
        cpu.fetch_add(os.done, 1).await;
        StreamEnd {
            acc,
            sweep,
            visits,
            syscalls,
        }
    }
}
