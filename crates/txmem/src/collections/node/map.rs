//! The node protocol for the maps ([`THashMap`](crate::THashMap) and
//! [`TBTreeMap`](crate::TBTreeMap)'s entries): nodes that hold a value in a
//! [`ValueCell`], read, written blindly or upserted by key.

use crate::error::TxResult;
use crate::item::Item;
use crate::object::Commit;
use crate::tx::{ItemId, ReadVia, Transaction};
use crate::types::cell::ValueCell;
use crate::version::TVersion;

use super::{NodeCollection, DELETED, F_INSERT, F_REMOVE, INSERTING};
use crate::collections::{inconsistent, placeholder_in_the_way, struct_wait};

/// How a map write treats a key that is already present.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::collections) enum WriteMode {
    /// Insert only if absent (reads the key's presence when it is there).
    IfAbsent,
    /// Overwrite without reading: a blind write.
    Blind,
    /// Overwrite and hand back the old value (reads it), as std's `insert`.
    Swap,
}

/// What [`MapNodes::upsert_existing`] (and a map's upsert) did.
pub(in crate::collections) enum Upserted<V> {
    /// The key was absent for the transaction and now holds the value.
    Inserted,
    /// The key was present: its old value under [`WriteMode::Swap`],
    /// `None` otherwise.
    Present(Option<V>),
    /// The node turned out deleted and its read was dropped: look the key
    /// up again; the value is handed back.
    Retry(V),
    /// The node is deleted (a committed removal not unlinked yet); the value
    /// is handed back to try the next node.
    Deleted(V),
}

/// A [`NodeCollection`] whose nodes hold a value in a [`ValueCell`] (the
/// maps): reads, blind writes and upserts of node values.
pub(in crate::collections) trait MapNodes: NodeCollection {
    /// The value type.
    type Value: Clone + Send + 'static;

    /// The value cell of `node`.
    fn cell(node: &Self::Node) -> &ValueCell<Self::Value>;

    /// [`NodeCollection::store_value`] for maps: publishes the pending
    /// write value, if any.
    #[inline]
    fn store_pending(node: &Self::Node, item: &mut Item, commit: &Commit<'_>) {
        Self::cell(node).store_pending(&mut item.value, || commit.guard());
    }

    /// The transaction's view of node `np`: `Some(f(value))` if it is
    /// visible. Reads the node's state, except for the transaction's own
    /// placeholders and removals. `absent` is called when a read of the
    /// state finds the node invisible (a foreign placeholder or a committed
    /// removal).
    fn view_value<'env, R>(
        &'env self,
        tx: &mut Transaction<'env>,
        np: *const Self::Node,
        f: impl FnOnce(&Self::Value) -> R,
        absent: impl FnOnce(&mut Transaction<'env>) -> TxResult<()>,
    ) -> TxResult<Option<R>> {
        match tx.read_via(self, np as u64) {
            ReadVia::Item(id) => self.view_item(tx, id, np, f, absent),
            via => {
                // Untouched by this attempt: no own write, placeholder or
                // removal to look for.
                // SAFETY: callers pass nodes reached while pinned.
                let n = unsafe { &*np };
                let r = observe_value(tx, via, Self::state(n), Self::cell(n), f)?;
                if r.is_none() {
                    absent(tx)?;
                }
                Ok(r)
            }
        }
    }

    /// [`view_value`](Self::view_value) through the node's item `id`
    /// (already created by the caller, who may use it again).
    #[inline]
    fn view_item<'env, R>(
        &'env self,
        tx: &mut Transaction<'env>,
        id: ItemId,
        np: *const Self::Node,
        f: impl FnOnce(&Self::Value) -> R,
        absent: impl FnOnce(&mut Transaction<'env>) -> TxResult<()>,
    ) -> TxResult<Option<R>> {
        // SAFETY: callers pass nodes reached while pinned.
        let n = unsafe { &*np };
        let (flags, has_value) = {
            let it = tx.item_ref(id);
            (it.flags(), it.value.is_set())
        };
        if flags & F_REMOVE != 0 {
            return Ok(None);
        }
        if flags & F_INSERT != 0 {
            let it = tx.item_ref(id);
            return Ok(Some(match it.write_value::<Self::Value>() {
                Some(v) => f(v),
                None => Self::cell(n).with(f),
            }));
        }
        if has_value {
            // A blind set: presence still has to be read.
            if observe_value(tx, ReadVia::Item(id), Self::state(n), Self::cell(n), |_| ())?
                .is_none()
            {
                return Err(inconsistent());
            }
            return Ok(tx.item_ref(id).write_value::<Self::Value>().map(f));
        }
        let r = observe_value(tx, ReadVia::Item(id), Self::state(n), Self::cell(n), f)?;
        if r.is_none() {
            absent(tx)?;
        }
        Ok(r)
    }

