//! TPC-C on txmem: Silo's schema and the standard five-transaction mix.
