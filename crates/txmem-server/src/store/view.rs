//! [`StoreTx`], a transaction's view of the store.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use txmem::{Transaction, TxResult};

use super::{Entry, Item, Store};

/// A transaction's view of the store: the operations every protocol's
/// commands are made of. Reads see only live items (not expired, not
/// flushed); writes keep the memory accounting and the LRU queues.
pub struct StoreTx<'a, 's> {
    pub(super) store: &'s Store,
    pub(super) tx: &'a mut Transaction<'s>,
    pub(super) now: u64,
    pub(super) wake: bool,
}

impl<'s> StoreTx<'_, 's> {
    /// The time the transaction's attempt started, in server nanoseconds.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// The store.
    pub fn store(&self) -> &'s Store {
        self.store
    }

    /// The live item under `key`, if any.
    pub fn get(&mut self, key: &[u8]) -> TxResult<Option<Arc<Item>>> {
        let item = self.store.map.get(self.tx, key)?;
        Ok(item.filter(|i| !self.store.dead(i, self.now)))
    }

    /// Calls `f` with the live item under `key`, if any, without taking a
    /// reference to it (no reference count is touched).
    pub fn get_with<R>(&mut self, key: &[u8], f: impl FnOnce(&Item) -> R) -> TxResult<Option<R>> {
        let (store, now) = (self.store, self.now);
        Ok(store
            .map
            .get_with(self.tx, key, |item| {
                (!store.dead(item, now)).then(|| f(item))
            })?
            .flatten())
    }

    /// Stores `item` under `key`, replacing any item there; returns the
    /// stored item.
    pub fn put(&mut self, key: &[u8], mut item: Item) -> TxResult<Arc<Item>> {
        let store = self.store;
        if !store.config.cas {
            item.cas = 0;
        }
        let key = Bytes::copy_from_slice(key);
        let cost = item.cost(key.len()) as i64;
        if item.expires != 0 && store.mortal.load(Ordering::Relaxed) == 0 {
            store.mortal.fetch_add(1, Ordering::Relaxed);
        }
        let item = Arc::new(item);
        let shard = store.shard();
        match store.map.insert(self.tx, key.clone(), item.clone())? {
            Some(old) => {
                // Replacing an expired or flushed item reuses its room, as
                // memcached counts it.
                if store.dead(&old, self.now) {
                    shard.reclaimed.add(self.tx, 1)?;
                }
                shard
                    .bytes
                    .add(self.tx, cost - old.cost(key.len()) as i64)?
            }
            None => {
                let entry = Entry {
                    key,
                    queued: self.now,
                };
                shard.bytes.add(self.tx, cost + entry.cost() as i64)?;
                shard.items.add(self.tx, 1)?;
                shard.lru.push(self.tx, entry)?;
            }
        }
        shard.total_items.add(self.tx, 1)?;
        if !self.wake && store.used() + cost as usize > store.high_water() {
            self.wake = true;
            self.tx.on_commit(move || store.wake_maintainer());
        }
        Ok(item)
    }

    /// Removes `key`; returns its item if it was live.
    pub fn remove(&mut self, key: &[u8]) -> TxResult<Option<Arc<Item>>> {
        let Some(old) = self.store.map.remove(self.tx, key)? else {
            return Ok(None);
        };
        let shard = self.store.shard();
        shard.items.add(self.tx, -1)?;
        shard.bytes.add(self.tx, -(old.cost(key.len()) as i64))?;
        Ok((!self.store.dead(&old, self.now)).then_some(old))
    }
}
