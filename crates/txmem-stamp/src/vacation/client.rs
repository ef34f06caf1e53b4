//! The clients: threads that run their share of the tasks.

use std::thread;

use txmem::{atomically, Transaction, TxResult};

use super::check::State;
use super::gen::{self, Task};
use super::Vacation;
use crate::{chunk, timed, Measured};

/// Runs tasks `0..tasks` split into `threads` contiguous shares, each
/// thread calling `run_task` on its tasks in order. Returns the
/// measurement from start to the last thread's end (see [`timed`]) and how
/// many tasks of each kind ran.
pub fn drive(
    app: &Vacation,
    threads: usize,
    run_task: impl Fn(&Task) + Sync,
) -> (Measured, [u64; 3]) {
    let threads = threads.max(1);
    let (params, seed) = (app.params(), app.seed());
    let share = |i: usize| {
        let mut done = [0u64; 3];
        for t in chunk(params.tasks, threads, i) {
            let task = gen::task(params, seed, t);
            run_task(&task);
            done[kind_index(&task)] += 1;
        }
        done
    };
    let (counts, measured): (Vec<[u64; 3]>, Measured) = timed(|| {
        if threads == 1 {
            vec![share(0)]
        } else {
            thread::scope(|s| {
                let handles: Vec<_> = (0..threads)
                    .map(|i| {
                        let share = &share;
                        s.spawn(move || share(i))
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().expect("client thread panicked"))
                    .collect()
            })
        }
    });
    let mut total = [0; 3];
    for c in counts {
        for k in 0..3 {
            total[k] += c[k];
        }
    }
    (measured, total)
}

/// The census index of a task's kind (reserve, delete, update).
pub fn kind_index(task: &Task) -> usize {
    match task {
        Task::Reserve { .. } => 0,
        Task::DeleteCustomer { .. } => 1,
        Task::Update { .. } => 2,
    }
}

/// Runs the tasks as transactions from `threads` threads over the database
/// `initial` builds (`task` runs one task inside a transaction), and reads
/// the final database with `into_state`: the driver of every transactional
/// variant.
pub fn run_transactional<D: Sync>(
    app: &Vacation,
    threads: usize,
    initial: fn(&Vacation) -> D,
    task: for<'e> fn(&'e D, &mut Transaction<'e>, &Task) -> TxResult<()>,
    into_state: fn(D, &Vacation, [u64; 3]) -> State,
) -> (Measured, State) {
    let db = initial(app);
    let (measured, tasks) = drive(app, threads, |t| atomically(|tx| task(&db, tx, t)));
    (measured, into_state(db, app, tasks))
}
