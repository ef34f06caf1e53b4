//! OrderStatus (clause 2.6): a customer's balance and most recent order,
//! with its lines. Read-only.

use rand::Rng;
use txmem::{read_only, Transaction, TxResult};

use super::{district_id, CustomerSelector, Executed};
use crate::tpcc::config::Config;
use crate::tpcc::keys::{customer_key, line_of_order, order_key, DistrictId, WarehouseId};
use crate::tpcc::random::NuRandConstants;
use crate::tpcc::schema::{LastName, Money, Text, Timestamp};
use crate::tpcc::tables::Tables;
use crate::tpcc::Tpcc;

/// The input of an OrderStatus (clause 2.6.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrderStatusInput {
    /// `W_ID` (the terminal's home warehouse).
    pub w_id: WarehouseId,
    /// `D_ID`.
    pub d_id: DistrictId,
    /// The customer, by id or by last name.
    pub customer: CustomerSelector,
}

impl OrderStatusInput {
    /// The spec's random request at warehouse `w_id` (by last name 60% of
    /// the time).
    pub fn generate(
        rng: &mut impl Rng,
        config: &Config,
        c: &NuRandConstants,
        w_id: WarehouseId,
    ) -> Self {
        OrderStatusInput {
            w_id,
            d_id: district_id(rng, config),
            customer: CustomerSelector::generate(rng, config, c),
        }
    }
}

/// What an OrderStatus returns (the lines summarized).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrderStatusOutput {
    /// `C_ID`.
    pub c_id: u32,
    /// `C_FIRST`.
    pub first: Text<16>,
    /// `C_MIDDLE`.
    pub middle: [u8; 2],
    /// `C_LAST`.
    pub last: LastName,
    /// `C_BALANCE`.
    pub balance: Money,
    /// The customer's most recent order, if any.
    pub order: Option<OrderSummary>,
}

/// An order as OrderStatus reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrderSummary {
    /// `O_ID`.
    pub o_id: u32,
    /// `O_ENTRY_D`.
    pub entry_d: Timestamp,
    /// `O_CARRIER_ID`.
    pub carrier_id: Option<u8>,
    /// Number of order lines read.
    pub lines: u8,
    /// Sum of their `OL_QUANTITY`.
    pub quantity: u32,
    /// Sum of their `OL_AMOUNT`.
    pub amount: Money,
    /// Lines with an `OL_DELIVERY_D`.
    pub delivered: u8,
}

impl Tpcc {
    /// Runs an OrderStatus to commit.
    pub fn order_status(&self, input: &OrderStatusInput) -> Executed<OrderStatusOutput> {
        let t = &self.tables;
        let mut attempts = 0;
        // Read-only: the first attempt reads from a snapshot, unlogged.
        let output = read_only(|tx| {
            attempts += 1;
            body(t, tx, input)
        });
        Executed { output, attempts }
    }
}

fn body<'env>(
    t: &'env Tables,
    tx: &mut Transaction<'env>,
    input: &OrderStatusInput,
) -> TxResult<OrderStatusOutput> {
    let (w, d) = (input.w_id, input.d_id);
    let c_id = input.customer.resolve(t, tx, w, d)?;
    let ck = customer_key(w, d, c_id);
    let (first, middle, last) = t
        .customer
        .get_with(tx, &ck, |r| (r.first, r.middle, r.last))?
        .expect("customer row");
    let balance = t
        .customer_balance
        .get_with(tx, &ck, |r| r.balance)?
        .expect("customer row");

    // The customer's order with the largest id: the last index entry.
    let mut last_order = None;
    let newest = t.customer_order_key(w, d, c_id, u32::MAX);
    let oldest = t.customer_order_key(w, d, c_id, 0);
    t.order_by_customer.scan_rev(tx, oldest..=newest, |&k, _| {
        last_order = Some(k as u32);
        false
    })?;
    let order = match last_order {
        None => None,
        Some(o_id) => {
            let ok = order_key(w, d, o_id);
            let (entry_d, carrier_id) = t
                .order
                .get_with(tx, &ok, |r| (r.entry_d, r.carrier_id))?
                .expect("order row");
            let mut summary = OrderSummary {
                o_id,
                entry_d,
                carrier_id,
                lines: 0,
                quantity: 0,
                amount: 0,
                delivered: 0,
            };
            t.order_line.scan(
                tx,
                line_of_order(ok, 0)..=line_of_order(ok, u8::MAX),
                |_, l| {
                    summary.lines += 1;
                    summary.quantity += u32::from(l.quantity);
                    summary.amount += l.amount;
                    summary.delivered += u8::from(l.delivery_d.is_some());
                    true
                },
            )?;
            Some(summary)
        }
    };
    Ok(OrderStatusOutput {
        c_id,
        first,
        middle,
        last,
        balance,
        order,
    })
}
