//! The initial population (clause 4.3.3.1), loaded in transactions of a
//! few hundred rows, the item table and each warehouse on its own thread.
//!
//! Every part of the load draws from its own generator, seeded from the
//! configuration's seed and the part's number, so the rows do not depend
//! on how the parts are spread over threads.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use txmem::{atomically, Transaction, TxResult};

use super::config::Config;
use super::keys::{
    customer_key, district_key, order_key, order_line_key, stock_key, DistrictId, NameKey,
    WarehouseId,
};
use super::random::{
    a_string, data_string, fixed_a_string, last_name, n_string, nurand, state, zip, NuRandConstants,
};
use super::schema::{
    now, Address, Credit, Customer, CustomerBalance, CustomerData, District, History, Item,
    LastName, Money, Order, OrderLine, Stock, StockCounters, Text, Timestamp, Warehouse,
};
use super::tables::Tables;

/// Rows per loading transaction.
const BATCH: usize = 200;
/// `H_AMOUNT` of the loaded history rows, and the customers' initial
/// `C_YTD_PAYMENT` (10.00).
pub(super) const INITIAL_PAYMENT: Money = 1000;

/// Loads `config`'s population. Returns the tables and the NURand
/// constants a run must use against them.
pub(super) fn load(config: &Config) -> (Tables, NuRandConstants) {
    config.validate();
    let mut rng = SmallRng::seed_from_u64(config.seed);
    let load_constants = NuRandConstants::generate(&mut rng);
    let run_constants = load_constants.for_run(&mut rng);
    let district_ytd = Money::from(config.customers_per_district) * INITIAL_PAYMENT;
    let warehouse_ytd = district_ytd * Money::from(config.districts_per_warehouse);
    let tables = Tables::new(config, warehouse_ytd, district_ytd);
    let loader = Loader {
        tables: &tables,
        config,
        c_last: load_constants.c_last,
        now: now(),
    };
    // Part 0 is the item table, part w the warehouse w.
    let parts = usize::from(config.warehouses) + 1;
    let threads = thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(parts);
    let next = AtomicUsize::new(0);
    thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let part = next.fetch_add(1, Ordering::Relaxed);
                if part >= parts {
                    break;
                }
                let mut rng = SmallRng::seed_from_u64(
                    config.seed ^ (part as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                );
                match part {
                    0 => loader.items(&mut rng),
                    w => loader.warehouse(&mut rng, w as WarehouseId),
                }
            });
        }
    });
    (tables, run_constants)
}

/// Commits `rows` in transactions of `size` rows, calling `put` on each.
fn commit_in_batches<'env, T>(
    size: usize,
    rows: impl IntoIterator<Item = T>,
    mut put: impl FnMut(&mut Transaction<'env>, &T) -> TxResult<()>,
) {
    let mut rows = rows.into_iter();
    let mut batch = Vec::with_capacity(size);
    loop {
        batch.clear();
        batch.extend(rows.by_ref().take(size));
        if batch.is_empty() {
            return;
        }
        atomically(|tx| batch.iter().try_for_each(|row| put(tx, row)));
    }
}

/// Panics unless an insert found its key absent (a loader bug).
fn fresh(inserted: bool, table: &str) -> TxResult<()> {
    assert!(inserted, "duplicate key loading the {table} table");
    Ok(())
}

struct Loader<'a> {
    tables: &'a Tables,
    config: &'a Config,
    /// NURand's `C` for the loaded last names.
    c_last: u32,
    /// `C_SINCE`, `H_DATE`, `O_ENTRY_D` and the delivered lines'
    /// `OL_DELIVERY_D`.
    now: Timestamp,
}

/// An order with its lines, as loaded.
struct LoadedOrder {
    o_id: u32,
    order: Order,
    lines: [OrderLine; 15],
}

/// A customer's rows, as loaded.
struct LoadedCustomer {
    c_id: u32,
    customer: Customer,
    data: CustomerData,
    history: History,
}

