//! The binary protocol from arbitrary bytes, the first byte of each packet
//! forced to the request magic often enough to get past the header.
#![no_main]

use libfuzzer_sys::fuzz_target;
use txmem_server::protocol::binary::{Packet, RESPONSE_MAGIC};
use txmem_server::Protocol;

mod common;

fuzz_target!(|data: &[u8]| {
    let shared = common::shared(Protocol::Binary);
    let replies = common::feed(&shared, Protocol::Binary, data);
    // Whatever came back is a sequence of whole response packets.
    let mut rest = &replies[..];
    while !rest.is_empty() {
        let (p, len) = Packet::parse(rest).expect("a whole response packet");
        assert_eq!(p.header.magic, RESPONSE_MAGIC);
        rest = &rest[len..];
    }
});
