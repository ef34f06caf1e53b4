//! Primary keys: the spec's composite keys packed into integers, and the
//! hasher of the hash-mapped tables.
//!
//! Every key orders like the tuple it packs (warehouse first), so a range
//! of an ordered table by district or by order is a range of integers, and
//! comparing two keys is one integer comparison. Field widths: warehouse
//! ids 16 bits, district ids 8, customer, order and item ids 32, order-line
//! numbers 8.
//!
//! | table | key | type |
//! |---|---|---|
//! | warehouse | `W_ID` | `u16` |
//! | district | `(W_ID, D_ID)` | `u64` ([`district_key`]) |
//! | customer | `(W_ID, D_ID, C_ID)` | `u64` ([`customer_key`]) |
//! | customer by last name | `(W_ID, D_ID, C_LAST)` | [`NameKey`] |
//! | order, new-order | `(W_ID, D_ID, O_ID)` | `u64` ([`order_key`]) |
//! | order by customer | `(W_ID, D_ID, C_ID, O_ID)` | `u64` ([`Tables::customer_order_key`](super::Tables::customer_order_key)) |
//! | order-line | `(W_ID, D_ID, O_ID, OL_NUMBER)` | `u64` ([`order_line_key`]) |
//! | item | `I_ID` | `u32` |
//! | stock | `(W_ID, I_ID)` | `u64` ([`stock_key`]) |
//! | history | generated ([`next_history_key`]) | `u64` |

use std::cell::Cell;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

use super::schema::LastName;

/// Warehouse id (`W_ID`), from 1.
pub type WarehouseId = u16;
/// District id within a warehouse (`D_ID`), from 1.
pub type DistrictId = u8;

/// The key of district `d` of warehouse `w`.
#[inline]
pub const fn district_key(w: WarehouseId, d: DistrictId) -> u64 {
    (w as u64) << 8 | d as u64
}

/// The key of customer `c` of district `(w, d)`.
#[inline]
pub const fn customer_key(w: WarehouseId, d: DistrictId, c: u32) -> u64 {
    district_key(w, d) << 32 | c as u64
}

/// The key of order `o` of district `(w, d)` (also its new-order row's).
#[inline]
pub const fn order_key(w: WarehouseId, d: DistrictId, o: u32) -> u64 {
    district_key(w, d) << 32 | o as u64
}

/// The order id in an order key.
#[inline]
pub const fn order_id_of(order_key: u64) -> u32 {
    order_key as u32
}

/// The key of line `ol` of order `o` of district `(w, d)`.
#[inline]
pub const fn order_line_key(w: WarehouseId, d: DistrictId, o: u32, ol: u8) -> u64 {
    line_of_order(order_key(w, d, o), ol)
}

/// The key of line `ol` of the order with key `order_key`.
#[inline]
pub const fn line_of_order(order_key: u64, ol: u8) -> u64 {
    order_key << 8 | ol as u64
}

/// The order id in an order-line key.
#[inline]
pub const fn order_id_of_line(line_key: u64) -> u32 {
    (line_key >> 8) as u32
}

/// The stock key of item `i` in warehouse `w`.
#[inline]
pub const fn stock_key(w: WarehouseId, i: u32) -> u64 {
    (w as u64) << 32 | i as u64
}

/// The key of the last-name index: a district and a last name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NameKey {
    /// The district ([`district_key`]).
    pub district: u64,
    /// The last name.
    pub last: LastName,
}

impl NameKey {
    /// The index key of last name `last` in district `(w, d)`.
    pub fn new(w: WarehouseId, d: DistrictId, last: LastName) -> Self {
        NameKey {
            district: district_key(w, d),
            last,
        }
    }
}

impl Hash for NameKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // Names are zero-padded, so the padded bytes identify the name.
        let b = self.last.padded();
        state.write_u64(self.district);
        state.write_u64(u64::from_le_bytes(b[..8].try_into().expect("8 bytes")));
        state.write_u64(u64::from_le_bytes(b[8..].try_into().expect("8 bytes")));
    }
}

/// Loaded history rows take their customer's key (below 2^56); keys
/// generated during a run have this bit set.
const RUN_HISTORY: u64 = 1 << 63;
/// Keys a thread takes from the shared counter at a time.
const HISTORY_BLOCK: u64 = 1 << 16;
static NEXT_HISTORY_BLOCK: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The calling thread's block of history keys: (next, end).
    static HISTORY_KEYS: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// A history key no other call returns (in this process): threads take
/// blocks of keys from a shared counter, so the common call touches no
/// shared memory.
pub fn next_history_key() -> u64 {
    HISTORY_KEYS.with(|keys| {
        let (mut next, mut end) = keys.get();
        if next == end {
            next = RUN_HISTORY | NEXT_HISTORY_BLOCK.fetch_add(HISTORY_BLOCK, Ordering::Relaxed);
            end = next + HISTORY_BLOCK;
        }
        keys.set((next + 1, end));
        next
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_order_like_their_tuples() {
        assert!(order_line_key(1, 10, 5, 15) < order_line_key(1, 10, 6, 1));
        assert!(order_line_key(1, 10, u32::MAX, 255) < order_line_key(2, 1, 1, 1));
        assert_eq!(order_id_of(order_key(65535, 255, 77)), 77);
        assert_eq!(order_id_of_line(order_line_key(65535, 255, 77, 3)), 77);
        assert_eq!(
            line_of_order(order_key(4, 2, 9), 3),
            order_line_key(4, 2, 9, 3)
        );
    }

    #[test]
    fn history_keys_are_distinct_across_threads() {
        let mut all: Vec<u64> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..3)
                .map(|_| s.spawn(|| (0..1000).map(|_| next_history_key()).collect::<Vec<_>>()))
                .collect();
            hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n);
        assert!(all.iter().all(|k| k & RUN_HISTORY != 0));
    }
}
