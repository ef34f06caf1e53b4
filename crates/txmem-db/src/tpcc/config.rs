//! The size of a TPC-C database: the spec's population, scaled.

/// How large a database to load, and the seed of its generators.
///
/// [`Config::new`] is the spec's population for a number of warehouses
/// (clause 4.3.3.1); every other size may be scaled down for tests
/// ([`Config::small`]). Scaling keeps the spec's proportions where the
/// consistency conditions depend on them: 70% of each district's initial
/// orders are delivered and 30% are new orders, each customer starts with
/// one payment of 10.00 in the history, and a district's year-to-date
/// total starts at the sum of its customers' payments (30,000.00 for the
/// spec's 3,000 customers), a warehouse's at the sum of its districts'.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Number of warehouses (the spec's scale factor), at least 1.
    pub warehouses: u16,
    /// Districts per warehouse: 10 in the spec, 1 to 10 here (the stock
    /// table has one `S_DIST_xx` column per district).
    pub districts_per_warehouse: u8,
    /// Customers per district: 3,000 in the spec.
    pub customers_per_district: u32,
    /// Orders per district at load time: 3,000 in the spec.
    pub orders_per_district: u32,
    /// Items in the catalogue (and stock rows per warehouse): 100,000 in
    /// the spec.
    pub items: u32,
    /// Seed of the loader's generators and of the run's NURand constants:
    /// two loads with the same configuration hold the same rows.
    pub seed: u64,
}

impl Config {
    /// The spec's population for `warehouses` warehouses.
    pub fn new(warehouses: u16) -> Self {
        Config {
            warehouses,
            districts_per_warehouse: 10,
            customers_per_district: 3000,
            orders_per_district: 3000,
            items: 100_000,
            seed: 0x7e57_c0de,
        }
    }

    /// A small database for tests: one warehouse, 10 districts of 60
    /// customers and 60 orders, 1,000 items.
    pub fn small() -> Self {
        Config {
            customers_per_district: 60,
            orders_per_district: 60,
            items: 1000,
            ..Config::new(1)
        }
    }

    /// Panics with a message naming the field if a size is out of range.
    pub fn validate(&self) {
        assert!(self.warehouses >= 1, "TPC-C needs at least one warehouse");
        assert!(
            (1..=10).contains(&self.districts_per_warehouse),
            "districts_per_warehouse must be in 1..=10"
        );
        assert!(
            self.customers_per_district >= 1,
            "customers_per_district must be at least 1"
        );
        assert!(
            self.districts() as u64 * u64::from(self.customers_per_district) <= 1 << 32,
            "at most 2^32 customers in all (the orders-by-customer key numbers them in 32 bits)"
        );
        assert!(
            self.orders_per_district >= 1,
            "orders_per_district must be at least 1"
        );
        assert!(
            (1..u32::MAX).contains(&self.items),
            "items must be in 1..u32::MAX (one id stays invalid for NewOrder's rollbacks)"
        );
    }

    /// Orders per district that are delivered at load time (the spec's
    /// 2,100 of 3,000); the rest have a new-order row.
    pub fn delivered_per_district(&self) -> u32 {
        self.orders_per_district - self.new_orders_per_district()
    }

    /// Orders per district with a new-order row at load time (the spec's
    /// 900 of 3,000, at least one).
    pub fn new_orders_per_district(&self) -> u32 {
        ((u64::from(self.orders_per_district) * 3 / 10) as u32).max(1)
    }

    /// The highest last-name number (0 to 999) that some customer of every
    /// district has: 999 in the spec, fewer when a district has fewer than
    /// 1,000 customers (the first 1,000 customers of a district take the
    /// names 0 to 999 in order).
    pub fn max_last_name(&self) -> u32 {
        (self.customers_per_district - 1).min(999)
    }

    /// Number of districts in the database.
    pub fn districts(&self) -> usize {
        usize::from(self.warehouses) * usize::from(self.districts_per_warehouse)
    }
}

impl Default for Config {
    /// The spec's population for one warehouse.
    fn default() -> Self {
        Config::new(1)
    }
}
