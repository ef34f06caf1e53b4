//! The per-thread transaction descriptor, the registry of descriptors, the serial gate, and
//! the paths that end a transaction (commit, rollback, restart, cancel).

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use crossbeam_utils::CachePadded;

use crate::abi::alloc::Block;
use crate::abi::begin::{longjmp, JmpBuf};
use crate::abi::cxx::EhState;
use crate::config::{self, Contention, MethodKind};
use crate::method::{self, AbortCause, Privatization};
use crate::redo::RedoLog;
use crate::stats::{Event, SiteStats};

// The action bits and code properties of GCC's TM ABI that the runtime uses.
pub(crate) const A_RUN_INSTRUMENTED: u32 = 0x01;
pub(crate) const A_RUN_UNINSTRUMENTED: u32 = 0x02;
pub(crate) const A_SAVE_LIVE: u32 = 0x04;
pub(crate) const A_RESTORE_LIVE: u32 = 0x08;
pub(crate) const A_ABORT: u32 = 0x10;
pub(crate) const PR_INSTRUMENTED: u32 = 0x0001;
pub(crate) const PR_UNINSTRUMENTED: u32 = 0x0002;
pub(crate) const PR_HAS_NO_ABORT: u32 = 0x0008;
pub(crate) const PR_DOES_GO_IRREVOCABLE: u32 = 0x0040;

/// A descriptor's `state` when it runs no transaction that others must wait for.
pub(crate) const INACTIVE: u64 = u64::MAX;

/// One undo-log entry: `len` old bytes of `addr`, stored at `off` in the undo data buffer.
#[derive(Clone, Copy)]
pub(crate) struct UndoEntry {
    pub addr: usize,
    pub off: usize,
    pub len: usize,
}

/// Where an inner transaction that may be cancelled started, so a cancel can return the logs
/// to that point (flat nesting otherwise).
pub(crate) struct Nested {
    level: u32,
    jb: JmpBuf,
    redo: RedoLog,
    undo_len: usize,
    undo_data_len: usize,
    allocs_len: usize,
    frees_len: usize,
    commit_actions_len: usize,
    undo_actions_len: usize,
    eh_catch_count: u32,
}

type UserFn = unsafe extern "C" fn(*mut c_void);

/// A thread's transaction descriptor. Descriptors are pooled (see [`current`]) and never freed,
/// so other threads may read `state` at any time.
pub(crate) struct TxDesc {
    /// `INACTIVE`, or the start version of the running (non-serial) transaction: the serial
    /// gate waits for every descriptor to be inactive, a committing writer waits for those
    /// with an older start version (privatization safety). On its own cache line: other
    /// threads poll it.
    pub state: CachePadded<AtomicU64>,
    /// While a writer waits out older transactions after its commit, its write version; else
    /// `INACTIVE`. A read-only transaction whose snapshot includes that commit waits for the
    /// wait to end before it returns (proxy privatization).
    pub quiescing: CachePadded<AtomicU64>,
    in_use: AtomicBool,
    /// This descriptor's owner id in locked orecs (`LOCKED | id`).
    pub lock_word: u64,
    /// Flat nesting depth; 0 outside a transaction.
    pub nesting: u32,
    pub props: u32,
    /// The outermost checkpoint.
    pub jb: JmpBuf,
    pub site: usize,
    pub method: method::Dispatch,
    /// True while running serial (holding the gate); `irrevocable` also forbids rollback.
    pub serial: bool,
    pub irrevocable: bool,
    pub start: u64,
    /// The version a serial writer stamps on orecs.
    pub serial_version: u64,
    /// `_ITM_getTransactionId`'s answer, drawn from a shared counter only when asked for
    /// (0 until then), so that starting a transaction touches no shared cache line.
    pub tx_id: u64,
    pub consecutive_aborts: u32,
    /// True while this transaction holds the hourglass closed.
    holds_hourglass: bool,
    /// Why the next restart must be serial, if it must.
    restart_serial: Option<Event>,
    /// The lowest address of this thread's stack (0 if unknown): stack below the checkpoint's
    /// stack pointer belongs to frames created inside the transaction and is accessed directly.
    pub stack_lo: usize,
    // Logs.
    pub reads: Vec<usize>,
    pub redo: RedoLog,
    /// NOrec: the words read and the values seen, and the sequence-lock value they held at.
    pub values: Vec<(usize, u64)>,
    pub seq: u64,
    /// Orecs this transaction holds locked, with the version each had before.
    pub locks: Vec<(usize, u64)>,
    /// Those of `locks` whose version before locking was newer than the start version: a
    /// read of them no longer validates.
    pub stale_locks: Vec<usize>,
    pub undo: Vec<UndoEntry>,
    pub undo_data: Vec<u8>,
    pub allocs: Vec<Block>,
    /// Exception objects `[start, end)` the transaction allocated and has not thrown (or
    /// freed) yet: private to it (see [`TxDesc::is_private`]).
    pub unthrown: Vec<(usize, usize)>,
    pub frees: Vec<Block>,
    pub commit_actions: Vec<(UserFn, *mut c_void)>,
    pub undo_actions: Vec<(UserFn, *mut c_void)>,
    pub nested: Vec<Nested>,
    /// C++ exception state (`abi/cxx.rs`).
    pub eh: EhState,
    pub stats: Mutex<HashMap<usize, SiteStats>>,
}

