//! Interleavings that once let a committed transaction see `TList` and
//! `TListSet` in states no serial order produces (issue 20, B–D), forced
//! deterministically, in every opacity mode.
//!
//! Each test makes the interfering commit happen at one chosen point of the
//! observing transaction's *first* attempt (a handshake inside the
//! transaction), then checks what the attempt that committed saw: its
//! observations must agree with each other and with a serial order. This
//! binary holds no stress tests, so that nothing else makes a first attempt
//! abort for an unrelated reason.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use txmem::{
    Commit, Item, LockOutcome, Opacity, TList, TListSet, TObject, Transaction, TxOptions, TxResult,
};

const MODES: [Opacity; 3] = [Opacity::Tl2, Opacity::Revalidate, Opacity::None];

/// What the tests need of both list types.
trait Sorted: Sync + Default {
    const NAME: &'static str;
    fn ins<'env>(&'env self, tx: &mut Transaction<'env>, x: u64) -> TxResult<()>;
    fn del<'env>(&'env self, tx: &mut Transaction<'env>, x: u64) -> TxResult<bool>;
    fn has<'env>(&'env self, tx: &mut Transaction<'env>, x: u64) -> TxResult<bool>;
    fn all<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<Vec<u64>>;
    fn within<'env>(&'env self, tx: &mut Transaction<'env>, lo: u64, hi: u64)
        -> TxResult<Vec<u64>>;
    fn committed(&self) -> Vec<u64>;
}

impl Sorted for TListSet<u64> {
    const NAME: &'static str = "TListSet";
    fn ins<'env>(&'env self, tx: &mut Transaction<'env>, x: u64) -> TxResult<()> {
        assert!(self.insert(tx, x)?, "{x} was absent");
        Ok(())
    }
    fn del<'env>(&'env self, tx: &mut Transaction<'env>, x: u64) -> TxResult<bool> {
        self.remove(tx, &x)
    }
    fn has<'env>(&'env self, tx: &mut Transaction<'env>, x: u64) -> TxResult<bool> {
        self.contains(tx, &x)
    }
    fn all<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<Vec<u64>> {
        self.to_vec(tx)
    }
    fn within<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        lo: u64,
        hi: u64,
    ) -> TxResult<Vec<u64>> {
        self.range(tx, lo..=hi)
    }
    fn committed(&self) -> Vec<u64> {
        self.load_vec()
    }
}

impl Sorted for TList<u64> {
    const NAME: &'static str = "TList";
    fn ins<'env>(&'env self, tx: &mut Transaction<'env>, x: u64) -> TxResult<()> {
        self.insert(tx, x)
    }
    fn del<'env>(&'env self, tx: &mut Transaction<'env>, x: u64) -> TxResult<bool> {
        self.remove(tx, &x)
    }
    fn has<'env>(&'env self, tx: &mut Transaction<'env>, x: u64) -> TxResult<bool> {
        self.contains(tx, &x)
    }
    fn all<'env>(&'env self, tx: &mut Transaction<'env>) -> TxResult<Vec<u64>> {
        self.to_vec(tx)
    }
    fn within<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        lo: u64,
        hi: u64,
    ) -> TxResult<Vec<u64>> {
        self.range(tx, lo..=hi)
    }
    fn committed(&self) -> Vec<u64> {
        self.load_vec()
    }
}