    /// Writes `value` at node `np`, which holds the key, as `mode` says:
    /// revives the transaction's own removal, keeps its own placeholder
    /// (present), aborts on another transaction's placeholder, and
    /// otherwise reads the node's presence (the old value under
    /// [`WriteMode::Swap`]; nothing under [`WriteMode::Blind`]). A deleted
    /// node is handed back as [`Upserted::Deleted`] if `skip_deleted`;
    /// otherwise a deletion is only noticed by the read, which then asks for
    /// a retry (after a wait counted in `spins`).
    fn upsert_existing<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        np: *const Self::Node,
        value: Self::Value,
        mode: WriteMode,
        skip_deleted: bool,
        spins: &mut u32,
    ) -> TxResult<Upserted<Self::Value>> {
        // SAFETY: callers pass nodes reached while pinned.
        let n = unsafe { &*np };
        let own = tx.find_item(self, np as u64);
        let flags = own.map_or(0, |id| tx.item_ref(id).flags());
        if flags & F_REMOVE != 0 {
            // Removed earlier by this transaction: revive it.
            let item = tx.item_mut(own.expect("flags came from the item"));
            item.clear_flags(F_REMOVE);
            item.set_write(value);
            self.size_delta(tx, 1);
            return Ok(Upserted::Inserted);
        }
        if flags & F_INSERT != 0 {
            // Our own placeholder: present for us, holding our value.
            let item = tx.item_mut(own.expect("flags came from the item"));
            let old = match mode {
                WriteMode::IfAbsent => return Ok(Upserted::Present(None)),
                WriteMode::Blind => None,
                WriteMode::Swap => Some(match item.write_value::<Self::Value>() {
                    Some(v) => v.clone(),
                    None => Self::cell(n).with(Self::Value::clone),
                }),
            };
            item.set_write(value);
            return Ok(Upserted::Present(old));
        }
        let w = Self::state(n).load();
        if w & INSERTING != 0 {
            // Another transaction is inserting this key.
            placeholder_in_the_way(tx, spins)?;
            return Ok(Upserted::Retry(value));
        }
        if skip_deleted && w & DELETED != 0 {
            return Ok(Upserted::Deleted(value));
        }
        let id = tx.item(self, np as u64);
        if mode == WriteMode::Blind {
            tx.item_mut(id).set_write(value);
            return Ok(Upserted::Present(None));
        }
        let swap = mode == WriteMode::Swap;
        let seen = observe_value(tx, ReadVia::Item(id), Self::state(n), Self::cell(n), |v| {
            swap.then(|| v.clone())
        })?;
        match seen {
            Some(committed) if swap => {
                // Read-my-writes: an earlier write of ours is the old value.
                let item = tx.item_mut(id);
                let old = item.write_value::<Self::Value>().cloned().or(committed);
                item.set_write(value);
                Ok(Upserted::Present(old))
            }
            Some(_) => Ok(Upserted::Present(None)),
            None if own.is_some() => Err(inconsistent()),
            None => {
                // Deleted under us: its unlink is imminent. Drop the read
                // and look again.
                tx.item_mut(id).forget_read();
                struct_wait(spins);
                Ok(Upserted::Retry(value))
            }
        }
    }
}

/// Reads the committed value in `value` under the node state `state`,
/// recording the read where `via` says (the node's item or the read log).
/// `None` if the node is a placeholder or deleted.
#[inline(always)]
fn observe_value<'env, V: Clone, R>(
    tx: &mut Transaction<'env>,
    via: ReadVia,
    state: &'env TVersion,
    value: &'env ValueCell<V>,
    f: impl FnOnce(&V) -> R,
) -> TxResult<Option<R>> {
    if ValueCell::<V>::INLINE {
        // Small values: copy under the version check.
        let (word, v) = tx.observe_via_word(via, state, || value.with(V::clone))?;
        if word & (DELETED | INSERTING) != 0 {
            return Ok(None);
        }
        return Ok(Some(f(&v)));
    }
    let _ = tx.guard();
    let (word, p) = tx.observe_via_word(via, state, || value.with(|v| v as *const V as usize))?;
    if word & (DELETED | INSERTING) != 0 {
        return Ok(None);
    }
    // SAFETY: heap values are replaced by swapping the pointer and retiring
    // the old allocation through the epoch; this transaction is pinned, so
    // the value observed stays live.
    Ok(Some(f(unsafe { &*(p as *const V) })))
}
