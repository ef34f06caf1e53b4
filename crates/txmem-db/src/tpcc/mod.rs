//! TPC-C on txmem: Silo's schema and the standard five-transaction mix.
//!
//! [`Tpcc::new`] loads the spec's initial population ([`Config`]) into
//! txmem's transactional maps; [`Tpcc`] implements [`Workload`]: each
//! [`run_one`](Workload::run_one) draws a transaction from the mix
//! (NewOrder 45%, Payment 43%, OrderStatus, Delivery and StockLevel 4%
//! each) at the worker's home warehouse and runs it to commit, and
//! [`check`](Workload::check) verifies the spec's consistency conditions.
//! Each transaction can also be run on its own, from an input drawn by its
//! `generate` function or built by hand ([`Tpcc::new_order`],
//! [`Tpcc::payment`], …).
//!
//! # Schema
//!
//! The tables are Silo's (the spec's, with `ORDER` named `OORDER` and a
//! secondary index of orders by customer), keyed as Silo keys them: the
//! spec's composite primary keys packed into integers that order like the
//! tuples ([`keys`]). Which map holds each table follows from how the
//! transactions reach it:
//!
//! | table | map | reached by |
//! |---|---|---|
//! | warehouse | [`THashMap`](txmem::THashMap) | key |
//! | district | `THashMap` | key |
//! | customer | `THashMap` | key, or by last name through an index |
//! | customer by last name | `THashMap` | `(W_ID, D_ID, C_LAST)` → ids sorted by `C_FIRST` |
//! | history | `THashMap` | nothing during a run (inserts only) |
//! | item | `THashMap` | key |
//! | stock | `THashMap` | key |
//! | new-order | [`TBTreeMap`](txmem::TBTreeMap) | Delivery takes each district's oldest |
//! | order (`OORDER`) | `THashMap` | key |
//! | orders by customer | `TBTreeMap` | OrderStatus takes a customer's newest |
//! | order-line | `TBTreeMap` | ranges: an order's lines, a district's last 20 orders |
//!
//! Silo keeps every table in an ordered tree; here a table goes into a
//! B+ tree only if a transaction needs its order, because an insert into
//! txmem's B+ tree copies the leaf it lands in, and NewOrder inserts a
//! dozen rows. Orders in particular are found by key only (Delivery and
//! OrderStatus know the order id; the most recent order of a customer comes
//! from the orders-by-customer index), so `OORDER` is hashed.
//!
//! The hash maps hash with [`KeyHasher`](crate::hash::KeyHasher), a multiply and
//! mix over the packed keys, instead of SipHash. History has no primary
//! key in the spec: loaded rows take their customer's key, a run's rows
//! keys that each thread takes from blocks of a shared counter
//! ([`keys::next_history_key`]), so Payments never contend for one.
//!
//! # Splitting rows
//!
//! txmem clones a value on every transactional `get` and boxes every value
//! larger than a word: an update of a 300-byte stock row copies and
//! allocates 300 bytes, and a read-only column stored with an updated one
//! is rewritten with it and conflicts with it. So rows whose transactions
//! update a few columns and read others are split by how the columns are
//! used, into maps under the same key:
//!
//! * **Stock**: the read-only `S_DIST_xx` and `S_DATA` ([`Stock`],
//!   about 300 bytes) apart from quantity and counts
//!   ([`StockCounters`]), which NewOrder updates for every line and
//!   StockLevel reads. The counters are packed into one word, which txmem
//!   stores inline: a read is one atomic load and a write allocates
//!   nothing.
//! * **District**: `D_NEXT_O_ID`, which every NewOrder increments, is a
//!   `u32` in a map of its own (inline too), apart from the read-only name,
//!   address and tax ([`District`]).
//! * **Customer**: balance and payment counts ([`CustomerBalance`],
//!   24 bytes), which Payment and Delivery update, apart from the
//!   read-only names, address and terms ([`Customer`]), and apart from
//!   `C_DATA` (500 bytes), which only Payments of bad-credit customers
//!   (one in ten) read and rewrite.
//!
//! Transactions read the read-only parts, and the read-only item table,
//! with `get_with`, copying out only the columns they use; records put
//! those columns first, in the cache line the read touches first.
//!
//! # Year-to-date totals
//!
//! Every Payment adds to its warehouse's `W_YTD` and its district's
//! `D_YTD`. Stored in the rows, these would make all Payments of a
//! warehouse conflict with each other. They are [`TCounter`](txmem::TCounter)s
//! instead ([`Tables::warehouse_ytd`], [`Tables::district_ytd`]), whose
//! adds commute: Payments add without reading, and only a transaction that
//! reads a total (the consistency check, which does so transactionally)
//! conflicts with them. This is STO's main win on TPC-C.
//!
//! # Delivery's starting point
//!
//! Delivery removes the oldest new-order row of each district. A B+ tree
//! does not merge emptied leaves, so a scan from the start of a district's
//! range would pass every leaf emptied by earlier Deliveries, more each
//! run. As in Silo, each district keeps a hint (outside the transactional
//! state) of the order id its undelivered orders start from: every order
//! below a delivered one has been delivered (Delivery always takes the
//! oldest) and no new order gets a smaller id, so the scan may start there.
//!
//! # Reads before writes
//!
//! NewOrder reads every line's item, stock row and counters before it
//! updates any of them, and Delivery reads each step (oldest new order,
//! order, lines, customer) for every district before the next step and
//! writes last. The reads of different lines or districts do not depend on
//! each other and most miss the cache; grouped, their misses overlap
//! instead of each waiting behind the previous line's inserts. The
//! transactions read and write the same rows as the spec's line-by-line
//! order would (an item ordered twice is updated from the earlier line's
//! result); a NewOrder with an unused item meets it among the reads and
//! rolls back before it has written anything.
//!
//! # Consistency
//!
//! [`Tpcc::check_consistency`] checks conditions 1 to 10 and 12 of clause
//! 3.3.2 in transactions (condition 11 holds only before the first
//! Delivery) and names the first that fails with its warehouse and
//! district ([`Violation`]).

