//! Inserting and removing: an insert links a placeholder after the node
//! its search ended on (under that node's gap lock); a removal marks the
//! node it found, to be deleted and unlinked at commit.

use crate::collections::node::gaps::GapChain;
use crate::collections::node::NodeCollection;
use crate::collections::struct_wait;
use crate::error::TxResult;
use crate::tx::Transaction;

use super::search::Found;
use super::sorted::{LNode, SortedList};

impl<T: Ord + Clone + Send + Sync + 'static> SortedList<T> {
    /// Inserts `x`; for sets only if absent. Returns whether it inserted.
    pub(super) fn insert<'env>(&'env self, tx: &mut Transaction<'env>, x: T) -> TxResult<bool> {
        let _ = tx.guard();
        let mut spins = 0;
        let mut value = Some(x);
        // Allocated once a link is due, and kept across retries.
        let mut node: Option<Box<LNode<T>>> = None;
        loop {
            let x = match &node {
                Some(n) => &n.value,
                None => value
                    .as_ref()
                    .expect("the element is in the node or in `value`"),
            };
            let pos = self.locate_value(x);
            if !self.dups {
                match self.present(tx, &pos, x, &mut spins)? {
                    Found::Present => return Ok(false),
                    Found::Again => continue,
                    Found::Absent => {}
                }
            }
            let fresh = match node.take() {
                Some(n) => n,
                None => LNode::placeholder(value.take().expect("not moved yet")),
            };
            let np = Box::into_raw(fresh);
            match self.link_after(&pos, np) {
                Some(new_gap) => {
                    // A set's insert reports the element absent.
                    self.adopt_link(tx, &pos, np, new_gap, !self.dups)?;
                    return Ok(true);
                }
                None => {
                    // SAFETY: `np` came from `Box::into_raw` just above and
                    // was not linked: still ours alone.
                    node = Some(unsafe { Box::from_raw(np) });
                    struct_wait(&mut spins);
                }
            }
        }
    }

    pub(super) fn remove<'env>(&'env self, tx: &mut Transaction<'env>, x: &T) -> TxResult<bool> {
        match self.find(tx, x)? {
            Some(np) => {
                self.mark_removed(tx, np);
                Ok(true)
            }
            None => Ok(false),
        }
    }
}
