//! The `async` suite: async transactions, txmem's (`atomically_async`)
//! beside the `async-stm` crate's, each benchmark thread driving its own
//! tokio current-thread runtime.
//!
//! * `async/pingpong`: one operation is a round trip between two tasks of
//!   the thread's runtime through two queues: the pinger pushes a token and
//!   waits on the second queue; the ponger, waiting on the first, moves it
//!   over. Every round trip suspends a task on an empty queue and wakes it
//!   from a commit: the `retry` → waker → wake path. Each thread has its own
//!   pair of queues.
//! * `async/bank`: the bank of the `bank` suite (1,024 accounts, 80%
//!   transfers, 20% audits of the total) as one async transaction per
//!   operation on `TBox`es (txmem) or `TVar`s (async-stm), awaited by the
//!   thread's runtime; no operation waits, so this is the cost of an async
//!   transaction that completes in its first poll.

use std::future::Future;

use rand::rngs::SmallRng;
use rand::Rng;
use txmem::{TBox, TQueue, TxOptions};

use crate::harness::kinds::KindTallies;
use crate::harness::spec::{AbortCounting, Instance, Plan, Tally};
use crate::harness::suites::config::SuiteConfig;
use crate::harness::system::System;

const SUITE: &str = "async";
const ACCOUNTS: usize = 1024;
const AUDIT_PERCENT: u32 = 20;
const INITIAL: i64 = 1000;

thread_local! {
    /// Runs of async-stm's closures on this thread since the last
    /// operation ended (its aborts are not counted otherwise).
    static RUNS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// The calling benchmark thread's runtime.
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("txmem bench: cannot build a tokio runtime");
}

/// Counts one run of an async-stm closure.
fn ran() {
    RUNS.with(|r| r.set(r.get() + 1));
}

/// The runs counted since the last call (async-stm's attempts of one
/// operation).
fn take_runs() -> u64 {
    RUNS.with(|r| r.replace(0))
}

/// Runs `f` to completion on the calling thread's runtime.
fn block_on<F: Future>(f: F) -> F::Output {
    RUNTIME.with(|rt| rt.block_on(f))
}

/// A pair of queues, one per direction of a ping-pong.
trait Queues: Send + Sync {
    /// One round trip of `token`; returns the token that came back.
    fn round_trip(&self, token: u64) -> u64;
    /// Tokens left in the queues.
    fn left(&self) -> usize;
    /// Leaves a stray token in a queue (`--break-check`).
    fn strand(&self);
}

/// txmem's pair.
struct TxmemQueues {
    there: TQueue<u64>,
    back: TQueue<u64>,
    options: TxOptions,
}

impl Queues for TxmemQueues {
    fn round_trip(&self, token: u64) -> u64 {
        let o = &self.options;
        block_on(async {
            let ping = async {
                o.run_async(|tx| self.there.push(tx, token)).await;
                o.run_async(|tx| self.back.pop(tx)).await
            };
            let pong = async {
                let t = o.run_async(|tx| self.there.pop(tx)).await;
                o.run_async(|tx| self.back.push(tx, t)).await;
            };
            tokio::join!(ping, pong).0
        })
    }
    fn left(&self) -> usize {
        self.there.load_len() + self.back.load_len()
    }
    fn strand(&self) {
        txmem::atomically(|tx| self.there.push(tx, 0));
    }
}

/// async-stm's pair (its two-vector `TQueue`).
struct AsyncStmQueues {
    there: async_stm::queues::tqueue::TQueue<u64>,
    back: async_stm::queues::tqueue::TQueue<u64>,
}

