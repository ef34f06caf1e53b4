//! NewOrder (clause 2.4): enter an order of 5 to 15 lines, taking the
//! items from stock; 1% of orders name an unused item and roll back.

use std::fmt;

use rand::Rng;
use txmem::{try_atomically, Transaction, TxError};

use super::{customer_id, district_id, insert_new, other_warehouse, Executed};
use crate::tpcc::config::Config;
use crate::tpcc::keys::{
    customer_key, district_key, order_key, order_line_key, stock_key, DistrictId, WarehouseId,
};
use crate::tpcc::random::{nurand, NuRandConstants};
use crate::tpcc::schema::{now, Money, Order, OrderLine, StockCounters, Timestamp};
use crate::tpcc::tables::Tables;
use crate::tpcc::Tpcc;

/// The most lines an order has.
pub const MAX_LINES: usize = 15;

/// One line of a NewOrder's input.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NewOrderLine {
    /// `OL_I_ID` (an unused id makes the transaction roll back).
    pub i_id: u32,
    /// `OL_SUPPLY_W_ID`.
    pub supply_w_id: WarehouseId,
    /// `OL_QUANTITY` (1 to 10).
    pub quantity: u8,
}

/// The input of a NewOrder (clause 2.4.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewOrderInput {
    /// `W_ID` (the terminal's home warehouse).
    pub w_id: WarehouseId,
    /// `D_ID`.
    pub d_id: DistrictId,
    /// `C_ID`.
    pub c_id: u32,
    /// `O_ENTRY_D`.
    pub entry_d: Timestamp,
    lines: [NewOrderLine; MAX_LINES],
    ol_cnt: u8,
}

impl NewOrderInput {
    /// An order of `lines` (1 to [`MAX_LINES`] of them).
    pub fn new(
        w_id: WarehouseId,
        d_id: DistrictId,
        c_id: u32,
        lines: &[NewOrderLine],
        entry_d: Timestamp,
    ) -> Self {
        assert!(
            (1..=MAX_LINES).contains(&lines.len()),
            "an order has 1 to {MAX_LINES} lines"
        );
        let mut all = [NewOrderLine::default(); MAX_LINES];
        all[..lines.len()].copy_from_slice(lines);
        NewOrderInput {
            w_id,
            d_id,
            c_id,
            entry_d,
            lines: all,
            ol_cnt: lines.len() as u8,
        }
    }

    /// The spec's random order from warehouse `w_id`: 5 to 15 lines of
    /// NURand items, each supplied by another warehouse 1% of the time;
    /// in 1% of orders the last item is unused.
    pub fn generate(
        rng: &mut impl Rng,
        config: &Config,
        c: &NuRandConstants,
        w_id: WarehouseId,
    ) -> Self {
        let d_id = district_id(rng, config);
        let c_id = customer_id(rng, config, c);
        let ol_cnt: usize = rng.random_range(5..=MAX_LINES);
        let rollback = rng.random_range(1..=100) == 1;
        let mut lines = [NewOrderLine::default(); MAX_LINES];
        for (n, line) in lines[..ol_cnt].iter_mut().enumerate() {
            let i_id = if rollback && n == ol_cnt - 1 {
                config.items + 1
            } else {
                nurand(rng, 8191, c.ol_i_id, 1, config.items)
            };
            let supply_w_id = if config.warehouses > 1 && rng.random_range(1..=100) == 1 {
                other_warehouse(rng, config, w_id)
            } else {
                w_id
            };
            *line = NewOrderLine {
                i_id,
                supply_w_id,
                quantity: rng.random_range(1..=10),
            };
        }
        NewOrderInput::new(w_id, d_id, c_id, &lines[..ol_cnt], now())
    }

    /// The order's lines.
    pub fn lines(&self) -> &[NewOrderLine] {
        &self.lines[..usize::from(self.ol_cnt)]
    }
}

/// What a committed NewOrder returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewOrderOutput {
    /// `O_ID` of the new order.
    pub o_id: u32,
    /// The order's total: the sum of `OL_AMOUNT`, less the customer's
    /// discount, plus the warehouse's and district's taxes.
    pub total: Money,
    /// Lines whose item and stock data both contain `"ORIGINAL"` (the
    /// spec's brand-generic `'B'`).
    pub brand_lines: u8,
}

/// A NewOrder named an unused item: it rolled back and changed nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InvalidItem {
    /// The unused item id.
    pub i_id: u32,
}

impl fmt::Display for InvalidItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "item number {} is not valid", self.i_id)
    }
}

impl std::error::Error for InvalidItem {}

