//! The load and store barriers: `_ITM_{R,RaR,RaW,RfW}<T>`, `_ITM_{W,WaR,WaW}<T>` and the
//! logging barriers `_ITM_L<T>` for every type of the ABI.
//!
//! All kinds of a size share one implementation. Of the hints, only "read for write" (`RfW`)
//! changes what an algorithm does: the eager method locks the word at once rather than
//! validating a read it would lock a moment later. "After read" and "after write" save nothing
//! here: a word's own lock or its redo entry is already the first thing a barrier looks at,
//! behind a one-bit filter. Types Rust can pass
//! by value (integers, `float`, `double` and their complex forms, which the x86-64 ABI passes
//! like a struct of two) are Rust functions made by `barriers!`. `long double` (x87 `st0`),
//! its complex form (`st0`/`st1`), and the vector types `__m64`/`__m128`/`__m256` (`xmm0`/
//! `ymm0`) have no Rust type with that calling convention, so small naked assembly stubs move the
//! value between its register and a buffer and call the byte-wise functions below.

use std::mem::MaybeUninit;

use crate::redo::byte_mask;
use crate::tx::desc::{running, TxDesc};
use crate::tx::lifecycle;

/// Reads `len` bytes at `addr` transactionally into `dst`.
///
/// # Safety
/// `[addr, addr+len)` must be readable by the program and `dst` writable for `len` bytes.
pub(crate) unsafe fn read_bytes(addr: usize, dst: *mut u8, len: usize) {
    let tx = match running() {
        Some(tx) if !tx.serial && !tx.is_tx_local_stack(addr) => tx,
        _ => {
            // SAFETY: per the contract; alone (serial), outside a transaction, or in a frame
            // private to the transaction, so the memory is read as it is.
            unsafe { std::ptr::copy(addr as *const u8, dst, len) };
            return;
        }
    };
    for (word, off, n, pos) in pieces(addr, len) {
        let val = match tx.method.read_word(tx, word) {
            Ok(v) => v,
            Err(cause) => lifecycle::abort_and_restart(tx, cause),
        };
        let bytes = val.to_le_bytes();
        // SAFETY: `dst` has room for `len` bytes and `pos + n <= len`.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr().add(off), dst.add(pos), n) };
    }
}

/// The aligned words covering `[addr, addr+len)`: for each, its address,
/// where the range starts in it, how many of the range's bytes it holds,
/// and their position in the range. (A plain iterator: nothing to drop
/// when an abort jumps over the loop.)
fn pieces(addr: usize, len: usize) -> impl Iterator<Item = (usize, usize, usize, usize)> {
    let end = addr + len;
    let mut a = addr;
    std::iter::from_fn(move || {
        if a >= end {
            return None;
        }
        let word = a & !7;
        let off = a - word;
        let n = (8 - off).min(end - a);
        let piece = (word, off, n, a - addr);
        a += n;
        Some(piece)
    })
}

/// Writes `len` bytes from `src` to `addr` transactionally.
///
/// # Safety
/// `[addr, addr+len)` must be writable by the program and `src` readable for `len` bytes.
pub(crate) unsafe fn write_bytes(addr: usize, src: *const u8, len: usize) {
    let Some(tx) = running() else {
        // SAFETY: per the contract; outside a transaction a barrier is a plain store.
        unsafe { std::ptr::copy(src, addr as *mut u8, len) };
        return;
    };
    if tx.is_private(addr) {
        // SAFETY: per the contract; the memory is private to the transaction and dead if it
        // aborts, so nothing needs logging.
        unsafe { std::ptr::copy(src, addr as *mut u8, len) };
        return;
    }
    if tx.serial {
        if !tx.irrevocable {
            tx.log_undo(addr, len);
        }
        crate::orec::stamp(addr, len, tx.serial_version);
        // SAFETY: per the contract; the gate is held, so the store is in place.
        unsafe { std::ptr::copy(src, addr as *mut u8, len) };
        return;
    }
    for (word, off, n, pos) in pieces(addr, len) {
        let mut bytes = [0u8; 8];
        // SAFETY: `src` holds `len` bytes and `pos + n <= len`.
        unsafe { std::ptr::copy_nonoverlapping(src.add(pos), bytes.as_mut_ptr().add(off), n) };
        let mask = byte_mask(off, n);
        if let Err(cause) = tx
            .method
            .write_word(tx, word, u64::from_le_bytes(bytes), mask)
        {
            lifecycle::abort_and_restart(tx, cause);
        }
    }
}

