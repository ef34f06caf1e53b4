//! The consistency conditions of clause 3.3.2, checked in transactions:
//! 1 to 10 and 12 (11 holds only before the first Delivery).

use std::collections::HashMap;
use std::fmt;

use txmem::{atomically, TxResult};

use super::keys::{
    customer_key, district_key, order_id_of, order_id_of_line, order_key, order_line_key,
    DistrictId, WarehouseId,
};
use super::schema::{Money, Order};
use super::tables::Tables;
use super::Config;

/// A consistency condition that does not hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The condition's number in clause 3.3.2 (1 to 12).
    pub condition: u8,
    /// The warehouse where it fails.
    pub warehouse: WarehouseId,
    /// The district where it fails, for per-district conditions.
    pub district: Option<DistrictId>,
    /// What was found.
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "TPC-C consistency condition {} fails in warehouse {}",
            self.condition, self.warehouse
        )?;
        if let Some(d) = self.district {
            write!(f, ", district {d}")?;
        }
        write!(f, ": {}", self.detail)
    }
}

impl std::error::Error for Violation {}

/// Where a condition is checked.
#[derive(Clone, Copy)]
struct At {
    w: WarehouseId,
    d: Option<DistrictId>,
}

impl At {
    /// `Ok` if `holds`, else the violation of `condition` described by `detail`.
    fn require(
        self,
        condition: u8,
        holds: bool,
        detail: impl FnOnce() -> String,
    ) -> Result<(), Violation> {
        if holds {
            Ok(())
        } else {
            Err(Violation {
                condition,
                warehouse: self.w,
                district: self.d,
                detail: detail(),
            })
        }
    }
}

/// Sums of `H_AMOUNT`.
#[derive(Default)]
struct HistorySums {
    /// By `H_W_ID`.
    warehouse: HashMap<WarehouseId, Money>,
    /// By `(H_W_ID, H_D_ID)` (district key).
    district: HashMap<u64, Money>,
    /// By `(H_C_W_ID, H_C_D_ID, H_C_ID)` (customer key).
    customer: HashMap<u64, Money>,
}

/// One district's orders, new orders and order lines.
#[derive(Default)]
struct DistrictRows {
    next_o_id: u32,
    /// Ascending by id (from [`orders_by_district`]).
    orders: Vec<(u32, Order)>,
    /// Ascending.
    new_orders: Vec<u32>,
    /// `(O_ID, delivered, OL_AMOUNT)`, ascending by order.
    lines: Vec<(u32, bool, Money)>,
}

/// Checks every condition; the first that fails is returned. Per
/// warehouse: 1, 8, 9, then per district 2 to 7, 10 and 12.
pub(super) fn check(t: &Tables, config: &Config) -> Result<(), Violation> {
    let history = atomically(|tx| {
        let mut sums = HistorySums::default();
        t.history.for_each(tx, |_, h| {
            *sums.warehouse.entry(h.w_id).or_default() += h.amount;
            *sums
                .district
                .entry(district_key(h.w_id, h.d_id))
                .or_default() += h.amount;
            let ck = customer_key(h.c_w_id, h.c_d_id, h.c_id);
            *sums.customer.entry(ck).or_default() += h.amount;
        })?;
        Ok(sums)
    });
    let mut orders = orders_by_district(t);
    let mut rows = DistrictRows::default();
    for w in 1..=config.warehouses {
        let at = At { w, d: None };
        let districts = 1..=config.districts_per_warehouse;
        let (w_ytd, d_ytd) = atomically(|tx| {
            let w_ytd = t.warehouse_ytd(w).get(tx)?;
            let d_ytd = districts
                .clone()
                .map(|d| t.district_ytd(w, d).get(tx))
                .collect::<TxResult<Vec<Money>>>()?;
            Ok((w_ytd, d_ytd))
        });
        let sum: Money = d_ytd.iter().sum();
        at.require(1, w_ytd == sum, || {
            format!("W_YTD is {w_ytd} cents but the districts' D_YTD sum to {sum}")
        })?;
        let paid = history.warehouse.get(&w).copied().unwrap_or(0);
        at.require(8, w_ytd == paid, || {
            format!("W_YTD is {w_ytd} cents but the warehouse's history sums to {paid}")
        })?;
        for (d, &ytd) in districts.clone().zip(&d_ytd) {
            let paid = history
                .district
                .get(&district_key(w, d))
                .copied()
                .unwrap_or(0);
            At { w, d: Some(d) }.require(9, ytd == paid, || {
                format!("D_YTD is {ytd} cents but the district's history sums to {paid}")
            })?;
        }
        for d in districts {
            let at = At { w, d: Some(d) };
            rows.orders = orders.remove(&district_key(w, d)).unwrap_or_default();
            read_district(t, w, d, &mut rows);
            check_orders(at, &rows)?;
            check_customers(t, config, at, &rows, &history)?;
        }
    }
    Ok(())
}

/// Every order, by district key, each district's ascending by id (the
/// order table is hashed: one pass over all of it).
fn orders_by_district(t: &Tables) -> HashMap<u64, Vec<(u32, Order)>> {
    let mut orders = atomically(|tx| {
        let mut by_district: HashMap<u64, Vec<(u32, Order)>> = HashMap::new();
        t.order.for_each(tx, |&k, o| {
            let district = k >> 32;
            by_district
                .entry(district)
                .or_default()
                .push((order_id_of(k), *o));
        })?;
        Ok(by_district)
    });
    for list in orders.values_mut() {
        list.sort_unstable_by_key(|&(o_id, _)| o_id);
    }
    orders
}

