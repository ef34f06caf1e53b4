fn main() {
    let b = txmem::TBox::new(0u64);
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000_000);
    let t = std::time::Instant::now();
    for _ in 0..n {
        txmem::atomically(|tx| b.modify(tx, |v| v + 1));
    }
    let el = t.elapsed();
    println!(
        "{:.2} ns/tx, value {}",
        el.as_nanos() as f64 / n as f64,
        b.load()
    );
}