/// `_ITM_L*`: saves the current bytes so an abort restores them (the program then stores to
/// them without a barrier).
///
/// # Safety
/// `[addr, addr+len)` must be readable and writable by the program.
pub(crate) unsafe fn log_bytes(addr: usize, len: usize) {
    if let Some(tx) = running() {
        if !tx.irrevocable {
            tx.log_undo(addr, len);
        }
    }
}

/// True if a `T` at `addr` lies inside one aligned word: the common case, served by one word
/// operation with a constant-size copy instead of the byte-range loop.
#[inline(always)]
fn in_one_word<T>(addr: usize) -> bool {
    std::mem::size_of::<T>() <= 8 && (addr & 7) + std::mem::size_of::<T>() <= 8
}

/// A read the method's fast path did not serve: the whole algorithm, out of line so that the
/// barriers' fast path keeps few registers live.
#[inline(never)]
fn read_word_slow(tx: &mut TxDesc, word: usize, for_write: bool) -> u64 {
    let val = if for_write {
        tx.method.read_for_write(tx, word)
    } else {
        tx.method.read_word(tx, word)
    };
    match val {
        Ok(v) => v,
        Err(cause) => lifecycle::abort_and_restart(tx, cause),
    }
}

/// Reads a `T` at `p`; `for_write` is the `RfW` hint (the program writes it next).
#[inline(always)]
unsafe fn read_value<T: Copy>(p: *const T, for_write: bool) -> T {
    let addr = p as usize;
    if in_one_word::<T>(addr) {
        if let Some(tx) = running() {
            if !tx.serial && !tx.is_tx_local_stack(addr) {
                let word = addr & !7;
                let fast = if for_write {
                    None
                } else {
                    tx.method.fast_read(tx, word)
                };
                let val = match fast {
                    Some(v) => v,
                    None => read_word_slow(tx, word, for_write),
                };
                let bytes = val.to_le_bytes();
                // SAFETY: `addr - word + size_of::<T>() <= 8`, so the read stays in `bytes`;
                // every T here is plain data, valid for any bytes.
                return unsafe {
                    std::ptr::read_unaligned(bytes.as_ptr().add(addr - word) as *const T)
                };
            }
        }
    }
    let mut v = MaybeUninit::<T>::uninit();
    // SAFETY: `p` points at a readable T (the ABI's contract with compiled code); the buffer
    // is fully written before it is assumed initialised, and every type here is plain data.
    unsafe {
        read_bytes(
            p as usize,
            v.as_mut_ptr() as *mut u8,
            std::mem::size_of::<T>(),
        );
        v.assume_init()
    }
}

#[inline(always)]
unsafe fn write_value<T: Copy>(p: *mut T, v: T) {
    let addr = p as usize;
    if in_one_word::<T>(addr) {
        if let Some(tx) = running() {
            if !tx.serial && !tx.is_private(addr) {
                let word = addr & !7;
                let off = addr - word;
                let mut bytes = [0u8; 8];
                // SAFETY: `off + size_of::<T>() <= 8`, so the write stays in `bytes`.
                unsafe { std::ptr::write_unaligned(bytes.as_mut_ptr().add(off) as *mut T, v) };
                let mask = byte_mask(off, std::mem::size_of::<T>());
                if let Err(cause) = tx
                    .method
                    .write_word(tx, word, u64::from_le_bytes(bytes), mask)
                {
                    lifecycle::abort_and_restart(tx, cause);
                }
                return;
            }
        }
    }
    // SAFETY: `p` points at a writable T; `v` is a local T.
    unsafe {
        write_bytes(
            p as usize,
            &v as *const T as *const u8,
            std::mem::size_of::<T>(),
        )
    }
}

/// `float _Complex`: passed and returned like this struct (in one SSE register).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ComplexF {
    re: f32,
    im: f32,
}

/// `double _Complex`: passed and returned like this struct (in two SSE registers).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ComplexD {
    re: f64,
    im: f64,
}