const MAX_THREADS: usize = 4096;
static DESCS: [AtomicPtr<TxDesc>; MAX_THREADS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_THREADS];
static NDESCS: AtomicUsize = AtomicUsize::new(0);
static REGISTER: Mutex<()> = Mutex::new(());

/// Every descriptor ever created (each lives for the rest of the process).
pub(crate) fn all_descs() -> impl Iterator<Item = &'static TxDesc> {
    let n = NDESCS.load(Ordering::Acquire);
    // SAFETY: slots below NDESCS hold pointers to leaked, never-freed descriptors, published
    // with Release before NDESCS was raised.
    DESCS[..n]
        .iter()
        .map(|p| unsafe { &*p.load(Ordering::Acquire) })
}

thread_local! {
    static RELEASE: ReleaseOnExit = const { ReleaseOnExit };
}

// The thread's descriptor pointer, in the initial-exec TLS model: one `%fs`-relative load, where
// a `thread_local!` in a shared library costs a call to `__tls_get_addr` on every barrier.
// (GCC's libitm keeps its descriptor the same way.) Initial-exec TLS lives in the static TLS
// block, which a preloaded or linked library always gets.
std::arch::global_asm!(
    ".section .tbss,\"awT\",@nobits",
    ".p2align 3",
    ".globl txmem_itm_current_desc",
    ".hidden txmem_itm_current_desc",
    ".type txmem_itm_current_desc,@object",
    ".size txmem_itm_current_desc, 8",
    "txmem_itm_current_desc:",
    ".zero 8",
    ".text",
);

/// The thread's descriptor, or null if it never began a transaction.
#[inline(always)]
pub(crate) fn current_or_null() -> *mut TxDesc {
    let p: *mut TxDesc;
    // SAFETY: loads this thread's 8-byte TLS slot defined above, through the GOT entry that
    // holds its offset from the thread pointer; nothing else is read or written.
    unsafe {
        std::arch::asm!(
            "movq txmem_itm_current_desc@GOTTPOFF(%rip), {p}",
            "movq %fs:({p}), {p}",
            p = out(reg) p,
            options(att_syntax, nostack, readonly, preserves_flags, pure),
        )
    };
    p
}

fn set_current(p: *mut TxDesc) {
    // SAFETY: stores to this thread's TLS slot, as `current_or_null` reads it.
    unsafe {
        std::arch::asm!(
            "movq txmem_itm_current_desc@GOTTPOFF(%rip), {t}",
            "movq {p}, %fs:({t})",
            p = in(reg) p,
            t = out(reg) _,
            options(att_syntax, nostack, preserves_flags),
        )
    };
}

/// Returns the thread's descriptor to the pool when the thread exits.
struct ReleaseOnExit;
impl Drop for ReleaseOnExit {
    fn drop(&mut self) {
        let p = current_or_null();
        if !p.is_null() {
            set_current(std::ptr::null_mut());
            // SAFETY: the descriptor is leaked, so the pointer is valid; the thread is past
            // its last transaction, and no other thread uses a descriptor that is in use, so
            // this is the only reference.
            unsafe { (*p).in_use.store(false, Ordering::Release) };
        }
    }
}

