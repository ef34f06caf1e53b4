//! The database: one transactional map per table (or per part of a split
//! table), and the year-to-date counters.

use txmem::{TBTreeMap, TCounter, THashMap};

use super::config::Config;
use super::keys::{DistrictId, NameKey, WarehouseId};
use super::schema::{
    Customer, CustomerBalance, CustomerData, District, History, Item, Money, Order, OrderLine,
    Stock, StockCounters, Warehouse,
};
use crate::hash::KeyHasher;

/// A hash-mapped table (keys hashed with [`KeyHasher`]).
pub type HashTable<K, V> = THashMap<K, V, KeyHasher>;

/// The nine TPC-C tables on txmem's maps. Keys are described in
/// [`keys`](super::keys), the split of rows in the [module docs](super).
///
/// The fields are public so that tests and tools can run their own
/// transactions on the tables (inspect them, or corrupt them on purpose).
pub struct Tables {
    /// `WAREHOUSE`, less `W_YTD`.
    pub warehouse: HashTable<WarehouseId, Warehouse>,
    /// `W_YTD` of warehouse `w` at index `w - 1`.
    pub warehouse_ytd: Box<[TCounter]>,
    /// `DISTRICT`, less `D_YTD` and `D_NEXT_O_ID`.
    pub district: HashTable<u64, District>,
    /// `D_NEXT_O_ID`, by district key.
    pub district_next_o_id: HashTable<u64, u32>,
    /// `D_YTD`, at the index [`Tables::district_index`] gives.
    pub district_ytd: Box<[TCounter]>,
    /// `CUSTOMER`: the read-only columns.
    pub customer: HashTable<u64, Customer>,
    /// `CUSTOMER`: balance and payment counts, by customer key.
    pub customer_balance: HashTable<u64, CustomerBalance>,
    /// `CUSTOMER`: `C_DATA`, by customer key.
    pub customer_data: HashTable<u64, CustomerData>,
    /// Customers by last name: the ids of a district's customers with one
    /// last name, sorted by first name (then id).
    pub customer_by_name: HashTable<NameKey, Box<[u32]>>,
    /// `HISTORY`, under generated keys.
    pub history: HashTable<u64, History>,
    /// `NEW_ORDER`: the undelivered orders, by order key.
    pub new_order: TBTreeMap<u64, ()>,
    /// `OORDER`, by order key.
    pub order: HashTable<u64, Order>,
    /// Orders by customer ([`Tables::customer_order_key`]), for
    /// OrderStatus's "most recent order of the customer".
    pub order_by_customer: TBTreeMap<u64, ()>,
    /// `ORDER_LINE`, by order-line key.
    pub order_line: TBTreeMap<u64, OrderLine>,
    /// `ITEM`, by item id.
    pub item: HashTable<u32, Item>,
    /// `STOCK`: the read-only columns, by stock key.
    pub stock: HashTable<u64, Stock>,
    /// `STOCK`: quantity and counts, by stock key.
    pub stock_counters: HashTable<u64, StockCounters>,
    districts_per_warehouse: u8,
    customers_per_district: u32,
}

impl Tables {
    /// Empty tables sized for `config`'s population, with the year-to-date
    /// counters at `warehouse_ytd` and `district_ytd`.
    pub(super) fn new(config: &Config, warehouse_ytd: Money, district_ytd: Money) -> Self {
        let w = usize::from(config.warehouses);
        let districts = config.districts();
        let customers = districts * config.customers_per_district as usize;
        let stock = w * config.items as usize;
        // Room for the loaded orders and as many again from a run.
        let orders = 2 * districts * config.orders_per_district as usize;
        Tables {
            warehouse: HashTable::with_capacity_and_hasher(w, KeyHasher),
            warehouse_ytd: (0..w).map(|_| TCounter::new(warehouse_ytd)).collect(),
            district: HashTable::with_capacity_and_hasher(districts, KeyHasher),
            district_next_o_id: HashTable::with_capacity_and_hasher(districts, KeyHasher),
            district_ytd: (0..districts)
                .map(|_| TCounter::new(district_ytd))
                .collect(),
            customer: HashTable::with_capacity_and_hasher(customers, KeyHasher),
            customer_balance: HashTable::with_capacity_and_hasher(customers, KeyHasher),
            customer_data: HashTable::with_capacity_and_hasher(customers, KeyHasher),
            customer_by_name: HashTable::with_capacity_and_hasher(
                districts * config.customers_per_district.min(1000) as usize,
                KeyHasher,
            ),
            history: HashTable::with_capacity_and_hasher(customers * 2, KeyHasher),
            new_order: TBTreeMap::new(),
            order: HashTable::with_capacity_and_hasher(orders, KeyHasher),
            order_by_customer: TBTreeMap::new(),
            order_line: TBTreeMap::new(),
            item: HashTable::with_capacity_and_hasher(config.items as usize, KeyHasher),
            stock: HashTable::with_capacity_and_hasher(stock, KeyHasher),
            stock_counters: HashTable::with_capacity_and_hasher(stock, KeyHasher),
            districts_per_warehouse: config.districts_per_warehouse,
            customers_per_district: config.customers_per_district,
        }
    }

    /// The index of district `(w, d)` in [`district_ytd`](Self::district_ytd)
    /// and other per-district arrays.
    #[inline]
    pub fn district_index(&self, w: WarehouseId, d: DistrictId) -> usize {
        (usize::from(w) - 1) * usize::from(self.districts_per_warehouse) + usize::from(d) - 1
    }

    /// The key of the orders-by-customer entry of order `o`, placed by
    /// customer `c` of district `(w, d)`: the customer's number in the
    /// database (districts in key order, customers within each) in the high
    /// 32 bits, the order id in the low 32. It orders like the tuple
    /// `(W_ID, D_ID, C_ID, O_ID)`, in one word where the four fields'
    /// own widths would need more than 64 bits.
    #[inline]
    pub fn customer_order_key(&self, w: WarehouseId, d: DistrictId, c: u32, o: u32) -> u64 {
        let district = self.district_index(w, d) as u64;
        let customer = district * u64::from(self.customers_per_district) + u64::from(c) - 1;
        customer << 32 | u64::from(o)
    }

    /// Districts per warehouse.
    #[inline]
    pub fn districts_per_warehouse(&self) -> u8 {
        self.districts_per_warehouse
    }

    /// `W_YTD` of warehouse `w`.
    #[inline]
    pub fn warehouse_ytd(&self, w: WarehouseId) -> &TCounter {
        &self.warehouse_ytd[usize::from(w) - 1]
    }

    /// `D_YTD` of district `(w, d)`.
    #[inline]
    pub fn district_ytd(&self, w: WarehouseId, d: DistrictId) -> &TCounter {
        &self.district_ytd[self.district_index(w, d)]
    }
}