/// Runs a scenario in every opacity mode and fails with every violation
/// found (not only the first).
fn every_mode<const N: usize>(scenario: impl Fn(Opacity) -> [Result<(), String>; N]) {
    let failures: Vec<String> = MODES
        .into_iter()
        .flat_map(scenario)
        .filter_map(Result::err)
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn opts(mode: Opacity) -> TxOptions {
    TxOptions::new().opacity(mode)
}

fn filled<L: Sorted>(xs: &[u64]) -> L {
    let l = L::default();
    opts(Opacity::Tl2).run(|tx| {
        for &x in xs {
            l.ins(tx, x)?;
        }
        Ok(())
    });
    l
}

/// Runs `f` as a transaction of its own on another thread and waits for it
/// to commit.
fn commit_elsewhere<L: Sorted>(
    l: &L,
    mode: Opacity,
    f: impl for<'a> Fn(&mut Transaction<'a>, &'a L) -> TxResult<()> + Sync,
) {
    thread::scope(|s| {
        s.spawn(|| opts(mode).run(|tx| f(tx, l)))
            .join()
            .expect("the interfering transaction panicked");
    });
}

// ---- B: a transaction's own insert must not end its phantom protection ----

/// T1 reads `b+5` as absent, inserts `b+1` (linked right after `b`, whose
/// gap T1 read), T2 commits `b+5` (linked after T1's placeholder `b+1`),
/// T1 reads `b+5` again. The committed attempt must read the same answer
/// twice.
fn b_point_read<L: Sorted>(mode: Opacity) -> Result<(), String> {
    let b = 100;
    let l: L = filled(&[b, b + 8]);
    let first = AtomicBool::new(true);
    let (before, after) = opts(mode).run(|tx| {
        let before = l.has(tx, b + 5)?;
        l.ins(tx, b + 1)?;
        if first.swap(false, Ordering::SeqCst) {
            commit_elsewhere(&l, mode, |tx, l| l.ins(tx, b + 5));
        }
        let after = l.has(tx, b + 5)?;
        Ok((before, after))
    });
    if before != after {
        return Err(format!(
            "{} {mode:?}: a committed transaction read {} as present={before}, then as present={after}",
            L::NAME,
            b + 5
        ));
    }
    assert_eq!(l.committed(), vec![b, b + 1, b + 5, b + 8]);
    Ok(())
}

/// The same over the whole interval `b..=b+9`, read element by element:
/// T1 sees `b` and `b+8`, inserts `b+1`, T2 commits `b+5`, T1 reads the
/// interval again. The second reading must be the first plus T1's own
/// insert.
fn b_interval_read<L: Sorted>(mode: Opacity) -> Result<(), String> {
    let b = 100;
    let l: L = filled(&[b, b + 8]);
    let first = AtomicBool::new(true);
    fn read<'a, L: Sorted>(tx: &mut Transaction<'a>, l: &'a L, b: u64) -> TxResult<Vec<u64>> {
        let mut seen = vec![];
        for x in b..=b + 9 {
            if l.has(tx, x)? {
                seen.push(x);
            }
        }
        Ok(seen)
    }
    let (before, after) = opts(mode).run(|tx| {
        let before = read(tx, &l, b)?;
        l.ins(tx, b + 1)?;
        if first.swap(false, Ordering::SeqCst) {
            commit_elsewhere(&l, mode, |tx, l| l.ins(tx, b + 5));
        }
        Ok((before, read(tx, &l, b)?))
    });
    let mut expected = before.clone();
    expected.push(b + 1);
    expected.sort();
    if after != expected {
        return Err(format!(
            "{} {mode:?}: a committed transaction saw {before:?}, inserted {}, then saw {after:?}",
            L::NAME,
            b + 1
        ));
    }
    Ok(())
}

/// The same with a range scan: T1 scans `b..=b+9` and sees `b` and `b+8`,
/// inserts `b+1`, T2 commits `b+5`, T1 scans again.
fn b_range_scan<L: Sorted>(mode: Opacity) -> Result<(), String> {
    let b = 100;
    let l: L = filled(&[b - 10, b, b + 8, b + 20]);
    let first = AtomicBool::new(true);
    let (before, after) = opts(mode).run(|tx| {
        let before = l.within(tx, b, b + 9)?;
        l.ins(tx, b + 1)?;
        if first.swap(false, Ordering::SeqCst) {
            commit_elsewhere(&l, mode, |tx, l| l.ins(tx, b + 5));
        }
        Ok((before, l.within(tx, b, b + 9)?))
    });
    let mut expected = before.clone();
    expected.push(b + 1);
    expected.sort();
    if after != expected {
        return Err(format!(
            "{} {mode:?}: a committed transaction scanned {before:?}, inserted {}, then scanned {after:?}",
            L::NAME,
            b + 1
        ));
    }
    Ok(())
}

#[test]
fn b_own_insert_keeps_point_reads_protected() {
    every_mode(|mode| {
        [
            b_point_read::<TListSet<u64>>(mode),
            b_point_read::<TList<u64>>(mode),
        ]
    });
}

#[test]
fn b_own_insert_keeps_range_scans_protected() {
    every_mode(|mode| {
        [
            b_range_scan::<TListSet<u64>>(mode),
            b_range_scan::<TList<u64>>(mode),
        ]
    });
}

#[test]
fn b_own_insert_keeps_interval_reads_protected() {
    every_mode(|mode| {
        [
            b_interval_read::<TListSet<u64>>(mode),
            b_interval_read::<TList<u64>>(mode),
        ]
    });
}

// ---- C: a commit whose inserts and removes cancel out ----