mod check;
mod config;
pub mod keys;
mod load;
pub mod random;
mod schema;
mod tables;
mod txns;

use std::sync::atomic::AtomicU32;

use rand::rngs::SmallRng;
use rand::Rng;

pub use check::Violation;
pub use config::Config;
pub use random::NuRandConstants;
pub use schema::{
    now, Address, Credit, Customer, CustomerBalance, CustomerData, District, History, Item,
    LastName, Money, Order, OrderLine, Rate, Stock, StockCounters, Text, Timestamp, Warehouse,
};
pub use tables::{HashTable, Tables};
pub use txns::{
    CustomerSelector, DeliveryInput, DeliveryOutput, Executed, InvalidItem, NewOrderInput,
    NewOrderLine, NewOrderOutput, OrderStatusInput, OrderStatusOutput, OrderSummary, PaymentInput,
    PaymentOutput, StockLevelInput, StockLevelOutput, MAX_LINES,
};

use crate::{Outcome, Workload};
use keys::WarehouseId;

/// The five transaction kinds, in the order of [`Workload::kinds`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TxKind {
    /// NewOrder (45% of the mix).
    NewOrder,
    /// Payment (43%).
    Payment,
    /// OrderStatus (4%).
    OrderStatus,
    /// Delivery (4%).
    Delivery,
    /// StockLevel (4%).
    StockLevel,
}

/// The names of the kinds, indexed by `TxKind as usize`.
pub const KIND_NAMES: [&str; 5] = [
    "NewOrder",
    "Payment",
    "OrderStatus",
    "Delivery",
    "StockLevel",
];

