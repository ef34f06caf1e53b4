//! The cache's commands, each one transaction: what the text, meta and
//! binary protocols translate their requests into.

use std::sync::Arc;

use bytes::Bytes;

use super::{next_cas, Item, Store};
use crate::protocol::Out;

/// How a write treats the item already there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Store unconditionally.
    Set,
    /// Store only if the key is absent.
    Add,
    /// Store only if the key is present.
    Replace,
    /// Add the data after the present value (flags and expiry kept).
    Append,
    /// Add the data before the present value (flags and expiry kept).
    Prepend,
}

/// A write request.
#[derive(Clone, Debug)]
pub struct Write<'a> {
    /// How to treat the present item.
    pub mode: Mode,
    /// The key.
    pub key: &'a [u8],
    /// The value (or the part to append or prepend).
    pub data: Bytes,
    /// The client's flags.
    pub flags: u32,
    /// The client's expiry time (memcached's rules, see
    /// [`Clock::deadline`](super::Clock::deadline)).
    pub exptime: i64,
    /// Store only if the present item's CAS identifier is this (`None`: no
    /// check). No item has identifier 0, so `Some(0)` never stores, as in
    /// memcached (a text `cas` or meta `C0`); the binary protocol's 0 means
    /// no check and becomes `None`.
    pub cas: Option<u64>,
    /// For append and prepend: create the item with this expiry time when
    /// the key is absent (the meta protocol's `N` flag).
    pub vivify: Option<i64>,
    /// The stored item's CAS identifier, instead of a fresh one (the meta
    /// protocol's `E` flag: a client versioning items itself).
    pub new_cas: Option<u64>,
    /// With `cas` in [`Mode::Set`] or [`Mode::Replace`]: a `cas` lower than
    /// the present item's still stores, but the item is marked stale and
    /// keeps the present expiry and win mark (the meta protocol's `I`
    /// flag: a late writer's value is kept, flagged for recaching).
    pub invalidate: bool,
}

impl<'a> Write<'a> {
    /// A plain request: `mode` of `data` under `key`, no flags, no expiry,
    /// no CAS check.
    pub fn new(mode: Mode, key: &'a [u8], data: Bytes) -> Write<'a> {
        Write {
            mode,
            key,
            data,
            flags: 0,
            exptime: 0,
            cas: None,
            vivify: None,
            new_cas: None,
            invalidate: false,
        }
    }
}

/// What a write did.
#[derive(Clone, Debug)]
pub enum Written {
    /// Stored: the new item.
    Stored(Arc<Item>),
    /// Not stored: the mode's condition failed (`add` of a present key,
    /// `replace`/`append`/`prepend` of an absent one).
    NotStored,
    /// Not stored: the CAS identifier did not match.
    Exists,
    /// Not stored: a CAS check on an absent key.
    NotFound,
    /// Not stored: appending or prepending would make the value larger
    /// than the item size limit.
    TooLarge,
}

/// An increment or decrement.
#[derive(Clone, Copy, Debug)]
pub struct Arith<'a> {
    /// The key.
    pub key: &'a [u8],
    /// Increment (wrapping at 2^64) or decrement (stopping at 0).
    pub incr: bool,
    /// The amount.
    pub delta: u64,
    /// Apply only if the item's CAS identifier is this (0: no check).
    pub cas: u64,
    /// When the key is absent: create it with this value and expiry time
    /// (binary protocol's initial value, meta's `N`/`J`).
    pub vivify: Option<(u64, i64)>,
    /// A new expiry time for the item, if any.
    pub touch: Option<i64>,
}

/// What an increment or decrement did.
#[derive(Clone, Debug)]
pub enum Counted {
    /// The new value and the stored item (`created`: vivified).
    Value {
        /// The new value.
        value: u64,
        /// The stored item.
        item: Arc<Item>,
        /// True if the key was absent and the item created.
        created: bool,
    },
    /// The key is absent.
    NotFound,
    /// The value is not a decimal number of at most 20 digits below 2^64.
    NonNumeric,
    /// The CAS identifier did not match.
    Exists,
}

/// What a delete did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deleted {
    /// The item was removed.
    Deleted,
    /// The key was absent.
    NotFound,
    /// The CAS identifier did not match; nothing removed.
    Exists,
}

