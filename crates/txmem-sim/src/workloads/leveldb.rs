//! LevelDB's write path (`DBImpl::Write`) under its DB mutex, for XSync's Figs 3–4: each
//! thread makes `total_ops / threads` Puts, under the spinlock or elided by `txmem-htm`'s
//! policies (`sync = spinlock | elided`, coarsening with `elision.coarsen`).
//!
//! The model keeps the structure the lock profile of the real program shows
//! (docs/results/leveldb-xsync-2026-12-02.md), not LevelDB's code:
//!
//! * **Section A** (`db_impl.cc:1211`): encode the batch, take a ticket in the writers'
//!   queue (head and tail share a line, as `writers_` does), read the memtable's size and
//!   the version's level-0 count (`MakeRoomForWrite`), and, if the ticket is at the head,
//!   become the leader of the tickets queued so far (`BuildBatchGroup`, up to
//!   [`MAX_GROUP`]) and read the last sequence.
//! * A follower waits outside the lock until the head reaches or passes its ticket, then
//!   runs **section C** (`:1214`, the condition wait's re-acquisition): done if a leader
//!   wrote its batch, else it leads.
//! * The leader, outside the lock: the log append and the skiplist inserts
//!   (`think_cycles` of work, then [`SKIPLIST_PATH`] loads of random memtable lines and one
//!   store per entry), and the memtable's size update.
//! * **Section B** (`:1246`): the last sequence, the group's tickets retired (head moved).
//!
//! Section sizes come from the profile: sections A and B hold the mutex about 0.1 µs
//! (a few hundred cycles: here a few loads and stores plus [`ENCODE_CYCLES`]); a Put at
//! one thread took about 3.7 µs (270 kops/s), nearly all of it outside the mutex, which
//! `think_cycles` (default here 8,000 cycles) stands for.
//!
//! Coarsening may merge only what runs without a system call between: a leader's section
//! B and its next Put's section A. The thread's phase and ticket live in simulated memory
//! (a private line), so an aborted group rolls them back with everything else.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Instant;

use super::counter::{add_to, finish};
use super::{lock_threads, share, RunResult, SyncKind, WorkloadConfig, WorkloadError};
use crate::config::SimConfig;
use crate::cpu::Cpu;
use crate::elision::{spin_lock, spin_unlock, Elision, ElisionStats};

/// Most writers one leader commits at once.
pub const MAX_GROUP: u64 = 8;
/// Random memtable lines a skiplist insert reads on its way down.
pub const SKIPLIST_PATH: u64 = 12;
/// Memtable lines the skiplist spreads over.
const MEMTABLE_LINES: u64 = 4096;
/// Cycles of batch encoding at the start of section A.
pub const ENCODE_CYCLES: u64 = 60;

// Words of the shared lines.
const HEAD: u64 = 0;
const TAIL: u64 = 8;
const LAST_SEQUENCE: u64 = 0;
const LEVEL0_FILES: u64 = 8;
// Words of a thread's private line: what comes next, its ticket, where its group ends.
const PHASE: u64 = 0;
const TICKET: u64 = 8;
const GROUP_END: u64 = 16;
const P_ENQUEUE: u64 = 0;
const P_FOLLOW: u64 = 1;
const P_LEAD: u64 = 2;
const P_RETIRE: u64 = 3;

#[derive(Clone, Copy)]
struct Lines {
    mutex: u64,
    queue: u64,
    versions: u64,
    mem: u64,
    memtable: u64,
    me: u64,
}

/// Section A: enqueue, make room, and lead if at the head.
async fn enqueue(cpu: Cpu, l: Lines) {
    cpu.compute(ENCODE_CYCLES).await;
    let ticket = cpu.load(l.queue + TAIL).await;
    cpu.store(l.queue + TAIL, ticket + 1).await;
    cpu.load(l.mem).await;
    cpu.load(l.versions + LEVEL0_FILES).await;
    cpu.store(l.me + TICKET, ticket).await;
    lead_if_head(&cpu, l, ticket).await;
}

