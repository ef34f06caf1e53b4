//! The per-thread transaction descriptor and its logs, the pool of descriptors, and the
//! thread's slot for its own.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use crossbeam_utils::CachePadded;

use crate::checkpoint::JmpBuf;
use crate::config::{self, MethodKind};
use crate::cxxrt::EhState;
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
    pub level: u32,
    pub jb: JmpBuf,
    pub redo: RedoLog,
    pub undo_len: usize,
    pub undo_data_len: usize,
    pub allocs_len: usize,
    pub frees_len: usize,
    pub commit_actions_len: usize,
    pub undo_actions_len: usize,
    pub eh_catch_count: u32,
}

pub(crate) type UserFn = unsafe extern "C" fn(*mut c_void);

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
    pub in_use: AtomicBool,
    /// This descriptor's owner id in locked orecs (`LOCKED | id`).
    pub lock_word: u64,
    /// Flat nesting depth; 0 outside a transaction.
    pub nesting: u32,
    pub props: u32,
    /// The outermost checkpoint.
    pub jb: JmpBuf,
    pub site: usize,
    /// The method running the transaction (serial when it runs serial).
    pub method: MethodKind,
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
    pub holds_hourglass: bool,
    /// Why the next restart must be serial, if it must.
    pub restart_serial: Option<Event>,
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

/// The thread's descriptor while it runs a transaction (its nesting above 0), else None.
#[inline(always)]
pub(crate) fn running() -> Option<&'static mut TxDesc> {
    let p = current_or_null();
    // SAFETY: the thread's own descriptor (leaked, so 'static); the ABI's entry points run
    // one at a time on their thread, and none keeps a reference to it past its return.
    let tx = unsafe { p.as_mut()? };
    (tx.nesting > 0).then_some(tx)
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
            method: config::get().method,
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

    /// True if `[addr, addr + len)` lies in a block this transaction allocated with
    /// `malloc` or `calloc` since its innermost cancellable level began: memory no other
    /// thread can reach (its address is published only by this transaction's writes, which
    /// others see at commit at the earliest), and freed if the level or the transaction is
    /// rolled back. A bulk write there (`memset`, `memcpy`) stores in place with no log: see
    /// [`TxDesc::refresh_logs`]. Only the last few allocations are looked at, the ones a
    /// transaction fills right after allocating them (memcached clears each new 1 MB slab
    /// page inside a transaction).
    pub fn is_captured(&self, addr: usize, len: usize) -> bool {
        const SCAN: usize = 4;
        let since = self.nested.last().map_or(0, |n| n.allocs_len);
        let end = addr.saturating_add(len);
        self.allocs[since..].iter().rev().take(SCAN).any(|b| {
            let lo = b.ptr as usize;
            b.size != 0 && addr >= lo && end <= lo + b.size
        })
    }

    /// After a store in place to `[addr, addr + len)` of captured memory (see
    /// [`TxDesc::is_captured`]), brings what the logs hold for those bytes up to date with
    /// memory: a buffered write of them, written back at commit, must not bring back an
    /// older value, and NOrec's logged values must still validate (a read there is served
    /// from the log). Linear in the logs' length; bulk writes only.
    pub fn refresh_logs(&mut self, addr: usize, len: usize) {
        let hi = addr + len;
        let load = |word: usize| {
            // SAFETY: `word` is an aligned word overlapping the captured range, so inside the
            // block's usable size (malloc's blocks are 16-byte aligned and their usable size a
            // multiple of 8 not below the size asked for); no other thread writes the block.
            unsafe { std::ptr::read(word as *const u64) }
        };
        if !self.redo.is_empty() {
            self.redo.refresh(addr, hi, load);
        }
        // A logged value is the whole word as memory held it; its bytes outside the range
        // are unchanged since (the block is this transaction's alone).
        for (w, v) in self.values.iter_mut() {
            if *w + 8 > addr && *w < hi {
                *v = load(*w);
            }
        }
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

    pub fn clear_logs(&mut self) {
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
}

/// A block the runtime frees later: at commit (a deferred free or `delete`) or at abort (an
/// allocation of the aborted transaction), with the function that matches its allocation.
#[derive(Clone, Copy)]
pub(crate) struct Block {
    /// The block; null once discarded (its owner changed: a thrown exception object).
    pub ptr: *mut c_void,
    /// The size: for a sized `operator delete`, and of a `malloc` or `calloc` block (for
    /// [`TxDesc::is_captured`]); 0 where not known.
    pub size: usize,
    pub release: unsafe extern "C" fn(*mut c_void, usize),
}

impl Block {
    /// Releases the block (nothing if it was discarded).
    ///
    /// # Safety
    /// The block must be live and owned by the caller.
    pub(crate) unsafe fn release(self) {
        if !self.ptr.is_null() {
            // SAFETY: `release` matches the function that allocated `ptr` (caller's contract).
            unsafe { (self.release)(self.ptr, self.size) }
        }
    }
}
