//! `_ITM_memcpy*`, `_ITM_memmove*` and `_ITM_memset*`.
//!
//! The name says for each side whether it is transactional (`Rt`, `Wt`, with the same "after
//! read/after write" hints as the barriers) or not (`Rn`, `Wn`). Data moves through a small
//! stack buffer: a transactional read goes through the barrier path, a non-transactional one
//! is a plain copy.

use super::barriers::{read_bytes, write_bytes};

const CHUNK: usize = 256;

/// Copies `len` bytes in chunks, forward or backward so that overlapping ranges (memmove)
/// read every source byte before it is overwritten.
///
/// # Safety
/// `src` readable and `dst` writable for `len` bytes.
unsafe fn copy(dst: usize, src: usize, len: usize, tread: bool, twrite: bool) {
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
        unsafe extern "C" fn $name(dst: *mut u8, src: *const u8, len: usize) {
            // SAFETY: the program's memcpy/memmove contract: valid ranges of `len` bytes.
            unsafe { copy(dst as usize, src as usize, len, $tread, $twrite) }
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
        unsafe extern "C" fn $name(dst: *mut u8, byte: i32, len: usize) {
            // SAFETY: the program's memset contract: a valid range of `len` bytes.
            unsafe { set(dst as usize, byte, len) }
        }
    )*};
}

sets!(_ITM_memsetW, _ITM_memsetWaR, _ITM_memsetWaW);