impl Queues for AsyncStmQueues {
    fn round_trip(&self, token: u64) -> u64 {
        use async_stm::queues::TQueueLike;
        block_on(async {
            let ping = async {
                async_stm::atomically(|| {
                    ran();
                    self.there.write(token)
                })
                .await;
                async_stm::atomically(|| {
                    ran();
                    self.back.read()
                })
                .await
            };
            let pong = async {
                let t = async_stm::atomically(|| {
                    ran();
                    self.there.read()
                })
                .await;
                async_stm::atomically(|| {
                    ran();
                    self.back.write(t)
                })
                .await;
            };
            tokio::join!(ping, pong).0
        })
    }
    fn left(&self) -> usize {
        use async_stm::queues::TQueueLike;
        let mut n = 0;
        for q in [&self.there, &self.back] {
            while !block_on(async_stm::atomically(|| q.is_empty())) {
                block_on(async_stm::atomically(|| q.read()));
                n += 1;
            }
        }
        n
    }
    fn strand(&self) {
        use async_stm::queues::TQueueLike;
        block_on(async_stm::atomically(|| self.there.write(0)));
    }
}

/// The ping-pong: a pair of queues per thread.
struct PingPong<Q> {
    pairs: Vec<Q>,
    counting: AbortCounting,
}

impl<Q: Queues> Instance for PingPong<Q> {
    fn op(&self, rng: &mut SmallRng, tally: &mut Tally) {
        self.op_as(0, rng, tally, &mut KindTallies::default());
    }

    fn op_as(&self, worker: usize, rng: &mut SmallRng, tally: &mut Tally, _: &mut KindTallies) {
        let token = rng.random::<u64>();
        if self.pairs[worker % self.pairs.len()].round_trip(token) != token {
            tally.bad += 1;
        }
        // (Four transactions a round trip: runs beyond those are reruns,
        // a waiting pop's included, as txmem counts its `retry`s.)
        tally.ops += 1;
        tally.attempts += 1 + take_runs().saturating_sub(4);
    }

    fn verify(&self, total: &Tally) -> Result<(), String> {
        if total.bad > 0 {
            return Err(format!(
                "{} round trips brought back another token",
                total.bad
            ));
        }
        let left: usize = self.pairs.iter().map(Q::left).sum();
        if left > 0 {
            return Err(format!(
                "{left} tokens left in the queues after every round trip"
            ));
        }
        Ok(())
    }

    fn sabotage(&self) {
        self.pairs[0].strand();
    }

    fn abort_counting(&self) -> AbortCounting {
        self.counting
    }
}

/// Accounts of the bank.
trait Accounts: Send + Sync {
    /// Moves `amount` from account `from` to `to`.
    fn transfer(&self, from: usize, to: usize, amount: i64);
    /// The total of every account, read in one transaction.
    fn audit(&self) -> i64;
    /// Adds money out of nowhere (`--break-check`).
    fn counterfeit(&self);
}

/// txmem's accounts: a `TBox<i64>` each.
struct TxmemAccounts {
    accounts: Vec<TBox<i64>>,
    options: TxOptions,
}

impl Accounts for TxmemAccounts {
    fn transfer(&self, from: usize, to: usize, amount: i64) {
        let (a, b) = (&self.accounts[from], &self.accounts[to]);
        block_on(self.options.run_async(|tx| {
            let (x, y) = (a.get(tx)?, b.get(tx)?);
            a.set(tx, x - amount)?;
            b.set(tx, y + amount)
        }))
    }
    fn audit(&self) -> i64 {
        block_on(self.options.run_async(|tx| {
            let mut sum = 0;
            for a in &self.accounts {
                sum += a.get(tx)?;
            }
            Ok(sum)
        }))
    }
    fn counterfeit(&self) {
        txmem::atomically(|tx| {
            let x = self.accounts[0].get(tx)?;
            self.accounts[0].set(tx, x + 1)
        });
    }
}

/// async-stm's accounts: a `TVar<i64>` each.
struct AsyncStmAccounts {
    accounts: Vec<async_stm::TVar<i64>>,
}