/// The value of a counter item, if it is one.
pub fn parse_counter(data: &[u8]) -> Option<u64> {
    // memcached parses with strtoull, which allows trailing spaces (it pads
    // decremented values with them).
    let digits = data.trim_ascii_end();
    if digits.is_empty() || digits.len() > 20 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

impl Store {
    /// Runs a write request.
    pub fn write(&self, w: &Write<'_>) -> Written {
        // memcached's `-C`: items carry no identifier (0), and a `cas`
        // matches no item, whatever it names.
        let cas_on = self.config().cas;
        self.transact(|s| {
            let old = s.get(w.key)?;
            let now = s.now();
            let cas = w.new_cas.unwrap_or_else(next_cas);
            let deadline = self.clock().deadline(w.exptime);
            let item = match (&old, w.mode) {
                (Some(o), Mode::Set | Mode::Replace)
                    if w.invalidate && cas_on && w.cas.is_some_and(|c| c < o.cas) =>
                {
                    let mut item = Item::new(w.data.clone(), w.flags, o.expires, cas, now);
                    item.stale = true;
                    item.win_sent = o.win_sent;
                    item
                }
                (Some(o), _) if w.cas.is_some_and(|c| !cas_on || c != o.cas) => {
                    return Ok(Written::Exists)
                }
                (None, _) if w.cas.is_some() => return Ok(Written::NotFound),
                (Some(_), Mode::Add) => return Ok(Written::NotStored),
                (None, Mode::Replace) => return Ok(Written::NotStored),
                (None, Mode::Append | Mode::Prepend) => match w.vivify {
                    Some(ttl) => Item::new(
                        w.data.clone(),
                        w.flags,
                        self.clock().deadline(ttl),
                        cas,
                        now,
                    ),
                    None => return Ok(Written::NotStored),
                },
                (Some(o), Mode::Append | Mode::Prepend)
                    if o.data.len() + w.data.len() > self.config().max_item_size =>
                {
                    return Ok(Written::TooLarge)
                }
                (Some(o), Mode::Append | Mode::Prepend) => {
                    let (head, tail) = if w.mode == Mode::Append {
                        (&o.data, &w.data)
                    } else {
                        (&w.data, &o.data)
                    };
                    let mut joined = Vec::with_capacity(head.len() + tail.len());
                    joined.extend_from_slice(head);
                    joined.extend_from_slice(tail);
                    o.revised(joined.into(), o.flags, o.expires, cas, now)
                }
                (_, Mode::Set | Mode::Add | Mode::Replace) => {
                    Item::new(w.data.clone(), w.flags, deadline, cas, now)
                }
            };
            Ok(Written::Stored(s.put(w.key, item)?))
        })
    }

    /// Runs an increment or decrement.
    pub fn arith(&self, a: &Arith<'_>) -> Counted {
        self.arith_with(a, None)
    }

    /// Runs an increment or decrement whose stored item gets the CAS
    /// identifier `new_cas` (the meta protocol's `E` flag) instead of a
    /// fresh one, if given.
    pub fn arith_with(&self, a: &Arith<'_>, new_cas: Option<u64>) -> Counted {
        self.transact(|s| {
            let now = s.now();
            let Some(old) = s.get(a.key)? else {
                let Some((initial, ttl)) = a.vivify else {
                    return Ok(Counted::NotFound);
                };
                let item = Item::new(
                    initial.to_string().into(),
                    0,
                    self.clock().deadline(ttl),
                    new_cas.unwrap_or_else(next_cas),
                    now,
                );
                let item = s.put(a.key, item)?;
                return Ok(Counted::Value {
                    value: initial,
                    item,
                    created: true,
                });
            };
            if a.cas != 0 && (!self.config().cas || old.cas != a.cas) {
                return Ok(Counted::Exists);
            }
            let Some(v) = parse_counter(&old.data) else {
                return Ok(Counted::NonNumeric);
            };
            let value = if a.incr {
                v.wrapping_add(a.delta)
            } else {
                v.saturating_sub(a.delta)
            };
            let expires = a.touch.map_or(old.expires, |t| self.clock().deadline(t));
            let item = old.revised(
                value.to_string().into(),
                old.flags,
                expires,
                new_cas.unwrap_or_else(next_cas),
                now,
            );
            let item = s.put(a.key, item)?;
            Ok(Counted::Value {
                value,
                item,
                created: false,
            })
        })
    }

    /// Removes `key` if its CAS identifier is `cas` (0: any).
    pub fn delete(&self, key: &[u8], cas: u64) -> Deleted {
        self.transact(|s| match s.get(key)? {
            None => Ok(Deleted::NotFound),
            Some(o) if cas != 0 && (!self.config().cas || o.cas != cas) => Ok(Deleted::Exists),
            Some(_) => {
                s.remove(key)?;
                Ok(Deleted::Deleted)
            }
        })
    }

    /// Sets `key`'s expiry time; returns the item (with its new expiry) if
    /// the key is present. The CAS identifier is kept, as memcached keeps
    /// it.
    pub fn touch(&self, key: &[u8], exptime: i64) -> Option<Arc<Item>> {
        self.transact(|s| {
            let Some(old) = s.get(key)? else {
                return Ok(None);
            };
            let item = old.revised(
                old.data.clone(),
                old.flags,
                self.clock().deadline(exptime),
                old.cas,
                old.stored,
            );
            Ok(Some(s.put(key, item)?))
        })
    }

    /// Looks up every key of `keys` in one transaction and calls `found`
    /// with `out`, each key present and its item, in order (marking each as
    /// read); returns the number found. With `touch`, each present item's
    /// expiry time is set too (`gat`).
    ///
    /// `found` writes the reply straight from the stored item, with no
    /// copy of the item or its reference count touched: an attempt that
    /// aborts has its output cut off (`out` is truncated to its length at
    /// the call) before the transaction runs again.
    pub fn get_many<'k>(
        &self,
        keys: impl Iterator<Item = &'k [u8]> + Clone,
        touch: Option<i64>,
        out: &mut Out,
        mut found: impl FnMut(&mut Out, &'k [u8], &Item),
    ) -> u64 {
        let mark = out.len();
        match touch {
            None => self.read(|s| {
                out.truncate(mark);
                let now = s.now();
                let mut hits = 0;
                for k in keys.clone() {
                    let hit = s.get_with(k, |item| {
                        item.mark_fetched(now);
                        found(out, k, item);
                    })?;
                    hits += u64::from(hit.is_some());
                }
                Ok(hits)
            }),
            Some(t) => self.transact(|s| {
                out.truncate(mark);
                let deadline = self.clock().deadline(t);
                let mut hits = 0;
                for k in keys.clone() {
                    if let Some(o) = s.get(k)? {
                        let item = o.revised(o.data.clone(), o.flags, deadline, o.cas, o.stored);
                        let item = s.put(k, item)?;
                        item.mark_fetched(s.now());
                        found(out, k, &item);
                        hits += 1;
                    }
                }
                Ok(hits)
            }),
        }
    }
}