/// The thread's descriptor, taken from the pool or created on first use.
pub(crate) fn current() -> *mut TxDesc {
    let p = current_or_null();
    if !p.is_null() {
        return p;
    }
    let p = acquire_desc();
    set_current(p);
    // A thread inside its own TLS destructors keeps the descriptor until it exits.
    let _ = RELEASE.try_with(|_| {});
    // SAFETY: `p` was just acquired for this thread only.
    unsafe { (*p).stack_lo = stack_low() };
    p
}

fn acquire_desc() -> *mut TxDesc {
    for d in all_descs() {
        if d.in_use
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return d as *const TxDesc as *mut TxDesc;
        }
    }
    let _guard = REGISTER.lock().unwrap_or_else(|e| e.into_inner());
    let n = NDESCS.load(Ordering::Relaxed);
    if n == MAX_THREADS {
        eprintln!("txmem-itm: more than {MAX_THREADS} threads at once use transactions");
        std::process::abort();
    }
    let d = Box::leak(Box::new(TxDesc::new(n as u64 + 1)));
    DESCS[n].store(d, Ordering::Release);
    NDESCS.store(n + 1, Ordering::Release);
    d
}

fn stack_low() -> usize {
    // SAFETY: pthread_getattr_np fills `attr` for the calling thread; the attribute object is
    // destroyed on every path after success, and the out-pointers are valid locals.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return 0;
        }
        let mut addr: *mut c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let rc = libc::pthread_attr_getstack(&attr, &mut addr, &mut size);
        libc::pthread_attr_destroy(&mut attr);
        if rc != 0 {
            0
        } else {
            addr as usize
        }
    }
}

impl TxDesc {
    fn new(id: u64) -> TxDesc {
        TxDesc {
            state: CachePadded::new(AtomicU64::new(INACTIVE)),
            quiescing: CachePadded::new(AtomicU64::new(INACTIVE)),
            in_use: AtomicBool::new(true),
            lock_word: crate::orec::LOCKED | id,
            nesting: 0,
            props: 0,
            jb: JmpBuf::default(),
            site: 0,
            method: method::default_method(),
            serial: false,
            irrevocable: false,
            start: 0,
            serial_version: 0,
            tx_id: 0,
            consecutive_aborts: 0,
            holds_hourglass: false,
            restart_serial: None,
            stack_lo: 0,
            reads: Vec::new(),
            redo: RedoLog::default(),
            values: Vec::new(),
            seq: 0,
            locks: Vec::new(),
            stale_locks: Vec::new(),
            undo: Vec::new(),
            undo_data: Vec::new(),
            allocs: Vec::new(),
            unthrown: Vec::new(),
            frees: Vec::new(),
            commit_actions: Vec::new(),
            undo_actions: Vec::new(),
            nested: Vec::new(),
            eh: EhState::new(),
            stats: Mutex::new(HashMap::new()),
        }
    }

    /// True if `addr` lies in stack frames created since the transaction began: such memory
    /// is private to this transaction and dead after it, so it needs no logging.
    #[inline]
    pub fn is_tx_local_stack(&self, addr: usize) -> bool {
        addr >= self.stack_lo && addr < self.jb.rsp
    }

    /// True if only this transaction can reach `addr`, so a write barrier stores to it in
    /// place with no log: stack frames created since the transaction began, and exception
    /// objects it allocated and has not thrown. Both are dead if it aborts (the objects are
    /// freed).
    ///
    /// An exception object must be written in place, in program order, for two reasons: the
    /// C++ runtime reads it before the transaction commits (a thrown pointer's value, a
    /// vtable pointer, while it looks for a handler), and libstdc++'s transactional
    /// constructors of its exception classes write it both through barriers and directly,
    /// expecting the direct store to win. A redo log would reorder those writes.
    ///
    /// Read barriers test only the stack, to keep the common read one test shorter: a read of
    /// an unthrown object takes the method's ordinary path, which finds nothing of it in the
    /// logs and reads memory. (NOrec then logs the value; if the transaction overwrites it in
    /// place and must revalidate, it aborts needlessly, and runs again.)
    ///
    /// Not undone: a write to an object allocated before an inner transaction that is then
    /// cancelled (g++ allocates, constructs and throws in one expression, so only an inner
    /// transaction inside the exception's constructor could do that).
    #[inline]
    pub fn is_private(&self, addr: usize) -> bool {
        self.is_tx_local_stack(addr) || (!self.unthrown.is_empty() && self.is_unthrown(addr))
    }

