//! The settings of the on-chip network: topology and timing.

use serde::{Deserialize, Serialize};

/// How the tiles of a point-to-point protocol are connected ([`crate::network`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Topology {
    /// Every message takes `ideal_latency` cycles; nothing is shared.
    Ideal,
    /// A 2-D mesh with X-Y routing, shared links and routers, and multicast.
    Mesh,
}

/// The on-chip network of the point-to-point protocols (MESI snooping uses its bus).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NetworkConfig {
    /// Topology.
    pub topology: Topology,
    /// Ideal topology: cycles every message takes.
    pub ideal_latency: u64,
    /// Mesh: routers per row.
    pub mesh_width: u32,
    /// Mesh: rows. `mesh_width * mesh_height` tiles, at least one per core.
    pub mesh_height: u32,
    /// Mesh: cycles for a message's head to cross a router.
    pub router_latency: u64,
    /// Mesh: cycles for a message's head to cross a link.
    pub link_latency: u64,
    /// Mesh: bytes a link carries per cycle (a flit).
    pub link_bytes: u64,
    /// Bytes of a message's header (a control message is only a header; a data message is a
    /// header and a line).
    pub control_bytes: u64,
    /// Memory controllers, spread over the tiles.
    pub memory_controllers: u32,
}

impl Default for NetworkConfig {
    /// An ideal network; its mesh settings are Flask's Table I.
    fn default() -> Self {
        NetworkConfig {
            topology: Topology::Ideal,
            ideal_latency: 8,
            mesh_width: 4,
            mesh_height: 4,
            router_latency: 2,
            link_latency: 1,
            link_bytes: 16,
            control_bytes: 8,
            memory_controllers: 4,
        }
    }
}
