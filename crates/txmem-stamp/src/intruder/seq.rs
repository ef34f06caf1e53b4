//! The sequential variant: a plain hash map of partial flows, one thread.

use std::collections::HashMap;

use super::detect::Detector;
use super::outcome::Outcome;
use super::stream::Stream;

/// Runs capture, reassembly and detection over the whole stream in order.
pub fn run(stream: &Stream, detector: &Detector) -> Outcome {
    // Flow id → (fragment index, packet) received so far, sorted by index.
    let mut partial: HashMap<u32, Vec<(u32, u32)>> = HashMap::new();
    let mut out = Outcome::default();
    for (p, packet) in stream.packets.iter().enumerate() {
        let frags = partial.entry(packet.flow).or_default();
        let at = frags.partition_point(|&(i, _)| i < packet.index);
        frags.insert(at, (packet.index, p as u32));
        if frags.len() == packet.fragments as usize {
            let frags = partial.remove(&packet.flow).unwrap_or_default();
            let packets: Vec<u32> = frags.into_iter().map(|(_, p)| p).collect();
            out.deliver(stream, detector, &packets);
        }
    }
    out.leftover = partial.len();
    out
}
