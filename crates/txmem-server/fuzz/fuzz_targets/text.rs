//! The text protocol (and the meta commands it hands on) from arbitrary
//! bytes: no panic, bounded replies, and every reply line well formed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use txmem_server::Protocol;

mod common;

fuzz_target!(|data: &[u8]| {
    let shared = common::shared(Protocol::Ascii);
    let replies = common::feed(&shared, Protocol::Ascii, data);
    // Replies end at a line ending (values included).
    assert!(replies.is_empty() || replies.ends_with(b"\r\n"));
});
