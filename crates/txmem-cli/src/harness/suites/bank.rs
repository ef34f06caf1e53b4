//! `bank`: the classic TinySTM/libitm bank. Accounts start with equal
//! balances; 80% of operations transfer a random amount between two random
//! distinct accounts, 20% are audits that read every account and check the
//! total. The check after timing: the total is unchanged and no committed
//! audit ever saw a wrong total.

use rand::rngs::SmallRng;
use rand::Rng;

use crate::harness::kinds::KindTallies;
use crate::harness::mem::{Backend, Body, Conflict, Layout, Mem, Word};
use crate::harness::peers::tinystm::TinyStmBank;
use crate::harness::spec::{Case, Plan, Subject, Tally};
use crate::harness::suites::config::SuiteConfig;
use crate::harness::system::System;
use crate::harness::workload::{add_rows, atomic_of_kind, sum_words, WordWorkload};

/// Accounts in the bank.
pub const ACCOUNTS: usize = 1024;
/// Percentage of operations that are audits.
pub const AUDIT_PERCENT: u32 = 20;
const INITIAL: i64 = 1000;
/// The kinds of the bank's operations, as indexes into `kinds()`.
const TRANSFER: usize = 0;
const AUDIT: usize = 1;

/// Parameters of the bank workload.
#[derive(Clone, Copy, Debug)]
pub struct Bank {
    /// Accounts.
    pub accounts: usize,
    /// Percentage of operations that are audits.
    pub audit_percent: u32,
}

impl Bank {
    /// The workload's name in reports.
    pub fn name(&self) -> String {
        format!(
            "bank/accounts={}/audit={}%",
            self.accounts, self.audit_percent
        )
    }
    fn expected_total(&self) -> i64 {
        INITIAL * self.accounts as i64
    }
}

struct Transfer {
    from: usize,
    to: usize,
    amount: i64,
}

impl Body for Transfer {
    type Out = ();
    #[inline]
    fn run<M: Mem>(&self, m: &mut M) -> Result<(), Conflict> {
        let a = m.read(self.from)? as i64;
        let b = m.read(self.to)? as i64;
        m.write(self.from, a.wrapping_sub(self.amount) as Word)?;
        m.write(self.to, b.wrapping_add(self.amount) as Word)
    }
    fn read_only(&self) -> bool {
        false
    }
    fn lock_ids(&self, out: &mut Vec<usize>) {
        out.extend([self.from, self.to]);
    }
}

struct Audit {
    accounts: usize,
}

impl Body for Audit {
    type Out = i64;
    #[inline]
    fn run<M: Mem>(&self, m: &mut M) -> Result<i64, Conflict> {
        Ok(m.sum(0..self.accounts)? as i64)
    }
    fn read_only(&self) -> bool {
        true
    }
    fn lock_ids(&self, out: &mut Vec<usize>) {
        out.extend(0..self.accounts);
    }
}

impl WordWorkload for Bank {
    fn layout(&self) -> Layout {
        Layout {
            init: vec![INITIAL as Word; self.accounts],
            fine_locks: Some(self.accounts),
            // Audits read every account while transfers commit.
            snapshot_history: true,
        }
    }

    #[inline]
    fn op<B: Backend>(&self, b: &B, rng: &mut SmallRng, tally: &mut Tally) {
        self.op_kinds(b, rng, tally, &mut KindTallies::default())
    }

    #[inline]
    fn op_kinds<B: Backend>(
        &self,
        b: &B,
        rng: &mut SmallRng,
        tally: &mut Tally,
        kinds: &mut KindTallies,
    ) {
        if rng.random_range(0..100) < self.audit_percent {
            let audit = Audit {
                accounts: self.accounts,
            };
            let total = atomic_of_kind(b, tally, kinds, AUDIT, &audit);
            if total != self.expected_total() {
                tally.bad += 1;
            }
        } else {
            let from = rng.random_range(0..self.accounts);
            let mut to = rng.random_range(0..self.accounts - 1);
            if to >= from {
                to += 1;
            }
            let amount = rng.random_range(1..=10);
            let transfer = Transfer { from, to, amount };
            atomic_of_kind(b, tally, kinds, TRANSFER, &transfer);
        }
        tally.ops += 1;
    }

    /// Transfers and audits, counted apart: whether audits starve shows
    /// in their aborts.
    fn kinds(&self) -> &'static [&'static str] {
        &["transfer", "audit"]
    }

    fn verify<B: Backend>(&self, b: &B, total: &Tally) -> Result<(), String> {
        if total.bad > 0 {
            return Err(format!(
                "{} committed audits saw a total other than {}",
                total.bad,
                self.expected_total()
            ));
        }
        let sum = sum_words(b, 0..self.accounts) as i64;
        if sum != self.expected_total() {
            return Err(format!(
                "bank total changed: {sum}, expected {}",
                self.expected_total()
            ));
        }
        Ok(())
    }
}

/// Adds the suite's rows.
pub fn plan(cfg: &SuiteConfig, plan: &mut Plan) {
    let bank = Bank {
        accounts: ACCOUNTS,
        audit_percent: AUDIT_PERCENT,
    };
    let name = bank.name();
    add_rows(
        plan,
        "bank",
        &name,
        &cfg.word_systems(System::Txmem),
        move || bank,
    );
    cfg.add_libitm(
        plan,
        "bank",
        &name,
        &[
            "bank".to_string(),
            bank.accounts.to_string(),
            bank.audit_percent.to_string(),
        ],
    );
    match TinyStmBank::from_env() {
        Ok(tiny) => plan.cases.push(Case {
            suite: "bank",
            workload: name.clone(),
            system: System::Tinystm,
            note: "TinySTM's test/bank program (write-back ETL, suicide CM)".into(),
            subject: Subject::External(Box::new(move |p| {
                tiny.run(bank.accounts, bank.audit_percent, p)
            })),
        }),
        Err(why) => plan.skip(&name, System::Tinystm, &why),
    }
}