impl Loader<'_> {
    fn items(&self, rng: &mut SmallRng) {
        let t = self.tables;
        let rows = (1..=self.config.items).map(|i| {
            let (data, original) = data_string(rng, 26, 50);
            let item = Item {
                im_id: rng.random_range(1..=10_000),
                name: a_string(rng, 14, 24),
                price: rng.random_range(100..=10_000),
                data,
                original,
            };
            (i, item)
        });
        commit_in_batches(BATCH, rows, |tx, &(i, item)| {
            fresh(t.item.insert_if_absent(tx, i, item)?, "item")
        });
    }

    fn warehouse(&self, rng: &mut SmallRng, w: WarehouseId) {
        let t = self.tables;
        let row = Warehouse {
            name: a_string(rng, 6, 10),
            address: address(rng),
            tax: rng.random_range(0..=2000),
        };
        atomically(|tx| fresh(t.warehouse.insert_if_absent(tx, w, row)?, "warehouse"));
        let stock = (1..=self.config.items).map(|i| {
            let mut dist = [[0u8; 24]; 10];
            for d in &mut dist {
                *d = fixed_a_string(rng);
            }
            let (data, original) = data_string(rng, 26, 50);
            let counters = StockCounters::new(rng.random_range(10..=100), 0, 0, 0);
            (
                stock_key(w, i),
                Stock {
                    dist,
                    data,
                    original,
                },
                counters,
            )
        });
        commit_in_batches(BATCH, stock, |tx, &(k, stock, counters)| {
            fresh(t.stock.insert_if_absent(tx, k, stock)?, "stock")?;
            fresh(t.stock_counters.insert_if_absent(tx, k, counters)?, "stock")
        });
        for d in 1..=self.config.districts_per_warehouse {
            self.district(rng, w, d);
        }
    }

    fn district(&self, rng: &mut SmallRng, w: WarehouseId, d: DistrictId) {
        let t = self.tables;
        let c = self.config;
        let dk = district_key(w, d);
        let row = District {
            name: a_string(rng, 6, 10),
            address: address(rng),
            tax: rng.random_range(0..=2000),
        };
        atomically(|tx| {
            fresh(t.district.insert_if_absent(tx, dk, row)?, "district")?;
            fresh(
                t.district_next_o_id
                    .insert_if_absent(tx, dk, c.orders_per_district + 1)?,
                "district",
            )
        });

        let mut names: Vec<(LastName, Text<16>, u32)> = Vec::new();
        let customers = (1..=c.customers_per_district).map(|c_id| {
            let number = if c_id <= 1000 {
                c_id - 1
            } else {
                nurand(rng, 255, self.c_last, 0, 999)
            };
            let customer = Customer {
                first: a_string(rng, 8, 16),
                middle: *b"OE",
                last: last_name(number),
                address: address(rng),
                phone: n_string(rng),
                since: self.now,
                credit: if rng.random_range(0..10) == 0 {
                    Credit::Bad
                } else {
                    Credit::Good
                },
                credit_lim: 5_000_000,
                discount: rng.random_range(0..=5000),
            };
            names.push((customer.last, customer.first, c_id));
            LoadedCustomer {
                c_id,
                customer,
                data: a_string(rng, 300, 500),
                history: History {
                    c_id,
                    c_d_id: d,
                    c_w_id: w,
                    d_id: d,
                    w_id: w,
                    date: self.now,
                    amount: INITIAL_PAYMENT,
                    data: a_string(rng, 12, 24),
                },
            }
        });
        let balance = CustomerBalance {
            balance: -INITIAL_PAYMENT,
            ytd_payment: INITIAL_PAYMENT,
            payment_cnt: 1,
            delivery_cnt: 0,
        };
        commit_in_batches(BATCH, customers, |tx, row| {
            let k = customer_key(w, d, row.c_id);
            fresh(
                t.customer.insert_if_absent(tx, k, row.customer)?,
                "customer",
            )?;
            fresh(
                t.customer_balance.insert_if_absent(tx, k, balance)?,
                "customer",
            )?;
            fresh(
                t.customer_data.insert_if_absent(tx, k, row.data)?,
                "customer",
            )?;
            // A loaded history row takes its customer's key (run-time
            // keys have the top bit set).
            fresh(t.history.insert_if_absent(tx, k, row.history)?, "history")
        });

        names.sort_unstable();
        let groups = names.chunk_by(|a, b| a.0 == b.0).map(|group| {
            let ids: Box<[u32]> = group.iter().map(|&(_, _, c_id)| c_id).collect();
            (NameKey::new(w, d, group[0].0), ids)
        });
        commit_in_batches(BATCH, groups, |tx, (key, ids)| {
            fresh(
                t.customer_by_name.insert_if_absent(tx, *key, ids.clone())?,
                "customer-name index",
            )
        });

        let mut placed_by: Vec<u32> = (1..=c.customers_per_district).collect();
        placed_by.shuffle(rng);
        let delivered = c.delivered_per_district();
        let orders = (1..=c.orders_per_district).map(|o_id| {
            let is_delivered = o_id <= delivered;
            let ol_cnt = rng.random_range(5..=15u8);
            let order = Order {
                c_id: placed_by[(o_id as usize - 1) % placed_by.len()],
                entry_d: self.now,
                carrier_id: is_delivered.then(|| rng.random_range(1..=10)),
                ol_cnt,
                all_local: true,
            };
            let mut lines = [OrderLine::default(); 15];
            for line in &mut lines[..usize::from(ol_cnt)] {
                *line = OrderLine {
                    i_id: rng.random_range(1..=c.items),
                    supply_w_id: w,
                    quantity: 5,
                    amount: if is_delivered {
                        0
                    } else {
                        rng.random_range(1..=999_999)
                    },
                    delivery_d: is_delivered.then_some(self.now),
                    dist_info: fixed_a_string(rng),
                };
            }
            LoadedOrder { o_id, order, lines }
        });
        commit_in_batches(BATCH / 10, orders, |tx, row| {
            let o = row.o_id;
            let ok = order_key(w, d, o);
            fresh(t.order.insert_if_absent(tx, ok, row.order)?, "order")?;
            let ck = t.customer_order_key(w, d, row.order.c_id, o);
            fresh(t.order_by_customer.insert_if_absent(tx, ck, ())?, "order")?;
            if row.order.carrier_id.is_none() {
                fresh(t.new_order.insert_if_absent(tx, ok, ())?, "new-order")?;
            }
            for (n, line) in (1..).zip(&row.lines[..usize::from(row.order.ol_cnt)]) {
                let lk = order_line_key(w, d, o, n);
                fresh(t.order_line.insert_if_absent(tx, lk, *line)?, "order-line")?;
            }
            Ok(())
        });
    }
}

fn address(rng: &mut SmallRng) -> Address {
    Address {
        street_1: a_string(rng, 10, 20),
        street_2: a_string(rng, 10, 20),
        city: a_string(rng, 10, 20),
        state: state(rng),
        zip: zip(rng),
    }
}
