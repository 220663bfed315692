//! Bandwidths of the interconnect graph's links, GB/s bidirectional per GPU (the unit the
//! hardware models quote): NVLink and PCIe from the node's hardware model, the CPU socket
//! link and the network tiers from documented defaults.

use crate::hardware::{HardwareModel, ModelLibrary};
use crate::instance::Node;

/// One 400 Gb/s NIC per GPU: 50 GB/s each way, 100 GB/s bidirectional. Source: DGX H100 /
/// H200 / B200 datasheets, "8x single-port NVIDIA ConnectX-7 ... 400Gb/s" for 8 GPUs.
pub const NIC_GBPS: f64 = 100.0;
/// Rack leaf to spine, per GPU: non-blocking, equal to the NIC. Source: NVIDIA DGX SuperPOD
/// reference architecture, "rail-optimized, full fat-tree" compute fabric (no oversubscription
/// inside a scalable unit).
pub const RACK_UPLINK_GBPS: f64 = 100.0;
/// Pod to cluster core, per GPU: judgement, a 2:1 oversubscribed core (pods joined by fewer
/// links than their racks have), 50 GB/s bidirectional.
pub const POD_UPLINK_GBPS: f64 = 50.0;
/// CPU socket to socket (UPI / xGMI), per GPU: judgement, one UPI 2.0 link at 16 GT/s
/// (~32 GB/s each way, Intel 4th-gen Xeon specification), 64 GB/s bidirectional.
pub const SOCKET_LINK_GBPS: f64 = 64.0;
/// NVLink of a node without a hardware model (one island of all GPUs assumed): A100 SXM
/// spec table, "NVIDIA NVLink: 600GB/s".
pub const DEFAULT_NVLINK_GBPS: f64 = 600.0;
/// PCIe of a node without a hardware model: PCIe Gen4 x16, 64 GB/s bidirectional.
pub const DEFAULT_PCIE_GBPS: f64 = 64.0;

/// The network tiers' bandwidths, defaults from the constants above.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NetworkBandwidth {
    /// Node NIC to its rack leaf.
    pub nic: f64,
    /// Rack leaf to its pod spine.
    pub rack_uplink: f64,
    /// Pod spine to the cluster core.
    pub pod_uplink: f64,
}

impl Default for NetworkBandwidth {
    fn default() -> Self {
        NetworkBandwidth {
            nic: NIC_GBPS,
            rack_uplink: RACK_UPLINK_GBPS,
            pod_uplink: POD_UPLINK_GBPS,
        }
    }
}

/// The bandwidths of the links inside one node.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NodeBandwidth {
    /// GPU to its NVLink island (or its rack-scale NVLink domain).
    pub nvlink: f64,
    /// GPU to its CPU socket / PCIe root.
    pub pcie: f64,
    /// CPU socket to the node (socket to socket).
    pub socket: f64,
}

impl NodeBandwidth {
    /// The node's bandwidths: from its hardware model when `models` has it, else defaults.
    pub fn of(node: &Node, models: &ModelLibrary) -> Self {
        let model: Option<&HardwareModel> =
            node.model.as_ref().and_then(|m| models.hardware.get(m));
        NodeBandwidth {
            nvlink: model.map_or(DEFAULT_NVLINK_GBPS, |m| m.nvlink_gbps),
            pcie: model.map_or(DEFAULT_PCIE_GBPS, |m| m.pcie_gbps),
            socket: SOCKET_LINK_GBPS,
        }
    }
}