/// If `ticket` is at the head, takes the tickets queued so far as the group.
async fn lead_if_head(cpu: &Cpu, l: Lines, ticket: u64) {
    let head = cpu.load(l.queue + HEAD).await;
    if head == ticket {
        let tail = cpu.load(l.queue + TAIL).await;
        cpu.store(l.me + GROUP_END, tail.min(ticket + MAX_GROUP))
            .await;
        cpu.load(l.versions + LAST_SEQUENCE).await;
        cpu.store(l.me + PHASE, P_LEAD).await;
    } else {
        cpu.store(l.me + PHASE, P_FOLLOW).await;
    }
}

/// Section C: a woken follower finds its batch written, or leads.
async fn woken(cpu: Cpu, l: Lines) {
    let ticket = cpu.load(l.me + TICKET).await;
    if cpu.load(l.queue + HEAD).await > ticket {
        cpu.store(l.me + PHASE, P_ENQUEUE).await;
    } else {
        lead_if_head(&cpu, l, ticket).await;
    }
}

/// Section B: publish the sequence, retire the group; with `then_enqueue` (a coarsened
/// group's second section) the next Put's section A follows in the same body call.
async fn retire(cpu: Cpu, l: Lines) {
    match cpu.load(l.me + PHASE).await {
        P_RETIRE => {
            let ticket = cpu.load(l.me + TICKET).await;
            let end = cpu.load(l.me + GROUP_END).await;
            let seq = cpu.load(l.versions + LAST_SEQUENCE).await;
            cpu.store(l.versions + LAST_SEQUENCE, seq + (end - ticket))
                .await;
            cpu.store(l.queue + HEAD, end).await;
            cpu.store(l.me + PHASE, P_ENQUEUE).await;
        }
        _ => enqueue(cpu, l).await,
    }
}

/// One thread's mutex: the spinlock, or elision with its policies.
struct DbMutex {
    elided: Option<Elision>,
}

impl DbMutex {
    /// Runs up to `max` sections of `body` under the mutex; returns how many ran.
    async fn run<F, Fut>(&mut self, cpu: &Cpu, lock: u64, max: u64, mut body: F) -> u64
    where
        F: FnMut(Cpu) -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        match &mut self.elided {
            Some(e) => e.run_group(cpu, lock, max, body).await,
            None => {
                spin_lock(cpu, lock).await;
                body(cpu.clone()).await;
                spin_unlock(cpu, lock).await;
                1
            }
        }
    }
}

