//! The typed variant: the stream as a [`TQueue`] of packet indices, the
//! reassembly map as a [`THashMap`] from flow id to the fragments received
//! so far.
//!
//! Why a queue: STAMP's capture pops from a shared queue, and a
//! [`TQueue::try_pop`] tracks one abstract item (the pop side), the same
//! as an index in a `TBox` would (read and written), without the index
//! arithmetic. `try_pop` rather than `pop`: an empty stream means the end,
//! not a wait.
//!
//! Why a `Vec` value: a reassembly then reads and writes one map entry,
//! so the transaction tracks a handful of items (at most 3 on the dev and
//! paper inputs) however many fragments the flow has. The
//! fragments are copied when the entry is read and written back (a few
//! hundred bytes at most), which costs time but no tracked items. A
//! transactional list per flow would track the nodes around the insertion
//! point as well; the word variant tracks every node of the walk.

use txmem::{atomically, THashMap, TQueue};

use super::stream::Stream;
use super::Decoder;

/// The fragments of a partial flow: `(fragment index, packet)`, sorted by
/// index.
type Partial = Vec<(u32, u32)>;

/// The shared state of the typed variant.
pub struct Typed {
    stream: TQueue<u32>,
    flows: THashMap<u32, Partial>,
}

impl Typed {
    /// The state for `stream`: every packet queued, in arrival order.
    pub fn new(stream: &Stream) -> Typed {
        let queue = TQueue::new();
        let n = stream.packets.len() as u32;
        // One transaction: the queue's push item holds all the values.
        atomically(|tx| (0..n).try_for_each(|p| queue.push(tx, p)));
        Typed {
            stream: queue,
            flows: THashMap::with_capacity(stream.flows()),
        }
    }
}

impl Decoder for Typed {
    type Local = ();

    fn capture(&self) -> Option<u32> {
        atomically(|tx| self.stream.try_pop(tx))
    }

    fn reassemble(&self, stream: &Stream, p: u32, _: &mut ()) -> Option<Vec<u32>> {
        let packet = &stream.packets[p as usize];
        atomically(|tx| {
            let mut frags = self.flows.get(tx, &packet.flow)?.unwrap_or_default();
            let at = frags.partition_point(|&(i, _)| i < packet.index);
            frags.insert(at, (packet.index, p));
            if frags.len() == packet.fragments as usize {
                self.flows.remove(tx, &packet.flow)?;
                Ok(Some(frags.into_iter().map(|(_, p)| p).collect()))
            } else {
                self.flows.set(tx, packet.flow, frags)?;
                Ok(None)
            }
        })
    }

    fn leftover(&self) -> usize {
        self.flows.load_len()
    }
}
