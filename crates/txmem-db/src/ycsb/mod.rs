//! YCSB on txmem: workloads A–F and the 16-operations-per-transaction variant.
