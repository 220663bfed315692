//! The graph inside one node: each GPU linked to its NVLink island's switch (NVLink) and to its
//! CPU socket / PCIe root (PCIe), each socket linked to the node (the socket interconnect); and
//! what planners read off those links: each GPU's NVLink group and socket.

use super::bandwidth::NodeBandwidth;
use super::{Link, LinkKind, Tier};
use crate::instance::Node;

/// A vertex inside one node, numbered locally (the graph maps it to its own vertex).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Local {
    /// CPU socket (NUMA node, PCIe root) `s`.
    Socket(usize),
    /// The NVLink switch or bridge of island `i` (islands of two GPUs or more).
    Island(usize),
    /// GPU `g`.
    Gpu(u32),
}

/// The links inside a node, besides node to socket: island to GPU over NVLink (a GPU alone in
/// its island has none), socket to GPU over PCIe (a GPU in no NUMA set hangs off socket 0).
pub fn node_links(node: &Node, bw: &NodeBandwidth) -> Vec<(Local, Local, Link)> {
    let mut links = Vec::with_capacity(2 * node.gpus as usize);
    for (i, island) in node.islands.iter().enumerate() {
        if island.len() > 1 {
            let nvlink = Link::new(LinkKind::Nvlink, bw.nvlink);
            links.extend(
                island
                    .iter()
                    .map(|&g| (Local::Island(i), Local::Gpu(g), nvlink)),
            );
        }
    }
    for g in 0..node.gpus {
        let s = node
            .numa
            .iter()
            .position(|set| set.contains(&g))
            .unwrap_or(0);
        links.push((
            Local::Socket(s),
            Local::Gpu(g),
            Link::new(LinkKind::Pcie, bw.pcie),
        ));
    }
    links
}

/// Sockets of a node: one per NUMA set, one at least.
pub fn socket_count(node: &Node) -> usize {
    node.numa.len().max(1)
}

/// A node's GPU layout as its links give it.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeFabric {
    /// NVLink group of each GPU: GPUs linked to one island switch share it, a GPU without an
    /// NVLink link is alone in its own.
    pub group: Vec<u32>,
    /// Number of NVLink groups.
    pub groups: u32,
    /// CPU socket of each GPU.
    pub socket: Vec<u32>,
    /// Number of sockets.
    pub sockets: u32,
    /// GPUs in the largest NVLink group (1 at least).
    pub largest_group: u32,
    /// GPUs on the fullest socket (1 at least).
    pub largest_socket: u32,
    /// The bandwidths of the links.
    pub bandwidth: NodeBandwidth,
}

impl NodeFabric {
    /// The layout of a node read off its links ([`node_links`]).
    pub fn from_links(node: &Node, links: &[(Local, Local, Link)], bw: NodeBandwidth) -> Self {
        let gpus = node.gpus as usize;
        let mut group: Vec<Option<u32>> = vec![None; gpus];
        let mut socket = vec![0u32; gpus];
        let mut island_group: Vec<Option<u32>> = vec![None; node.islands.len()];
        let mut groups = 0u32;
        for &(from, to, link) in links {
            match (from, to, link.kind) {
                (Local::Island(i), Local::Gpu(g), LinkKind::Nvlink)
                    if group[g as usize].is_none() =>
                {
                    let id = *island_group[i].get_or_insert_with(|| {
                        groups += 1;
                        groups - 1
                    });
                    group[g as usize] = Some(id);
                }
                (Local::Socket(s), Local::Gpu(g), LinkKind::Pcie) => socket[g as usize] = s as u32,
                _ => {}
            }
        }
        let group: Vec<u32> = group
            .into_iter()
            .map(|g| {
                g.unwrap_or_else(|| {
                    groups += 1;
                    groups - 1
                })
            })
            .collect();
        let sockets = socket_count(node) as u32;
        let largest = |ids: &[u32], n: u32| {
            let mut size = vec![0u32; n as usize];
            ids.iter().for_each(|&i| size[i as usize] += 1);
            size.into_iter().max().unwrap_or(1).max(1)
        };
        NodeFabric {
            largest_group: largest(&group, groups),
            largest_socket: largest(&socket, sockets),
            group,
            groups,
            socket,
            sockets,
            bandwidth: bw,
        }
    }

    /// The layout of a node on its own (default bandwidths: the choice of GPUs reads only
    /// which links exist).
    pub fn of(node: &Node) -> Self {
        let bw = NodeBandwidth {
            nvlink: super::bandwidth::DEFAULT_NVLINK_GBPS,
            pcie: super::bandwidth::DEFAULT_PCIE_GBPS,
            socket: super::bandwidth::SOCKET_LINK_GBPS,
        };
        Self::from_links(node, &node_links(node, &bw), bw)
    }

    /// The tightest tier joining GPUs `a` and `b` of this node.
    pub fn tier_between(&self, a: u32, b: u32) -> Tier {
        if self.group[a as usize] == self.group[b as usize] {
            Tier::Nvlink
        } else if self.socket[a as usize] == self.socket[b as usize] {
            Tier::Pcie
        } else {
            Tier::Node
        }
    }

    /// The bottleneck bandwidth of the path between GPUs `a` and `b` of this node.
    pub fn bottleneck_gbps(&self, a: u32, b: u32) -> f64 {
        let bw = &self.bandwidth;
        match self.tier_between(a, b) {
            _ if a == b => f64::INFINITY,
            Tier::Nvlink => bw.nvlink,
            Tier::Pcie => bw.pcie,
            _ => bw.pcie.min(bw.socket),
        }
    }

    /// Whether GPUs `idx` of this node are split: they touch more NVLink groups than their
    /// count needs, or (talking over PCIe, several groups) more sockets than it needs.
    pub fn split(&self, idx: &[u32]) -> bool {
        let k = idx.len() as u32;
        if k < 2 {
            return false;
        }
        let groups = distinct(idx.iter().map(|&g| self.group[g as usize]));
        if groups > k.div_ceil(self.largest_group) {
            return true;
        }
        groups > 1
            && distinct(idx.iter().map(|&g| self.socket[g as usize]))
                > k.div_ceil(self.largest_socket)
    }
}

/// Distinct values among ids below 1024 (a node has at most 1024 GPUs).
fn distinct(ids: impl Iterator<Item = u32>) -> u32 {
    let mut seen = [0u64; 16];
    for i in ids {
        seen[(i / 64) as usize] |= 1 << (i % 64);
    }
    seen.iter().map(|w| w.count_ones()).sum()
}
