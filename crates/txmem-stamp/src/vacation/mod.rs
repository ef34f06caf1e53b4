//! STAMP's `vacation`: a travel agency's reservation database under load.
//!
//! Three tables (cars, flights, rooms) map an item id to a [`Record`] of
//! how many units are reserved and free, the capacity and the price; a
//! customer table maps a customer id to the list of [`Entry`]s the customer
//! holds. Clients run a fixed number of tasks, each one transaction of one
//! of three kinds ([`gen::Task`]): make a reservation (the common case),
//! delete a customer (releasing everything the customer holds), or update
//! the tables (add capacity, or retire unused items).
//!
//! Contention comes from how many ids the tasks draw from (`-q`) and how
//! many each task touches (`-n`): [`ContentionLevel::Low`] and
//! [`ContentionLevel::High`] are the STO thesis' two configurations.
//!
//! The variants share the generator ([`gen`]) and the verification
//! ([`check`]); each module holds one way to store the database:
//! [`seq`] (plain collections), [`typed`] (txmem maps), [`words`]
//! (txmem's untyped word STM) and [`plus`] (typed, with each item's
//! availability an application-defined transactional object,
//! [`resource::Resource`]).
//!
//! Rules chosen here (some differ from STAMP's, which changes prices on
//! update; these keep every result checkable):
//! * an item's price is a fixed function of its table and id
//!   ([`price_of`]); creating an item, or adding capacity, uses it, so every
//!   customer entry must carry exactly that price;
//! * an update task's "add" creates an absent item with
//!   [`CAPACITY_STEP`] units, or adds [`CAPACITY_STEP`] units to a present
//!   one; its "delete" removes a present item only when no unit is
//!   reserved (so no customer entry ever points at a missing item), and
//!   otherwise does nothing;
//! * a reservation task that finds nothing available changes nothing (a
//!   customer it names is not created); one that reserves something
//!   creates the customer if absent.

use crate::{App, Input, Measured, Variant};

pub mod check;
pub mod client;
pub mod gen;
pub mod plus;
pub mod resource;
pub mod seq;
pub mod typed;
pub mod words;

/// The three reservation tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Rental cars.
    Car = 0,
    /// Flights.
    Flight = 1,
    /// Hotel rooms.
    Room = 2,
}

impl Kind {
    /// Every table, in index order.
    pub const ALL: [Kind; 3] = [Kind::Car, Kind::Flight, Kind::Room];

    /// The table's index (0, 1 or 2).
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The table with index `i` (`i < 3`).
    pub const fn from_index(i: usize) -> Kind {
        match i {
            0 => Kind::Car,
            1 => Kind::Flight,
            _ => Kind::Room,
        }
    }
}

/// One item of a reservation table. Counts are signed so that a broken
/// run shows up as a negative count rather than a wrapped one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// Units reserved by customers.
    pub used: i64,
    /// Units still available.
    pub free: i64,
    /// Capacity: `used + free`.
    pub total: i64,
    /// Price of one unit.
    pub price: i64,
}

impl Record {
    /// A new item with [`CAPACITY_STEP`] free units at its fixed price.
    pub fn fresh(kind: Kind, id: u64) -> Record {
        Record {
            used: 0,
            free: CAPACITY_STEP,
            total: CAPACITY_STEP,
            price: price_of(kind, id),
        }
    }

    /// The record with `n` more units reserved (negative: released).
    pub fn reserved(self, n: i64) -> Record {
        Record {
            used: self.used + n,
            free: self.free - n,
            ..self
        }
    }

    /// The record with [`CAPACITY_STEP`] more units.
    pub fn grown(self) -> Record {
        Record {
            free: self.free + CAPACITY_STEP,
            total: self.total + CAPACITY_STEP,
            ..self
        }
    }
}

/// One reservation a customer holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The table.
    pub kind: Kind,
    /// The item's id.
    pub id: u64,
    /// The price paid.
    pub price: i64,
}

/// Units an item starts with, and units an update adds.
pub const CAPACITY_STEP: i64 = 100;

