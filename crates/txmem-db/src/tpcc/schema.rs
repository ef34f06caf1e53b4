//! Record types: one struct per table (or per part of a split table), all
//! fixed-size and `Copy`, so that a record is one allocation in its map and
//! copying one allocates nothing.
//!
//! Money is an `i64` count of cents ([`Money`]); rates (tax, discount) are
//! `u16` counts of 1/10,000 ([`Rate`]); times are microseconds since the
//! Unix epoch ([`Timestamp`]); the spec's nullable columns are `Option`s.

use std::fmt;

/// An amount of money in cents (the spec's `NUMERIC(n, 2)` columns).
pub type Money = i64;
/// A rate in units of 1/10,000 (the spec's `NUMERIC(4, 4)` columns).
pub type Rate = u16;
/// A date and time: microseconds since the Unix epoch.
pub type Timestamp = u64;

/// The current time as a [`Timestamp`].
pub fn now() -> Timestamp {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_micros() as Timestamp)
}

/// A string column of at most `N` bytes (the spec's `VARCHAR(N)`), stored
/// inline and zero-padded.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Text<const N: usize> {
    len: u16,
    bytes: [u8; N],
}

impl<const N: usize> Text<N> {
    /// The empty string.
    pub const EMPTY: Self = Text {
        len: 0,
        bytes: [0; N],
    };

    /// A text holding the first `N` bytes of `s`.
    pub fn new(s: &[u8]) -> Self {
        let mut t = Self::EMPTY;
        t.push(s);
        t
    }

    /// Appends as much of `s` as fits.
    pub fn push(&mut self, s: &[u8]) {
        let at = usize::from(self.len);
        let n = s.len().min(N - at);
        self.bytes[at..at + n].copy_from_slice(&s[..n]);
        self.len += n as u16;
    }

    /// The bytes of the string.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// All `N` bytes: the string followed by zeros.
    pub fn padded(&self) -> &[u8; N] {
        &self.bytes
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// True for the empty string.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// True if `needle` occurs in the string.
    pub fn contains(&self, needle: &[u8]) -> bool {
        self.as_bytes().windows(needle.len()).any(|w| w == needle)
    }
}

impl<const N: usize> Default for Text<N> {
    fn default() -> Self {
        Self::EMPTY
    }
}

impl<const N: usize> fmt::Debug for Text<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&String::from_utf8_lossy(self.as_bytes()), f)
    }
}

impl<const N: usize> fmt::Display for Text<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(self.as_bytes()))
    }
}

/// A customer's last name (`C_LAST`, at most 16 bytes).
pub type LastName = Text<16>;

/// A street address (the spec's `*_STREET_1` to `*_ZIP` columns).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Address {
    /// First street line.
    pub street_1: Text<20>,
    /// Second street line.
    pub street_2: Text<20>,
    /// City.
    pub city: Text<20>,
    /// State (two letters).
    pub state: [u8; 2],
    /// ZIP code (nine digits).
    pub zip: [u8; 9],
}

/// A warehouse row, less `W_YTD` (a [`TCounter`](txmem::TCounter) of its
/// own: see the module docs of [`tpcc`](super)). Read-only after loading.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)] // (the columns NewOrder and Payment read first, in one cache line)
pub struct Warehouse {
    /// `W_TAX`.
    pub tax: Rate,
    /// `W_NAME`.
    pub name: Text<10>,
    /// `W_STREET_1` to `W_ZIP`.
    pub address: Address,
}

/// A district row, less `D_YTD` (a counter) and `D_NEXT_O_ID` (its own
/// table). Read-only after loading.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)] // (as `Warehouse`)
pub struct District {
    /// `D_TAX`.
    pub tax: Rate,
    /// `D_NAME`.
    pub name: Text<10>,
    /// `D_STREET_1` to `D_ZIP`.
    pub address: Address,
}

/// `C_CREDIT`: good (`"GC"`) or bad (`"BC"`) credit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Credit {
    /// `"GC"`.
    #[default]
    Good,
    /// `"BC"`: Payment records the payment in the customer's `C_DATA`.
    Bad,
}

