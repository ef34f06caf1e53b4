//! What a transaction pushes onto a `TQueue`, kept in its push item's value.
//!
//! Most transactions push one value, so one push is the value itself,
//! which the item stores inline when it is small (no allocation); a second
//! push, or a bounded queue's count of the transaction's own pops, turns it
//! into a [`PushLog`]. The functions here are the only ones that know the
//! two forms.

use smallvec::SmallVec;

use crate::item::Item;

/// Pending pushes in order, and the committed elements the transaction pops
/// (room a bounded queue counts at commit).
#[derive(Clone)]
struct PushLog<T> {
    values: Vec<T>,
    own_pops: u64,
}

/// The values `item` will push, in order, and the committed elements the
/// transaction pops (counted for bounded queues only).
pub(super) fn pending<T: Clone + Send + 'static>(item: &Item) -> (&[T], u64) {
    if let Some(v) = item.write_value::<T>() {
        return (std::slice::from_ref(v), 0);
    }
    match item.write_value::<PushLog<T>>() {
        Some(log) => (&log.values, log.own_pops),
        None => (&[], 0),
    }
}

/// Appends `value` to the pushes and marks the item written.
pub(super) fn push<T: Clone + Send + 'static>(item: &mut Item, value: T) {
    if let Some(log) = item.value.get_mut::<PushLog<T>>() {
        log.values.push(value);
        item.mark_write();
    } else if let Some(first) = item.value.take::<T>() {
        item.set_write(PushLog {
            values: vec![first, value],
            own_pops: 0,
        });
    } else {
        item.set_write(value);
    }
}

/// Counts a pop of a committed element (for a bounded queue's capacity
/// check at commit). Leaves the item's write flag as it was.
pub(super) fn count_own_pop<T: Clone + Send + 'static>(item: &mut Item) {
    if let Some(log) = item.value.get_mut::<PushLog<T>>() {
        log.own_pops += 1;
        return;
    }
    let values = item.value.take::<T>().into_iter().collect();
    item.value.set(PushLog {
        values,
        own_pops: 1,
    });
}

/// Removes and returns the first pending push, if any.
pub(super) fn take_first<T: Clone + Send + 'static>(item: &mut Item) -> Option<T> {
    if let Some(v) = item.value.take::<T>() {
        return Some(v);
    }
    let log = item.value.get_mut::<PushLog<T>>()?;
    (!log.values.is_empty()).then(|| log.values.remove(0))
}

/// Takes every pending push out of the item, in order (at install; one
/// push moves without allocating).
pub(super) fn take_all<T: Clone + Send + 'static>(item: &mut Item) -> SmallVec<[T; 1]> {
    if let Some(v) = item.value.take::<T>() {
        return smallvec::smallvec![v];
    }
    match item.value.take::<PushLog<T>>() {
        Some(log) => SmallVec::from_vec(log.values),
        None => SmallVec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_push_is_stored_as_the_value_and_more_as_a_log() {
        let mut item = Item::new(1);
        push(&mut item, 10u64);
        assert!(item.is_write());
        assert_eq!(item.write_value::<u64>(), Some(&10), "one push: the value");
        assert_eq!(pending::<u64>(&item), (&[10u64][..], 0));
        push(&mut item, 11u64);
        push(&mut item, 12u64);
        assert_eq!(pending::<u64>(&item), (&[10u64, 11, 12][..], 0));
        assert_eq!(take_first::<u64>(&mut item), Some(10));
        count_own_pop::<u64>(&mut item);
        assert_eq!(pending::<u64>(&item), (&[11u64, 12][..], 1));
        assert_eq!(take_all::<u64>(&mut item).into_vec(), vec![11, 12]);
        assert_eq!(pending::<u64>(&item), (&[][..], 0));
    }

    #[test]
    fn an_own_pop_keeps_a_single_push() {
        let mut item = Item::new(1);
        push(&mut item, 7u64);
        count_own_pop::<u64>(&mut item);
        count_own_pop::<u64>(&mut item);
        assert_eq!(pending::<u64>(&item), (&[7u64][..], 2));
        assert_eq!(take_first::<u64>(&mut item), Some(7));
        assert_eq!(take_first::<u64>(&mut item), None);
        assert_eq!(pending::<u64>(&item), (&[][..], 2), "the count stays");
    }
}
