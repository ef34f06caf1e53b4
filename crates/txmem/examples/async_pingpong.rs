//! `N` round trips of a token between two async tasks through two
//! `TQueue`s, on one tokio current-thread runtime: the loop of `txmem bench
//! async`'s ping-pong row, alone, for instruction counts under callgrind
//! (each round trip suspends both tasks in `retry` and wakes them from the
//! pushing commits):
//!
//! ```text
//! cargo build --release -p txmem --example async_pingpong
//! for n in 10000 20000; do
//!   valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/async_pingpong $n
//! done   # (instructions of the 20000 run - those of the 10000 run) / 10000
//! ```

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime");
    let there = txmem::TQueue::<u64>::new();
    let back = txmem::TQueue::<u64>::new();
    let o = txmem::TxOptions::new();
    let mut sum = 0;
    for i in 0..n {
        sum += rt.block_on(async {
            let ping = async {
                o.run_async(|tx| there.push(tx, i)).await;
                o.run_async(|tx| back.pop(tx)).await
            };
            let pong = async {
                let t = o.run_async(|tx| there.pop(tx)).await;
                o.run_async(|tx| back.push(tx, t)).await;
            };
            tokio::join!(ping, pong).0
        });
    }
    assert_eq!(
        sum,
        n * n.saturating_sub(1) / 2,
        "every token came back once"
    );
    println!("{n} round trips");
}
