//! Delivery (clause 2.7): deliver the oldest undelivered order of every
//! district of a warehouse, in one transaction (the spec allows one per
//! district; Silo and STO run the batch as one).

use std::sync::atomic::{AtomicU32, Ordering};

use rand::Rng;
use txmem::{atomically, Transaction, TxResult};

use super::new_order::MAX_LINES;
use super::Executed;
use crate::tpcc::keys::{customer_key, line_of_order, order_id_of, order_key, WarehouseId};
use crate::tpcc::schema::{now, Money, Order, OrderLine, Timestamp};
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
    pub delivered: [Option<u32>; 10],
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

fn body<'env>(
    t: &'env Tables,
    tx: &mut Transaction<'env>,
    input: &DeliveryInput,
    undelivered_from: &[AtomicU32],
) -> TxResult<DeliveryOutput> {
    let w = input.w_id;
    let mut output = DeliveryOutput::default();
    for d in 1..=t.districts_per_warehouse() {
        let from = undelivered_from[t.district_index(w, d)].load(Ordering::Relaxed);
        let mut oldest = None;
        t.new_order.scan(
            tx,
            order_key(w, d, from)..=order_key(w, d, u32::MAX),
            |&k, _| {
                oldest = Some(k);
                false
            },
        )?;
        let Some(ok) = oldest else {
            continue;
        };
        t.new_order
            .remove(tx, &ok)?
            .expect("new-order row just read");
        let order = t.order.get(tx, &ok)?.expect("order row");
        let delivered = Order {
            carrier_id: Some(input.carrier_id),
            ..order
        };
        t.order.put(tx, ok, delivered)?;

        let mut lines = [(0u64, OrderLine::default()); MAX_LINES];
        let mut n = 0;
        t.order_line.scan(
            tx,
            line_of_order(ok, 0)..=line_of_order(ok, u8::MAX),
            |&k, l| {
                lines[n] = (k, *l);
                n += 1;
                n < MAX_LINES
            },
        )?;
        let mut total: Money = 0;
        for &(k, line) in &lines[..n] {
            total += line.amount;
            let line = OrderLine {
                delivery_d: Some(input.delivery_d),
                ..line
            };
            t.order_line.put(tx, k, line)?;
        }

        let ck = customer_key(w, d, order.c_id);
        let mut balance = t.customer_balance.get(tx, &ck)?.expect("customer row");
        balance.balance += total;
        balance.delivery_cnt += 1;
        t.customer_balance.put(tx, ck, balance)?;
        output.delivered[usize::from(d) - 1] = Some(order_id_of(ok));
    }
    Ok(output)
}
