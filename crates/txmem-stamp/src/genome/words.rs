//! The words variant's shared state: one `TWords` arena holding chained
//! hash tables and the link state, every access a tracked word.
//!
//! Layout (a "pointer" is a node's word index plus 1, 0 for null):
//!
//! * the segment set: `2^log2` bucket heads, nodes of 3 words
//!   `[bits low, bits high, next]`;
//! * per overlap length, a prefix table: `2^log2` heads, nodes of 4 words
//!   `[prefix low, prefix high, next, id]` (the first three as a set node,
//!   so one walk serves both);
//! * per unique segment, 4 words `[next, prev, chain start, chain end]` in
//!   the packings of [`parallel`](super::parallel).
//!
//! A lookup reads the bucket head and, for every node it passes, its low
//! word (and the high word when the low one matches) and its `next`: a word
//! STM tracks the whole walk, where the typed map tracks one item.

use txmem::{atomically, TWords, Transaction, TxResult, WordAddr};

use super::gene::Segment;
use super::parallel::{pack_id, pack_link, unpack_id_or, Shared, DEDUP_BATCH};

/// Words of a set node, and the offset of a node's `next` word.
const SET_NODE: usize = 3;
const NEXT: usize = 2;
/// Words of a prefix-table node, and the offset of its segment id.
const PREFIX_NODE: usize = 4;
const ID: usize = 3;
/// Offsets in a segment's link record.
const LINK_NEXT: usize = 0;
const LINK_PREV: usize = 1;
const CHAIN_START: usize = 2;
const CHAIN_END: usize = 3;
const LINK_RECORD: usize = 4;

/// Shared state over `TWords`.
pub struct Words {
    mem: TWords,
    /// log2 of the bucket count of every table.
    log2: u32,
    set_heads: WordAddr,
    /// Prefix table `l`'s heads start at `prefix_heads + l << log2`.
    prefix_heads: WordAddr,
    links: WordAddr,
}

/// The bucket of `bits` in a table of `2^log2` buckets (Fibonacci hashing
/// of both halves: short prefixes are small numbers, and the product's
/// high bits spread them).
fn bucket(bits: u128, log2: u32) -> usize {
    let x = (bits as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ ((bits >> 64) as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    (x >> (64 - log2)) as usize
}

fn node_at(pointer: u64) -> WordAddr {
    WordAddr(pointer as usize - 1)
}

fn pointer(node: WordAddr) -> u64 {
    node.0 as u64 + 1
}

impl Words {
    /// State for at most `max_unique` unique segments of `len` nucleotides,
    /// deduplicated by `threads` threads (each may hold a batch of
    /// allocated, not yet linked set nodes).
    pub fn new(max_unique: usize, len: usize, threads: usize) -> Words {
        // About one bucket per segment, as the typed map's load factor
        // keeps it between 1/4 and 1/2 per bucket.
        let log2 = max_unique.max(2).next_power_of_two().trailing_zeros();
        let buckets = 1usize << log2;
        let capacity = buckets
            + SET_NODE * (max_unique + DEDUP_BATCH * threads.max(1))
            + len * buckets
            + len * PREFIX_NODE * max_unique
            + LINK_RECORD * max_unique;
        let mem = TWords::new(capacity);
        let set_heads = mem.alloc(buckets);
        let prefix_heads = mem.alloc(len * buckets);
        let links = mem.alloc(LINK_RECORD * max_unique);
        Words {
            mem,
            log2,
            set_heads,
            prefix_heads,
            links,
        }
    }

    fn link_word(&self, id: u32, field: usize) -> WordAddr {
        self.links.offset(LINK_RECORD * id as usize + field)
    }

    fn prefix_head(&self, overlap: usize, prefix: u128) -> WordAddr {
        self.prefix_heads
            .offset((overlap << self.log2) + bucket(prefix, self.log2))
    }

    /// Walks a chain from `node` (a pointer) to the first node whose key is
    /// `bits`, reading every word it compares or follows.
    fn find<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        mut node: u64,
        bits: u128,
    ) -> TxResult<Option<WordAddr>> {
        let (lo, hi) = (bits as u64, (bits >> 64) as u64);
        while node != 0 {
            let at = node_at(node);
            if self.mem.read(tx, at)? == lo && self.mem.read(tx, at.offset(1))? == hi {
                return Ok(Some(at));
            }
            node = self.mem.read(tx, at.offset(NEXT))?;
        }
        Ok(None)
    }

    /// Writes a node's key and `next` words.
    fn fill<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        node: WordAddr,
        bits: u128,
        next: u64,
    ) -> TxResult<()> {
        self.mem.write(tx, node, bits as u64)?;
        self.mem.write(tx, node.offset(1), (bits >> 64) as u64)?;
        self.mem.write(tx, node.offset(NEXT), next)
    }
}