/// The list holds {b+1, b+3}; T1 iterates; T2 commits `remove(b+3);
/// insert(b+2)` (the size does not change); T1 iterates again. Both
/// iterations of the committed attempt must agree.
fn c_net_zero<L: Sorted>(mode: Opacity) -> Result<(), String> {
    let b = 100;
    let l: L = filled(&[b + 1, b + 3]);
    let first = AtomicBool::new(true);
    let (v1, v2) = opts(mode).run(|tx| {
        let v1 = l.all(tx)?;
        if first.swap(false, Ordering::SeqCst) {
            commit_elsewhere(&l, mode, |tx, l| {
                assert!(l.del(tx, b + 3)?);
                l.ins(tx, b + 2)
            });
        }
        Ok((v1, l.all(tx)?))
    });
    assert_eq!(l.committed(), vec![b + 1, b + 2]);
    if v1 != v2 {
        return Err(format!(
            "{} {mode:?}: one committed transaction iterated twice and saw {v1:?}, then {v2:?}",
            L::NAME
        ));
    }
    Ok(())
}

#[test]
fn c_net_zero_commit_invalidates_iteration() {
    every_mode(|mode| {
        [
            c_net_zero::<TListSet<u64>>(mode),
            c_net_zero::<TList<u64>>(mode),
        ]
    });
}

// ---- D: iteration must not see a half-installed commit ----

/// A transactional object whose commit blocks in `install` once, until the
/// test lets it go: placed between two list operations of a writer, it
/// holds the writer's commit with the first operation installed and the
/// second still locked (a commit installs its items in the order the
/// transaction first touched them).
#[derive(Default)]
struct Gate {
    /// Whether the next install blocks (only the first one does).
    armed: AtomicBool,
    /// Set by `install` while it blocks.
    holding: AtomicBool,
    /// Set by the test to let `install` go on.
    release: AtomicBool,
}

impl Gate {
    fn pass<'env>(&'env self, tx: &mut Transaction<'env>) {
        let id = tx.item(self, 0);
        tx.item_mut(id).mark_write();
    }
}

fn wait_for(flag: &AtomicBool, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !flag.load(Ordering::SeqCst) {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_micros(200));
    }
}

impl TObject for Gate {
    fn lock(&self, _: &mut Item, _: &Commit<'_>) -> LockOutcome {
        LockOutcome::Acquired
    }
    fn check(&self, _: &Item, _: &Commit<'_>) -> bool {
        true
    }
    fn install(&self, _: &mut Item, _: &Commit<'_>) {
        if self.armed.swap(false, Ordering::SeqCst) {
            self.holding.store(true, Ordering::SeqCst);
            wait_for(
                &self.release,
                "the reader to look at the half-installed commit",
            );
        }
    }
    fn unlock(&self, _: &mut Item) {}
}

/// A writer moves the list from `from` to `to` with `ops` (the gate in the
/// middle); while its commit is half installed, a read-only transaction
/// iterates in its first attempt. What it commits must be `from` or `to`.
fn d_half_installed<L: Sorted>(
    mode: Opacity,
    from: &[u64],
    to: &[u64],
    ops: impl for<'a> Fn(&mut Transaction<'a>, &'a L, &'a Gate) -> TxResult<()> + Sync,
) -> Result<(), String> {
    let l: L = filled(from);
    let gate = Gate::default();
    gate.armed.store(true, Ordering::SeqCst);
    let attempts = AtomicU32::new(0);
    let seen = thread::scope(|s| {
        let writer = s.spawn(|| opts(mode).run(|tx| ops(tx, &l, &gate)));
        let seen = opts(mode).run(|tx| {
            if attempts.fetch_add(1, Ordering::SeqCst) == 0 {
                wait_for(&gate.holding, "the writer's commit to reach the gate");
                let r = l.all(tx);
                gate.release.store(true, Ordering::SeqCst);
                return r;
            }
            l.all(tx)
        });
        gate.release.store(true, Ordering::SeqCst);
        writer.join().expect("the writer panicked");
        seen
    });
    assert_eq!(l.committed(), to);
    if seen != from && seen != to {
        return Err(format!(
            "{} {mode:?}: a committed read-only iteration saw {seen:?}, neither {from:?} nor {to:?}",
            L::NAME
        ));
    }
    Ok(())
}

fn d_both_ways<L: Sorted>(mode: Opacity) -> [Result<(), String>; 2] {
    // Removal installed, both inserts still locked.
    let one = d_half_installed::<L>(mode, &[10], &[20, 30], |tx, l, gate| {
        assert!(l.del(tx, 10)?);
        gate.pass(tx);
        l.ins(tx, 20)?;
        l.ins(tx, 30)
    });
    // Insert and first removal installed, second removal still locked.
    let other = d_half_installed::<L>(mode, &[20, 30], &[10], |tx, l, gate| {
        l.ins(tx, 10)?;
        assert!(l.del(tx, 20)?);
        gate.pass(tx);
        assert!(l.del(tx, 30)?);
        Ok(())
    });
    [one, other]
}