    #[cold]
    #[inline(never)]
    fn is_unthrown(&self, addr: usize) -> bool {
        self.unthrown
            .iter()
            .any(|&(lo, hi)| addr >= lo && addr < hi)
    }

    pub fn record(&self, event: Event) {
        if config::get().stats {
            let mut map = self.stats.lock().unwrap_or_else(|e| e.into_inner());
            map.entry(self.site).or_default().add(event);
        }
    }

    /// Logs the current `len` bytes at `addr` so a rollback restores them.
    pub fn log_undo(&mut self, addr: usize, len: usize) {
        if len == 0 || self.is_private(addr) {
            return;
        }
        let off = self.undo_data.len();
        // SAFETY: the caller (a barrier or logging call from transactional code) hands an
        // address the program may read `len` bytes at.
        let old = unsafe { std::slice::from_raw_parts(addr as *const u8, len) };
        self.undo_data.extend_from_slice(old);
        self.undo.push(UndoEntry { addr, off, len });
    }

    /// Restores the undo log back to `len` entries, newest first.
    pub fn undo_to(&mut self, len: usize, data_len: usize) {
        while self.undo.len() > len {
            let e = self.undo.pop().expect("length checked");
            // Entries in frames made since the checkpoint are dead after the jump back (and
            // restoring them could overwrite the frames running this rollback).
            if self.is_tx_local_stack(e.addr) {
                continue;
            }
            // SAFETY: the entry was logged from a valid address of `e.len` bytes that the
            // transaction writes; while it runs, conflicting writers are excluded (serial) or
            // never write there in place (write-back).
            unsafe {
                std::ptr::copy_nonoverlapping(
                    self.undo_data.as_ptr().add(e.off),
                    e.addr as *mut u8,
                    e.len,
                )
            };
        }
        self.undo_data.truncate(data_len);
    }

    fn clear_logs(&mut self) {
        self.reads.clear();
        self.redo.clear();
        self.values.clear();
        self.locks.clear();
        self.stale_locks.clear();
        self.undo.clear();
        self.undo_data.clear();
        self.allocs.clear();
        self.unthrown.clear();
        self.frees.clear();
        self.commit_actions.clear();
        self.undo_actions.clear();
        self.nested.clear();
        self.eh = EhState::new();
    }

    /// Undoes everything the transaction did, outermost level.
    fn rollback_all(&mut self) {
        self.method.rollback(self);
        self.undo_to(0, 0);
        while let Some((f, arg)) = self.undo_actions.pop() {
            // SAFETY: the program registered `f` with `arg` as an undo action.
            unsafe { f(arg) };
        }
        crate::abi::cxx::rollback(self);
        for b in self.allocs.drain(..) {
            // SAFETY: allocated in this aborted transaction and never visible outside it.
            unsafe { b.release() };
        }
        self.clear_logs();
    }
}

// ---------------------------------------------------------------- the serial gate

/// Held by the one serial transaction, or one waiting to become serial. Ordinary transactions
/// only read it (after publishing their `state`), so it costs nothing while nobody goes serial.
static SERIAL_LOCK: AtomicBool = AtomicBool::new(false);

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
fn enter_ordinary(tx: &TxDesc) -> u64 {
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
        if !SERIAL_LOCK.load(Ordering::Relaxed) {
            return start;
        }
        tx.state.store(INACTIVE, Ordering::SeqCst);
        let mut round = 0;
        while SERIAL_LOCK.load(Ordering::Acquire) {
            pause(&mut round);
        }
    }
}

