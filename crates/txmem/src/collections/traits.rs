//! The surfaces the maps and sets share, as traits, for code generic over
//! the collection (benchmarks, tests, a program that picks its map at run
//! time).
//!
//! Every collection has the same methods inherently, so ordinary code
//! needs no trait import. The naming rule the traits spell out holds for
//! every type in the crate:
//!
//! * a transactional read or write takes the transaction first
//!   (`get(tx, &k)`, `len(tx)`);
//! * a read of the committed state *outside* any transaction is `load`
//!   followed by the transactional read's name: `get` ↔ `load`, `len` ↔
//!   `load_len`, `contains_key` ↔ `load_contains_key`, `to_vec` ↔
//!   `load_vec`, …;
//! * `insert` follows `std`: it overwrites and hands back the old value;
//!   `insert_if_absent` leaves a present key alone; `set` writes without
//!   reading (a blind write, as [`TBox::set`](crate::TBox::set));
//! * a write committed as a transaction of its own, outside any
//!   transaction, is the write's name followed by `_now`: `insert` ↔
//!   `insert_now`, `remove` ↔ `remove_now` (and
//!   [`TCounter::add_now`](crate::TCounter::add_now)); `update_now` is the
//!   read-modify-write of one key.

use std::hash::{BuildHasher, Hash};

use crate::error::TxResult;
use crate::tx::{assert_outside_transaction, atomically, Transaction};

use super::{TBTreeMap, THashMap, TListSet};

/// A transactional map: [`THashMap`] and [`TBTreeMap`].
///
/// ```
/// use txmem::{atomically, TBTreeMap, THashMap, TMap};
///
/// fn deposit<M: TMap<&'static str, u64>>(accounts: &M, who: &'static str, n: u64) {
///     atomically(|tx| {
///         let old = accounts.get(tx, &who)?.unwrap_or(0);
///         accounts.set(tx, who, old + n)
///     });
/// }
///
/// let (h, b) = (THashMap::new(), TBTreeMap::new());
/// deposit(&h, "ann", 5);
/// deposit(&b, "ann", 7);
/// assert_eq!((h.load(&"ann"), b.load(&"ann")), (Some(5), Some(7)));
/// ```
pub trait TMap<K, V>: Send + Sync {
    /// The value of `key` (a clone), or `None`.
    fn get<'env>(&'env self, tx: &mut Transaction<'env>, key: &K) -> TxResult<Option<V>>;

    /// True if `key` is present.
    fn contains_key<'env>(&'env self, tx: &mut Transaction<'env>, key: &K) -> TxResult<bool>;

    /// Inserts `key → value`, returning the old value if `key` was present.
    fn insert<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        key: K,
        value: V,
    ) -> TxResult<Option<V>>;

    /// Inserts `key → value` if `key` is absent; returns whether it did.
    fn insert_if_absent<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        key: K,
        value: V,
    ) -> TxResult<bool>;

    /// Sets `key → value` without reading (a blind write).
    fn set<'env>(&'env self, tx: &mut Transaction<'env>, key: K, value: V) -> TxResult<()>;

    /// Removes `key`, returning its value if it was present.
    fn remove<'env>(&'env self, tx: &mut Transaction<'env>, key: &K) -> TxResult<Option<V>>;

    /// The number of keys.
    fn len<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<usize>;

    /// True if the map has no key.
    fn is_empty<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<bool> {
        Ok(self.len(tx)? == 0)
    }

    /// Every entry (clones), in the map's order (none for a hash map).
    fn to_vec<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<Vec<(K, V)>>;

    /// The committed value of `key`, outside any transaction.
    fn load(&self, key: &K) -> Option<V>;

    /// True if `key` is committed, outside any transaction.
    fn load_contains_key(&self, key: &K) -> bool;

    /// The committed number of keys, outside any transaction.
    fn load_len(&self) -> usize;

    /// Inserts `key → value` as a transaction of its own, returning the old
    /// value if `key` was present. [`THashMap`] and [`TBTreeMap`] commit it
    /// directly ([`THashMap::insert_now`], [`TBTreeMap::insert_now`]); by
    /// default it runs [`insert`](Self::insert) in [`atomically`]. Panics
    /// inside a transaction.
    fn insert_now(&self, key: K, value: V) -> Option<V>
    where
        K: Clone,
        V: Clone,
    {
        outside_transaction(|| atomically(|tx| self.insert(tx, key.clone(), value.clone())))
    }

    /// Inserts `key → value` if `key` is absent, as a transaction of its own;
    /// returns whether it did (see [`insert_now`](Self::insert_now)).
    fn insert_if_absent_now(&self, key: K, value: V) -> bool
    where
        K: Clone,
        V: Clone,
    {
        outside_transaction(|| {
            atomically(|tx| self.insert_if_absent(tx, key.clone(), value.clone()))
        })
    }

    /// Removes `key` as a transaction of its own, returning its value if it
    /// was present (see [`insert_now`](Self::insert_now)).
    fn remove_now(&self, key: &K) -> Option<V> {
        outside_transaction(|| atomically(|tx| self.remove(tx, key)))
    }

    /// Replaces the entry of `key` with `f(current value)` as a transaction
    /// of its own (`None` removes it); returns what `f` returned (see
    /// [`THashMap::update_now`], and [`insert_now`](Self::insert_now)).
    fn update_now(&self, key: K, mut f: impl FnMut(Option<&V>) -> Option<V>) -> Option<V>
    where
        K: Clone,
        V: Clone,
    {
        outside_transaction(|| {
            atomically(|tx| {
                let old = self.get(tx, &key)?;
                let new = f(old.as_ref());
                match &new {
                    Some(v) => self.set(tx, key.clone(), v.clone())?,
                    None if old.is_some() => drop(self.remove(tx, &key)?),
                    None => {}
                }
                Ok(new)
            })
        })
    }
}