#[test]
fn d_iteration_never_sees_half_a_commit() {
    every_mode(|mode| {
        let [a, b] = d_both_ways::<TListSet<u64>>(mode);
        let [c, d] = d_both_ways::<TList<u64>>(mode);
        [a, b, c, d]
    });
}

// ---- an abandoned placeholder must not take a committed change with it ----

/// Another transaction X links a placeholder `b+1` between `b` and `b+3`
/// and stays open. T1 lists the elements (recording the gaps of `b` and of
/// the placeholder). T2 commits `remove(b+3)`, whose predecessor is the
/// placeholder, so the change lands in the placeholder's gap. X gives up,
/// and its placeholder is unlinked: the interval after `b` now spans what
/// the placeholder's gap covered. T1 then reads `b+3`. Unless unlinking the
/// placeholder carries its gap's change over to `b`'s gap, T1's read of
/// `b`'s gap still looks current, and T1 commits having listed `b+3` and
/// then read it as absent.
fn abandoned_placeholder<L: Sorted>(mode: Opacity) -> Result<(), String> {
    let b = 100;
    let l: L = filled(&[b, b + 3, b + 8]);
    let linked = AtomicBool::new(false);
    let give_up = AtomicBool::new(false);
    let first = AtomicBool::new(true);
    let (listed, present) = thread::scope(|s| {
        let x = s.spawn(|| {
            opts(mode).try_run(|tx| {
                l.ins(tx, b + 1)?;
                linked.store(true, Ordering::SeqCst);
                wait_for(&give_up, "the signal to give up");
                Err::<(), _>(txmem::TxError::User(()))
            })
        });
        wait_for(&linked, "the placeholder");
        let seen = opts(mode).run(|tx| {
            let listed = l.all(tx)?;
            if first.swap(false, Ordering::SeqCst) {
                commit_elsewhere(&l, mode, |tx, l| {
                    assert!(l.del(tx, b + 3)?);
                    Ok(())
                });
                give_up.store(true, Ordering::SeqCst);
            }
            while !x.is_finished() {
                thread::yield_now();
            }
            Ok((listed, l.has(tx, b + 3)?))
        });
        assert!(x.join().unwrap().is_err());
        seen
    });
    if listed.contains(&(b + 3)) != present {
        return Err(format!(
            "{} {mode:?}: a committed transaction listed {listed:?}, then read {} as present={present}",
            L::NAME,
            b + 3
        ));
    }
    assert_eq!(l.committed(), vec![b, b + 8]);
    Ok(())
}

#[test]
fn an_abandoned_placeholder_keeps_the_changes_committed_in_its_gap() {
    every_mode(|mode| {
        [
            abandoned_placeholder::<TListSet<u64>>(mode),
            abandoned_placeholder::<TList<u64>>(mode),
        ]
    });
}

/// A `TList` search passes over nodes equal to its element that it cannot
/// see (its own insert undone, another transaction's placeholder): the
/// rest of the run lies in *their* gaps. Here the transaction reads `x`
/// present, inserts a second `x` in an `or_else` branch that it rolls back
/// (the placeholder, linked before the committed `x`, stays until the
/// transaction ends), and another transaction removes the committed `x`,
/// whose unlink moves only the placeholder's gap. The search for `x` that
/// follows must not report it absent from a snapshot in which it was
/// present; with nothing written, the commit validates nothing else.
#[test]
fn a_search_past_an_invisible_duplicate_sees_a_removal_behind_it() {
    for mode in MODES {
        let list: &'static TList<u64> = Box::leak(Box::new(TList::new()));
        txmem::atomically(|tx| list.insert(tx, 5));
        let first = AtomicBool::new(true);
        let seen = TxOptions::new().opacity(mode).run(|tx| {
            let before = list.contains(tx, &5)?;
            tx.or_else(
                |tx| {
                    list.insert(tx, 5)?;
                    Err(tx.retry())
                },
                |_| Ok(()),
            )?;
            if first.swap(false, Ordering::SeqCst) {
                let other = thread::spawn(|| txmem::atomically(|tx| list.remove(tx, &5)));
                assert!(
                    other.join().unwrap(),
                    "{mode:?}: the committed 5 was removed"
                );
            }
            Ok((before, list.contains(tx, &5)?))
        });
        assert!(
            seen.0 == seen.1,
            "{mode:?}: the committed attempt saw 5 present, then absent ({seen:?})"
        );
        assert!(list.load_vec().is_empty(), "{mode:?}");
    }
}
