//! The word variant: the same algorithm over [`TWords`] only.
//!
//! The arena holds the stream's index (the next packet to capture), a
//! bucket array of the flow map (each bucket the head of a chain of flow
//! records), the flow records and, per flow, a sorted linked list of
//! fragment records. Every access is a [`TWords::read`] or
//! [`TWords::write`], so a reassembly tracks every word it walks: the
//! bucket chain, and each fragment record up to the insertion point (all
//! of them again when the flow completes and is collected). Address 0 is
//! reserved as the null link.
//!
//! Records are allocated outside transactions (one spare of each kind per
//! thread, kept across aborts, so an abort leaks nothing) and freed from
//! the commit hook of the transaction that unlinks them.

use txmem::{atomically, TWords, Transaction, TxResult, WordAddr};

use super::stream::Stream;
use super::Decoder;

/// The null link.
const NULL: u64 = 0;

// A flow record's words.
const KEY: u64 = 0;
const NEXT: u64 = 1;
const FRAGMENTS: u64 = 2;
const RECEIVED: u64 = 3;
const HEAD: u64 = 4;
const FLOW_WORDS: usize = 5;

// A fragment record's words.
const INDEX: u64 = 0;
const PACKET: u64 = 1;
const LINK: u64 = 2;
const FRAG_WORDS: usize = 3;

/// The shared state of the word variant.
pub struct Words {
    mem: TWords,
    /// The word holding the index of the next packet to capture.
    index: WordAddr,
    /// The first of the flow map's bucket heads.
    buckets: WordAddr,
    /// Bucket count minus one (a power of two minus one).
    mask: u64,
    /// Packets in the stream.
    total: u64,
}

/// A thread's spare records, allocated ahead of the transaction that may
/// link them.
#[derive(Default)]
pub struct Spares {
    flow: Option<WordAddr>,
    fragment: Option<WordAddr>,
}

impl Words {
    /// The state for `stream` run by `threads` threads: an arena with room
    /// for every record at once (frees only make it roomier).
    pub fn new(stream: &Stream, threads: usize) -> Words {
        let buckets = stream.flows().next_power_of_two();
        let capacity = 2
            + buckets
            + (stream.flows() + threads) * FLOW_WORDS
            + (stream.packets.len() + threads) * FRAG_WORDS;
        let mem = TWords::new(capacity);
        let null = mem.alloc(1);
        debug_assert_eq!(null.0 as u64, NULL);
        let index = mem.alloc(1);
        let first = mem.alloc(buckets);
        Words {
            mem,
            index,
            buckets: first,
            mask: buckets as u64 - 1,
            total: stream.packets.len() as u64,
        }
    }

    fn read<'env>(&'env self, tx: &mut Transaction<'env>, at: u64) -> TxResult<u64> {
        self.mem.read(tx, WordAddr(at as usize))
    }

    fn write<'env>(&'env self, tx: &mut Transaction<'env>, at: u64, value: u64) -> TxResult<()> {
        self.mem.write(tx, WordAddr(at as usize), value)
    }

    fn bucket(&self, flow: u32) -> u64 {
        // Fibonacci hashing spreads consecutive flow ids.
        let h = u64::from(flow).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
        (self.buckets.0 as u64) + (h & self.mask)
    }
}

impl Decoder for Words {
    type Local = Spares;

    fn capture(&self) -> Option<u32> {
        atomically(|tx| {
            let i = self.read(tx, self.index.0 as u64)?;
            if i >= self.total {
                return Ok(None);
            }
            self.write(tx, self.index.0 as u64, i + 1)?;
            Ok(Some(i as u32))
        })
    }

    fn reassemble(&self, stream: &Stream, p: u32, spares: &mut Spares) -> Option<Vec<u32>> {
        let packet = &stream.packets[p as usize];
        let (flow, index, fragments) = (
            u64::from(packet.flow),
            u64::from(packet.index),
            u64::from(packet.fragments),
        );
        let spare = spares
            .flow
            .get_or_insert_with(|| self.mem.alloc(FLOW_WORDS))
            .0 as u64;
        let frag = spares
            .fragment
            .get_or_insert_with(|| self.mem.alloc(FRAG_WORDS))
            .0 as u64;
        let bucket = self.bucket(packet.flow);
        let (done, used_spare) = atomically(|tx| {
            // Find the flow's record; `link` is the word that points to it.
            let head = self.read(tx, bucket)?;
            let (mut link, mut rec) = (bucket, head);
            while rec != NULL && self.read(tx, rec + KEY)? != flow {
                link = rec + NEXT;
                rec = self.read(tx, link)?;
            }
            let fresh = rec == NULL;
            if fresh {
                rec = spare;
                self.write(tx, rec + KEY, flow)?;
                self.write(tx, rec + NEXT, head)?;
                self.write(tx, rec + FRAGMENTS, fragments)?;
                self.write(tx, rec + RECEIVED, 0)?;
                self.write(tx, rec + HEAD, NULL)?;
                self.write(tx, bucket, rec)?;
                link = bucket;
            }
            // Insert the fragment in index order.
            let mut at = rec + HEAD;
            let mut node = self.read(tx, at)?;
            while node != NULL && self.read(tx, node + INDEX)? < index {
                at = node + LINK;
                node = self.read(tx, at)?;
            }
            self.write(tx, frag + INDEX, index)?;
            self.write(tx, frag + PACKET, u64::from(p))?;
            self.write(tx, frag + LINK, node)?;
            self.write(tx, at, frag)?;
            let received = self.read(tx, rec + RECEIVED)? + 1;
            if received < self.read(tx, rec + FRAGMENTS)? {
                self.write(tx, rec + RECEIVED, received)?;
                return Ok((None, fresh));
            }
            // Complete: collect the packets, unlink the flow, free its
            // records once the unlinking has committed.
            let mut packets = Vec::with_capacity(fragments as usize);
            let mut nodes = Vec::with_capacity(fragments as usize);
            let mut node = self.read(tx, rec + HEAD)?;
            while node != NULL {
                packets.push(self.read(tx, node + PACKET)? as u32);
                nodes.push(node);
                node = self.read(tx, node + LINK)?;
            }
            let next = self.read(tx, rec + NEXT)?;
            self.write(tx, link, next)?;
            let mem = &self.mem;
            tx.on_commit(move || {
                for n in nodes {
                    mem.free(WordAddr(n as usize), FRAG_WORDS);
                }
                mem.free(WordAddr(rec as usize), FLOW_WORDS);
            });
            Ok((Some(packets), fresh))
        });
        spares.fragment = None;
        if used_spare {
            spares.flow = None;
        }
        done
    }

    fn leftover(&self) -> usize {
        let mut n = 0;
        for b in 0..=self.mask as usize {
            let mut rec = self.mem.load(self.buckets.offset(b));
            while rec != NULL {
                n += 1;
                rec = self.mem.load(WordAddr(rec as usize + NEXT as usize));
            }
        }
        n
    }
}