impl Shared for Words {
    fn dedup(&self, batch: &[Segment]) -> Vec<Segment> {
        // Nodes allocated by an attempt that aborts serve the next attempt.
        let mut spare: Vec<WordAddr> = Vec::new();
        let (added, used) = atomically(|tx| {
            let (mut added, mut used) = (Vec::new(), 0);
            for &seg in batch {
                let head_at = self.set_heads.offset(bucket(seg.bits, self.log2));
                let head = self.mem.read(tx, head_at)?;
                if self.find(tx, head, seg.bits)?.is_some() {
                    continue;
                }
                if used == spare.len() {
                    spare.push(self.mem.alloc(SET_NODE));
                }
                let node = spare[used];
                used += 1;
                self.fill(tx, node, seg.bits, head)?;
                self.mem.write(tx, head_at, pointer(node))?;
                added.push(seg);
            }
            Ok((added, used))
        });
        for &node in &spare[used..] {
            self.mem.free(node, SET_NODE);
        }
        added
    }

    fn register(&self, overlap: usize, prefix: u128, id: u32) {
        // Every registration links exactly one node, so it is allocated
        // once, outside the transaction, and reused by retries.
        let node = self.mem.alloc(PREFIX_NODE);
        let head_at = self.prefix_head(overlap, prefix);
        atomically(|tx| {
            let head = self.mem.read(tx, head_at)?;
            self.fill(tx, node, prefix, head)?;
            self.mem.write(tx, node.offset(ID), u64::from(id))?;
            self.mem.write(tx, head_at, pointer(node))
        });
    }

    fn link(&self, overlap: usize, suffix: u128, id: u32) -> bool {
        let head_at = self.prefix_head(overlap, suffix);
        atomically(|tx| {
            let mut node = self.mem.read(tx, head_at)?;
            let mut start = None;
            while let Some(at) = self.find(tx, node, suffix)? {
                let b = self.mem.read(tx, at.offset(ID))? as u32;
                let s = match start {
                    Some(s) => s,
                    None => {
                        let s =
                            unpack_id_or(self.mem.read(tx, self.link_word(id, CHAIN_START))?, id);
                        *start.insert(s)
                    }
                };
                if b != s && self.mem.read(tx, self.link_word(b, LINK_PREV))? == 0 {
                    let end = unpack_id_or(self.mem.read(tx, self.link_word(b, CHAIN_END))?, b);
                    self.mem
                        .write(tx, self.link_word(id, LINK_NEXT), pack_link(b, overlap))?;
                    self.mem
                        .write(tx, self.link_word(b, LINK_PREV), pack_id(id))?;
                    self.mem
                        .write(tx, self.link_word(s, CHAIN_END), pack_id(end))?;
                    self.mem
                        .write(tx, self.link_word(end, CHAIN_START), pack_id(s))?;
                    return Ok(true);
                }
                node = self.mem.read(tx, at.offset(NEXT))?;
            }
            Ok(false)
        })
    }

    fn unpreceded(&self, id: u32) -> bool {
        self.mem.load(self.link_word(id, LINK_PREV)) == 0
    }

    fn successor(&self, id: u32) -> u64 {
        self.mem.load(self.link_word(id, LINK_NEXT))
    }
}