/// Takes the gate and waits until no other transaction runs. `tx.state` must be INACTIVE.
pub(crate) fn enter_serial(tx: &TxDesc) {
    let mut round = 0;
    while SERIAL_LOCK
        .compare_exchange_weak(false, true, Ordering::SeqCst, Ordering::Relaxed)
        .is_err()
    {
        pause(&mut round);
    }
    drain_others(tx);
}

/// Takes the gate only if it is free, without waiting: for a running transaction, which must
/// not wait for the gate while others may wait for it.
fn try_enter_serial(tx: &TxDesc) -> bool {
    if SERIAL_LOCK
        .compare_exchange(false, true, Ordering::SeqCst, Ordering::Relaxed)
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

fn leave_serial() {
    SERIAL_LOCK.store(false, Ordering::Release);
}

/// Waits until every transaction that started before `version` has finished or moved its
/// start past it, so memory a committed writer privatized is no longer touched by them.
/// `tx.quiescing` holds `version` meanwhile (set before the commit became visible).
fn quiesce(tx: &TxDesc, version: u64) {
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
fn quiesce_proxy(tx: &TxDesc, start: u64) {
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

// ---------------------------------------------------------------- starting

static NEXT_TX_ID: AtomicU64 = AtomicU64::new(2);

/// The running transaction's id (ids start at 2: libitm answers 1 outside a transaction).
pub(crate) fn transaction_id(tx: &mut TxDesc) -> u64 {
    if tx.tx_id == 0 {
        tx.tx_id = NEXT_TX_ID.fetch_add(1, Ordering::Relaxed);
    }
    tx.tx_id
}

/// Starts (or restarts) the outermost transaction in the mode its history asks for, and
/// returns the code-path bits of the action.
fn start_outermost(tx: &mut TxDesc) -> u32 {
    let cfg = config::get();
    let props = tx.props;
    let must_serial_irr = props & PR_INSTRUMENTED == 0 || props & PR_DOES_GO_IRREVOCABLE != 0;
    let reason = tx.restart_serial.take();
    if must_serial_irr || reason.is_some() || cfg.method == MethodKind::Serial {
        if must_serial_irr {
            tx.record(Event::StartedIrrevocable);
        } else if let Some(r) = reason {
            tx.record(r);
        } else {
            tx.record(Event::SerialMethod);
        }
        tx.method = method::serial();
        tx.state.store(INACTIVE, Ordering::SeqCst);
        enter_serial(tx);
        tx.serial = true;
        tx.irrevocable = must_serial_irr || reason == Some(Event::SwitchedMidFlight);
        tx.serial_version = crate::orec::CLOCK.fetch_add(1, Ordering::AcqRel) + 1;
        if tx.irrevocable && props & PR_UNINSTRUMENTED != 0 {
            return A_RUN_UNINSTRUMENTED;
        }
        return A_RUN_INSTRUMENTED;
    }
    tx.method = method::default_method();
    tx.serial = false;
    tx.irrevocable = false;
    tx.start = enter_ordinary(tx);
    let method = tx.method;
    method.begin(tx);
    A_RUN_INSTRUMENTED
}

/// `_ITM_beginTransaction` after the checkpoint was taken into `jb`.
pub(crate) fn begin(props: u32, jb: &JmpBuf) -> u32 {
    // SAFETY: the thread's own descriptor; no other reference to it is live in this thread.
    let tx = unsafe { &mut *current() };
    if tx.nesting > 0 {
        tx.nesting += 1;
        if props & PR_HAS_NO_ABORT == 0 && !tx.irrevocable {
            // The inner transaction may cancel: remember where its logs start.
            let n = Nested {
                level: tx.nesting,
                jb: jb.copy_word_by_word(),
                redo: tx.redo.clone(),
                undo_len: tx.undo.len(),
                undo_data_len: tx.undo_data.len(),
                allocs_len: tx.allocs.len(),
                frees_len: tx.frees.len(),
                commit_actions_len: tx.commit_actions.len(),
                undo_actions_len: tx.undo_actions.len(),
                eh_catch_count: tx.eh.catch_count,
            };
            tx.nested.push(n);
            return A_RUN_INSTRUMENTED | A_SAVE_LIVE;
        }
        if tx.irrevocable && props & PR_UNINSTRUMENTED != 0 {
            return A_RUN_UNINSTRUMENTED;
        }
        return A_RUN_INSTRUMENTED;
    }
    tx.nesting = 1;
    tx.props = props;
    tx.jb = jb.copy_word_by_word();
    tx.site = jb.rip;
    tx.consecutive_aborts = 0;
    tx.restart_serial = None;
    tx.tx_id = 0;
    tx.record(Event::Begin);
    start_outermost(tx) | A_SAVE_LIVE
}

// ---------------------------------------------------------------- ending

fn finish(tx: &mut TxDesc) {
    tx.nesting = 0;
    // Release, not SeqCst: whoever waits for this descriptor (the gate, a quiescing writer)
    // only needs to see it eventually, after the transaction's accesses; a full fence here
    // would wait for the write-back's stores to drain.
    tx.state.store(INACTIVE, Ordering::Release);
    if tx.serial {
        tx.serial = false;
        tx.irrevocable = false;
        leave_serial();
    }
}

/// Reopens the hourglass if `tx` closed it (it has finished).
fn open_hourglass(tx: &mut TxDesc) {
    if tx.holds_hourglass {
        tx.holds_hourglass = false;
        HOURGLASS.store(0, Ordering::Release);
    }
}

/// `_ITM_commitTransaction`.
pub(crate) fn commit(tx: &mut TxDesc) {
    if tx.nesting > 1 {
        if tx.nested.last().is_some_and(|n| n.level == tx.nesting) {
            tx.nested.pop();
        }
        tx.nesting -= 1;
        return;
    }
    let privatization = match tx.method.commit(tx) {
        Ok(p) => p,
        Err(cause) => abort_and_restart(tx, cause),
    };
    finish(tx);
    open_hourglass(tx);
    match privatization {
        Privatization::Safe => {}
        Privatization::Writer(v) => quiesce(tx, v),
        Privatization::Reader(start) => quiesce_proxy(tx, start),
    }
    for b in tx.frees.drain(..) {
        // SAFETY: the program freed the block inside the committed transaction; the free was
        // deferred to here, after quiescence, so no transaction still reads the block.
        unsafe { b.release() };
    }
    let actions = std::mem::take(&mut tx.commit_actions);
    tx.clear_logs();
    tx.record(Event::Commit);
    for (f, arg) in actions.iter() {
        // SAFETY: registered by the program as a commit action with this argument.
        unsafe { f(*arg) };
    }
    // Keep the vector's capacity for the next transaction.
    tx.commit_actions = actions;
    tx.commit_actions.clear();
}

/// Rolls the whole transaction back and jumps to its checkpoint to run it again.
pub(crate) fn abort_and_restart(tx: &mut TxDesc, cause: AbortCause) -> ! {
    if tx.irrevocable {
        fatal("an irrevocable transaction was asked to abort");
    }
    tx.record(Event::Abort(cause));
    tx.rollback_all();
    finish(tx);
    tx.consecutive_aborts += 1;
    let cfg = config::get();
    if cause == AbortCause::Upgrade {
        tx.restart_serial = Some(Event::SwitchedMidFlight);
    } else if tx.consecutive_aborts >= cfg.serialize_after {
        tx.restart_serial = Some(Event::AfterAborts);
    } else if cfg.contention != Contention::None {
        // Back off a little, longer after each abort, so that two transactions that keep
        // conflicting stop meeting at the same point.
        let spins = 1u32 << tx.consecutive_aborts.min(10);
        for _ in 0..spins {
            std::hint::spin_loop();
        }
        if cfg.contention == Contention::Hourglass
            && tx.consecutive_aborts >= cfg.hourglass_after
            && !tx.holds_hourglass
            && HOURGLASS
                .compare_exchange(0, tx.lock_word, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            tx.holds_hourglass = true;
            tx.record(Event::HourglassClosed);
        }
    }
    tx.nesting = 1;
    let action = start_outermost(tx) | A_RESTORE_LIVE;
    let jb = tx.jb;
    jump(&jb, action)
}

/// `_ITM_abortTransaction`: a cancel of the innermost (or, with `outer`, the outermost)
/// transaction. The cancelled transaction's code is skipped, not rerun.
pub(crate) fn cancel(tx: &mut TxDesc, outer: bool) -> ! {
    if tx.nesting == 0 {
        fatal("__transaction_cancel outside a transaction");
    }
    if tx.irrevocable {
        fatal("__transaction_cancel in an irrevocable transaction");
    }
    if !outer && tx.nesting > 1 {
        if let Some(n) = tx.nested.pop() {
            if n.level == tx.nesting {
                tx.redo = n.redo;
                tx.undo_to(n.undo_len, n.undo_data_len);
                while tx.undo_actions.len() > n.undo_actions_len {
                    let (f, arg) = tx.undo_actions.pop().expect("length checked");
                    // SAFETY: registered by the program as an undo action.
                    unsafe { f(arg) };
                }
                crate::abi::cxx::cancel_inner(tx, n.eh_catch_count);
                for b in tx.allocs.drain(n.allocs_len..) {
                    // SAFETY: allocated inside the cancelled inner transaction only.
                    unsafe { b.release() };
                }
                if !tx.unthrown.is_empty() {
                    // Exception objects just freed are no longer private memory.
                    let allocs = &tx.allocs;
                    tx.unthrown
                        .retain(|&(lo, _)| allocs.iter().any(|b| b.ptr as usize == lo));
                }
                tx.frees.truncate(n.frees_len);
                tx.commit_actions.truncate(n.commit_actions_len);
                tx.nesting = n.level - 1;
                let jb = n.jb;
                jump(&jb, A_ABORT | A_RESTORE_LIVE)
            }
            tx.nested.push(n);
        }
        fatal("__transaction_cancel in an inner transaction that was compiled as unable to cancel");
    }
    tx.record(Event::Cancel);
    tx.rollback_all();
    finish(tx);
    open_hourglass(tx);
    let jb = tx.jb;
    jump(&jb, A_ABORT | A_RESTORE_LIVE)
}

/// The one place that leaves Rust code by a jump.
fn jump(jb: &JmpBuf, action: u32) -> ! {
    let jb = *jb;
    // SAFETY: `jb` is a checkpoint taken by `_ITM_beginTransaction` in a frame that is still
    // live (the transaction's code runs inside it). Every frame between here and there is
    // either this crate's (which hold no values with destructors at their call into this
    // function: the callers above pass only references and copies) or the program's C code,
    // which expects exactly this control transfer from the TM ABI.
    unsafe { longjmp(&jb, action) }
}

/// Reports a misuse of the ABI and aborts the process.
pub(crate) fn fatal(msg: &str) -> ! {
    eprintln!("txmem-itm: {msg}");
    std::process::abort()
}

/// Switches the running transaction to serial irrevocable mode (relaxed code reaching unsafe
/// code, or a function without a transactional clone).
pub(crate) fn go_irrevocable(tx: &mut TxDesc) {
    if tx.nesting == 0 || tx.irrevocable {
        return;
    }
    if tx.serial {
        // Already alone: only the right to roll back is given up.
        tx.irrevocable = true;
        tx.undo.clear();
        tx.undo_data.clear();
        tx.nested.clear();
        tx.record(Event::SwitchedMidFlight);
        return;
    }
    // Upgrade in place only if the gate is free. Waiting for it while still active could
    // deadlock (its holder waits for us to finish), and waiting inactive would let a serial
    // transaction run under our feet: it may write without barriers, which neither our read
    // set nor (eager) our undo log would notice. So if the gate is busy, run again serial.
    if !try_enter_serial(tx) {
        abort_and_restart(tx, AbortCause::Upgrade);
    }
    tx.serial = true;
    if !tx.method.validate(tx) {
        // Someone committed over what we read: run again, serial from the start.
        abort_and_restart(tx, AbortCause::Upgrade);
    }
    tx.serial_version = crate::orec::CLOCK.fetch_add(1, Ordering::AcqRel) + 1;
    tx.method.write_back_serial(tx);
    tx.method = method::serial();
    tx.irrevocable = true;
    tx.undo.clear();
    tx.undo_data.clear();
    tx.nested.clear();
    tx.record(Event::SwitchedMidFlight);
}