impl Tpcc {
    /// Runs a NewOrder to commit, or to its rollback if it names an unused
    /// item.
    pub fn new_order(
        &self,
        input: &NewOrderInput,
    ) -> Executed<Result<NewOrderOutput, InvalidItem>> {
        let t = &self.tables;
        let mut attempts = 0;
        let output = try_atomically(|tx| {
            attempts += 1;
            body(t, tx, input)
        });
        Executed { output, attempts }
    }
}

/// What NewOrder reads for one line before it updates anything.
#[derive(Clone, Copy, Default)]
struct LineRead {
    stock_key: u64,
    /// `I_PRICE`.
    price: Money,
    /// Whether both `I_DATA` and `S_DATA` contain `"ORIGINAL"`.
    brand: bool,
    /// `S_DIST_xx` of the order's district.
    dist_info: [u8; 24],
    /// The stock's counters (after the line's update, once made).
    counters: StockCounters,
}

fn body<'env>(
    t: &'env Tables,
    tx: &mut Transaction<'env>,
    input: &NewOrderInput,
) -> Result<NewOrderOutput, TxError<InvalidItem>> {
    let (w, d, c) = (input.w_id, input.d_id, input.c_id);
    let dk = district_key(w, d);
    let w_tax = t
        .warehouse
        .get_with(tx, &w, |r| r.tax)?
        .expect("warehouse row");
    let d_tax = t
        .district
        .get_with(tx, &dk, |r| r.tax)?
        .expect("district row");
    let o_id = t.district_next_o_id.get(tx, &dk)?.expect("district row");
    t.district_next_o_id.set(tx, dk, o_id + 1)?;
    let discount = t
        .customer
        .get_with(tx, &customer_key(w, d, c), |r| r.discount)?
        .expect("customer row");

    let lines = input.lines();
    let ok = order_key(w, d, o_id);
    let order = Order {
        c_id: c,
        entry_d: input.entry_d,
        carrier_id: None,
        ol_cnt: lines.len() as u8,
        all_local: lines.iter().all(|l| l.supply_w_id == w),
    };
    insert_new(tx, |tx| t.order.insert_if_absent(tx, ok, order))?;
    insert_new(tx, |tx| t.new_order.insert_if_absent(tx, ok, ()))?;
    let by_customer = t.customer_order_key(w, d, c, o_id);
    insert_new(tx, |tx| {
        t.order_by_customer.insert_if_absent(tx, by_customer, ())
    })?;

    // First every line's reads, then the updates: the reads of consecutive
    // lines, each likely a cache miss, are then close enough for the
    // processor to overlap them.
    let mut read = [LineRead::default(); MAX_LINES];
    for (line, r) in lines.iter().zip(&mut read) {
        let Some((price, item_original)) =
            t.item.get_with(tx, &line.i_id, |r| (r.price, r.original))?
        else {
            return Err(TxError::User(InvalidItem { i_id: line.i_id }));
        };
        let sk = stock_key(line.supply_w_id, line.i_id);
        let (dist_info, stock_original) = t
            .stock
            .get_with(tx, &sk, |r| (r.dist[usize::from(d) - 1], r.original))?
            .expect("stock row");
        *r = LineRead {
            stock_key: sk,
            price,
            brand: item_original && stock_original,
            dist_info,
            counters: t.stock_counters.get(tx, &sk)?.expect("stock row"),
        };
    }
    let mut sum: Money = 0;
    let mut brand_lines = 0;
    for n in 0..lines.len() {
        let (line, r) = (&lines[n], read[n]);
        // An item ordered twice: update the stock as the earlier line left it.
        let counters = read[..n]
            .iter()
            .rev()
            .find(|earlier| earlier.stock_key == r.stock_key)
            .map_or(r.counters, |earlier| earlier.counters);
        let remote = line.supply_w_id != w;
        let counters = counters.after_order(u32::from(line.quantity), remote);
        read[n].counters = counters;
        t.stock_counters.set(tx, r.stock_key, counters)?;
        let amount = Money::from(line.quantity) * r.price;
        sum += amount;
        brand_lines += u8::from(r.brand);
        let row = OrderLine {
            i_id: line.i_id,
            supply_w_id: line.supply_w_id,
            quantity: line.quantity,
            amount,
            delivery_d: None,
            dist_info: r.dist_info,
        };
        let lk = order_line_key(w, d, o_id, n as u8 + 1);
        insert_new(tx, |tx| t.order_line.insert_if_absent(tx, lk, row))?;
    }
    let scale = 10_000;
    let total =
        sum * (scale - Money::from(discount)) * (scale + Money::from(w_tax) + Money::from(d_tax))
            / (scale * scale);
    Ok(NewOrderOutput {
        o_id,
        total,
        brand_lines,
    })
}
