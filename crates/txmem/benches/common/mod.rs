//! Settings shared by the multi-threaded criterion benches.

/// The thread counts to measure: `TXMEM_BENCH_THREADS` as a comma-separated
/// list (for example `1,2,4,8,16` on a machine with more cores), or 1 and 2.
///
/// Panics with a message naming the variable if the list does not parse.
pub fn thread_counts() -> Vec<usize> {
    let Ok(list) = std::env::var("TXMEM_BENCH_THREADS") else {
        return vec![1, 2];
    };
    let counts: Vec<usize> = list
        .split(',')
        .map(|s| match s.trim().parse::<usize>() {
            Ok(n) if n > 0 => n,
            _ => panic!(
                "TXMEM_BENCH_THREADS: {s:?} is not a positive thread count \
                 (expected a comma-separated list such as 1,2,4)"
            ),
        })
        .collect();
    counts
}
