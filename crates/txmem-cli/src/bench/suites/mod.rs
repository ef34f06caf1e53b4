//! The suites and the configuration they are planned with.

pub mod bank;
pub mod intset;
pub mod intset_typed;
pub mod micro;

use std::sync::Arc;

use txmem::{ContentionPolicy, Opacity};

use crate::bench::peers::libitm::Libitm;
use crate::bench::peers::locks::LockKind;
use crate::bench::spec::{Case, Plan, Subject};
use crate::bench::txmem_sys::{opacity_variants, Store, Variant};
use crate::bench::workload::Systems;

/// Suite names accepted on the command line, with a one-line description.
pub const SUITES: [(&str, &str); 5] = [
    ("quick", "a mixed selection of the suites below (the default, about a minute)"),
    ("micro", "STO thesis §7.2 array microbenchmark: 1M integers, transactions of 5/10/50/100 half reads, half increments"),
    ("intset", "list / hash / ordered integer sets, sizes 256 and 4096, update rates 0/20/50%"),
    ("bank", "1024 accounts: 80% transfers, 20% audits of the total"),
    ("all", "micro, intset and bank"),
];

/// What the suites are planned with.
pub struct SuiteConfig {
    /// Plan the quick selection instead of the full suites.
    pub quick: bool,
    pub policy: ContentionPolicy,
    pub seed: u64,
    /// The libitm harness, or why it is unavailable.
    pub libitm: Result<Arc<Libitm>, String>,
}

impl SuiteConfig {
    /// The word-backed systems: txmem's opacity variants over `TArray`
    /// (named after `prefix`) plus `txmem-words` over the untyped `TWords`,
    /// the lock peers, fast-stm and stm.
    pub fn word_systems(&self, prefix: &str) -> Systems<'_> {
        // The quick suite shows the opacity variants of the reference rows only.
        let mut txmem = if self.quick && prefix != "txmem" {
            vec![Variant::new(prefix, Opacity::Tl2, Store::TArray)]
        } else {
            opacity_variants(prefix, Store::TArray, self.quick)
        };
        txmem.push(Variant::new("txmem-words", Opacity::Tl2, Store::TWords));
        Systems {
            txmem,
            policy: &self.policy,
            locks: if self.quick {
                &LockKind::QUICK
            } else {
                &LockKind::ALL
            },
            stm_crates: true,
        }
    }

    /// Adds the libitm row for a workload (`args` are the harness's
    /// workload arguments), or a skip saying why it cannot run.
    pub fn add_libitm(
        &self,
        plan: &mut Plan,
        suite: &'static str,
        workload: &str,
        args: &[String],
    ) {
        match &self.libitm {
            Ok(libitm) => {
                let libitm = libitm.clone();
                let args = args.to_vec();
                plan.cases.push(Case {
                    suite,
                    workload: workload.to_string(),
                    system: "libitm".into(),
                    note: format!("GCC libitm (gcc -O2 -fgnu-tm), method {}", libitm.method()),
                    subject: Subject::External(Box::new(move |p| libitm.run(&args, p))),
                });
            }
            Err(why) => plan.skip(workload, "libitm", why),
        }
    }
}

/// Plans `suite` (a name from [`SUITES`]); `Err` for an unknown name.
pub fn plan(suite: &str, cfg: &SuiteConfig) -> Result<Plan, String> {
    let mut p = Plan::default();
    match suite {
        "micro" => micro::plan(cfg, &mut p),
        "intset" => intset::plan(cfg, &mut p),
        "bank" => bank::plan(cfg, &mut p),
        "quick" | "all" => {
            micro::plan(cfg, &mut p);
            bank::plan(cfg, &mut p);
            intset::plan(cfg, &mut p);
        }
        other => {
            let names: Vec<&str> = SUITES.iter().map(|s| s.0).collect();
            return Err(format!(
                "unknown suite `{other}` (expected one of: {})",
                names.join(", ")
            ));
        }
    }
    Ok(p)
}