/// Runs `f`, a transaction of its own, after checking that no transaction
/// runs on this thread (a nested `atomically` would join it).
fn outside_transaction<R>(f: impl FnOnce() -> R) -> R {
    assert_outside_transaction();
    f()
}

/// A transactional set: [`TListSet`], and the maps with `()` values
/// (`THashMap<T, ()>`, `TBTreeMap<T, ()>`), which are sets through this
/// trait.
///
/// ```
/// use txmem::{atomically, TBTreeMap, THashMap, TListSet, TSet};
///
/// fn add_all<S: TSet<u32>>(s: &S, xs: &[u32]) -> usize {
///     atomically(|tx| {
///         let mut added = 0;
///         for &x in xs {
///             added += usize::from(s.insert(tx, x)?);
///         }
///         Ok(added)
///     })
/// }
///
/// let xs = [3, 1, 3, 2];
/// assert_eq!(add_all(&TListSet::new(), &xs), 3);
/// assert_eq!(add_all(&THashMap::<u32, ()>::new(), &xs), 3);
/// assert_eq!(add_all(&TBTreeMap::<u32, ()>::new(), &xs), 3);
/// ```
pub trait TSet<T>: Send + Sync {
    /// Inserts `x` if no equal element is present; returns whether it did.
    fn insert<'env>(&'env self, tx: &mut Transaction<'env>, x: T) -> TxResult<bool>;

    /// Removes the element equal to `x`; returns whether there was one.
    fn remove<'env>(&'env self, tx: &mut Transaction<'env>, x: &T) -> TxResult<bool>;

    /// True if an element equal to `x` is present.
    fn contains<'env>(&'env self, tx: &mut Transaction<'env>, x: &T) -> TxResult<bool>;

    /// The number of elements.
    fn len<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<usize>;

    /// True if the set has no element.
    fn is_empty<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<bool> {
        Ok(self.len(tx)? == 0)
    }

    /// Every element (clones), in the set's order (none for a hash set).
    fn to_vec<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<Vec<T>>;

    /// True if an element equal to `x` is committed, outside any transaction.
    fn load_contains(&self, x: &T) -> bool;

    /// The committed number of elements, outside any transaction.
    fn load_len(&self) -> usize;

    /// Inserts `x` if no equal element is present, as a transaction of its
    /// own; returns whether it did. A set of [`THashMap`] or [`TBTreeMap`]
    /// commits it directly; by default it runs [`insert`](Self::insert) in
    /// [`atomically`]. Panics inside a transaction.
    fn insert_now(&self, x: T) -> bool
    where
        T: Clone,
    {
        outside_transaction(|| atomically(|tx| self.insert(tx, x.clone())))
    }

    /// Removes the element equal to `x` as a transaction of its own; returns
    /// whether there was one (see [`insert_now`](Self::insert_now)).
    fn remove_now(&self, x: &T) -> bool {
        outside_transaction(|| atomically(|tx| self.remove(tx, x)))
    }
}

