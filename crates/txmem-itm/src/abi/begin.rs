//! `_ITM_beginTransaction`: the register checkpoint a transaction returns to when it aborts.
//!
//! The checkpoint cannot be written in Rust: it must capture the callee-saved registers and the
//! stack pointer of the *caller* exactly as they are at the call, and a restart must make
//! `_ITM_beginTransaction` appear to return a second time (with other action bits), like
//! `setjmp`. A Rust function would have spilled and changed registers by the time its body
//! runs. So a small naked assembly routine stores the x86-64 System V callee-saved registers
//! (rbx, rbp, r12–r15), the stack pointer the caller will have after the return, and the
//! return address into a [`JmpBuf`] on its own stack, and calls [`crate::tx::begin`], which
//! copies the buffer into the thread's descriptor. [`longjmp`] reloads those registers and
//! jumps to the return address with the action code in eax.
//!
//! Only the registers the ABI says survive a call are saved: GCC treats
//! `_ITM_beginTransaction` as a call, so every other register is dead across it, and the live
//! variables the transaction changes are saved and restored by GCC's own code when the
//! action says `a_saveLiveVariables` / `a_restoreLiveVariables`.

/// The saved context of a checkpoint. Field offsets are used by the assembly below.
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

extern "C" fn begin_from_asm(props: u32, jb: *const JmpBuf) -> u32 {
    // SAFETY: the assembly passes a pointer to a fully written JmpBuf on its stack, valid for
    // the duration of this call.
    let jb = unsafe { &*jb };
    crate::tx::begin(props, jb)
}

/// The checkpoint. Naked, so that no prologue touches a register or the stack before they
/// are saved; exported under the ABI's name like the other entry points.
// SAFETY (naked): the body is assembly only. It keeps the System V contract: it writes only
// below the stack pointer it was given (72 bytes, re-aligning to 16 for the call), preserves
// every callee-saved register (it only reads them), clobbers rax, rsi and r11, which are
// caller-saved, and returns the Rust function's u32 result in eax.
#[unsafe(naked)]
#[no_mangle]
extern "C" fn _ITM_beginTransaction(props: u32) -> u32 {
    std::arch::naked_asm!(
        ".cfi_startproc",
        // The stack pointer the caller has after we return, and our return address.
        "lea rax, [rsp + 8]",
        "mov r11, [rsp]",
        // 64 bytes of JmpBuf plus 8 keep the stack 16-byte aligned at the call below.
        "sub rsp, 72",
        ".cfi_adjust_cfa_offset 72",
        "mov [rsp + 0], rbx",
        "mov [rsp + 8], rbp",
        "mov [rsp + 16], r12",
        "mov [rsp + 24], r13",
        "mov [rsp + 32], r14",
        "mov [rsp + 40], r15",
        "mov [rsp + 48], rax",
        "mov [rsp + 56], r11",
        // edi still holds the code properties.
        "mov rsi, rsp",
        "call {begin}",
        "add rsp, 72",
        ".cfi_adjust_cfa_offset -72",
        "ret",
        ".cfi_endproc",
        begin = sym begin_from_asm,
    )
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
