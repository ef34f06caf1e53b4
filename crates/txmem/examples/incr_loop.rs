//! One `TBox` increment per transaction in a loop; prints ns per transaction.
//! Used for profiling and for instruction counts under callgrind:
//! `valgrind --tool=callgrind target/release/examples/incr_loop 100000 [none] [nostats] [read] [update] [empty] [rw10] [r10] [w10]`
//! (`update`: the increment as a single-operation transaction, `TBox::update`;
//! `empty`: a transaction that touches nothing, the runtime's fixed cost;
//! `rw10`: ten reads of `TArray` elements, then writes of ten others, as
//! `scripts/peers/tinystm_fixed_cost.c` does on TinySTM; `r10`: its ten
//! reads and one write, `w10`: its ten writes alone, to split its cost).
//! The peers' loops (a mutex, `fast-stm`, `stm`) are in
//! `examples/increment_ratios.rs`, which also runs one system alone for
//! callgrind.
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: u64 = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000_000);
    // `atomically` (the runtime-wide defaults) unless an option is asked for.
    let none = args.iter().any(|a| a == "none");
    let opts = txmem::TxOptions::new().opacity(txmem::Opacity::None);
    macro_rules! run {
        ($f:expr) => {
            if none {
                opts.run($f)
            } else {
                txmem::atomically($f)
            }
        };
    }
    if args.iter().any(|a| a == "nostats") {
        txmem::stats::set_enabled(false);
    }
    let read_only = args.iter().any(|a| a == "read");
    let single = args.iter().any(|a| a == "update");
    let empty = args.iter().any(|a| a == "empty");
    let b = txmem::TBox::new(0u64);
    let t = std::time::Instant::now();
    let mut sum = 0;
    if args.iter().any(|a| a == "rw10") {
        // A loop of its own, so that the other modes' loop (and their
        // instruction counts) stay as they were.
        let a = txmem::TArray::new(20, 0u64);
        for _ in 0..n {
            run!(|tx| {
                let mut s = 0;
                for k in 0..10 {
                    s += a.get(tx, k)?;
                }
                for k in 10..20 {
                    a.set(tx, k, s + k as u64)?;
                }
                Ok(())
            });
        }
        sum = a.load(19);
    } else if let Some(reads) = args.iter().find_map(|a| match a.as_str() {
        "r10" => Some(true),
        "w10" => Some(false),
        _ => None,
    }) {
        // rw10's halves, each in a loop of its own (rw10's loop, and so its
        // count, stays as it was).
        let a = txmem::TArray::new(20, 0u64);
        for _ in 0..n {
            run!(|tx| {
                if reads {
                    let mut s = 0;
                    for k in 0..10 {
                        s += a.get(tx, k)?;
                    }
                    // One write, so that the commit validates the reads
                    // as rw10's does.
                    a.set(tx, 19, s)
                } else {
                    for k in 10..20 {
                        a.set(tx, k, k as u64)?;
                    }
                    Ok(())
                }
            });
        }
        sum = a.load(19);
    } else {
        for _ in 0..n {
            if single {
                b.update(|v| v + 1);
            } else if empty {
                run!(|_| Ok(()));
            } else if read_only {
                sum += run!(|tx| b.get(tx));
            } else {
                run!(|tx| b.modify(tx, |v| v + 1));
            }
        }
    }
    std::hint::black_box(sum);
    let el = t.elapsed();
    println!(
        "{:.2} ns/tx, value {}",
        el.as_nanos() as f64 / n as f64,
        b.load()
    );
}
