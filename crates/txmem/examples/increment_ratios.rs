//! The one-`TBox` increment against its peers, with the systems interleaved
//! in slices of about half a millisecond, for ratios that hold on a shared,
//! noisy machine.
//!
//! Criterion measures each system's row for seconds before the next one's,
//! and on a shared host the speed of the whole machine drifts over seconds
//! (here by up to 1.5×), so the rows' ratio says as much about the drift as
//! about the systems. Here every round runs one slice of each system back to
//! back (rotating which goes first); a slice lasts well under the drift's
//! time scale, so the ratio within a round compares the systems at the same
//! machine speed. The program prints each system's median time per
//! increment and the median, over the rounds, of each round's ratios.
//!
//! ```text
//! cargo run --release -p txmem --example increment_ratios [-- SECONDS]   # default 5
//! target/release/examples/increment_ratios SYSTEM N   # N increments of one system
//! ```
//!
//! The second form runs one system's loop alone and prints its time per
//! increment: for instruction counts under callgrind
//! (`valgrind --tool=callgrind target/release/examples/increment_ratios parking_lot-mutex 100000`).
//!
//! Systems: `atomically` (a full transaction: `TBox::modify` inside
//! `atomically`), `update` (`TBox::update`, the single-operation
//! transaction), a `parking_lot::Mutex<u64>`, and the `fast-stm` and `stm`
//! crates' `TVar::modify` inside their `atomically`.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// How long one slice of one system should last.
const SLICE: Duration = Duration::from_micros(500);

/// One system under test: runs `n` increments.
struct System {
    name: &'static str,
    run: Box<dyn FnMut(u64)>,
    /// Increments per slice (calibrated to last about [`SLICE`]).
    per_slice: u64,
    /// ns per increment, one entry per round.
    samples: Vec<f64>,
}

impl System {
    fn new(name: &'static str, run: impl FnMut(u64) + 'static) -> Self {
        System {
            name,
            run: Box::new(run),
            per_slice: 0,
            samples: Vec::new(),
        }
    }

    /// Times `n` increments; ns per increment.
    fn time(&mut self, n: u64) -> f64 {
        let t = Instant::now();
        (self.run)(n);
        t.elapsed().as_nanos() as f64 / n as f64
    }

    fn calibrate(&mut self) {
        let ns = (0..5).map(|_| self.time(1000)).fold(f64::MAX, f64::min);
        self.per_slice = ((SLICE.as_nanos() as f64 / ns) as u64).max(100);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut systems = systems();
    match args.as_slice() {
        [] => interleave(&mut systems, 5.0),
        [seconds] => match seconds.parse() {
            Ok(v) if v > 0.0 => interleave(&mut systems, v),
            _ => usage(&format!(
                "SECONDS must be a positive number, not {seconds:?}"
            )),
        },
        [name, n] => {
            let Some(system) = systems.iter_mut().find(|s| s.name == name.as_str()) else {
                let names: Vec<_> = systems.iter().map(|s| s.name).collect();
                usage(&format!(
                    "no system {name:?}; the systems: {}",
                    names.join(", ")
                ))
            };
            match n.parse() {
                Ok(n) if n > 0 => println!("{:.2} ns/increment", system.time(n)),
                _ => usage(&format!("N must be a positive count, not {n:?}")),
            }
        }
        _ => usage("too many arguments"),
    }
}

fn usage(why: &str) -> ! {
    eprintln!(
        "increment_ratios: {why}\nusage: increment_ratios [SECONDS] | increment_ratios SYSTEM N"
    );
    std::process::exit(2);
}

/// The systems under test, each incrementing its own counter.
fn systems() -> [System; 5] {
    let tbox = Box::leak(Box::new(txmem::TBox::new(0u64)));
    let mutex = Box::leak(Box::new(parking_lot::Mutex::new(0u64)));
    let fast = Box::leak(Box::new(fast_stm::TVar::new(0u64)));
    let stm_var = Box::leak(Box::new(stm::TVar::new(0u64)));
    [
        System::new("atomically", |n| {
            for _ in 0..n {
                txmem::atomically(|tx| tbox.modify(tx, |v| v + 1));
            }
        }),
        System::new("update", |n| {
            for _ in 0..n {
                tbox.update(|v| v + 1);
            }
        }),
        System::new("parking_lot-mutex", |n| {
            for _ in 0..n {
                let mut guard = mutex.lock();
                *guard = black_box(*guard + 1);
            }
        }),
        System::new("fast-stm", |n| {
            for _ in 0..n {
                fast_stm::atomically(|tx| fast.modify(tx, |v| v + 1));
            }
        }),
        System::new("stm", |n| {
            for _ in 0..n {
                stm::atomically(|tx| stm_var.modify(tx, |v| v + 1));
            }
        }),
    ]
}

/// Runs the systems in interleaved slices for `seconds` and prints the
/// medians.
fn interleave(systems: &mut [System], seconds: f64) {
    // Warm up (caches, the allocator, thread-local state), then calibrate.
    let warm = Instant::now();
    while warm.elapsed() < Duration::from_millis(300) {
        systems.iter_mut().for_each(|s| {
            s.time(1000);
        });
    }
    systems.iter_mut().for_each(System::calibrate);

    let start = Instant::now();
    let mut round = 0;
    while start.elapsed().as_secs_f64() < seconds {
        let k = systems.len();
        for i in 0..k {
            let s = &mut systems[(round + i) % k];
            let n = s.per_slice;
            let ns = s.time(n);
            s.samples.push(ns);
        }
        round += 1;
    }

    println!(
        "{round} rounds of interleaved slices (~{} µs each) in {seconds} s",
        SLICE.as_micros()
    );
    println!("{:<20} {:>10} {:>18}", "system", "ns/incr", "p25–p75");
    for s in systems.iter() {
        let q = quartiles(s.samples.clone());
        println!("{:<20} {:>10.2} {:>8.2}–{:<8.2}", s.name, q.1, q.0, q.2);
    }
    let by_name = |name: &str| &systems.iter().find(|s| s.name == name).unwrap().samples;
    let (atomically, update) = (by_name("atomically"), by_name("update"));
    let (mutex, fast, stm) = (
        by_name("parking_lot-mutex"),
        by_name("fast-stm"),
        by_name("stm"),
    );
    println!("per-round ratios, median (p25–p75):");
    for (what, num, den) in [
        ("fast-stm ÷ atomically (times faster)", fast, atomically),
        ("stm ÷ atomically", stm, atomically),
        ("atomically ÷ mutex (times the mutex)", atomically, mutex),
        ("fast-stm ÷ update", fast, update),
        ("update ÷ mutex", update, mutex),
    ] {
        let ratios = num.iter().zip(den).map(|(a, b)| a / b).collect();
        let q = quartiles(ratios);
        println!("  {what:<38} {:>6.2}× ({:.2}–{:.2})", q.1, q.0, q.2);
    }
}

/// The 25th, 50th and 75th percentiles.
fn quartiles(mut xs: Vec<f64>) -> (f64, f64, f64) {
    xs.sort_by(f64::total_cmp);
    let at = |p: f64| xs[((xs.len() - 1) as f64 * p).round() as usize];
    (at(0.25), at(0.5), at(0.75))
}
