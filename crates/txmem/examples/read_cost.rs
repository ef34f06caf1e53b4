//! The cost of one more read, for deterministic instruction counts under
//! callgrind (`scripts/callgrind-reads.sh` runs it).
//!
//! usage: read_cost <audit|after-write> READS [tracked] [no-rmw] [read-only] [fold]
//!
//! Runs 2,000 transactions over a `TArray<u64>` of 4,096 accounts, each
//! reading `READS` accounts (the bank benchmark's audit, in miniature):
//!
//! * `audit`: a read-only transaction;
//! * `after-write`: the transaction first writes account 0, so its reads
//!   come after a write and must look out for it (read-my-writes).
//!
//! `tracked` turns untracked reads off (every read finds or creates its
//! item, as before the read log); `no-rmw` turns read-my-writes off;
//! `read-only` declares the transactions read-only (snapshot attempts, no
//! read log; an `after-write` transaction then reruns as an ordinary one);
//! `fold` reads accounts `0..READS` with one `TArray::fold` instead. The
//! instructions per read are the difference between two runs with
//! different `READS`, divided by the difference in reads.

use txmem::{TArray, TxOptions};

const USAGE: &str =
    "usage: read_cost <audit|after-write> READS [tracked] [no-rmw] [read-only] [fold]";
const ACCOUNTS: usize = 4096;
const TRANSACTIONS: usize = 2_000;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(kind), Some(reads)) = (args.first(), args.get(1)) else {
        panic!("{USAGE}")
    };
    let reads: usize = reads.parse().expect(USAGE);
    assert!(reads <= ACCOUNTS, "READS is at most {ACCOUNTS}");
    let after_write = match kind.as_str() {
        "audit" => false,
        "after-write" => true,
        _ => panic!("{USAGE}"),
    };
    let options = TxOptions::new()
        .untracked_reads(!args.iter().any(|a| a == "tracked"))
        .read_my_writes(!args.iter().any(|a| a == "no-rmw"))
        .read_only(args.iter().any(|a| a == "read-only"));
    let fold = args.iter().any(|a| a == "fold");
    let accounts = TArray::from_fn(ACCOUNTS, |_| 1u64);
    let mut total = 0u64;
    for t in 0..TRANSACTIONS {
        total += options.run(|tx| {
            if after_write {
                accounts.set(tx, 0, t as u64)?;
            }
            if fold {
                return accounts.fold(tx, 0..reads, 0u64, |s, &v| s.wrapping_add(v));
            }
            let mut sum = 0u64;
            // A stride that visits distinct accounts in a scattered order.
            for i in 0..reads {
                sum = sum.wrapping_add(accounts.get(tx, (i * 97 + 1) % ACCOUNTS)?);
            }
            Ok(sum)
        });
    }
    println!("{kind} {reads}: {total}");
}
