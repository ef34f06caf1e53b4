//! Payment (clause 2.5): a customer pays; the amount goes to the
//! warehouse's and district's year-to-date totals and the history.

use std::io::{Cursor, Write};

use rand::Rng;
use txmem::{atomically, Transaction, TxResult};

use super::{district_id, insert_new, other_warehouse, CustomerSelector, Executed};
use crate::tpcc::config::Config;
use crate::tpcc::keys::{customer_key, district_key, next_history_key, DistrictId, WarehouseId};
use crate::tpcc::random::NuRandConstants;
use crate::tpcc::schema::{now, Credit, CustomerData, History, Money, Text, Timestamp};
use crate::tpcc::tables::Tables;
use crate::tpcc::Tpcc;

/// The input of a Payment (clause 2.5.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PaymentInput {
    /// `W_ID` (the terminal's home warehouse).
    pub w_id: WarehouseId,
    /// `D_ID`.
    pub d_id: DistrictId,
    /// `C_W_ID`: the customer's warehouse.
    pub c_w_id: WarehouseId,
    /// `C_D_ID`: the customer's district.
    pub c_d_id: DistrictId,
    /// The customer, by id or by last name.
    pub customer: CustomerSelector,
    /// `H_AMOUNT` (1.00 to 5,000.00).
    pub amount: Money,
    /// `H_DATE`.
    pub date: Timestamp,
}

impl PaymentInput {
    /// The spec's random payment at warehouse `w_id`: the customer is of
    /// another warehouse 15% of the time (when there is one), named by
    /// last name 60% of the time.
    pub fn generate(
        rng: &mut impl Rng,
        config: &Config,
        c: &NuRandConstants,
        w_id: WarehouseId,
    ) -> Self {
        let d_id = district_id(rng, config);
        let (c_w_id, c_d_id) = if config.warehouses > 1 && rng.random_range(1..=100) > 85 {
            (other_warehouse(rng, config, w_id), district_id(rng, config))
        } else {
            (w_id, d_id)
        };
        PaymentInput {
            w_id,
            d_id,
            c_w_id,
            c_d_id,
            customer: CustomerSelector::generate(rng, config, c),
            amount: rng.random_range(100..=500_000),
            date: now(),
        }
    }
}

/// What a Payment returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PaymentOutput {
    /// `C_ID` of the customer who paid.
    pub c_id: u32,
    /// The customer's `C_BALANCE` after the payment.
    pub balance: Money,
    /// The customer's `C_CREDIT`.
    pub credit: Credit,
}

impl Tpcc {
    /// Runs a Payment to commit.
    pub fn payment(&self, input: &PaymentInput) -> Executed<PaymentOutput> {
        let t = &self.tables;
        // Drawn once: an attempt that aborts inserts nothing under it.
        let h_key = next_history_key();
        let mut attempts = 0;
        let output = atomically(|tx| {
            attempts += 1;
            body(t, tx, input, h_key)
        });
        Executed { output, attempts }
    }
}

fn body<'env>(
    t: &'env Tables,
    tx: &mut Transaction<'env>,
    input: &PaymentInput,
    h_key: u64,
) -> TxResult<PaymentOutput> {
    let (w, d, amount) = (input.w_id, input.d_id, input.amount);
    let w_name = t
        .warehouse
        .get_with(tx, &w, |r| r.name)?
        .expect("warehouse row");
    t.warehouse_ytd(w).add(tx, amount)?;
    let d_name = t
        .district
        .get_with(tx, &district_key(w, d), |r| r.name)?
        .expect("district row");
    t.district_ytd(w, d).add(tx, amount)?;

    let (c_w, c_d) = (input.c_w_id, input.c_d_id);
    let c_id = input.customer.resolve(t, tx, c_w, c_d)?;
    let ck = customer_key(c_w, c_d, c_id);
    let credit = t
        .customer
        .get_with(tx, &ck, |r| r.credit)?
        .expect("customer row");
    let mut balance = t.customer_balance.get(tx, &ck)?.expect("customer row");
    balance.balance -= amount;
    balance.ytd_payment += amount;
    balance.payment_cnt += 1;
    t.customer_balance.set(tx, ck, balance)?;
    if credit == Credit::Bad {
        let data = t
            .customer_data
            .get_with(tx, &ck, |old| {
                with_payment(
                    old,
                    [c_id, c_d.into(), c_w.into(), d.into(), w.into()],
                    amount,
                )
            })?
            .expect("customer row");
        t.customer_data.set(tx, ck, data)?;
    }

    let mut data = Text::<24>::new(w_name.as_bytes());
    data.push(b"    ");
    data.push(d_name.as_bytes());
    let row = History {
        c_id,
        c_d_id: c_d,
        c_w_id: c_w,
        d_id: d,
        w_id: w,
        date: input.date,
        amount,
        data,
    };
    insert_new(tx, |tx| t.history.insert_if_absent(tx, h_key, row))?;
    Ok(PaymentOutput {
        c_id,
        balance: balance.balance,
        credit,
    })
}

/// `C_DATA` with a payment's `C_ID`, `C_D_ID`, `C_W_ID`, `D_ID`, `W_ID`
/// and `H_AMOUNT` put in front (clause 2.5.2.2), cut to 500 bytes.
fn with_payment(old: &CustomerData, ids: [u32; 5], amount: Money) -> CustomerData {
    let mut head = [0u8; 80];
    let mut cur = Cursor::new(&mut head[..]);
    let [c, cd, cw, d, w] = ids;
    // 5 ids of at most 10 digits and an amount of at most 8 characters fit.
    let _ = write!(
        cur,
        "{c} {cd} {cw} {d} {w} {}.{:02} ",
        amount / 100,
        amount % 100
    );
    let n = cur.position() as usize;
    let mut data = CustomerData::new(&head[..n]);
    data.push(old.as_bytes());
    data
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_credit_data_gets_the_payment_in_front() {
        let old = CustomerData::new(&[b'x'; 500]);
        let new = with_payment(&old, [42, 3, 1, 7, 2], 123_456);
        assert!(new.as_bytes().starts_with(b"42 3 1 7 2 1234.56 xxx"));
        assert_eq!(new.len(), 500);
    }
}
