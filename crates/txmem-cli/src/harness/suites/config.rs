//! What the suites are planned with, and the row sets they share.

use std::sync::Arc;

use txmem::ContentionPolicy;

use std::path::PathBuf;

use crate::harness::peers::libitm::{txmem_itm_method, Libitm, Runtime};
use crate::harness::peers::locks::LockKind;
use crate::harness::spec::{Case, Plan, Subject};
use crate::harness::system::System;
use crate::harness::txmem_sys::{opacity_variants, Store, Variant};
use crate::harness::workload::Systems;

/// What the suites are planned with.
pub struct SuiteConfig {
    /// Plan the quick selection instead of the full suites.
    pub quick: bool,
    /// txmem's contention policy.
    pub policy: ContentionPolicy,
    /// Seed of the workloads' initial contents.
    pub seed: u64,
    /// The libitm harness, or why it is unavailable.
    pub libitm: Result<Arc<Libitm>, String>,
    /// `libtxmem_itm.so`, for the harness's `txmem-itm` rows, or why not.
    pub txmem_itm: Result<PathBuf, String>,
}

impl SuiteConfig {
    /// The same configuration for the full suites or the quick selection.
    pub fn with_quick(&self, quick: bool) -> SuiteConfig {
        SuiteConfig {
            quick,
            policy: self.policy,
            seed: self.seed,
            libitm: self.libitm.clone(),
            txmem_itm: self.txmem_itm.clone(),
        }
    }

    /// The word-backed systems: txmem's opacity variants over `TArray`
    /// (the family of `base`, `txmem` or `txmem-tarray`) plus `txmem-words`
    /// over the untyped `TWords`, the lock peers, fast-stm and stm.
    pub fn word_systems(&self, base: System) -> Systems<'_> {
        // The quick suite shows the opacity variants of the reference rows only.
        let mut txmem = if self.quick && base != System::Txmem {
            vec![Variant::tl2(base, Store::TArray)]
        } else {
            opacity_variants(base, Store::TArray, self.quick)
        };
        txmem.push(Variant::tl2(System::TxmemWords, Store::TWords));
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

    /// Adds the libitm and txmem-itm rows for a workload (`args` are the
    /// harness's workload arguments), or skips saying why they cannot run.
    pub fn add_libitm(
        &self,
        plan: &mut Plan,
        suite: &'static str,
        workload: &str,
        args: &[String],
    ) {
        let libitm = match &self.libitm {
            Ok(libitm) => libitm,
            Err(why) => {
                plan.skip(workload, System::Libitm, why);
                plan.skip(workload, System::TxmemItm, why);
                return;
            }
        };
        let gcc = (
            System::Libitm,
            Runtime::Gcc,
            format!("GCC libitm (gcc -O2 -fgnu-tm), method {}", libitm.method()),
        );
        let txmem_itm = self.txmem_itm.as_ref().map(|lib| {
            (
                System::TxmemItm,
                Runtime::TxmemItm(lib.clone()),
                format!(
                    "the libitm harness on txmem-itm (LD_PRELOAD), method {}",
                    txmem_itm_method()
                ),
            )
        });
        match &txmem_itm {
            Ok(_) => {}
            Err(why) => plan.skip(workload, System::TxmemItm, why),
        }
        for (system, runtime, note) in std::iter::once(gcc).chain(txmem_itm.ok()) {
            let libitm = libitm.clone();
            let args = args.to_vec();
            plan.cases.push(Case {
                suite,
                workload: workload.to_string(),
                system,
                note,
                subject: Subject::External(Box::new(move |p| libitm.run(&runtime, &args, p))),
            });
        }
    }
}
