//! TPC-C: loading, the transactions one by one, the mix on one and several
//! threads, and the consistency check (including databases corrupted on
//! purpose, which it must reject naming the right condition).

use std::collections::BTreeSet;

use rand::rngs::SmallRng;
use rand::SeedableRng;
use txmem::atomically;
use txmem_db::tpcc::keys::{
    customer_key, district_key, order_key, order_line_key, stock_key, NameKey,
};
use txmem_db::tpcc::random::last_name;
use txmem_db::tpcc::{
    now, Config, Customer, CustomerSelector, DeliveryInput, NewOrderInput, NewOrderLine,
    OrderStatusInput, PaymentInput, StockCounters, StockLevelInput, Tables, Tpcc, TxKind,
    Violation,
};
use txmem_db::Workload;

fn small(warehouses: u16) -> Tpcc {
    Tpcc::new(Config {
        warehouses,
        ..Config::small()
    })
}

fn violation(db: &Tpcc) -> Violation {
    db.check_consistency()
        .expect_err("the corrupted database passed the check")
}

#[test]
fn small_load_has_the_population_and_passes_the_check() {
    let db = small(2);
    let c = db.config().clone();
    let t = db.tables();
    let districts = c.districts();
    let orders = districts * c.orders_per_district as usize;
    assert_eq!(t.item.load_len(), c.items as usize);
    assert_eq!(t.stock.load_len(), 2 * c.items as usize);
    assert_eq!(
        t.customer.load_len(),
        districts * c.customers_per_district as usize
    );
    assert_eq!(
        t.history.load_len(),
        districts * c.customers_per_district as usize
    );
    assert_eq!(t.order.load_len(), orders);
    assert_eq!(t.order_by_customer.load_len(), orders);
    assert_eq!(
        t.new_order.load_len(),
        districts * c.new_orders_per_district() as usize
    );
    assert!(t.order_line.load_len() >= 5 * orders && t.order_line.load_len() <= 15 * orders);
    assert_eq!(t.district_next_o_id.load(&district_key(2, 10)), Some(61));
    db.check().unwrap();
}

#[test]
fn loads_with_one_seed_are_equal_and_with_another_differ() {
    let a = small(1);
    let b = small(1);
    let other = Tpcc::new(Config {
        seed: 99,
        ..Config::small()
    });
    let ck = customer_key(1, 4, 17);
    let (ta, tb, to) = (a.tables(), b.tables(), other.tables());
    // Equal but for the load time (`C_SINCE`).
    let customer = |t: &Tables| t.customer.load(&ck).map(|c| Customer { since: 0, ..c });
    assert_eq!(customer(ta), customer(tb));
    assert_eq!(ta.customer_data.load(&ck), tb.customer_data.load(&ck));
    assert_eq!(
        ta.stock.load(&stock_key(1, 500)),
        tb.stock.load(&stock_key(1, 500))
    );
    assert_eq!(ta.item.load(&77), tb.item.load(&77));
    let lk = order_line_key(1, 7, 55, 3);
    assert_eq!(ta.order_line.load(&lk), tb.order_line.load(&lk));
    assert_eq!(a.nurand_constants(), b.nurand_constants());
    assert_ne!(customer(ta), customer(to));
}

#[test]
fn the_mix_on_one_thread_keeps_the_database_consistent() {
    let db = small(1);
    let mut rng = SmallRng::seed_from_u64(1);
    let mut per_kind = [0u32; 5];
    let mut rolled_back = 0;
    let mut retries = 0;
    for _ in 0..3000 {
        let o = db.run_one(&mut rng, 0);
        // Alone on its database the thread conflicts with nobody, but a
        // transaction of another test that txmem serializes (irrevocable,
        // after many aborts) makes every writer in the process retry.
        retries += o.attempts - 1;
        per_kind[o.kind] += 1;
        rolled_back += u32::from(o.rolled_back);
        assert!(!o.rolled_back || o.kind == TxKind::NewOrder as usize);
    }
    assert!(retries < 100, "{retries} retries");
    assert!(per_kind.iter().all(|&n| n > 0), "{per_kind:?}");
    assert!(per_kind[0] > 1100 && per_kind[1] > 1100, "{per_kind:?}");
    assert!(
        rolled_back > 0 && rolled_back < 40,
        "{rolled_back} rollbacks"
    );
    db.check().unwrap();
}

