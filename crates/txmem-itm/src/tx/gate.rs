//! The serial gate (one serial transaction runs alone), the hourglass (a starving
//! transaction keeps new ones out), and the waits for privatization safety.

use std::sync::atomic::{AtomicU64, Ordering};

use super::desc::{all_descs, TxDesc, INACTIVE};

/// The serial gate, a ticket lock: the high half counts the tickets taken, the low half the
/// tickets served. It is held (halves differ) by the one serial transaction and by those
/// queued to become serial. Ordinary transactions only read it (after publishing their
/// `state`), so it costs nothing while nobody goes serial.
///
/// Why tickets: the gate used to be a test-and-set flag, and on two cores a thread whose every
/// transaction is serial (the `serial` method) took it back from its own release before a
/// waiting thread, yielding between tries, ever saw it free: `privatize_proxy` under `serial`
/// ran for minutes, its owner thread starved. Tickets serve waiters in turn.
static SERIAL_GATE: AtomicU64 = AtomicU64::new(0);

/// One ticket, in the gate's high half.
const TICKET: u64 = 1 << 32;

/// True if the gate word `w` shows a serial transaction running or queued.
fn gate_held(w: u64) -> bool {
    (w >> 32) != (w & u64::from(u32::MAX))
}

fn pause(round: &mut u32) {
    if *round < 64 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
    *round = round.saturating_add(1);
}

/// The hourglass: 0 while open, else the lock word of the starving transaction that closed
/// it. New transactions wait while another one holds it; running ones finish.
static HOURGLASS: AtomicU64 = AtomicU64::new(0);

/// Marks `tx` active with a fresh start version, waiting while a serial transaction runs (or
/// another transaction holds the hourglass).
pub(crate) fn enter_ordinary(tx: &TxDesc) -> u64 {
    let mut round = 0;
    loop {
        let h = HOURGLASS.load(Ordering::Acquire);
        if h == 0 || h == tx.lock_word {
            break;
        }
        pause(&mut round);
    }
    loop {
        let start = crate::orec::CLOCK.load(Ordering::Acquire);
        // A Dekker handshake with `drain_others` (see `fence`): either the serial thread sees
        // this state, or this thread sees its lock.
        tx.state.store(start, Ordering::Relaxed);
        crate::fence::light(tx.method.reads_states_at_commit());
        if !gate_held(SERIAL_GATE.load(Ordering::Relaxed)) {
            return start;
        }
        tx.state.store(INACTIVE, Ordering::SeqCst);
        let mut round = 0;
        while gate_held(SERIAL_GATE.load(Ordering::Acquire)) {
            pause(&mut round);
        }
    }
}

/// Takes a ticket, waits for its turn at the gate, then waits until no other transaction
/// runs. `tx.state` must be INACTIVE.
pub(crate) fn enter_serial(tx: &TxDesc) {
    // The ticket's RMW closes the gate to new ordinary transactions at once (the Dekker
    // handshake with `enter_ordinary` needs that, not the turn).
    let ticket = (SERIAL_GATE.fetch_add(TICKET, Ordering::SeqCst) >> 32) as u32;
    let mut round = 0;
    while SERIAL_GATE.load(Ordering::Acquire) as u32 != ticket {
        pause(&mut round);
    }
    drain_others(tx);
}

/// Takes the gate only if it is free (nobody serial, nobody queued), without waiting: for a
/// running transaction, which must not wait for the gate while others may wait for it.
pub(crate) fn try_enter_serial(tx: &TxDesc) -> bool {
    let w = SERIAL_GATE.load(Ordering::Relaxed);
    if gate_held(w)
        || SERIAL_GATE
            .compare_exchange(
                w,
                w.wrapping_add(TICKET),
                Ordering::SeqCst,
                Ordering::Relaxed,
            )
            .is_err()
    {
        return false;
    }
    drain_others(tx);
    true
}

/// With the gate held, waits until every other descriptor is inactive. Nothing waits for the
/// gate holder while it is active, so this cannot deadlock: a thread that wants the gate, or
/// waits for older transactions after its commit, has made itself inactive first.
fn drain_others(tx: &TxDesc) {
    crate::fence::heavy();
    for d in all_descs() {
        if std::ptr::eq(d, tx) {
            continue;
        }
        let mut round = 0;
        while d.state.load(Ordering::SeqCst) != INACTIVE {
            pause(&mut round);
        }
    }
}

/// Serves the next ticket. (A CAS loop rather than an add: the served half wraps without
/// carrying into the tickets' half.)
pub(crate) fn leave_serial() {
    let _ = SERIAL_GATE.fetch_update(Ordering::Release, Ordering::Relaxed, |w| {
        Some((w & !u64::from(u32::MAX)) | u64::from((w as u32).wrapping_add(1)))
    });
}

/// Waits until every transaction that started before `version` has finished or moved its
/// start past it, so memory a committed writer privatized is no longer touched by them.
/// `tx.quiescing` holds `version` meanwhile (set before the commit became visible).
pub(crate) fn quiesce(tx: &TxDesc, version: u64) {
    // A Dekker handshake with `enter_ordinary`: the orecs this commit released must be visible
    // before the states are read, or a transaction that published an older start (and then
    // read the old orecs) could be missed here.
    std::sync::atomic::fence(Ordering::SeqCst);
    for d in all_descs() {
        if std::ptr::eq(d, tx) {
            continue;
        }
        let mut round = 0;
        loop {
            let s = d.state.load(Ordering::Acquire);
            if s == INACTIVE || s >= version {
                break;
            }
            pause(&mut round);
        }
    }
    tx.quiescing.store(INACTIVE, Ordering::Release);
}

/// For a read-only transaction with snapshot `start`: waits until no writer whose commit it
/// may have seen (write version <= `start`) is still waiting out older transactions. Without
/// this, a reader could see a privatizing commit and touch the private data while a doomed
/// older transaction still does (proxy privatization), since only the writer waits.
pub(crate) fn quiesce_proxy(tx: &TxDesc, start: u64) {
    for d in all_descs() {
        if std::ptr::eq(d, tx) {
            continue;
        }
        let mut round = 0;
        while d.quiescing.load(Ordering::Acquire) <= start {
            pause(&mut round);
        }
    }
}

/// Closes the hourglass for `tx` if it is open; true if `tx` now holds it.
pub(crate) fn close_hourglass(tx: &mut TxDesc) -> bool {
    if !tx.holds_hourglass
        && HOURGLASS
            .compare_exchange(0, tx.lock_word, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    {
        tx.holds_hourglass = true;
    }
    tx.holds_hourglass
}

/// Reopens the hourglass if `tx` closed it (it has finished).
pub(crate) fn open_hourglass(tx: &mut TxDesc) {
    if tx.holds_hourglass {
        tx.holds_hourglass = false;
        HOURGLASS.store(0, Ordering::Release);
    }
}