/// Runs the write path; checks that every Put got a sequence number exactly once.
pub fn run_xsync_leveldb(cfg: &SimConfig, w: &WorkloadConfig) -> Result<RunResult, WorkloadError> {
    let threads = lock_threads(cfg, w)?;
    if !matches!(w.sync, SyncKind::Spinlock | SyncKind::Elided) {
        return Err(WorkloadError::Check(
            "xsync-leveldb runs under sync = spinlock or elided".into(),
        ));
    }
    let start = Instant::now();
    let mut sim = super::sim_with_lines(cfg, 4 + MEMTABLE_LINES + threads as u64)?;
    let shared = sim.alloc_lines(4);
    let memtable = sim.alloc_lines(MEMTABLE_LINES);
    let privates = sim.alloc_lines(threads as u64);
    let lb = cfg.line_bytes;
    let elision = Rc::new(Cell::new(ElisionStats::default()));
    let think = w.think_cycles;
    for t in 0..threads {
        let l = Lines {
            mutex: shared,
            queue: shared + lb,
            versions: shared + 2 * lb,
            mem: shared + 3 * lb,
            memtable,
            me: privates + t as u64 * lb,
        };
        let puts = share(w.total_ops, threads, t);
        let (ecfg, sync, total) = (w.elision.clone(), w.sync, elision.clone());
        sim.spawn(t, move |cpu| async move {
            let mut m = DbMutex {
                elided: (sync == SyncKind::Elided).then(|| Elision::new(&ecfg)),
            };
            let mut started = 0;
            while started < puts || cpu.load(l.me + PHASE).await != P_ENQUEUE {
                match cpu.load(l.me + PHASE).await {
                    P_ENQUEUE => {
                        m.run(&cpu, l.mutex, 1, |c| enqueue(c, l)).await;
                        started += 1;
                    }
                    P_FOLLOW => {
                        let ticket = cpu.load(l.me + TICKET).await;
                        cpu.spin_until(l.queue + HEAD, |h| h >= ticket).await;
                        m.run(&cpu, l.mutex, 1, |c| woken(c, l)).await;
                    }
                    P_LEAD => {
                        let ticket = cpu.load(l.me + TICKET).await;
                        let end = cpu.load(l.me + GROUP_END).await;
                        cpu.compute(think).await;
                        for _ in ticket..end {
                            for _ in 0..SKIPLIST_PATH {
                                let line = cpu.random_below(MEMTABLE_LINES);
                                cpu.load(l.memtable + line * lb).await;
                            }
                            let line = cpu.random_below(MEMTABLE_LINES);
                            cpu.store(l.memtable + line * lb, ticket).await;
                        }
                        let size = cpu.load(l.mem).await;
                        cpu.store(l.mem, size + (end - ticket)).await;
                        cpu.store(l.me + PHASE, P_RETIRE).await;
                        // B, and (coarsened) the next Put's A in the same transaction.
                        let max = if started < puts { 2 } else { 1 };
                        let k = m.run(&cpu, l.mutex, max, |c| retire(c, l)).await;
                        started += k - 1;
                    }
                    _ => unreachable!("phase"),
                }
            }
            if let Some(e) = &m.elided {
                add_to(&total, e.stats());
            }
        });
    }
    let expect = w.total_ops;
    finish(&mut sim, start, &elision, |sim| {
        let (seq, head, tail) = (
            sim.read(shared + 2 * lb + LAST_SEQUENCE),
            sim.read(shared + lb + HEAD),
            sim.read(shared + lb + TAIL),
        );
        if seq == expect && head == expect && tail == expect {
            Ok(())
        } else {
            Err(format!(
                "last sequence {seq}, head {head}, tail {tail}; expected {expect} Puts"
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::WorkloadKind;

    fn run(sync: SyncKind, threads: usize, coarsen: bool) -> RunResult {
        let mut w = WorkloadConfig {
            kind: WorkloadKind::XsyncLeveldb,
            sync,
            threads,
            total_ops: 300,
            think_cycles: 2000,
            ..WorkloadConfig::default()
        };
        w.elision.coarsen = coarsen;
        run_xsync_leveldb(&SimConfig::haswell(), &w).expect("every Put sequenced once")
    }

    #[test]
    fn every_put_is_sequenced_once_under_the_lock_and_elided() {
        for threads in [1, 3, 8] {
            run(SyncKind::Spinlock, threads, false);
            let e = run(SyncKind::Elided, threads, false).elision;
            // Sections A and B of every Put, and C of each woken follower.
            assert!(e.sections >= 600, "{e:?}");
            assert_eq!(
                e.sections,
                e.elided_commits + e.fallback_acquisitions,
                "{e:?}"
            );
        }
    }

    #[test]
    fn one_thread_commits_every_section_and_coarsening_merges_them() {
        let plain = run(SyncKind::Elided, 1, false).elision;
        assert_eq!(plain.fallback_acquisitions, 0, "{plain:?}");
        assert_eq!(plain.sections, 600);
        let coarse = run(SyncKind::Elided, 1, true).elision;
        assert!(coarse.coarsened_sections > 0, "{coarse:?}");
        assert!(coarse.elided_commits < plain.elided_commits, "{coarse:?}");
    }

    #[test]
    fn other_synchronization_is_refused() {
        let w = WorkloadConfig {
            kind: WorkloadKind::XsyncLeveldb,
            sync: SyncKind::Tx,
            ..WorkloadConfig::default()
        };
        assert!(run_xsync_leveldb(&SimConfig::haswell(), &w).is_err());
    }
}
