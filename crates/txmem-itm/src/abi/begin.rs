//! `_ITM_beginTransaction`: the register checkpoint a transaction returns to when it aborts.
//!
//! The checkpoint cannot be written in Rust: it must capture the callee-saved registers and the
//! stack pointer of the *caller* exactly as they are at the call, and a restart must make
//! `_ITM_beginTransaction` appear to return a second time (with other action bits), like
//! `setjmp`. A Rust function would have spilled and changed registers by the time its body
//! runs. So a small naked assembly routine stores the x86-64 System V callee-saved registers
//! (rbx, rbp, r12–r15), the stack pointer the caller will have after the return, and the
//! return address into a [`JmpBuf`] on its own stack, and calls [`lifecycle::begin`], which
//! copies the buffer into the thread's descriptor. [`longjmp`](crate::checkpoint::longjmp)
//! reloads those registers and jumps to the return address with the action code in eax.
//!
//! Only the registers the ABI says survive a call are saved: GCC treats
//! `_ITM_beginTransaction` as a call, so every other register is dead across it, and the live
//! variables the transaction changes are saved and restored by GCC's own code when the
//! action says `a_saveLiveVariables` / `a_restoreLiveVariables`.

use crate::checkpoint::JmpBuf;
use crate::tx::lifecycle;

extern "C" fn begin_from_asm(props: u32, jb: *const JmpBuf) -> u32 {
    // SAFETY: the assembly passes a pointer to a fully written JmpBuf on its stack, valid for
    // the duration of this call.
    let jb = unsafe { &*jb };
    lifecycle::begin(props, jb)
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
