//! `txmem db tpcc`: the settings of a TPC-C database and the one function
//! that builds it.

use serde_json::json;
use txmem_db::Workload;

use crate::failure::Failure;

/// The size of a TPC-C database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TpccSettings {
    /// Warehouses; `None`: one per thread.
    pub warehouses: Option<u32>,
    /// Items in the catalogue.
    pub items: u32,
}

impl TpccSettings {
    /// The warehouses a run on `threads` threads loads.
    pub fn warehouses_for(&self, threads: usize) -> u32 {
        self.warehouses
            .unwrap_or_else(|| u32::try_from(threads).unwrap_or(u32::MAX))
    }

    /// The name its rows are reported under, e.g.
    /// `tpcc/warehouses=per-thread/items=100000`.
    pub fn name(&self) -> String {
        let w = match self.warehouses {
            Some(n) => n.to_string(),
            None => "per-thread".to_string(),
        };
        format!("tpcc/warehouses={w}/items={}", self.items)
    }

    /// The settings as they appear in the JSON report.
    pub fn json(&self) -> serde_json::Value {
        json!({
            "benchmark": "tpcc",
            "name": self.name(),
            "warehouses": self.warehouses.map_or_else(|| json!("one per thread"), |n| json!(n)),
            "items": self.items,
        })
    }
}

/// Builds and loads the TPC-C database for a run on `threads` threads.
pub fn make_tpcc(settings: &TpccSettings, threads: usize) -> Result<Box<dyn Workload>, Failure> {
    let _ = (settings.warehouses_for(threads), settings.items);
    Err(Failure::Run(
        "TPC-C is not built yet: txmem_db::tpcc provides no workload to run".to_string(),
    ))
}
