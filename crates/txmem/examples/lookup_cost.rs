//! Runs `iters` transactions that touch `n` distinct array elements twice
//! each, with the item-index cutoff set to `cutoff`. Run under
//! `valgrind --tool=callgrind` to count instructions per transaction
//! (`scripts/measure-lookup-cutoff.sh` does the sweep).
//!
//! usage: lookup_cost N CUTOFF ITERS
fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("usage: lookup_cost N CUTOFF ITERS"))
        .collect();
    let [n, cutoff, iters] = args[..] else {
        panic!("usage: lookup_cost N CUTOFF ITERS")
    };
    txmem::tuning::set_item_index_cutoff(cutoff);
    let array = txmem::TArray::new(4096, 0u64);
    for _ in 0..iters {
        txmem::atomically(|tx| {
            for i in 0..n {
                array.get(tx, i * 7)?;
            }
            for i in 0..n {
                array.modify(tx, i * 7, |v| v + 1)?;
            }
            Ok(())
        });
    }
    assert_eq!(array.load(0), iters as u64);
}
