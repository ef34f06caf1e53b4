//! The register checkpoint a transaction returns to when it aborts: what
//! `_ITM_beginTransaction` (`abi/begin.rs`) saves, and the jump that resumes it.

/// The saved context of a checkpoint. Field offsets are used by the assembly here and in `abi/begin.rs`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct JmpBuf {
    pub rbx: usize,
    pub rbp: usize,
    pub r12: usize,
    pub r13: usize,
    pub r14: usize,
    pub r15: usize,
    /// The caller's stack pointer after `_ITM_beginTransaction` returns.
    pub rsp: usize,
    /// The return address: the transaction's site.
    pub rip: usize,
}

const _: () = assert!(std::mem::size_of::<JmpBuf>() == 64);

impl JmpBuf {
    /// A copy made of 8-byte loads. The assembly has just written the buffer with 8-byte
    /// stores; the 16-byte loads a plain copy compiles to would each span two of them, which
    /// the CPU cannot forward from its store buffer, and every transaction would stall on it.
    #[inline(always)]
    pub fn copy_word_by_word(&self) -> JmpBuf {
        let src = self as *const JmpBuf as *const usize;
        // SAFETY: `self` is 64 bytes of eight aligned `usize` fields (repr(C), asserted above);
        // volatile keeps the compiler from merging the loads.
        let w = |i: usize| unsafe { std::ptr::read_volatile(src.add(i)) };
        JmpBuf {
            rbx: w(0),
            rbp: w(1),
            r12: w(2),
            r13: w(3),
            r14: w(4),
            r15: w(5),
            rsp: w(6),
            rip: w(7),
        }
    }
}

std::arch::global_asm!(
    ".globl txmem_itm_longjmp",
    ".hidden txmem_itm_longjmp",
    ".type txmem_itm_longjmp,@function",
    "txmem_itm_longjmp:",
    "mov rbx, [rdi + 0]",
    "mov rbp, [rdi + 8]",
    "mov r12, [rdi + 16]",
    "mov r13, [rdi + 24]",
    "mov r14, [rdi + 32]",
    "mov r15, [rdi + 40]",
    // Read everything before the stack switch, since `jb` may live in a frame we discard.
    "mov rdx, [rdi + 56]",
    "mov rsp, [rdi + 48]",
    "mov eax, esi",
    "jmp rdx",
    ".size txmem_itm_longjmp, . - txmem_itm_longjmp",
);

extern "C" {
    fn txmem_itm_longjmp(jb: *const JmpBuf, action: u32) -> !;
}

/// Resumes the checkpoint `jb` as if `_ITM_beginTransaction` returned `action`.
///
/// # Safety
/// `jb` must hold a checkpoint whose frame (the caller of `_ITM_beginTransaction`) is still
/// live, and the frames jumped over must hold nothing that needs dropping.
pub(crate) unsafe fn longjmp(jb: &JmpBuf, action: u32) -> ! {
    // SAFETY: per this function's contract; the assembly reads the whole buffer into
    // registers before it switches the stack, so `jb` may live in a discarded frame.
    unsafe { txmem_itm_longjmp(jb, action) }
}