fn run_concurrently(db: &Tpcc, threads: usize, per_thread: usize) -> u64 {
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|worker| {
                s.spawn(move || {
                    let mut rng = SmallRng::seed_from_u64(worker as u64 + 10);
                    (0..per_thread)
                        .map(|_| u64::from(db.run_one(&mut rng, worker).attempts))
                        .sum::<u64>()
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    })
}

#[test]
fn the_mix_on_several_threads_keeps_the_database_consistent() {
    // Two warehouses, four threads: two per home warehouse, remote
    // payments and supplies across them.
    let db = small(2);
    let attempts = run_concurrently(&db, 4, 1000);
    assert!(attempts >= 4000);
    db.check().unwrap();
}

#[test]
fn threads_sharing_one_warehouse_keep_it_consistent() {
    // The highest contention: every NewOrder of a district conflicts on
    // its next order id, every Delivery with every other.
    let db = small(1);
    let attempts = run_concurrently(&db, 3, 800);
    assert!(attempts >= 2400);
    db.check().unwrap();
}

/// Everything a NewOrder of `input` would change.
fn new_order_footprint(db: &Tpcc, input: &NewOrderInput) -> impl PartialEq + std::fmt::Debug {
    let t = db.tables();
    let dk = district_key(input.w_id, input.d_id);
    let stock: Vec<Option<StockCounters>> = input
        .lines()
        .iter()
        .map(|l| t.stock_counters.load(&stock_key(l.supply_w_id, l.i_id)))
        .collect();
    (
        t.district_next_o_id.load(&dk),
        stock,
        t.order.load_len(),
        t.new_order.load_len(),
        t.order_by_customer.load_len(),
        t.order_line.load_len(),
        t.order_line.load_keys(),
    )
}

#[test]
fn a_new_order_with_an_unused_item_rolls_back_and_changes_nothing() {
    let db = small(1);
    let items = db.config().items;
    let line = |i_id| NewOrderLine {
        i_id,
        supply_w_id: 1,
        quantity: 3,
    };
    let lines = [line(5), line(6), line(5), line(items + 1)];
    let bad = NewOrderInput::new(1, 2, 9, &lines, now());
    let before = new_order_footprint(&db, &bad);
    let r = db.new_order(&bad);
    assert_eq!(r.attempts, 1);
    assert_eq!(r.output.unwrap_err().i_id, items + 1);
    assert_eq!(new_order_footprint(&db, &bad), before);
    db.check().unwrap();

    // The same order without the bad line commits, under the id the
    // rolled-back one would have taken, and updates the stock.
    let good = NewOrderInput::new(1, 2, 9, &lines[..3], now());
    let s5 = db.tables().stock_counters.load(&stock_key(1, 5)).unwrap();
    let out = db.new_order(&good).output.unwrap();
    assert_eq!(out.o_id, db.config().orders_per_district + 1);
    assert!(out.total > 0);
    let s5_after = db.tables().stock_counters.load(&stock_key(1, 5)).unwrap();
    assert_eq!(s5_after, s5.after_order(3, false).after_order(3, false));
    assert_eq!(s5_after.order_cnt(), 2);
    assert_ne!(new_order_footprint(&db, &bad), before);
    db.check().unwrap();
}

#[test]
fn new_order_delivery_and_order_status_see_each_other() {
    let db = small(1);
    let c = db.config().clone();
    let t = db.tables();
    let lines: Vec<_> = (1..=7)
        .map(|i| NewOrderLine {
            i_id: i * 10,
            supply_w_id: 1,
            quantity: 2,
        })
        .collect();
    let placed = db.new_order(&NewOrderInput::new(1, 3, 11, &lines, now()));
    let o_id = placed.output.unwrap().o_id;

    let status = |customer| {
        let s = db.order_status(&OrderStatusInput {
            w_id: 1,
            d_id: 3,
            customer,
        });
        s.output
    };
    let s = status(CustomerSelector::Id(11));
    let order = s.order.unwrap();
    assert_eq!((order.o_id, order.lines, order.carrier_id), (o_id, 7, None));
    assert_eq!((order.quantity, order.delivered), (14, 0));
    // Customer 11's last name is name number 10 (ids up to 1000 take
    // names in order), and no other customer of the district has it.
    let by_name = status(CustomerSelector::LastName(last_name(10)));
    assert_eq!(by_name, s);

    // Delivery takes the oldest undelivered order of each district.
    let first = c.delivered_per_district() + 1;
    let d = db.delivery(&DeliveryInput {
        w_id: 1,
        carrier_id: 4,
        delivery_d: now(),
    });
    assert_eq!(d.output.count(), 10);
    assert!(d.output.delivered.iter().all(|&o| o == Some(first)));
    let ok = order_key(1, 3, first);
    assert_eq!(t.order.load(&ok).unwrap().carrier_id, Some(4));
    assert!(t.new_order.load(&ok).is_none());
    assert!(t
        .order_line
        .load(&order_line_key(1, 3, first, 1))
        .unwrap()
        .delivery_d
        .is_some());
    let next = db.delivery(&DeliveryInput {
        w_id: 1,
        carrier_id: 5,
        delivery_d: now(),
    });
    assert!(next.output.delivered.iter().all(|&o| o == Some(first + 1)));
    db.check().unwrap();
}

#[test]
fn payment_by_last_name_pays_the_middle_customer_by_first_name() {
    // 1,200 customers: those past 1,000 take NURand names, so some names
    // are shared.
    let db = Tpcc::new(Config {
        districts_per_warehouse: 1,
        customers_per_district: 1200,
        orders_per_district: 30,
        items: 200,
        ..Config::small()
    });
    let t = db.tables();
    let shared = (0..1000)
        .map(last_name)
        .find_map(|name| {
            let ids = t.customer_by_name.load(&NameKey::new(1, 1, name))?;
            (ids.len() >= 3).then_some((name, ids))
        })
        .expect("some last name is shared by three customers");
    let (name, ids) = shared;
    let firsts: Vec<_> = ids
        .iter()
        .map(|&c| t.customer.load(&customer_key(1, 1, c)).unwrap().first)
        .collect();
    assert!(
        firsts.windows(2).all(|w| w[0] <= w[1]),
        "sorted by first name"
    );
    let middle = ids[(ids.len() - 1) / 2];
    let ck = customer_key(1, 1, middle);
    let before = t.customer_balance.load(&ck).unwrap();
    let p = db.payment(&PaymentInput {
        w_id: 1,
        d_id: 1,
        c_w_id: 1,
        c_d_id: 1,
        customer: CustomerSelector::LastName(name),
        amount: 12_345,
        date: now(),
    });
    assert_eq!(p.output.c_id, middle);
    let after = t.customer_balance.load(&ck).unwrap();
    assert_eq!(after.balance, before.balance - 12_345);
    assert_eq!(after.ytd_payment, before.ytd_payment + 12_345);
    assert_eq!(after.payment_cnt, before.payment_cnt + 1);
    assert_eq!(t.warehouse_ytd(1).load(), 1200 * 1000 + 12_345);
    db.check().unwrap();
}

#[test]
fn stock_level_counts_the_distinct_low_items_of_the_last_20_orders() {
    let db = small(1);
    let t = db.tables();
    let next = t.district_next_o_id.load(&district_key(1, 6)).unwrap();
    let items: BTreeSet<u32> = atomically(|tx| {
        t.order_line.range(
            tx,
            order_line_key(1, 6, next - 20, 0)..order_line_key(1, 6, next, 0),
        )
    })
    .into_iter()
    .map(|(_, l)| l.i_id)
    .collect();
    let count = |threshold| {
        db.stock_level(&StockLevelInput {
            w_id: 1,
            d_id: 6,
            threshold,
        })
        .output
        .low_stock
    };
    // Every quantity is below 101, none below 10.
    assert_eq!(count(101) as usize, items.len());
    assert_eq!(count(10), 0);
    let expected = items
        .iter()
        .filter(|&&i| t.stock_counters.load(&stock_key(1, i)).unwrap().quantity() < 50)
        .count();
    assert_eq!(count(50) as usize, expected);
}

#[test]
fn a_bumped_next_order_id_fails_condition_2() {
    let db = small(1);
    let t = db.tables();
    let dk = district_key(1, 3);
    atomically(|tx| {
        let next = t.district_next_o_id.get(tx, &dk)?.unwrap();
        t.district_next_o_id.set(tx, dk, next + 1)
    });
    let v = violation(&db);
    assert_eq!(
        (v.condition, v.warehouse, v.district),
        (2, 1, Some(3)),
        "{v}"
    );
    assert!(db.check().unwrap_err().contains("condition 2"));
}

#[test]
fn a_year_to_date_total_out_of_step_fails_condition_1() {
    let db = small(1);
    atomically(|tx| db.tables().district_ytd(1, 7).add(tx, 5));
    let v = violation(&db);
    assert_eq!((v.condition, v.warehouse, v.district), (1, 1, None), "{v}");
}

#[test]
fn a_lost_new_order_row_fails_condition_3() {
    let db = small(1);
    let t = db.tables();
    let middle = db.config().delivered_per_district() + 3;
    atomically(|tx| t.new_order.remove(tx, &order_key(1, 9, middle)));
    let v = violation(&db);
    assert_eq!(
        (v.condition, v.warehouse, v.district),
        (3, 1, Some(9)),
        "{v}"
    );
}

#[test]
fn a_lost_order_line_fails_condition_4() {
    let db = small(1);
    let t = db.tables();
    atomically(|tx| t.order_line.remove(tx, &order_line_key(1, 5, 20, 2)));
    let v = violation(&db);
    assert_eq!(
        (v.condition, v.warehouse, v.district),
        (4, 1, Some(5)),
        "{v}"
    );
}

#[test]
fn a_payment_missing_from_the_balance_fails_condition_10() {
    let db = small(1);
    let t = db.tables();
    let ck = customer_key(1, 8, 33);
    atomically(|tx| {
        let mut b = t.customer_balance.get(tx, &ck)?.unwrap();
        b.balance += 100;
        t.customer_balance.set(tx, ck, b)
    });
    let v = violation(&db);
    assert_eq!(
        (v.condition, v.warehouse, v.district),
        (10, 1, Some(8)),
        "{v}"
    );
    assert!(v.detail.contains("customer 33"), "{v}");
}
