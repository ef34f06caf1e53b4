//! `micro`: the STO thesis' §7.2 array microbenchmark. Each transaction
//! touches `tx` random elements of an array of one million integers, half
//! reads and half increments (alternating). Run with every opacity mode.
//! The check after timing: the array sums to the number of committed
//! increments.

use std::hint::black_box;

use rand::rngs::SmallRng;
use rand::Rng;

use crate::harness::mem::{Backend, Body, Conflict, Layout, Mem, Word};
use crate::harness::spec::{Plan, Tally};
use crate::harness::suites::config::SuiteConfig;
use crate::harness::system::System;
use crate::harness::workload::{add_rows, sum_words, WordWorkload};

/// Elements of the array.
pub const ARRAY: usize = 1_000_000;
/// Elements each transaction touches, one workload each.
pub const TX_SIZES: [usize; 4] = [5, 10, 50, 100];
const MAX_TX: usize = 128;

/// Parameters of one micro workload.
#[derive(Clone, Copy, Debug)]
pub struct Micro {
    /// Elements of the array.
    pub array: usize,
    /// Elements each transaction touches.
    pub tx: usize,
}

impl Micro {
    /// The workload's name in reports.
    pub fn name(&self) -> String {
        let array = if self.array.is_multiple_of(1_000_000) {
            format!("{}M", self.array / 1_000_000)
        } else {
            self.array.to_string()
        };
        format!("micro/array={array}/tx={}", self.tx)
    }
}

/// Reads at even positions, increments at odd positions.
struct ArrayTx<'a> {
    idx: &'a [usize],
}

impl Body for ArrayTx<'_> {
    type Out = Word;
    #[inline]
    fn run<M: Mem>(&self, m: &mut M) -> Result<Word, Conflict> {
        let mut seen = 0;
        for (j, &i) in self.idx.iter().enumerate() {
            let v = m.read(i)?;
            if j % 2 == 0 {
                seen ^= v;
            } else {
                m.write(i, v.wrapping_add(1))?;
            }
        }
        Ok(seen)
    }
    fn read_only(&self) -> bool {
        false
    }
    fn lock_ids(&self, out: &mut Vec<usize>) {
        out.extend_from_slice(self.idx);
    }
}

impl WordWorkload for Micro {
    fn layout(&self) -> Layout {
        Layout {
            init: vec![0; self.array],
            fine_locks: Some(self.array),
            snapshot_history: false,
        }
    }

    #[inline]
    fn op<B: Backend>(&self, b: &B, rng: &mut SmallRng, tally: &mut Tally) {
        let mut idx = [0usize; MAX_TX];
        let idx = &mut idx[..self.tx];
        for i in idx.iter_mut() {
            *i = rng.random_range(0..self.array);
        }
        black_box(b.atomic(tally, &ArrayTx { idx }));
        tally.ops += 1;
        tally.delta += (self.tx / 2) as i64;
    }

    fn verify<B: Backend>(&self, b: &B, total: &Tally) -> Result<(), String> {
        let sum = sum_words(b, 0..self.array);
        if sum != total.delta as Word {
            return Err(format!(
                "array sums to {sum}, expected {} committed increments",
                total.delta
            ));
        }
        Ok(())
    }
}

/// Adds the suite's rows.
pub fn plan(cfg: &SuiteConfig, plan: &mut Plan) {
    for &tx in &TX_SIZES {
        if cfg.quick && tx != 10 {
            continue;
        }
        assert!(tx <= MAX_TX);
        let micro = Micro { array: ARRAY, tx };
        let name = micro.name();
        add_rows(
            plan,
            "micro",
            &name,
            &cfg.word_systems(System::Txmem),
            move || micro,
        );
        cfg.add_libitm(
            plan,
            "micro",
            &name,
            &["micro".to_string(), micro.array.to_string(), tx.to_string()],
        );
    }
}