/// Reads district `(w, d)`'s next order id, new orders and lines.
fn read_district(t: &Tables, w: WarehouseId, d: DistrictId, rows: &mut DistrictRows) {
    atomically(|tx| {
        rows.new_orders.clear();
        rows.lines.clear();
        rows.next_o_id = t
            .district_next_o_id
            .get(tx, &district_key(w, d))?
            .expect("district row");
        let orders = order_key(w, d, 0)..=order_key(w, d, u32::MAX);
        t.new_order.scan(tx, orders, |&k, _| {
            rows.new_orders.push(order_id_of(k));
            true
        })?;
        let lines = order_line_key(w, d, 0, 0)..=order_line_key(w, d, u32::MAX, u8::MAX);
        t.order_line.scan(tx, lines, |&k, l| {
            rows.lines
                .push((order_id_of_line(k), l.delivery_d.is_some(), l.amount));
            true
        })
    });
}

/// Conditions 2 to 7 for one district.
fn check_orders(at: At, rows: &DistrictRows) -> Result<(), Violation> {
    let last = rows.next_o_id.wrapping_sub(1);
    let max_o = rows.orders.last().map(|&(o, _)| o);
    at.require(2, max_o == Some(last), || {
        format!("D_NEXT_O_ID - 1 is {last} but max(O_ID) is {max_o:?}")
    })?;
    if let (Some(&min_no), Some(&max_no)) = (rows.new_orders.first(), rows.new_orders.last()) {
        at.require(2, max_no == last, || {
            format!("D_NEXT_O_ID - 1 is {last} but max(NO_O_ID) is {max_no}")
        })?;
        let count = rows.new_orders.len();
        at.require(3, (max_no - min_no + 1) as usize == count, || {
            format!(
                "max(NO_O_ID) - min(NO_O_ID) + 1 is {} but there are {count} new-order rows",
                max_no - min_no + 1
            )
        })?;
    }
    let ol_cnt: usize = rows.orders.iter().map(|(_, o)| usize::from(o.ol_cnt)).sum();
    at.require(4, ol_cnt == rows.lines.len(), || {
        format!(
            "sum(O_OL_CNT) is {ol_cnt} but there are {} order lines",
            rows.lines.len()
        )
    })?;

    // Walk orders, new orders and lines together (all ascending by order).
    let mut new_orders = rows.new_orders.iter().peekable();
    let mut lines = rows.lines.iter().peekable();
    for &(o_id, order) in &rows.orders {
        while new_orders.next_if(|&&n| n < o_id).is_some() {}
        let is_new = new_orders.next_if_eq(&&o_id).is_some();
        at.require(5, order.carrier_id.is_none() == is_new, || {
            format!(
                "order {o_id} has O_CARRIER_ID {:?} and new-order row: {is_new}",
                order.carrier_id
            )
        })?;
        if let Some(&&(orphan, _, _)) = lines.peek().filter(|l| l.0 < o_id) {
            return at.require(6, false, || {
                format!("order line of order {orphan}, which does not exist")
            });
        }
        let mut count = 0;
        while let Some(&(_, delivered, _)) = lines.next_if(|l| l.0 == o_id) {
            count += 1;
            at.require(7, delivered == order.carrier_id.is_some(), || {
                format!(
                    "order {o_id} has O_CARRIER_ID {:?} and a line delivered: {delivered}",
                    order.carrier_id
                )
            })?;
        }
        at.require(6, count == usize::from(order.ol_cnt), || {
            format!(
                "order {o_id} has O_OL_CNT {} but {count} lines",
                order.ol_cnt
            )
        })?;
    }
    if let Some(&&(orphan, _, _)) = lines.peek() {
        return at.require(6, false, || {
            format!("order line of order {orphan}, which does not exist")
        });
    }
    if let Some(&&orphan) = new_orders.peek() {
        return at.require(5, false, || {
            format!("new-order row of order {orphan}, which does not exist")
        });
    }
    Ok(())
}

/// Conditions 10 and 12 for the customers of one district.
fn check_customers(
    t: &Tables,
    config: &Config,
    at: At,
    rows: &DistrictRows,
    history: &HistorySums,
) -> Result<(), Violation> {
    let (w, d) = (at.w, at.d.expect("a district"));
    let customers = config.customers_per_district as usize;
    // Sum of delivered OL_AMOUNT per customer (an order's lines are in its
    // customer's district).
    let mut delivered: Vec<Money> = vec![0; customers + 1];
    let mut lines = rows.lines.iter().peekable();
    for &(o_id, order) in &rows.orders {
        while lines.next_if(|l| l.0 < o_id).is_some() {}
        while let Some(&(_, is_delivered, amount)) = lines.next_if(|l| l.0 == o_id) {
            if is_delivered {
                delivered[order.c_id as usize] += amount;
            }
        }
    }
    let balances = atomically(|tx| {
        (1..=config.customers_per_district)
            .map(|c| {
                let b = t.customer_balance.get(tx, &customer_key(w, d, c))?;
                Ok(b.expect("customer row"))
            })
            .collect::<TxResult<Vec<_>>>()
    });
    for (c, b) in (1..).zip(&balances) {
        let paid = history
            .customer
            .get(&customer_key(w, d, c))
            .copied()
            .unwrap_or(0);
        let got = delivered[c as usize];
        at.require(10, b.balance == got - paid, || {
            format!(
                "customer {c} has C_BALANCE {} cents but was delivered {got} and paid {paid}",
                b.balance
            )
        })?;
        at.require(12, b.balance + b.ytd_payment == got, || {
            format!(
                "customer {c} has C_BALANCE + C_YTD_PAYMENT {} cents but was delivered {got}",
                b.balance + b.ytd_payment
            )
        })?;
    }
    Ok(())
}
