//! The learner: hill climbing over tasks, one per variable.
//!
//! A task for `v` evaluates, outside transactions, adding each candidate
//! parent `u` to `v` (one that is not `v`, not already a parent and not a
//! descendant of `v`, so the edge closes no cycle in the graph as last
//! seen) and picks the insertion that raises `v`'s local score most. If
//! one raises it by more than [`EPSILON`], the insertion is applied (in
//! the parallel variants, one transaction re-checks acyclicity against the
//! current graph) and the task is queued again while `v` has fewer than
//! the limit's parents; otherwise the task ends. The run ends when every
//! variable's task has ended.
//!
//! `v`'s local score depends on `v`'s parents only, and only the task for
//! `v` changes them (a variable has at most one task, queued or running),
//! so the score computed outside a transaction is exact when it commits;
//! what other tasks change meanwhile is the graph the cycle check reads.
//!
//! In the parallel variants a thread stops when it finds the queue empty
//! ([`learn_parallel`] says why no task is lost).

use std::collections::VecDeque;
use std::thread;

use super::net::{descendants, Dataset, Learned};

/// The least score gain an insertion must bring to be applied.
pub const EPSILON: f64 = 1e-6;

/// The best insertion of a parent into `v` (parents `parents`, local score
/// `score`) among the variables not in `excluded`: the parent and `v`'s
/// new local score, or `None` if none gains more than [`EPSILON`]. Ties go
/// to the lowest-numbered parent, so the choice is deterministic.
pub fn best_insertion(
    data: &Dataset,
    v: usize,
    parents: u64,
    score: f64,
    excluded: u64,
) -> Option<(usize, f64)> {
    let mut best = None;
    let mut bar = score + EPSILON;
    for u in (0..data.vars).filter(|&u| excluded & (1 << u) == 0) {
        let s = data.local_score(v, parents | 1 << u);
        if s > bar {
            (best, bar) = (Some((u, s)), s);
        }
    }
    best
}

/// The sequential learner: plain sets and a `VecDeque` of tasks, starting
/// from the empty network whose local scores are `empty`.
pub fn learn_seq(data: &Dataset, empty: &[f64], limit: usize) -> Learned {
    let n = data.vars;
    let (mut parents, mut children, mut scores) = (vec![0u64; n], vec![0u64; n], empty.to_vec());
    let mut tasks: VecDeque<usize> = (0..n).collect();
    while let Some(v) = tasks.pop_front() {
        if parents[v].count_ones() as usize >= limit {
            continue;
        }
        let excluded = descendants(&children, v) | 1 << v | parents[v];
        if let Some((u, s)) = best_insertion(data, v, parents[v], scores[v], excluded) {
            parents[v] |= 1 << u;
            children[u] |= 1 << v;
            scores[v] = s;
            if (parents[v].count_ones() as usize) < limit {
                tasks.push_back(v);
            }
        }
    }
    Learned {
        parents,
        children,
        score: scores.iter().sum(),
    }
}

/// The shared network and task queue of a transactional variant.
pub trait Shared: Sync {
    /// Takes the next task (a variable), in one transaction.
    fn pop(&self) -> Option<usize>;

    /// `v`'s parent set, committed. Exact for the holder of `v`'s task.
    fn parents_now(&self, v: usize) -> u64;

    /// `v`'s recorded local score, committed.
    fn score_now(&self, v: usize) -> f64;

    /// `v`'s descendants, read in one transaction (a consistent graph,
    /// possibly outdated by the time it is used).
    fn descendants(&self, v: usize) -> u64;

    /// In one transaction: if `v` does not reach `u` (so `u -> v` closes
    /// no cycle), adds the edge, records `score` as `v`'s local score,
    /// queues `v` again if `requeue`, and returns true; otherwise queues
    /// `v` again (to re-evaluate against the new graph) and returns false.
    fn insert(&self, u: usize, v: usize, score: f64, requeue: bool) -> bool;

    /// The learned network, once every thread has finished.
    fn learned(&self) -> Learned;
}

/// Runs the learner on `threads` threads over `shared`, whose queue holds
/// every variable's task.
///
/// A thread stops when it finds the queue empty. That loses no task: a
/// task is queued again only by a running thread, which pops (that task or
/// another) before it can stop, so the last thread to stop has seen the
/// queue empty after every push. Threads never poll an empty queue, at the
/// price of fewer threads working as the last tasks run.
pub fn learn_parallel<S: Shared>(shared: &S, data: &Dataset, limit: usize, threads: usize) {
    thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(move || {
                while let Some(v) = shared.pop() {
                    let parents = shared.parents_now(v);
                    let count = parents.count_ones() as usize;
                    if count >= limit {
                        continue;
                    }
                    let excluded = shared.descendants(v) | 1 << v | parents;
                    if let Some((u, s)) =
                        best_insertion(data, v, parents, shared.score_now(v), excluded)
                    {
                        // `insert` queues `v` again unless this edge brings
                        // it to the limit (or closes a cycle after all).
                        shared.insert(u, v, s, count + 1 < limit);
                    }
                }
            });
        }
    });
}
