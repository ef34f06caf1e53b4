//! A bank: threads transfer money between accounts while an auditor checks
//! the total, then the program prints what the runtime saw — commits, aborts
//! by cause, and the per-call-site profile.
//!
//! `cargo run --release -p txmem --example bank [threads] [seconds] [accounts]`

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use txmem::{atomically, stats, TArray};

fn main() {
    let mut args = std::env::args().skip(1);
    let threads: usize = parse(args.next(), 2, "threads");
    let seconds: f64 = parse(args.next(), 2.0, "seconds");
    let accounts_n: usize = parse(args.next(), 64, "accounts");
    if threads == 0 || accounts_n < 2 || seconds <= 0.0 {
        eprintln!("bank: need at least 1 thread, 2 accounts and a positive duration");
        std::process::exit(2);
    }
    const INITIAL: i64 = 1_000;
    let accounts = TArray::new(accounts_n, INITIAL);
    let expected = INITIAL * accounts_n as i64;
    let stop = AtomicBool::new(false);
    let transfers = AtomicU64::new(0);
    let audits = AtomicU64::new(0);
    let before = stats::snapshot();
    let start = Instant::now();

    std::thread::scope(|s| {
        for t in 0..threads {
            let (accounts, stop, transfers) = (&accounts, &stop, &transfers);
            s.spawn(move || {
                let mut rng = 0x9E37_79B9_7F4A_7C15u64.wrapping_mul(t as u64 + 1);
                let mut done = 0;
                while !stop.load(Ordering::Relaxed) {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    let from = rng as usize % accounts_n;
                    let to = (rng >> 32) as usize % accounts_n;
                    let amount = (rng >> 20) as i64 % 100;
                    atomically(|tx| {
                        let (a, b) = (accounts.get(tx, from)?, accounts.get(tx, to)?);
                        if from != to {
                            accounts.set(tx, from, a - amount)?;
                            accounts.set(tx, to, b + amount)?;
                        }
                        Ok(())
                    });
                    done += 1;
                }
                transfers.fetch_add(done, Ordering::Relaxed);
            });
        }
        let (accounts, stop, audits) = (&accounts, &stop, &audits);
        s.spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let total: i64 =
                    atomically(|tx| (0..accounts_n).map(|i| accounts.get(tx, i)).sum());
                assert_eq!(total, expected, "an audit saw money appear or vanish");
                audits.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(Duration::from_micros(200));
            }
        });
        std::thread::sleep(Duration::from_secs_f64(seconds));
        stop.store(true, Ordering::Relaxed);
    });

    let elapsed = start.elapsed().as_secs_f64();
    let total: i64 = (0..accounts_n).map(|i| accounts.load(i)).sum();
    let delta = stats::snapshot() - before;
    println!(
        "{threads} transfer threads, {accounts_n} accounts, {elapsed:.1}s: {} transfers ({:.2} M/s), {} audits",
        transfers.load(Ordering::Relaxed),
        transfers.load(Ordering::Relaxed) as f64 / elapsed / 1e6,
        audits.load(Ordering::Relaxed)
    );
    println!(
        "total {total} (expected {expected}): {}",
        if total == expected {
            "conserved"
        } else {
            "WRONG"
        }
    );
    println!("\n{delta}\n");
    println!("{}", stats::site_profile());
    if total != expected {
        std::process::exit(1);
    }
}

fn parse<T: std::str::FromStr>(arg: Option<String>, default: T, what: &str) -> T {
    match arg {
        None => default,
        Some(s) => s.parse().unwrap_or_else(|_| {
            eprintln!(
                "bank: cannot parse {what} from `{s}`\nusage: bank [threads] [seconds] [accounts]"
            );
            std::process::exit(2)
        }),
    }
}
