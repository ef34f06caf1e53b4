//! `txmem bench --list`: the suites, each suite's workloads with the
//! systems that run them (and those skipped here, with the reason).

use crate::harness::rtm::rtm_verdict;
use crate::harness::suites::config::SuiteConfig;
use crate::harness::suites::Suite;

/// Prints the listing; `cfg` gives the policy, seed and libitm state.
pub fn print(cfg: &SuiteConfig) {
    println!("Suites:");
    for suite in Suite::ALL {
        println!("  {:<7} {}", suite.name(), suite.description());
    }
    let full = cfg.with_quick(false);
    for suite in Suite::ALL.into_iter().filter(|s| !s.is_selection()) {
        let plan = suite.plan(&full);
        println!("\n{}:", suite.name());
        for w in plan.workloads() {
            let systems: Vec<&str> = plan
                .cases
                .iter()
                .filter(|c| c.workload == w)
                .map(|c| c.system.name())
                .collect();
            println!("  {w}");
            println!("    systems: {}", systems.join(", "));
            for s in plan.skips.iter().filter(|s| s.workload == w) {
                println!("    skipped {}: {}", s.system, s.reason);
            }
        }
    }
    let quick = Suite::Quick.plan(&cfg.with_quick(true));
    println!("\nquick runs: {}", quick.workloads().join(", "));
    println!(
        "\nSystems: txmem (TL2 opacity), txmem-revalidate, txmem-no-opacity (txmem's opacity modes); \
         mutex, rwlock (coarse locks); elided-mutex, elided-rwlock (the same coarse schemes with \
         txmem-elide lock elision: RTM where usable, else the fallback lock; here: {}); \
         fine-locks (per element/bucket); fast-stm, stm (crates); libitm (GCC -fgnu-tm)",
        rtm_verdict()
    );
}