impl TxKind {
    /// Every kind, in index order.
    pub const ALL: [TxKind; 5] = [
        TxKind::NewOrder,
        TxKind::Payment,
        TxKind::OrderStatus,
        TxKind::Delivery,
        TxKind::StockLevel,
    ];

    /// The kind's name.
    pub const fn name(self) -> &'static str {
        KIND_NAMES[self as usize]
    }

    /// A kind drawn from the standard mix.
    pub fn draw(rng: &mut impl Rng) -> Self {
        match rng.random_range(1..=100u32) {
            1..=45 => TxKind::NewOrder,
            46..=88 => TxKind::Payment,
            89..=92 => TxKind::OrderStatus,
            93..=96 => TxKind::Delivery,
            _ => TxKind::StockLevel,
        }
    }
}

/// A loaded TPC-C database and its transaction mix.
pub struct Tpcc {
    config: Config,
    tables: Tables,
    constants: NuRandConstants,
    /// Per district ([`Tables::district_index`]): an order id at or below
    /// the district's oldest undelivered order (see the module docs).
    undelivered_from: Box<[AtomicU32]>,
}

impl Tpcc {
    /// Loads `config`'s population (on up to one thread per warehouse).
    /// Panics if the configuration is out of range ([`Config::validate`]).
    pub fn new(config: Config) -> Self {
        let (tables, constants) = load::load(&config);
        let first_undelivered = config.delivered_per_district() + 1;
        let undelivered_from = (0..config.districts())
            .map(|_| AtomicU32::new(first_undelivered))
            .collect();
        Tpcc {
            config,
            tables,
            constants,
            undelivered_from,
        }
    }

    /// The configuration loaded.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The tables.
    pub fn tables(&self) -> &Tables {
        &self.tables
    }

    /// The NURand constants of the run (clause 2.1.6).
    pub fn nurand_constants(&self) -> &NuRandConstants {
        &self.constants
    }

    /// The home warehouse of worker `worker`: `worker % warehouses + 1`.
    pub fn home_warehouse(&self, worker: usize) -> WarehouseId {
        (worker % usize::from(self.config.warehouses)) as WarehouseId + 1
    }

    /// Draws an input for a transaction of `kind` at warehouse `w` and runs
    /// it to commit (or, for a NewOrder with an unused item, rollback).
    pub fn run_kind(&self, kind: TxKind, rng: &mut impl Rng, w: WarehouseId) -> Outcome {
        let (cfg, c) = (&self.config, &self.constants);
        let (attempts, rolled_back) = match kind {
            TxKind::NewOrder => {
                let r = self.new_order(&NewOrderInput::generate(rng, cfg, c, w));
                (r.attempts, r.output.is_err())
            }
            TxKind::Payment => (
                self.payment(&PaymentInput::generate(rng, cfg, c, w))
                    .attempts,
                false,
            ),
            TxKind::OrderStatus => {
                let input = OrderStatusInput::generate(rng, cfg, c, w);
                (self.order_status(&input).attempts, false)
            }
            TxKind::Delivery => (
                self.delivery(&DeliveryInput::generate(rng, w)).attempts,
                false,
            ),
            TxKind::StockLevel => {
                let input = StockLevelInput::generate(rng, cfg, w);
                (self.stock_level(&input).attempts, false)
            }
        };
        Outcome {
            kind: kind as usize,
            attempts,
            rolled_back,
        }
    }

    /// Checks the consistency conditions (see the module docs).
    pub fn check_consistency(&self) -> Result<(), Violation> {
        check::check(&self.tables, &self.config)
    }
}

impl Workload for Tpcc {
    fn kinds(&self) -> &'static [&'static str] {
        &KIND_NAMES
    }

    fn run_one(&self, rng: &mut SmallRng, worker: usize) -> Outcome {
        let kind = TxKind::draw(rng);
        self.run_kind(kind, rng, self.home_warehouse(worker))
    }

    fn check(&self) -> Result<(), String> {
        self.check_consistency().map_err(|v| v.to_string())
    }
}