/// Makes the seven barriers and the logging barrier of one type.
macro_rules! barriers {
    ($t:ty: $r:ident $rar:ident $raw:ident $rfw:ident / $w:ident $war:ident $waw:ident / $l:ident) => {
        barriers!(@read $t, $r, false);
        barriers!(@read $t, $rar, false);
        barriers!(@read $t, $raw, false);
        barriers!(@read $t, $rfw, true);
        barriers!(@write $t, $w);
        barriers!(@write $t, $war);
        barriers!(@write $t, $waw);
        #[no_mangle]
        unsafe extern "C" fn $l(p: *const $t) {
            // SAFETY: compiled code passes the address of a live object of this type.
            unsafe { log_bytes(p as usize, std::mem::size_of::<$t>()) }
        }
    };
    (@read $t:ty, $name:ident, $for_write:literal) => {
        #[no_mangle]
        unsafe extern "C" fn $name(p: *const $t) -> $t {
            // SAFETY: compiled code passes the address of a live object of this type.
            unsafe { read_value(p, $for_write) }
        }
    };
    (@write $t:ty, $name:ident) => {
        #[no_mangle]
        unsafe extern "C" fn $name(p: *mut $t, v: $t) {
            // SAFETY: compiled code passes the address of a live object of this type.
            unsafe { write_value(p, v) }
        }
    };
}

barriers!(u8: _ITM_RU1 _ITM_RaRU1 _ITM_RaWU1 _ITM_RfWU1 / _ITM_WU1 _ITM_WaRU1 _ITM_WaWU1 / _ITM_LU1);
barriers!(u16: _ITM_RU2 _ITM_RaRU2 _ITM_RaWU2 _ITM_RfWU2 / _ITM_WU2 _ITM_WaRU2 _ITM_WaWU2 / _ITM_LU2);
barriers!(u32: _ITM_RU4 _ITM_RaRU4 _ITM_RaWU4 _ITM_RfWU4 / _ITM_WU4 _ITM_WaRU4 _ITM_WaWU4 / _ITM_LU4);
barriers!(u64: _ITM_RU8 _ITM_RaRU8 _ITM_RaWU8 _ITM_RfWU8 / _ITM_WU8 _ITM_WaRU8 _ITM_WaWU8 / _ITM_LU8);
barriers!(f32: _ITM_RF _ITM_RaRF _ITM_RaWF _ITM_RfWF / _ITM_WF _ITM_WaRF _ITM_WaWF / _ITM_LF);
barriers!(f64: _ITM_RD _ITM_RaRD _ITM_RaWD _ITM_RfWD / _ITM_WD _ITM_WaRD _ITM_WaWD / _ITM_LD);
barriers!(ComplexF: _ITM_RCF _ITM_RaRCF _ITM_RaWCF _ITM_RfWCF / _ITM_WCF _ITM_WaRCF _ITM_WaWCF / _ITM_LCF);
barriers!(ComplexD: _ITM_RCD _ITM_RaRCD _ITM_RaWCD _ITM_RfWCD / _ITM_WCD _ITM_WaRCD _ITM_WaWCD / _ITM_LCD);

/// Logging barriers of the register-passed types: only an address and a size.
macro_rules! log_only {
    ($($name:ident $len:literal),*) => {$(
        #[no_mangle]
        unsafe extern "C" fn $name(p: *const u8) {
            // SAFETY: compiled code passes the address of a live object of this size.
            unsafe { log_bytes(p as usize, $len) }
        }
    )*};
}
log_only!(_ITM_LE 16, _ITM_LCE 32, _ITM_LM64 8, _ITM_LM128 16, _ITM_LM256 32);

/// `_ITM_LB`: logs an arbitrary block.
#[no_mangle]
unsafe extern "C" fn _ITM_LB(p: *const u8, len: usize) {
    // SAFETY: compiled code passes a live block of `len` bytes.
    unsafe { log_bytes(p as usize, len) }
}

extern "C" fn read_from_asm(src: *const u8, dst: *mut u8, len: usize) {
    // SAFETY: the stubs pass the program's pointer and a buffer on their stack of `len` bytes.
    unsafe { read_bytes(src as usize, dst, len) }
}

