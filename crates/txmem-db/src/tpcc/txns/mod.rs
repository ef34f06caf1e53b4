//! The five transactions (clauses 2.4 to 2.8): each has an input type,
//! drawn at random by its `generate` function before the transaction runs
//! (every attempt of a transaction runs the same input), an output type
//! (what the spec returns to the terminal, less what only a screen needs),
//! and a method on [`Tpcc`](super::Tpcc) that runs it to commit.

mod delivery;
mod new_order;
mod order_status;
mod payment;
mod stock_level;

pub use delivery::{DeliveryInput, DeliveryOutput};
pub use new_order::{InvalidItem, NewOrderInput, NewOrderLine, NewOrderOutput, MAX_LINES};
pub use order_status::{OrderStatusInput, OrderStatusOutput, OrderSummary};
pub use payment::{PaymentInput, PaymentOutput};
pub use stock_level::{StockLevelInput, StockLevelOutput};

use rand::Rng;
use txmem::{Transaction, TxResult};

use super::config::Config;
use super::keys::{DistrictId, NameKey, WarehouseId};
use super::random::{last_name, nurand, NuRandConstants};
use super::schema::LastName;
use super::tables::Tables;

/// What running a transaction gave, and how many attempts it took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Executed<T> {
    /// The transaction's output.
    pub output: T,
    /// Attempts, counting the one that committed (or rolled back).
    pub attempts: u32,
}

/// How Payment and OrderStatus name their customer (clause 2.5.1.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CustomerSelector {
    /// By `C_ID`.
    Id(u32),
    /// By `C_LAST`: the middle one (by first name) of the district's
    /// customers with this last name.
    LastName(LastName),
}

impl CustomerSelector {
    /// The spec's choice: by last name 60% of the time (a NURand name),
    /// else by a NURand id.
    pub fn generate(rng: &mut impl Rng, config: &Config, c: &NuRandConstants) -> Self {
        if rng.random_range(1..=100) <= 60 {
            let n = nurand(rng, 255, c.c_last, 0, config.max_last_name());
            CustomerSelector::LastName(last_name(n))
        } else {
            CustomerSelector::Id(customer_id(rng, config, c))
        }
    }

    /// The customer's id in district `(w, d)`, read inside the transaction
    /// (by last name: a read of the name index).
    fn resolve<'env>(
        self,
        t: &'env Tables,
        tx: &mut Transaction<'env>,
        w: WarehouseId,
        d: DistrictId,
    ) -> TxResult<u32> {
        match self {
            CustomerSelector::Id(c) => Ok(c),
            CustomerSelector::LastName(last) => {
                // The customer at position ceil(n / 2) of the n found,
                // counting from 1 (clause 2.5.2.2).
                let c = t
                    .customer_by_name
                    .get_with(tx, &NameKey::new(w, d, last), |ids| {
                        ids[(ids.len() - 1) / 2]
                    })?;
                Ok(c.unwrap_or_else(|| panic!("no customer named {last} in district ({w}, {d})")))
            }
        }
    }
}

/// A NURand customer id (`NURand(1023, 1, customers)`).
pub(crate) fn customer_id(rng: &mut impl Rng, config: &Config, c: &NuRandConstants) -> u32 {
    nurand(rng, 1023, c.c_id, 1, config.customers_per_district)
}

/// A district of a warehouse, uniformly.
pub(crate) fn district_id(rng: &mut impl Rng, config: &Config) -> DistrictId {
    rng.random_range(1..=config.districts_per_warehouse)
}

/// A warehouse other than `home`, uniformly (`home` if it is the only one).
pub(crate) fn other_warehouse(
    rng: &mut impl Rng,
    config: &Config,
    home: WarehouseId,
) -> WarehouseId {
    if config.warehouses == 1 {
        return home;
    }
    let w = rng.random_range(1..config.warehouses);
    if w >= home {
        w + 1
    } else {
        w
    }
}

/// Runs `insert`, the insert of a new row, and aborts the attempt if it
/// found the key present. A present key means that a row this attempt
/// derived the key from (a district's next order id) is stale: the attempt
/// could not commit anyway.
#[inline]
fn insert_new<'env>(
    tx: &mut Transaction<'env>,
    insert: impl FnOnce(&mut Transaction<'env>) -> TxResult<bool>,
) -> TxResult<()> {
    if insert(tx)? {
        Ok(())
    } else {
        Err(tx.abort())
    }
}
