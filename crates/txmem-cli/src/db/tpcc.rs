//! `txmem db tpcc`: the settings of a TPC-C database and the one function
//! that builds it.

use serde_json::json;
use txmem_db::tpcc::keys::district_key;
use txmem_db::tpcc::{Config, Tpcc};

use crate::failure::Failure;

/// The size of a TPC-C database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TpccSettings {
    /// Warehouses; `None`: one per thread.
    pub warehouses: Option<u32>,
    /// Items in the catalogue.
    pub items: u32,
    /// Customers per district.
    pub customers: u32,
    /// Orders per district loaded before the run.
    pub orders: u32,
}

impl TpccSettings {
    /// The warehouses a run on `threads` threads loads.
    pub fn warehouses_for(&self, threads: usize) -> u32 {
        self.warehouses
            .unwrap_or_else(|| u32::try_from(threads).unwrap_or(u32::MAX))
    }

    /// The name its rows are reported under, e.g.
    /// `tpcc/warehouses=per-thread/items=100000` (with the customers and
    /// orders per district when they are not the spec's).
    pub fn name(&self) -> String {
        let w = match self.warehouses {
            Some(n) => n.to_string(),
            None => "per-thread".to_string(),
        };
        let mut name = format!("tpcc/warehouses={w}/items={}", self.items);
        if (self.customers, self.orders) != (3000, 3000) {
            name += &format!("/customers={}/orders={}", self.customers, self.orders);
        }
        name
    }

    /// The settings as they appear in the JSON report.
    pub fn json(&self) -> serde_json::Value {
        json!({
            "benchmark": "tpcc",
            "name": self.name(),
            "warehouses": self.warehouses.map_or_else(|| json!("one per thread"), |n| json!(n)),
            "items": self.items,
            "customers_per_district": self.customers,
            "orders_per_district": self.orders,
        })
    }
}

/// Builds and loads the TPC-C database for a run on `threads` threads (the
/// spec's population per warehouse, `settings.items` items).
pub fn make_tpcc(settings: &TpccSettings, threads: usize) -> Result<Tpcc, Failure> {
    let warehouses = settings.warehouses_for(threads);
    let warehouses = u16::try_from(warehouses).map_err(|_| {
        Failure::Usage(format!(
            "{warehouses} warehouses: TPC-C here numbers them in 16 bits (at most {})",
            u16::MAX
        ))
    })?;
    if settings.items == 0 || settings.items == u32::MAX {
        return Err(Failure::Usage(format!(
            "{} items: between 1 and {} (one id stays invalid for NewOrder's rollbacks)",
            settings.items,
            u32::MAX - 1
        )));
    }
    let config = Config {
        items: settings.items,
        customers_per_district: settings.customers,
        orders_per_district: settings.orders,
        ..Config::new(warehouses)
    };
    Ok(Tpcc::new(config))
}

/// What `--break-check` does to a TPC-C database: moves district (1, 1)'s
/// next order id past its last order (consistency condition 2).
pub fn break_tpcc(db: &Tpcc) {
    let t = db.tables();
    let dk = district_key(1, 1);
    txmem::atomically(|tx| {
        let next = t.district_next_o_id.get(tx, &dk)?.unwrap_or(0);
        t.district_next_o_id.set(tx, dk, next + 1)
    });
}