/// Implements [`TMap`] (and [`TSet`] for `()` values) for a map type by its
/// inherent methods of the same names (the `_now` writes included: both
/// maps commit them directly); `$map` is the map type with `K`
/// and `V`, `$set` the same with `()` for `V`.
macro_rules! map_traits {
    (
        [$($g:tt)*] [$($set_g:tt)*] $map:ty, $set:ty,
        where $($bound:tt)*
    ) => {
        impl<$($g)*> TMap<K, V> for $map
        where
            V: Clone + Send + Sync + 'static,
            $($bound)*
        {
            fn get<'env>(&'env self, tx: &mut Transaction<'env>, key: &K) -> TxResult<Option<V>> {
                <$map>::get(self, tx, key)
            }
            fn contains_key<'env>(&'env self, tx: &mut Transaction<'env>, key: &K) -> TxResult<bool> {
                <$map>::contains_key(self, tx, key)
            }
            fn insert<'env>(
                &'env self,
                tx: &mut Transaction<'env>,
                key: K,
                value: V,
            ) -> TxResult<Option<V>> {
                <$map>::insert(self, tx, key, value)
            }
            fn insert_if_absent<'env>(
                &'env self,
                tx: &mut Transaction<'env>,
                key: K,
                value: V,
            ) -> TxResult<bool> {
                <$map>::insert_if_absent(self, tx, key, value)
            }
            fn set<'env>(&'env self, tx: &mut Transaction<'env>, key: K, value: V) -> TxResult<()> {
                <$map>::set(self, tx, key, value)
            }
            fn remove<'env>(&'env self, tx: &mut Transaction<'env>, key: &K) -> TxResult<Option<V>> {
                <$map>::remove(self, tx, key)
            }
            fn len<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<usize> {
                <$map>::len(self, tx)
            }
            fn to_vec<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<Vec<(K, V)>> {
                <$map>::to_vec(self, tx)
            }
            fn load(&self, key: &K) -> Option<V> {
                <$map>::load(self, key)
            }
            fn load_contains_key(&self, key: &K) -> bool {
                <$map>::load_contains_key(self, key)
            }
            fn load_len(&self) -> usize {
                <$map>::load_len(self)
            }
            fn insert_now(&self, key: K, value: V) -> Option<V> {
                <$map>::insert_now(self, key, value)
            }
            fn insert_if_absent_now(&self, key: K, value: V) -> bool {
                <$map>::insert_if_absent_now(self, key, value)
            }
            fn remove_now(&self, key: &K) -> Option<V> {
                <$map>::remove_now(self, key)
            }
            fn update_now(&self, key: K, f: impl FnMut(Option<&V>) -> Option<V>) -> Option<V> {
                <$map>::update_now(self, key, f)
            }
        }

        impl<$($set_g)*> TSet<K> for $set
        where
            $($bound)*
        {
            fn insert<'env>(&'env self, tx: &mut Transaction<'env>, x: K) -> TxResult<bool> {
                <$set>::insert_if_absent(self, tx, x, ())
            }
            fn remove<'env>(&'env self, tx: &mut Transaction<'env>, x: &K) -> TxResult<bool> {
                Ok(<$set>::remove(self, tx, x)?.is_some())
            }
            fn contains<'env>(&'env self, tx: &mut Transaction<'env>, x: &K) -> TxResult<bool> {
                <$set>::contains_key(self, tx, x)
            }
            fn len<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<usize> {
                <$set>::len(self, tx)
            }
            fn to_vec<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<Vec<K>> {
                let entries = <$set>::to_vec(self, tx)?;
                Ok(entries.into_iter().map(|(k, ())| k).collect())
            }
            fn load_contains(&self, x: &K) -> bool {
                <$set>::load_contains_key(self, x)
            }
            fn load_len(&self) -> usize {
                <$set>::load_len(self)
            }
            fn insert_now(&self, x: K) -> bool {
                <$set>::insert_if_absent_now(self, x, ())
            }
            fn remove_now(&self, x: &K) -> bool {
                <$set>::remove_now(self, x).is_some()
            }
        }
    };
}

// The maps commit single-operation writes directly; the list set runs the
// traits' transactions.
map_traits!(
    [K, V, S] [K, S] THashMap<K, V, S>, THashMap<K, (), S>,
    where
        K: Hash + Eq + Clone + Send + Sync + 'static,
        S: BuildHasher + Send + Sync + 'static,
);

map_traits!(
    [K, V] [K] TBTreeMap<K, V>, TBTreeMap<K, ()>,
    where K: Ord + Clone + Send + Sync + 'static,
);

impl<T: Ord + Clone + Send + Sync + 'static> TSet<T> for TListSet<T> {
    fn insert<'env>(&'env self, tx: &mut Transaction<'env>, x: T) -> TxResult<bool> {
        TListSet::insert(self, tx, x)
    }
    fn remove<'env>(&'env self, tx: &mut Transaction<'env>, x: &T) -> TxResult<bool> {
        TListSet::remove(self, tx, x)
    }
    fn contains<'env>(&'env self, tx: &mut Transaction<'env>, x: &T) -> TxResult<bool> {
        TListSet::contains(self, tx, x)
    }
    fn len<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<usize> {
        TListSet::len(self, tx)
    }
    fn to_vec<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<Vec<T>> {
        TListSet::to_vec(self, tx)
    }
    fn load_contains(&self, x: &T) -> bool {
        TListSet::load_contains(self, x)
    }
    fn load_len(&self) -> usize {
        TListSet::load_len(self)
    }
}