/// The read-only part of a customer row: names, address and terms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)] // (the columns NewOrder and Payment read first)
pub struct Customer {
    /// `C_DISCOUNT`.
    pub discount: Rate,
    /// `C_CREDIT`.
    pub credit: Credit,
    /// `C_FIRST`.
    pub first: Text<16>,
    /// `C_MIDDLE` (`"OE"`).
    pub middle: [u8; 2],
    /// `C_LAST`.
    pub last: LastName,
    /// `C_STREET_1` to `C_ZIP`.
    pub address: Address,
    /// `C_PHONE`.
    pub phone: [u8; 16],
    /// `C_SINCE`.
    pub since: Timestamp,
    /// `C_CREDIT_LIM`.
    pub credit_lim: Money,
}

/// The updated part of a customer row: what Payment and Delivery change.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CustomerBalance {
    /// `C_BALANCE`.
    pub balance: Money,
    /// `C_YTD_PAYMENT`.
    pub ytd_payment: Money,
    /// `C_PAYMENT_CNT`.
    pub payment_cnt: u32,
    /// `C_DELIVERY_CNT`.
    pub delivery_cnt: u32,
}

/// `C_DATA` (at most 500 bytes), its own table: only Payments of bad-credit
/// customers read and rewrite it.
pub type CustomerData = Text<500>;

/// A history row.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct History {
    /// `H_C_ID`.
    pub c_id: u32,
    /// `H_C_D_ID`.
    pub c_d_id: u8,
    /// `H_C_W_ID`.
    pub c_w_id: u16,
    /// `H_D_ID`.
    pub d_id: u8,
    /// `H_W_ID`.
    pub w_id: u16,
    /// `H_DATE`.
    pub date: Timestamp,
    /// `H_AMOUNT`.
    pub amount: Money,
    /// `H_DATA`.
    pub data: Text<24>,
}

/// An order row (table `OORDER` in Silo).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Order {
    /// `O_C_ID`.
    pub c_id: u32,
    /// `O_ENTRY_D`.
    pub entry_d: Timestamp,
    /// `O_CARRIER_ID`: `None` until the order is delivered.
    pub carrier_id: Option<u8>,
    /// `O_OL_CNT`.
    pub ol_cnt: u8,
    /// `O_ALL_LOCAL`.
    pub all_local: bool,
}

/// An order-line row.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OrderLine {
    /// `OL_I_ID`.
    pub i_id: u32,
    /// `OL_SUPPLY_W_ID`.
    pub supply_w_id: u16,
    /// `OL_QUANTITY`.
    pub quantity: u8,
    /// `OL_AMOUNT`.
    pub amount: Money,
    /// `OL_DELIVERY_D`: `None` until the order is delivered.
    pub delivery_d: Option<Timestamp>,
    /// `OL_DIST_INFO`.
    pub dist_info: [u8; 24],
}

/// An item row. Read-only.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)] // (what NewOrder reads first, in one cache line)
pub struct Item {
    /// `I_PRICE`.
    pub price: Money,
    /// Whether `I_DATA` contains `"ORIGINAL"` (derived at load: the data
    /// never changes, and NewOrder asks it of every line).
    pub original: bool,
    /// `I_IM_ID`.
    pub im_id: u32,
    /// `I_NAME`.
    pub name: Text<24>,
    /// `I_DATA`.
    pub data: Text<50>,
}

/// The read-only part of a stock row: the district texts and `S_DATA`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)] // (`original` next to the first district texts)
pub struct Stock {
    /// Whether `S_DATA` contains `"ORIGINAL"` (derived at load, as
    /// [`Item::original`]).
    pub original: bool,
    /// `S_DIST_01` to `S_DIST_10` (index `d_id - 1`).
    pub dist: [[u8; 24]; 10],
    /// `S_DATA`.
    pub data: Text<50>,
}

/// The updated part of a stock row (`S_QUANTITY`, `S_YTD`, `S_ORDER_CNT`,
/// `S_REMOTE_CNT`) packed into one word, which txmem stores inline: reading
/// it is one atomic load and writing it allocates nothing.
///
/// Bits 0–6 hold the quantity (10 to 100, by the spec's update rule),
/// 7–20 the order count, 21–34 the remote count, 35–61 the year-to-date
/// quantity. Each field is wider than its column (`NUMERIC(4)` < 2^14,
/// `NUMERIC(8)` < 2^27); a count that outgrows its column wraps.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct StockCounters(u64);