/// The fixed price of item `id` of table `kind`: 50 to 140 in steps of 10,
/// spread by a hash so neighbouring ids differ.
pub fn price_of(kind: Kind, id: u64) -> i64 {
    let h = (id ^ ((kind.index() as u64) << 40)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    50 + 10 * ((h >> 40) % 10) as i64
}

/// Which of the thesis' two configurations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ContentionLevel {
    /// `vacation-low`: few queries per task over most of the ids.
    Low,
    /// `vacation-high`: more queries per task over 1% of the ids, and more
    /// deletions and updates.
    High,
}

/// STAMP's command-line parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// `-n`: queries per task.
    pub queries: usize,
    /// `-q`: percentage of the ids that tasks draw from.
    pub percent_queried: u64,
    /// `-u`: percentage of tasks that are reservations.
    pub percent_user: u64,
    /// `-r`: ids per table, and initial customers.
    pub relations: u64,
    /// `-t`: tasks in total.
    pub tasks: usize,
}

impl Params {
    /// The parameters of a configuration at an input size.
    pub fn new(contention: ContentionLevel, input: Input) -> Params {
        let (queries, percent_queried, percent_user) = match contention {
            ContentionLevel::Low => (2, 90, 98),
            ContentionLevel::High => (8, 1, 60),
        };
        let (relations, tasks) = match input {
            Input::Dev => (4096, 20_000),
            Input::Paper => (1 << 20, 1 << 22),
        };
        Params {
            queries,
            percent_queried,
            percent_user,
            relations,
            tasks,
        }
    }

    /// How many ids (from 1) tasks draw from: `-q` percent of `-r`,
    /// rounded, at least 1.
    pub fn query_range(&self) -> u64 {
        ((self.relations * self.percent_queried + 50) / 100).max(1)
    }
}

/// The vacation application: a configuration, an input size and a seed.
#[derive(Clone, Debug)]
pub struct Vacation {
    contention: ContentionLevel,
    params: Params,
    seed: u64,
}

impl Vacation {
    /// Vacation in `contention`'s configuration at `input`'s size; `seed`
    /// determines every task.
    pub fn new(contention: ContentionLevel, input: Input, seed: u64) -> Vacation {
        Vacation::with_params(contention, Params::new(contention, input), seed)
    }

    /// Vacation with explicit parameters (`contention` only names it).
    pub fn with_params(contention: ContentionLevel, params: Params, seed: u64) -> Vacation {
        Vacation {
            contention,
            params,
            seed,
        }
    }

    /// The parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Runs `variant` with `threads` threads and returns the measurement
    /// of the task phase with the final database, unverified (tests tamper with
    /// it to show that [`check::verify`] notices).
    pub fn run_to_state(
        &self,
        variant: Variant,
        threads: usize,
    ) -> Result<(Measured, check::State), String> {
        let threads = threads.max(1);
        match variant {
            Variant::Seq => Ok(seq::run(self)),
            Variant::Typed => Ok(typed::run(self, threads)),
            Variant::Words => Ok(words::run(self, threads)),
            Variant::TypedPlus => Ok(plus::run(self, threads)),
        }
    }
}

impl App for Vacation {
    fn name(&self) -> &'static str {
        match self.contention {
            ContentionLevel::Low => "vacation-low",
            ContentionLevel::High => "vacation-high",
        }
    }

    fn variants(&self) -> &'static [Variant] {
        &Variant::ALL
    }

    fn describe(&self) -> String {
        let p = &self.params;
        format!(
            "-n{} -q{} -u{} -r{} -t{}",
            p.queries, p.percent_queried, p.percent_user, p.relations, p.tasks
        )
    }

    /// `seq` always runs on one thread, whatever `threads` says.
    fn run(&self, variant: Variant, threads: usize) -> Result<Measured, String> {
        let (measured, state) = self.run_to_state(variant, threads)?;
        check::verify(&self.params, &state)
            .map_err(|e| format!("{} {variant} ({threads} threads): {e}", self.name()))?;
        Ok(measured)
    }
}
