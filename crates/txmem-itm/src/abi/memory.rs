//! `_ITM_memcpy*`, `_ITM_memmove*` and `_ITM_memset*`.
//!
//! The name says for each side whether it is transactional (`Rt`, `Wt`, with the same "after
//! read/after write" hints as the barriers) or not (`Rn`, `Wn`). Data moves through a small
//! stack buffer: a transactional read goes through the barrier path, a non-transactional one
//! is a plain copy.
//!
//! Each returns the destination, as `memcpy`, `memmove` and `memset` do: libitm's header
//! declares them `void`, but GCC treats them as the builtins they replace and may use the
//! returned pointer (`p = memset(p, ...)`, or `p` itself kept in the return register).

use super::barriers::{read_bytes, write_bytes};
use crate::tx::desc::{self, TxDesc};

const CHUNK: usize = 256;

/// Bulk writes this long or longer into memory the transaction allocated go to it in place.
const CAPTURE_MIN: usize = 64;

/// The running transaction, if `[dst, dst + len)` is long enough to be worth the check and
/// lies in memory it allocated (see [`TxDesc::is_captured`]).
fn captured_by(dst: usize, len: usize) -> Option<&'static mut TxDesc> {
    if len < CAPTURE_MIN {
        return None;
    }
    let tx = desc::running()?;
    (!tx.allocs.is_empty() && tx.is_captured(dst, len)).then_some(tx)
}

/// Copies `len` bytes in chunks, forward or backward so that overlapping ranges (memmove)
/// read every source byte before it is overwritten.
///
/// # Safety
/// `src` readable and `dst` writable for `len` bytes.
unsafe fn copy(dst: usize, src: usize, len: usize, tread: bool, twrite: bool) {
    if twrite {
        if let Some(tx) = captured_by(dst, len) {
            // Read (through barriers if `tread`) and stored in place, chunk by chunk.
            // SAFETY: per the contract; the destination is the transaction's own memory.
            unsafe { copy(dst, src, len, tread, false) };
            tx.refresh_logs(dst, len);
            return;
        }
    }
    let mut buf = [0u8; CHUNK];
    let mut step = |off: usize, n: usize| {
        // SAFETY: `off + n <= len`, and the caller guarantees both ranges.
        unsafe {
            if tread {
                read_bytes(src + off, buf.as_mut_ptr(), n);
            } else {
                std::ptr::copy_nonoverlapping((src + off) as *const u8, buf.as_mut_ptr(), n);
            }
            if twrite {
                write_bytes(dst + off, buf.as_ptr(), n);
            } else {
                std::ptr::copy_nonoverlapping(buf.as_ptr(), (dst + off) as *mut u8, n);
            }
        }
    };
    if dst <= src || dst >= src + len {
        let mut off = 0;
        while off < len {
            let n = CHUNK.min(len - off);
            step(off, n);
            off += n;
        }
    } else {
        let mut end = len;
        while end > 0 {
            let n = CHUNK.min(end);
            step(end - n, n);
            end -= n;
        }
    }
}

macro_rules! copies {
    ($($name:ident $tread:literal $twrite:literal),* $(,)?) => {$(
        #[no_mangle]
        unsafe extern "C" fn $name(dst: *mut u8, src: *const u8, len: usize) -> *mut u8 {
            // SAFETY: the program's memcpy/memmove contract: valid ranges of `len` bytes.
            unsafe { copy(dst as usize, src as usize, len, $tread, $twrite) };
            dst
        }
    )*};
}

copies!(
    _ITM_memcpyRnWt false true, _ITM_memcpyRnWtaR false true, _ITM_memcpyRnWtaW false true,
    _ITM_memcpyRtWn true false, _ITM_memcpyRtWt true true, _ITM_memcpyRtWtaR true true,
    _ITM_memcpyRtWtaW true true, _ITM_memcpyRtaRWn true false, _ITM_memcpyRtaRWt true true,
    _ITM_memcpyRtaRWtaR true true, _ITM_memcpyRtaRWtaW true true, _ITM_memcpyRtaWWn true false,
    _ITM_memcpyRtaWWt true true, _ITM_memcpyRtaWWtaR true true, _ITM_memcpyRtaWWtaW true true,
    _ITM_memmoveRnWt false true, _ITM_memmoveRnWtaR false true, _ITM_memmoveRnWtaW false true,
    _ITM_memmoveRtWn true false, _ITM_memmoveRtWt true true, _ITM_memmoveRtWtaR true true,
    _ITM_memmoveRtWtaW true true, _ITM_memmoveRtaRWn true false, _ITM_memmoveRtaRWt true true,
    _ITM_memmoveRtaRWtaR true true, _ITM_memmoveRtaRWtaW true true, _ITM_memmoveRtaWWn true false,
    _ITM_memmoveRtaWWt true true, _ITM_memmoveRtaWWtaR true true, _ITM_memmoveRtaWWtaW true true,
);

/// # Safety
/// `dst` writable for `len` bytes.
unsafe fn set(dst: usize, byte: i32, len: usize) {
    if let Some(tx) = captured_by(dst, len) {
        // SAFETY: per the contract; the range is the transaction's own memory.
        unsafe { std::ptr::write_bytes(dst as *mut u8, byte as u8, len) };
        tx.refresh_logs(dst, len);
        return;
    }
    let buf = [byte as u8; CHUNK];
    let mut off = 0;
    while off < len {
        let n = CHUNK.min(len - off);
        // SAFETY: `off + n <= len` and the caller guarantees the range.
        unsafe { write_bytes(dst + off, buf.as_ptr(), n) };
        off += n;
    }
}

macro_rules! sets {
    ($($name:ident),*) => {$(
        #[no_mangle]
        unsafe extern "C" fn $name(dst: *mut u8, byte: i32, len: usize) -> *mut u8 {
            // SAFETY: the program's memset contract: a valid range of `len` bytes.
            unsafe { set(dst as usize, byte, len) };
            dst
        }
    )*};
}

sets!(_ITM_memsetW, _ITM_memsetWaR, _ITM_memsetWaW);