extern "C" fn write_from_asm(dst: *mut u8, src: *const u8, len: usize) {
    // SAFETY: the stubs pass the program's pointer and the value's bytes (`len` of them).
    unsafe { write_bytes(dst as usize, src, len) }
}

// SAFETY (the naked stubs below): each body is assembly only and keeps the System V contract
// of the C prototype it implements: a 40-byte frame keeps the stack 16-byte aligned at the call,
// only caller-saved registers (rsi, rdx, and the return registers) are changed, and the value
// moves between its ABI location (st0/st1, xmm0/ymm0, or the caller's stack argument area)
// and a buffer of exactly `len` bytes.

/// Read stubs: read `len` bytes into a stack buffer, then load the return register(s).
macro_rules! asm_reads {
    ($len:literal, $load:literal, $($name:ident)*) => {$(
        #[unsafe(naked)]
        #[no_mangle]
        extern "C" fn $name() {
            std::arch::naked_asm!(
                ".cfi_startproc",
                "sub rsp, 40", ".cfi_adjust_cfa_offset 40",
                "mov rsi, rsp", concat!("mov edx, ", $len),
                "call {read}",
                $load,
                "add rsp, 40", ".cfi_adjust_cfa_offset -40",
                "ret",
                ".cfi_endproc",
                read = sym read_from_asm,
            )
        }
    )*};
}

/// Write stubs for values passed in a vector register: spill it to the stack first.
macro_rules! asm_writes_reg {
    ($len:literal, $store:literal, $($name:ident)*) => {$(
        #[unsafe(naked)]
        #[no_mangle]
        extern "C" fn $name() {
            std::arch::naked_asm!(
                ".cfi_startproc",
                "sub rsp, 40", ".cfi_adjust_cfa_offset 40",
                $store,
                "mov rsi, rsp", concat!("mov edx, ", $len),
                "call {write}",
                "add rsp, 40", ".cfi_adjust_cfa_offset -40",
                "ret",
                ".cfi_endproc",
                write = sym write_from_asm,
            )
        }
    )*};
}

/// Write stubs for x87 values, which the caller passes in memory just above the return address.
macro_rules! asm_writes_mem {
    ($len:literal, $($name:ident)*) => {$(
        #[unsafe(naked)]
        #[no_mangle]
        extern "C" fn $name() {
            std::arch::naked_asm!(
                "lea rsi, [rsp + 8]", concat!("mov edx, ", $len),
                "jmp {write}",
                write = sym write_from_asm,
            )
        }
    )*};
}

asm_reads!(16, "fld tbyte ptr [rsp]", _ITM_RE _ITM_RaRE _ITM_RaWE _ITM_RfWE);
// The real part must end in st0 and the imaginary part in st1: push the imaginary one first.
asm_reads!(32, "fld tbyte ptr [rsp + 16]\nfld tbyte ptr [rsp]", _ITM_RCE _ITM_RaRCE _ITM_RaWCE _ITM_RfWCE);
asm_reads!(8, "movq xmm0, qword ptr [rsp]", _ITM_RM64 _ITM_RaRM64 _ITM_RaWM64 _ITM_RfWM64);
asm_reads!(16, "movups xmm0, xmmword ptr [rsp]", _ITM_RM128 _ITM_RaRM128 _ITM_RaWM128 _ITM_RfWM128);
asm_reads!(32, "vmovups ymm0, ymmword ptr [rsp]", _ITM_RM256 _ITM_RaRM256 _ITM_RaWM256 _ITM_RfWM256);
asm_writes_mem!(16, _ITM_WE _ITM_WaRE _ITM_WaWE);
asm_writes_mem!(32, _ITM_WCE _ITM_WaRCE _ITM_WaWCE);
asm_writes_reg!(8, "movq qword ptr [rsp], xmm0", _ITM_WM64 _ITM_WaRM64 _ITM_WaWM64);
asm_writes_reg!(16, "movups xmmword ptr [rsp], xmm0", _ITM_WM128 _ITM_WaRM128 _ITM_WaWM128);
asm_writes_reg!(32, "vmovups ymmword ptr [rsp], ymm0", _ITM_WM256 _ITM_WaRM256 _ITM_WaWM256);
