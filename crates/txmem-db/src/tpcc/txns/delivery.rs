//! Delivery (clause 2.7): deliver the oldest undelivered order of every
//! district of a warehouse, in one transaction (the spec allows one per
//! district; Silo and STO run the batch as one).

use std::sync::atomic::{AtomicU32, Ordering};

use rand::Rng;
use txmem::{atomically, Transaction, TxResult};

use super::Executed;
use crate::tpcc::keys::{customer_key, line_of_order, order_id_of, order_key, WarehouseId};
use crate::tpcc::schema::{now, CustomerBalance, Money, Order, OrderLine, Timestamp};
use crate::tpcc::tables::Tables;
use crate::tpcc::Tpcc;

/// The input of a Delivery (clause 2.7.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeliveryInput {
    /// `W_ID` (the terminal's home warehouse).
    pub w_id: WarehouseId,
    /// `O_CARRIER_ID` (1 to 10).
    pub carrier_id: u8,
    /// `OL_DELIVERY_D`.
    pub delivery_d: Timestamp,
}

impl DeliveryInput {
    /// The spec's random delivery from warehouse `w_id`.
    pub fn generate(rng: &mut impl Rng, w_id: WarehouseId) -> Self {
        DeliveryInput {
            w_id,
            carrier_id: rng.random_range(1..=10),
            delivery_d: now(),
        }
    }
}

/// What a Delivery returns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeliveryOutput {
    /// The order delivered in district `d` at index `d - 1` (`None` if the
    /// district had no undelivered order).
    pub delivered: [Option<u32>; MAX_DISTRICTS],
}

impl DeliveryOutput {
    /// Number of orders delivered.
    pub fn count(&self) -> usize {
        self.delivered.iter().flatten().count()
    }
}

impl Tpcc {
    /// Runs a Delivery to commit.
    pub fn delivery(&self, input: &DeliveryInput) -> Executed<DeliveryOutput> {
        let t = &self.tables;
        let mut attempts = 0;
        let output = atomically(|tx| {
            attempts += 1;
            body(t, tx, input, &self.undelivered_from)
        });
        // Every order below a delivered one is delivered: later Deliveries
        // look from there (see `Tpcc::undelivered_from`).
        for (d, o_id) in (1..).zip(output.delivered) {
            if let Some(o_id) = o_id {
                self.undelivered_from[t.district_index(input.w_id, d)]
                    .fetch_max(o_id + 1, Ordering::Relaxed);
            }
        }
        Executed { output, attempts }
    }
}

/// What Delivery reads of one district's oldest undelivered order before
/// it writes (the order's lines are read and rewritten in one pass, with
/// the writes).
#[derive(Clone, Copy)]
struct Reading {
    /// The order's key.
    order_key: u64,
    order: Order,
    balance: CustomerBalance,
}

/// The most districts a warehouse has.
const MAX_DISTRICTS: usize = 10;

fn body<'env>(
    t: &'env Tables,
    tx: &mut Transaction<'env>,
    input: &DeliveryInput,
    undelivered_from: &[AtomicU32],
) -> TxResult<DeliveryOutput> {
    let w = input.w_id;
    let districts = 1..=t.districts_per_warehouse();
    // Each step reads for every district before the next step, and all
    // writes come last: the districts' reads are independent, and grouped
    // so their cache misses overlap.
    let mut readings: [Option<Reading>; MAX_DISTRICTS] = [None; MAX_DISTRICTS];
    for (d, reading) in districts.clone().zip(&mut readings) {
        let from = undelivered_from[t.district_index(w, d)].load(Ordering::Relaxed);
        t.new_order.scan(
            tx,
            order_key(w, d, from)..=order_key(w, d, u32::MAX),
            |&k, _| {
                *reading = Some(Reading {
                    order_key: k,
                    order: Order::default(),
                    balance: CustomerBalance::default(),
                });
                false
            },
        )?;
    }
    for r in readings.iter_mut().flatten() {
        r.order = t.order.get(tx, &r.order_key)?.expect("order row");
    }
    for (d, r) in districts.clone().zip(&mut readings) {
        if let Some(r) = r {
            let ck = customer_key(w, d, r.order.c_id);
            r.balance = t.customer_balance.get(tx, &ck)?.expect("customer row");
        }
    }

    let mut output = DeliveryOutput::default();
    for (d, r) in districts.zip(&readings) {
        let Some(r) = r else {
            continue;
        };
        let ok = r.order_key;
        t.new_order
            .remove(tx, &ok)?
            .expect("new-order row just read");
        let delivered = Order {
            carrier_id: Some(input.carrier_id),
            ..r.order
        };
        t.order.set(tx, ok, delivered)?;
        // The lines: summed and stamped with the delivery date in one
        // pass of a cursor (no second search per line).
        let mut total: Money = 0;
        t.order_line.update_range(
            tx,
            line_of_order(ok, 0)..=line_of_order(ok, u8::MAX),
            |_, line| {
                total += line.amount;
                Some(OrderLine {
                    delivery_d: Some(input.delivery_d),
                    ..*line
                })
            },
        )?;
        let balance = CustomerBalance {
            balance: r.balance.balance + total,
            delivery_cnt: r.balance.delivery_cnt + 1,
            ..r.balance
        };
        t.customer_balance
            .set(tx, customer_key(w, d, r.order.c_id), balance)?;
        output.delivered[usize::from(d) - 1] = Some(order_id_of(ok));
    }
    Ok(output)
}
