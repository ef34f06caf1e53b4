//! Generic `lock_api` code compiles and runs with the crate's raw locks.

use lock_api::{Mutex, MutexGuard, RawMutex, RawRwLock, RwLock};
use std::sync::Arc;
use txmem_elide::htm::{MockHtm, MockScript, NoHtm};
use txmem_elide::{ElidedMutex, ElidedRwLock, RawBiasedRwLock, RawElidedMutex, RawElidedRwLock};

fn transfer<R: RawMutex>(accounts: &Mutex<R, Vec<i64>>, from: usize, to: usize, amount: i64) {
    let mut g = accounts.lock();
    g[from] -= amount;
    g[to] += amount;
}

fn total<R: RawRwLock>(l: &RwLock<R, Vec<i64>>) -> i64 {
    l.read().iter().sum()
}

fn bump_all<R: RawRwLock>(l: &RwLock<R, Vec<i64>>) {
    for x in l.write().iter_mut() {
        *x += 1;
    }
}

fn generic_mutex_suite<R: RawMutex + Send + Sync + 'static>() {
    let accounts = Arc::new(Mutex::<R, Vec<i64>>::new(vec![100; 8]));
    std::thread::scope(|s| {
        for t in 0..2 {
            let accounts = &accounts;
            s.spawn(move || {
                for i in 0..2_000 {
                    transfer(accounts, (i + t) % 8, (i * 3 + 1) % 8, 1);
                }
            });
        }
    });
    assert_eq!(accounts.lock().iter().sum::<i64>(), 800);
    // Guard mapping and try_lock from lock_api.
    let first = MutexGuard::map(accounts.lock(), |v| &mut v[0]);
    assert!(accounts.try_lock().is_none());
    drop(first);
    assert!(accounts.try_lock().is_some());
    assert!(!accounts.is_locked());
}

fn generic_rwlock_suite<R: RawRwLock + Send + Sync + 'static>() {
    let l = RwLock::<R, Vec<i64>>::new(vec![0; 4]);
    bump_all(&l);
    assert_eq!(total(&l), 4);
    let r1 = l.read();
    let r2 = l.try_read().expect("shared with another reader");
    assert!(l.try_write().is_none());
    drop((r1, r2));
    assert!(l.try_write().is_some());
}

#[test]
fn raw_mutexes_work_in_generic_code() {
    generic_mutex_suite::<RawElidedMutex>();
    generic_mutex_suite::<RawElidedMutex<NoHtm>>();
}

#[test]
fn raw_rwlocks_work_in_generic_code() {
    generic_rwlock_suite::<RawElidedRwLock>();
    generic_rwlock_suite::<RawElidedRwLock<NoHtm>>();
    generic_rwlock_suite::<RawBiasedRwLock>();
}

#[test]
fn mock_backed_locks_work_in_generic_code() {
    MockHtm::install(MockScript::new());
    let m = Mutex::<RawElidedMutex<MockHtm>, Vec<i64>>::new(vec![5, 5]);
    transfer(&m, 0, 1, 2);
    assert_eq!(*m.lock(), [3, 7]);
    let l = RwLock::<RawElidedRwLock<MockHtm>, Vec<i64>>::new(vec![1, 2]);
    bump_all(&l);
    assert_eq!(total(&l), 5);
}

static GLOBAL: ElidedMutex<u64> = ElidedMutex::const_new(RawElidedMutex::new(), 0);
static GLOBAL_RW: ElidedRwLock<u64> = ElidedRwLock::const_new(RawElidedRwLock::new(), 7);

#[test]
fn statics_are_const_initialized() {
    *GLOBAL.lock() += 1;
    assert!(*GLOBAL.lock() >= 1);
    assert_eq!(*GLOBAL_RW.read(), 7);
}
