//! A 2-D mesh of routers, one per tile, with dimension-order (X then Y) routing.
//!
//! Every router has four outputs to its neighbours and one to its tile (ejection), and every
//! tile one input into its router (injection); each is a link (`links.rs`), carrying a
//! flit per cycle. A message's head crosses a router in `router_latency` cycles and a link in
//! `link_latency`, waiting wherever a link is taken; its tail follows `flits - 1` cycles later
//! (wormhole). A multicast is one message that forks at routers: it crosses each link of the
//! union of the X-Y routes to its destinations once.

use super::links::LinkTable;
use crate::engine::time::Cycle;

/// Output ports of a router.
const EAST: usize = 0;
const WEST: usize = 1;
const NORTH: usize = 2;
const SOUTH: usize = 3;
const EJECT: usize = 4;
/// Ports per router in the link table: the five outputs and the tile's injection.
const PORTS: usize = 6;
const INJECT: usize = 5;

/// Routers crossed from `from` to `to` on a mesh `width` routers wide.
#[inline]
pub fn routers_between(width: usize, from: usize, to: usize) -> u64 {
    let (fx, fy) = (from % width, from / width);
    let (tx, ty) = (to % width, to / width);
    (fx.abs_diff(tx) + fy.abs_diff(ty)) as u64 + 1
}

/// What crossing the mesh cost, for the statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traversal {
    /// Links crossed (ejection included, injection not), each once.
    pub links: u64,
    /// Routers crossed.
    pub routers: u64,
}

/// The mesh and the occupancy of its links.
#[derive(Debug)]
pub struct Mesh {
    width: usize,
    height: usize,
    router_latency: Cycle,
    link_latency: Cycle,
    links: LinkTable,
    /// Per link, the multicast that crossed it last and when its head left: a later branch
    /// of the same multicast reuses that crossing.
    fork: Vec<(u64, Cycle)>,
    /// The number of the multicast being routed.
    multicasts: u64,
    /// Per tile, its column and row.
    coords: Vec<(u8, u8)>,
}

impl Mesh {
    /// A `width` x `height` mesh.
    pub fn new(width: usize, height: usize, router_latency: Cycle, link_latency: Cycle) -> Self {
        let n = width * height * PORTS;
        Mesh {
            width,
            height,
            router_latency,
            link_latency,
            links: LinkTable::new(n),
            fork: vec![(0, 0); n],
            multicasts: 0,
            coords: (0..width * height)
                .map(|t| ((t % width) as u8, (t / width) as u8))
                .collect(),
        }
    }

    /// Tiles in the mesh.
    pub fn tiles(&self) -> usize {
        self.width * self.height
    }

    /// Routers crossed from `from` to `to` (the hop count plus one).
    pub fn routers_between(&self, from: usize, to: usize) -> u64 {
        routers_between(self.width, from, to)
    }

    /// Routers per row.
    pub fn width(&self) -> usize {
        self.width
    }

    /// The next output port from router `at` towards `to` (X first, then Y).
    #[inline]
    fn port(&self, at: usize, to: usize) -> usize {
        let ((ax, ay), (tx, ty)) = (self.coords[at], self.coords[to]);
        if tx > ax {
            EAST
        } else if tx < ax {
            WEST
        } else if ty > ay {
            SOUTH
        } else if ty < ay {
            NORTH
        } else {
            EJECT
        }
    }

    fn next(&self, at: usize, port: usize) -> usize {
        match port {
            EAST => at + 1,
            WEST => at - 1,
            SOUTH => at + self.width,
            NORTH => at - self.width,
            _ => at,
        }
    }

    /// Sends a message of `flits` flits from tile `from` to every tile in `to` (a bit mask;
    /// one tile for a unicast), injected at `at`. Calls `arrived(tile, time)` with the time
    /// each destination has the whole message, and returns what the message crossed.
    pub fn send(
        &mut self,
        from: usize,
        to: u64,
        flits: u32,
        at: Cycle,
        mut arrived: impl FnMut(usize, Cycle),
    ) -> Traversal {
        debug_assert!(to != 0 && (to >> self.tiles()) == 0);
        let mut cost = Traversal::default();
        let inject = self.links.reserve(from * PORTS + INJECT, at, flits);
        let multicast = to.count_ones() > 1;
        if multicast {
            self.multicasts += 1;
        }
        let id = self.multicasts;
        let mut rest = to;
        while rest != 0 {
            let dest = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            let (mut at_router, mut t) = (from, inject);
            loop {
                let port = self.port(at_router, dest);
                let link = at_router * PORTS + port;
                t = if multicast && self.fork[link].0 == id {
                    // Another branch of this multicast crossed this link already.
                    self.fork[link].1
                } else {
                    let left = self.links.reserve(link, t + self.router_latency, flits)
                        + self.link_latency;
                    cost.links += 1;
                    cost.routers += 1;
                    if multicast {
                        self.fork[link] = (id, left);
                    }
                    left
                };
                if port == EJECT {
                    break;
                }
                at_router = self.next(at_router, port);
            }
            arrived(dest, t + Cycle::from(flits) - 1);
        }
        cost
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(m: &mut Mesh, from: usize, to: usize, flits: u32, at: Cycle) -> (Cycle, Traversal) {
        let mut when = 0;
        let cost = m.send(from, 1 << to, flits, at, |_, t| when = t);
        (when, cost)
    }

    #[test]
    fn a_unicast_costs_a_router_and_a_link_per_hop_and_its_tail() {
        let mut m = Mesh::new(4, 4, 2, 1);
        // Tile 0 to tile 15: 3 hops east, 3 south, then ejection: 7 routers and links.
        let (t, cost) = one(&mut m, 0, 15, 1, 100);
        assert_eq!(
            cost,
            Traversal {
                links: 7,
                routers: 7
            }
        );
        assert_eq!(t, 100 + 7 * 3);
        assert_eq!(m.routers_between(0, 15), 7);
        // Five flits: the tail arrives four cycles after the head.
        let mut m = Mesh::new(4, 4, 2, 1);
        assert_eq!(one(&mut m, 0, 1, 5, 0).0, 2 * 3 + 4);
    }

    #[test]
    fn messages_sharing_a_link_queue() {
        let mut m = Mesh::new(4, 1, 1, 1);
        let (a, _) = one(&mut m, 0, 3, 5, 0);
        // The same route at the same time: its flits go after the first message's.
        let (b, _) = one(&mut m, 0, 3, 5, 0);
        assert_eq!(b, a + 5);
        // The opposite direction uses other links.
        let (c, _) = one(&mut m, 3, 0, 5, 0);
        assert_eq!(c, a);
    }

    #[test]
    fn a_multicast_crosses_each_link_of_its_tree_once() {
        let mut m = Mesh::new(4, 4, 1, 1);
        let mut arrivals = Vec::new();
        let all: u64 = (1 << 16) - 1;
        let cost = m.send(0, all, 1, 0, |d, t| arrivals.push((d, t)));
        // X-Y routes from a corner: 3 links east along row 0, then 3 down each of the 4
        // columns, and 16 ejections.
        assert_eq!(cost.links, 3 + 4 * 3 + 16);
        assert_eq!(arrivals.len(), 16);
        let far = arrivals.iter().find(|&&(d, _)| d == 15).unwrap().1;
        assert_eq!(far, 7 * 2);
        // Sending it as 16 unicasts crosses far more links.
        let mut m = Mesh::new(4, 4, 1, 1);
        let links: u64 = (0..16).map(|d| one(&mut m, 0, d, 1, 0).1.links).sum();
        assert!(links > 2 * cost.links, "{links} vs {}", cost.links);
    }
}
