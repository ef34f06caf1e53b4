//! StockLevel (clause 2.8): how many of the items in a district's last 20
//! orders are low in stock. Read-only.

use rand::Rng;
use txmem::{read_only, Transaction, TxResult};

use super::{district_id, Executed};
use crate::tpcc::config::Config;
use crate::tpcc::keys::{district_key, order_line_key, stock_key, DistrictId, WarehouseId};
use crate::tpcc::tables::Tables;
use crate::tpcc::Tpcc;

/// Orders StockLevel looks back over.
const RECENT_ORDERS: u32 = 20;

/// The input of a StockLevel (clause 2.8.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StockLevelInput {
    /// `W_ID` (the terminal's home warehouse).
    pub w_id: WarehouseId,
    /// `D_ID`.
    pub d_id: DistrictId,
    /// The threshold (10 to 20): items with less stock count.
    pub threshold: u32,
}

impl StockLevelInput {
    /// The spec's random request at warehouse `w_id` (the district is
    /// drawn per transaction, as in Silo, rather than fixed per terminal).
    pub fn generate(rng: &mut impl Rng, config: &Config, w_id: WarehouseId) -> Self {
        StockLevelInput {
            w_id,
            d_id: district_id(rng, config),
            threshold: rng.random_range(10..=20),
        }
    }
}

/// What a StockLevel returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StockLevelOutput {
    /// Distinct items of the last 20 orders with `S_QUANTITY` below the
    /// threshold.
    pub low_stock: u32,
}

impl Tpcc {
    /// Runs a StockLevel to commit.
    pub fn stock_level(&self, input: &StockLevelInput) -> Executed<StockLevelOutput> {
        let t = &self.tables;
        let mut attempts = 0;
        let mut items = Vec::with_capacity(RECENT_ORDERS as usize * 15);
        // Read-only: the first attempt reads from a snapshot, unlogged.
        let output = read_only(|tx| {
            attempts += 1;
            body(t, tx, input, &mut items)
        });
        Executed { output, attempts }
    }
}

fn body<'env>(
    t: &'env Tables,
    tx: &mut Transaction<'env>,
    input: &StockLevelInput,
    items: &mut Vec<u32>,
) -> TxResult<StockLevelOutput> {
    let (w, d) = (input.w_id, input.d_id);
    let next = t
        .district_next_o_id
        .get(tx, &district_key(w, d))?
        .expect("district row");
    let first = next.saturating_sub(RECENT_ORDERS).max(1);
    items.clear();
    t.order_line.scan(
        tx,
        order_line_key(w, d, first, 0)..order_line_key(w, d, next, 0),
        |_, l| {
            items.push(l.i_id);
            true
        },
    )?;
    items.sort_unstable();
    items.dedup();
    let mut low_stock = 0;
    for &i in items.iter() {
        let low = t
            .stock_counters
            .get_with(tx, &stock_key(w, i), |s| s.quantity() < input.threshold)?
            .expect("stock row");
        low_stock += u32::from(low);
    }
    Ok(StockLevelOutput { low_stock })
}