const QTY_BITS: u32 = 7;
const CNT_BITS: u32 = 14;
const YTD_BITS: u32 = 27;
const ORDER_SHIFT: u32 = QTY_BITS;
const REMOTE_SHIFT: u32 = ORDER_SHIFT + CNT_BITS;
const YTD_SHIFT: u32 = REMOTE_SHIFT + CNT_BITS;

const fn field(word: u64, shift: u32, bits: u32) -> u32 {
    ((word >> shift) & ((1 << bits) - 1)) as u32
}

impl StockCounters {
    /// Packs the four columns (each reduced to its field's width).
    pub const fn new(quantity: u32, ytd: u32, order_cnt: u32, remote_cnt: u32) -> Self {
        let q = quantity as u64 & ((1 << QTY_BITS) - 1);
        let o = order_cnt as u64 & ((1 << CNT_BITS) - 1);
        let r = remote_cnt as u64 & ((1 << CNT_BITS) - 1);
        let y = ytd as u64 & ((1 << YTD_BITS) - 1);
        StockCounters(q | o << ORDER_SHIFT | r << REMOTE_SHIFT | y << YTD_SHIFT)
    }

    /// `S_QUANTITY`.
    pub const fn quantity(self) -> u32 {
        field(self.0, 0, QTY_BITS)
    }

    /// `S_YTD`.
    pub const fn ytd(self) -> u32 {
        field(self.0, YTD_SHIFT, YTD_BITS)
    }

    /// `S_ORDER_CNT`.
    pub const fn order_cnt(self) -> u32 {
        field(self.0, ORDER_SHIFT, CNT_BITS)
    }

    /// `S_REMOTE_CNT`.
    pub const fn remote_cnt(self) -> u32 {
        field(self.0, REMOTE_SHIFT, CNT_BITS)
    }

    /// The counters after an order line of `quantity` units (1 to 10)
    /// supplied from this stock (clause 2.4.2.2): the quantity drops by
    /// `quantity`, plus 91 if it would fall below 10; the year-to-date
    /// quantity and the order count grow, and the remote count if the
    /// order is from another warehouse.
    pub const fn after_order(self, quantity: u32, remote: bool) -> Self {
        let q = self.quantity();
        let left = if q >= quantity + 10 {
            q - quantity
        } else {
            q + 91 - quantity
        };
        StockCounters::new(
            left,
            self.ytd().wrapping_add(quantity),
            self.order_cnt().wrapping_add(1),
            self.remote_cnt().wrapping_add(remote as u32),
        )
    }
}

impl fmt::Debug for StockCounters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StockCounters")
            .field("quantity", &self.quantity())
            .field("ytd", &self.ytd())
            .field("order_cnt", &self.order_cnt())
            .field("remote_cnt", &self.remote_cnt())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stock_counters_pack_and_update() {
        let s = StockCounters::new(100, 99_999_999, 9999, 9999);
        assert_eq!(
            (s.quantity(), s.ytd(), s.order_cnt(), s.remote_cnt()),
            (100, 99_999_999, 9999, 9999)
        );
        let t = StockCounters::new(15, 3, 1, 0).after_order(5, true);
        assert_eq!(
            (t.quantity(), t.ytd(), t.order_cnt(), t.remote_cnt()),
            (10, 8, 2, 1)
        );
        let u = StockCounters::new(15, 0, 0, 0).after_order(6, false);
        assert_eq!((u.quantity(), u.remote_cnt()), (100, 0));
        // The quantity stays in 10..=100 whatever is ordered.
        for q in 10..=100 {
            for n in 1..=10 {
                let left = StockCounters::new(q, 0, 0, 0)
                    .after_order(n, false)
                    .quantity();
                assert!((10..=100).contains(&left), "{q} - {n} -> {left}");
            }
        }
    }

    #[test]
    fn text_truncates_and_searches() {
        let t = Text::<8>::new(b"ABCORIGINALX");
        assert_eq!(t.as_bytes(), b"ABCORIGI");
        assert!(Text::<20>::new(b"xxORIGINALyy").contains(b"ORIGINAL"));
        assert!(!Text::<20>::new(b"xxORIGINAyy").contains(b"ORIGINAL"));
    }
}