impl Accounts for AsyncStmAccounts {
    fn transfer(&self, from: usize, to: usize, amount: i64) {
        let (a, b) = (&self.accounts[from], &self.accounts[to]);
        block_on(async_stm::atomically(|| {
            ran();
            let (x, y) = (*a.read()?, *b.read()?);
            a.write(x - amount)?;
            b.write(y + amount)
        }))
    }
    fn audit(&self) -> i64 {
        block_on(async_stm::atomically(|| {
            ran();
            let mut sum = 0;
            for a in &self.accounts {
                sum += *a.read()?;
            }
            Ok(sum)
        }))
    }
    fn counterfeit(&self) {
        let a = &self.accounts[0];
        block_on(async_stm::atomically(|| a.update(|x| x + 1)));
    }
}

/// The bank over some accounts.
struct Bank<A> {
    accounts: A,
    counting: AbortCounting,
}

impl<A: Accounts> Instance for Bank<A> {
    fn op(&self, rng: &mut SmallRng, tally: &mut Tally) {
        if rng.random_range(0..100) < AUDIT_PERCENT {
            if self.accounts.audit() != INITIAL * ACCOUNTS as i64 {
                tally.bad += 1;
            }
        } else {
            let from = rng.random_range(0..ACCOUNTS);
            let mut to = rng.random_range(0..ACCOUNTS - 1);
            if to >= from {
                to += 1;
            }
            self.accounts.transfer(from, to, rng.random_range(1..=10));
        }
        tally.ops += 1;
        tally.attempts += take_runs();
    }

    fn verify(&self, total: &Tally) -> Result<(), String> {
        if total.bad > 0 {
            return Err(format!("{} committed audits saw a wrong total", total.bad));
        }
        let sum = self.accounts.audit();
        if sum != INITIAL * ACCOUNTS as i64 {
            return Err(format!(
                "bank total changed: {sum}, expected {}",
                INITIAL * ACCOUNTS as i64
            ));
        }
        Ok(())
    }

    fn sabotage(&self) {
        self.accounts.counterfeit();
    }

    fn abort_counting(&self) -> AbortCounting {
        self.counting
    }
}

/// Adds the suite's rows: each workload on txmem and on async-stm.
pub fn plan(cfg: &SuiteConfig, plan: &mut Plan) {
    let options = TxOptions::new().contention(cfg.policy);
    plan.case_sized(
        SUITE,
        "async/pingpong",
        System::Txmem,
        "txmem atomically_async, TQueue pair per thread",
        move |threads| {
            let pairs = (0..threads)
                .map(|_| TxmemQueues {
                    there: TQueue::new(),
                    back: TQueue::new(),
                    options,
                })
                .collect();
            Ok(Box::new(PingPong {
                pairs,
                counting: AbortCounting::TxmemStats,
            }))
        },
    );
    plan.case_sized(
        SUITE,
        "async/pingpong",
        System::AsyncStm,
        "async-stm 0.5 atomically, its TQueue pair per thread",
        |threads| {
            let pairs = (0..threads)
                .map(|_| AsyncStmQueues {
                    there: Default::default(),
                    back: Default::default(),
                })
                .collect();
            Ok(Box::new(PingPong {
                pairs,
                counting: AbortCounting::Attempts,
            }))
        },
    );
    let bank = format!("async/bank/accounts={ACCOUNTS}/audit={AUDIT_PERCENT}%");
    plan.case(
        SUITE,
        &bank,
        System::Txmem,
        "txmem atomically_async, a TBox<i64> per account",
        move || {
            Box::new(Bank {
                accounts: TxmemAccounts {
                    accounts: (0..ACCOUNTS).map(|_| TBox::new(INITIAL)).collect(),
                    options,
                },
                counting: AbortCounting::TxmemStats,
            })
        },
    );
    plan.case(
        SUITE,
        &bank,
        System::AsyncStm,
        "async-stm 0.5 atomically, a TVar<i64> per account",
        || {
            Box::new(Bank {
                accounts: AsyncStmAccounts {
                    accounts: (0..ACCOUNTS)
                        .map(|_| async_stm::TVar::new(INITIAL))
                        .collect(),
                },
                counting: AbortCounting::Attempts,
            })
        },
    );
}
