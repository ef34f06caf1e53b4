//! The end of a program that misuses the ABI.

/// Reports a misuse of the ABI and aborts the process.
pub(crate) fn fatal(msg: &str) -> ! {
    eprintln!("txmem-itm: {msg}");
    std::process::abort()
}
