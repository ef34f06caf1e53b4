//! Savepoints for `or_else`: undo a branch's effects on the tracking set and
//! the word log while keeping what it read (a transaction that retries in
//! both branches must wake on a change to anything either branch read).

use super::state::{Saved, Savepoint, TxState};
use crate::item::READ;

pub(super) fn push(st: &mut TxState) {
    st.rare = true;
    st.savepoints.push(Savepoint {
        len: st.items.len(),
        words: st.words.len(),
        word_log: Vec::new(),
        commit_handlers: st.on_commit.len(),
        abort_handlers: st.on_abort.len(),
        log: Vec::new(),
    });
}

/// Saves item `pos` in every open savepoint that predates it and has not
/// saved it yet; called before an object mutates an item.
pub(super) fn log_before_change(st: &mut TxState, pos: usize) {
    let item = &st.items[pos];
    for sp in st.savepoints.iter_mut() {
        if pos < sp.len && !sp.log.iter().any(|s| s.pos == pos) {
            sp.log.push(Saved {
                pos,
                flags: item.flags(),
                read_version: item.read_version,
                value: item.value.duplicate(),
            });
        }
    }
}

/// Saves word write `pos` in every open savepoint that predates it and has
/// not saved it yet; called before the attempt overwrites it.
pub(super) fn log_word_before_change(st: &mut TxState, pos: usize) {
    let bits = st.words[pos].bits;
    for sp in st.savepoints.iter_mut() {
        if pos < sp.words && !sp.word_log.iter().any(|&(p, _)| p == pos) {
            sp.word_log.push((pos, bits));
        }
    }
}

/// Records a read of item `pos` at `word` that rolling back the open
/// branches keeps: in the item, and in every savepoint that saved the item
/// as read (at the version this read replaces). For a read the attempt's
/// own change moved (a structure version its insert bumped, which stays
/// bumped after a rollback: see `TObject::roll_back`), and for an absence
/// an insert reported inside a branch.
pub(super) fn keep_read(st: &mut TxState, pos: usize, word: u64) {
    st.items[pos].observe(word);
    for sp in st.savepoints.iter_mut() {
        for saved in sp.log.iter_mut().filter(|s| s.pos == pos) {
            if saved.flags & READ != 0 {
                saved.read_version = word;
            }
        }
    }
}

pub(super) fn roll_back(st: &mut TxState) {
    let sp = st.savepoints.pop().expect("roll_back without savepoint");
    for item in &mut st.items[sp.len..] {
        // SAFETY: objects outlive the transaction.
        let obj = unsafe { item.object.as_ref() };
        obj.roll_back(item);
        item.clear_write();
    }
    for saved in sp.log.into_iter().rev() {
        let item = &mut st.items[saved.pos];
        let read_now = item.flags() & READ;
        if saved.flags & READ != 0 || read_now == 0 {
            item.read_version = saved.read_version;
        }
        item.restore_flags(saved.flags | read_now);
        item.value = saved.value;
    }
    // A word write made inside a branch holds no read (its read stays in
    // the read log, see `words::write_word`): the branch's own ones go, the
    // older ones it overwrote get their values back.
    if st.words.len() > sp.words {
        st.words.truncate(sp.words);
        st.reindex_words();
    }
    for (pos, bits) in sp.word_log.into_iter().rev() {
        st.words[pos].bits = bits;
    }
    st.on_commit.truncate(sp.commit_handlers);
    st.on_abort.truncate(sp.abort_handlers);
}

pub(super) fn release(st: &mut TxState) {
    st.savepoints.pop();
}
