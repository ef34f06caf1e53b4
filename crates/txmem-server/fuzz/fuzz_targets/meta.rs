//! The meta commands from arbitrary flag tokens: each input line becomes
//! `mg`, `ms`, `md`, `ma` or `mn` with the rest of the line as its key and
//! flags, so the flag parser sees mostly well-shaped commands.
#![no_main]

use libfuzzer_sys::fuzz_target;
use txmem_server::Protocol;

mod common;

const COMMANDS: [&[u8]; 6] = [b"mg ", b"ms ", b"md ", b"ma ", b"mn", b"me "];

fuzz_target!(|data: &[u8]| {
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    let mut stream = vec![split];
    for line in rest.split(|&b| b == b'\n') {
        let Some((&which, tail)) = line.split_first() else {
            continue;
        };
        stream.extend_from_slice(COMMANDS[usize::from(which) % COMMANDS.len()]);
        stream.extend_from_slice(tail);
        stream.extend_from_slice(b"\r\n");
    }
    let shared = common::shared(Protocol::Ascii);
    let replies = common::feed(&shared, Protocol::Ascii, &stream);
    assert!(replies.is_empty() || replies.ends_with(b"\r\n"));
});
