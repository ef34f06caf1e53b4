//! The input: a seeded stream of packets, the fragments of `flows`
//! sessions shuffled together, some of them carrying an attack.
//!
//! Each flow is a byte string of random length between the longest
//! signature and `max_length`, drawn from [`DATA_ALPHABET`] (lower-case
//! letters, digits and a few punctuation bytes). An attacked flow has one
//! signature of the [`detect::SIGNATURES`](super::detect::SIGNATURES)
//! dictionary written over it at a random place. Every signature holds a
//! byte outside the data alphabet, so a flow matches a signature only if
//! one was planted: the generator's list of attacked flows is exactly what
//! a correct detector finds.
//!
//! A flow is cut into `1..=ceil(len / FRAGMENT_BYTES)` fragments of nearly
//! equal size, and all fragments of all flows are shuffled into one stream.

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use super::detect::SIGNATURES;
use crate::chunk;

/// The bytes random flow data is drawn from; no signature fits in it.
pub const DATA_ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789 .,-_/=";

/// Fragments average at least this many bytes: a flow of `len` bytes is
/// cut into at most `ceil(len / FRAGMENT_BYTES)` fragments.
pub const FRAGMENT_BYTES: usize = 16;

/// One fragment of a flow: a packet of the stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    /// The flow (session) it belongs to, `0..flows`.
    pub flow: u32,
    /// Its place in the flow, `0..fragments`.
    pub index: u32,
    /// How many fragments the flow has.
    pub fragments: u32,
    /// Its bytes.
    pub data: Box<[u8]>,
}

/// A generated stream and what a correct run must find in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stream {
    /// The packets, in arrival order.
    pub packets: Vec<Packet>,
    /// Each flow's [`hash`] of its bytes, indexed by flow id.
    pub hashes: Vec<u64>,
    /// The attacked flows, ascending.
    pub attacks: Vec<u32>,
}

impl Stream {
    /// `flows` flows of at most `max_length` bytes, `attack_percent` percent
    /// of them (on average) attacked, shuffled with `seed`.
    ///
    /// # Panics
    /// If `max_length` is shorter than the longest signature, or
    /// `attack_percent` exceeds 100.
    pub fn generate(flows: usize, max_length: usize, attack_percent: u32, seed: u64) -> Stream {
        let min_length = SIGNATURES.iter().map(|s| s.len()).max().unwrap_or(1);
        assert!(
            max_length >= min_length,
            "intruder: flows must be able to hold a signature ({min_length} bytes)"
        );
        assert!(attack_percent <= 100, "intruder: -a is a percentage");
        assert!(u32::try_from(flows).is_ok(), "intruder: too many flows");
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut packets = Vec::new();
        let mut hashes = Vec::with_capacity(flows);
        let mut attacks = Vec::new();
        for flow in 0..flows as u32 {
            let len = rng.random_range(min_length..=max_length);
            let mut bytes: Vec<u8> = (0..len)
                .map(|_| DATA_ALPHABET[rng.random_range(0..DATA_ALPHABET.len())])
                .collect();
            if rng.random_range(0..100) < attack_percent {
                let sig = SIGNATURES[rng.random_range(0..SIGNATURES.len())];
                let at = rng.random_range(0..=len - sig.len());
                bytes[at..at + sig.len()].copy_from_slice(sig);
                attacks.push(flow);
            }
            hashes.push(hash(&bytes));
            let fragments = rng.random_range(1..=len.div_ceil(FRAGMENT_BYTES));
            for i in 0..fragments {
                packets.push(Packet {
                    flow,
                    index: i as u32,
                    fragments: fragments as u32,
                    data: bytes[chunk(len, fragments, i)].into(),
                });
            }
        }
        packets.shuffle(&mut rng);
        Stream {
            packets,
            hashes,
            attacks,
        }
    }

    /// The number of flows.
    pub fn flows(&self) -> usize {
        self.hashes.len()
    }
}

/// A 64-bit FNV-1a hash of `bytes`: compares a reassembled flow with the
/// generated one without keeping both.
pub fn hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}
