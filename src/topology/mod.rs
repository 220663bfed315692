//! The interconnect as a petgraph graph: cluster core -> pods -> racks (leaf switches) ->
//! nodes (and rack-scale NVLink domains of nodes) -> CPU sockets / NVLink islands -> GPUs, each
//! link carrying its bandwidth ([`bandwidth`]).
//!
//! The graph is the source of every locality fact planners use, read off it once per round in
//! O(nodes + GPUs): the rack, pod and NVLink unit of each node (its neighbours), each node's GPU
//! layout ([`NodeFabric`]: NVLink group and socket per GPU), hence the [`Span`] of a set of GPUs
//! (distinct units, racks and pods; nodes whose GPUs cross a slower link than they need) and
//! its spread cost ([`spread_penalty`]: per tier crossed, the workload's slowdown), the tier and
//! bottleneck bandwidth between two GPUs, and the GPU indices chosen inside a node
//! ([`choose_indices`]).

pub mod bandwidth;
mod fabric;
mod indices;

pub use fabric::{node_links, Local, NodeFabric};
pub use indices::{choose_indices, choose_on};

use crate::hardware::{ModelLibrary, Slowdown};
use crate::instance::{Instance, NodeIx};
use bandwidth::{NetworkBandwidth, NodeBandwidth};
use petgraph::graph::{NodeIndex, UnGraph};
use petgraph::visit::EdgeRef;
use std::collections::BTreeMap;

/// A vertex of the interconnect graph.
#[derive(Debug, Clone, PartialEq)]
pub enum Vertex {
    /// The cluster core.
    Cluster,
    /// A pod (spine group).
    Pod(usize),
    /// A rack (leaf switch).
    Rack(usize),
    /// A rack-scale NVLink domain joining several nodes.
    NvlinkDomain(String),
    /// A node.
    Node(NodeIx),
    /// A CPU socket (NUMA node, PCIe root) inside a node.
    Socket(NodeIx, usize),
    /// An NVLink island (NVSwitch domain or bridge) inside a node.
    Island(NodeIx, usize),
    /// A GPU.
    Gpu(NodeIx, u32),
}

/// What a link of the interconnect graph is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkKind {
    /// Pod spine to the cluster core.
    PodUplink,
    /// Rack leaf to its pod spine (also an NVLink domain to its rack).
    RackUplink,
    /// Node NIC to its rack leaf.
    Nic,
    /// NVLink: GPU to its island switch, node to its rack-scale NVLink domain.
    Nvlink,
    /// PCIe: GPU to its CPU socket.
    Pcie,
    /// CPU socket interconnect: socket to its node.
    Socket,
}

/// A link of the interconnect graph: its kind and bandwidth (GB/s bidirectional per GPU).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Link {
    /// What the link is.
    pub kind: LinkKind,
    /// Bandwidth, GB/s bidirectional per GPU.
    pub gbps: f64,
}

impl Link {
    /// A link of `kind` with `gbps`.
    pub fn new(kind: LinkKind, gbps: f64) -> Self {
        Link { kind, gbps }
    }
}

/// The tightest level of the graph joining GPUs: where their paths meet, tightest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    /// One NVLink group (or one GPU).
    Nvlink,
    /// One CPU socket / PCIe root, over PCIe.
    Pcie,
    /// One node, across its sockets or NVLink groups.
    Node,
    /// One rack-scale NVLink domain of several nodes.
    NvlinkDomain,
    /// One rack, over the nodes' NICs.
    Rack,
    /// One pod, over rack uplinks.
    Pod,
    /// The cluster, over pod uplinks.
    Cluster,
}

/// Where a set of GPUs sits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Span {
    /// Distinct nodes.
    pub nodes: u32,
    /// Distinct node units (a rack-scale NVLink domain counts once).
    pub units: u32,
    /// Distinct racks.
    pub racks: u32,
    /// Distinct pods.
    pub pods: u32,
    /// Nodes where the GPUs cross a slower link than their count needs
    /// ([`NodeFabric::split`]: more NVLink groups, or over PCIe more sockets).
    pub island_splits: u32,
}

impl Span {
    /// The tier where the span's paths meet (an NVLink domain when several nodes share one
    /// unit; a node when its GPUs are split).
    pub fn tier(&self) -> Tier {
        if self.pods > 1 {
            Tier::Cluster
        } else if self.racks > 1 {
            Tier::Pod
        } else if self.units > 1 {
            Tier::Rack
        } else if self.nodes > 1 {
            Tier::NvlinkDomain
        } else if self.island_splits > 0 {
            Tier::Node
        } else {
            Tier::Nvlink
        }
    }
}

/// Accepted GPU types and GPUs per node: what a unit's capacity for a job depends on.
type CapacityKey = (Vec<bool>, Option<u32>);

/// The interconnect graph and the locality indices read off it.
#[derive(Debug)]
pub struct Topology {
    /// The graph.
    pub graph: UnGraph<Vertex, Link>,
    /// Graph vertex of each node.
    pub node_vertex: Vec<NodeIndex>,
    /// Rack of each node: the rack leaf its NIC links to.
    pub rack_of: Vec<usize>,
    /// Pod of each node: the pod its rack's uplink reaches.
    pub pod_of: Vec<usize>,
    /// Locality unit of each node: nodes linked to one rack-scale NVLink domain share a unit.
    pub unit_of: Vec<usize>,
    /// Number of units.
    pub units: usize,
    /// GPU layout of each node, read off its links.
    pub fabric: Vec<NodeFabric>,
    /// Largest NVLink group per node.
    pub largest_island: Vec<u32>,
    /// Nodes of each unit, rack and pod, and all nodes: the locality domains, tightest first.
    pub domains: [Vec<Vec<NodeIx>>; 4],
    /// Distinct GPU types, and each node's index into them.
    pub type_names: Vec<String>,
    /// GPU type index of each node.
    pub node_type: Vec<usize>,
    /// Per GPU type: whether each of its nodes is a node unit of its own (no rack-scale
    /// NVLink domain joins it to others).
    type_units_are_nodes: Vec<bool>,
    /// Whether some node unit joins nodes of different GPU types (an NVLink domain named on
    /// nodes of two types): then a gang's GPUs of several types may share one unit, and the
    /// aggregated model counts no unit per type.
    pub units_mix_types: bool,
    /// Bandwidths of the network tiers.
    pub network: NetworkBandwidth,
    /// Largest unit capacity per (accepted types, GPUs per node), computed on first use.
    unit_capacity: std::sync::Mutex<BTreeMap<CapacityKey, u32>>,
}

/// A locality level of [`Topology::domains`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// One node or one rack-scale NVLink unit of nodes.
    Unit = 0,
    /// One rack.
    Rack = 1,
    /// One pod.
    Pod = 2,
    /// The whole cluster.
    Cluster = 3,
}

/// The shipped hardware models, parsed once per process (node bandwidths come from them).
fn shipped_models() -> &'static ModelLibrary {
    static MODELS: std::sync::OnceLock<ModelLibrary> = std::sync::OnceLock::new();
    MODELS.get_or_init(ModelLibrary::builtin)
}

impl Topology {
    /// Build the graph of an instance, node bandwidths from the shipped hardware models.
    pub fn new(inst: &Instance) -> Self {
        Self::with_models(inst, shipped_models())
    }

    /// Build the graph of an instance, node bandwidths from `models`.
    pub fn with_models(inst: &Instance, models: &ModelLibrary) -> Self {
        let network = NetworkBandwidth::default();
        let (graph, node_vertex, fabric) = build_graph(inst, models, &network);
        let (rack_of, pod_of, unit_of, units) = read_locality(&graph, &node_vertex);
        let mut domains: [Vec<Vec<NodeIx>>; 4] = [
            vec![Vec::new(); units],
            vec![Vec::new(); inst.racks.len()],
            vec![Vec::new(); inst.pods.len()],
            vec![(0..inst.nodes.len()).collect()],
        ];
        let mut type_names: Vec<String> = inst.nodes.iter().map(|n| n.gpu_type.clone()).collect();
        type_names.sort();
        type_names.dedup();
        let mut node_type = Vec::with_capacity(inst.nodes.len());
        for (n, node) in inst.nodes.iter().enumerate() {
            domains[0][unit_of[n]].push(n);
            domains[1][rack_of[n]].push(n);
            domains[2][pod_of[n]].push(n);
            node_type.push(type_names.binary_search(&node.gpu_type).unwrap_or(0));
        }
        let mut type_units_are_nodes = vec![true; type_names.len()];
        for (n, &t) in node_type.iter().enumerate() {
            type_units_are_nodes[t] &= domains[0][unit_of[n]].len() == 1;
        }
        let units_mix_types = domains[0]
            .iter()
            .any(|unit| unit.iter().any(|&n| node_type[n] != node_type[unit[0]]));
        Topology {
            graph,
            node_vertex,
            rack_of,
            pod_of,
            unit_of,
            units,
            largest_island: fabric.iter().map(|f| f.largest_group).collect(),
            fabric,
            domains,
            type_names,
            node_type,
            type_units_are_nodes,
            units_mix_types,
            network,
            unit_capacity: Default::default(),
        }
    }

    /// Whether every node of the types in `mask` is a node unit of its own.
    pub fn units_are_nodes_on(&self, mask: &[bool]) -> bool {
        mask.iter()
            .zip(&self.type_units_are_nodes)
            .all(|(&accepted, &alone)| !accepted || alone)
    }

    /// Which GPU types (by index into `type_names`) a job accepts.
    pub fn type_mask(&self, job: &crate::instance::PendingJob) -> Vec<bool> {
        self.type_names
            .iter()
            .map(|t| job.accepts_type(t))
            .collect()
    }

    /// The span of a set of GPUs given per node.
    pub fn span(&self, inst: &Instance, gpus: &BTreeMap<NodeIx, Vec<u32>>) -> Span {
        let mut span = self.span_of_nodes(inst, gpus.keys().copied());
        span.island_splits = gpus
            .iter()
            .filter(|(&n, idx)| self.fabric[n].split(idx))
            .count() as u32;
        span
    }

    /// The span of a set of nodes, NVLink islands aside (for comparing candidate node sets
    /// before GPUs are picked); `nodes` sorted or not.
    pub fn span_of_nodes(&self, _inst: &Instance, nodes: impl Iterator<Item = NodeIx>) -> Span {
        let (mut units, mut racks, mut pods) = (Vec::new(), Vec::new(), Vec::new());
        let mut count = 0;
        for n in nodes {
            count += 1;
            units.push(self.unit_of[n]);
            racks.push(self.rack_of[n]);
            pods.push(self.pod_of[n]);
        }
        let distinct = |v: &mut Vec<usize>| {
            v.sort_unstable();
            v.dedup();
            v.len() as u32
        };
        Span {
            nodes: count,
            units: distinct(&mut units),
            racks: distinct(&mut racks),
            pods: distinct(&mut pods),
            island_splits: 0,
        }
    }

    /// Fewest node units a gang of `gpus` could use on the nodes it accepts, at `per_node` GPUs
    /// per node at most: the baseline from which extra units are charged.
    pub fn min_units(&self, inst: &Instance, job: &crate::instance::PendingJob) -> u32 {
        if job.gpus == 0 {
            return 1;
        }
        job.gpus.div_ceil(self.unit_capacity(inst, job))
    }

    /// The most GPUs one node unit of the job's accepted types offers it (at most its
    /// `gpus_per_node` per node), 1 at least.
    pub fn unit_capacity(&self, inst: &Instance, job: &crate::instance::PendingJob) -> u32 {
        self.unit_capacity_on(inst, self.type_mask(job), job.gpus_per_node)
    }

    /// The most GPUs one node unit of the types in `mask` offers a gang of at most `per_node`
    /// GPUs per node, 1 at least.
    pub fn unit_capacity_on(&self, inst: &Instance, mask: Vec<bool>, per_node: Option<u32>) -> u32 {
        let key = (mask, per_node);
        let mut cache = self.unit_capacity.lock().unwrap_or_else(|e| e.into_inner());
        *cache.entry(key.clone()).or_insert_with(|| {
            let mut cap = vec![0u32; self.units];
            for (n, node) in inst
                .nodes
                .iter()
                .enumerate()
                .filter(|(n, _)| key.0[self.node_type[*n]])
            {
                cap[self.unit_of[n]] += per_node.map_or(node.gpus, |p| p.min(node.gpus));
            }
            cap.into_iter().max().unwrap_or(0).max(1)
        })
    }

    /// The tier where the paths from GPU `a` to GPU `b` (node, index) meet.
    pub fn tier_between(&self, a: (NodeIx, u32), b: (NodeIx, u32)) -> Tier {
        if a.0 == b.0 {
            self.fabric[a.0].tier_between(a.1, b.1)
        } else if self.unit_of[a.0] == self.unit_of[b.0] {
            Tier::NvlinkDomain
        } else if self.rack_of[a.0] == self.rack_of[b.0] {
            Tier::Rack
        } else if self.pod_of[a.0] == self.pod_of[b.0] {
            Tier::Pod
        } else {
            Tier::Cluster
        }
    }

    /// The bottleneck bandwidth (GB/s bidirectional per GPU) of the path from GPU `a` to GPU
    /// `b`: the slowest link up to where the paths meet and down again.
    pub fn bottleneck_gbps(&self, a: (NodeIx, u32), b: (NodeIx, u32)) -> f64 {
        let (fa, fb) = (&self.fabric[a.0].bandwidth, &self.fabric[b.0].bandwidth);
        let net = &self.network;
        match self.tier_between(a, b) {
            Tier::Nvlink | Tier::Pcie | Tier::Node => self.fabric[a.0].bottleneck_gbps(a.1, b.1),
            Tier::NvlinkDomain => fa.nvlink.min(fb.nvlink),
            Tier::Rack => fa.pcie.min(fb.pcie).min(net.nic),
            Tier::Pod => fa.pcie.min(fb.pcie).min(net.nic).min(net.rack_uplink),
            Tier::Cluster => fa
                .pcie
                .min(fb.pcie)
                .min(net.nic)
                .min(net.rack_uplink)
                .min(net.pod_uplink),
        }
    }
}

/// The graph of an instance: its vertices and links, the vertex of each node, and each node's
/// layout read off the links added for it. O(nodes + GPUs).
fn build_graph(
    inst: &Instance,
    models: &ModelLibrary,
    net: &NetworkBandwidth,
) -> (UnGraph<Vertex, Link>, Vec<NodeIndex>, Vec<NodeFabric>) {
    let mut graph = UnGraph::new_undirected();
    let root = graph.add_node(Vertex::Cluster);
    let pod_v: Vec<_> = (0..inst.pods.len())
        .map(|p| {
            let v = graph.add_node(Vertex::Pod(p));
            graph.add_edge(root, v, Link::new(LinkKind::PodUplink, net.pod_uplink));
            v
        })
        .collect();
    let rack_v: Vec<_> = (0..inst.racks.len())
        .map(|r| {
            let v = graph.add_node(Vertex::Rack(r));
            graph.add_edge(
                pod_v[inst.rack_pod[r]],
                v,
                Link::new(LinkKind::RackUplink, net.rack_uplink),
            );
            v
        })
        .collect();
    let mut domain_v: BTreeMap<&str, NodeIndex> = BTreeMap::new();
    let mut node_vertex = Vec::with_capacity(inst.nodes.len());
    let mut fabric = Vec::with_capacity(inst.nodes.len());
    for (n, node) in inst.nodes.iter().enumerate() {
        let bw = NodeBandwidth::of(node, models);
        let nv = graph.add_node(Vertex::Node(n));
        node_vertex.push(nv);
        graph.add_edge(rack_v[node.rack], nv, Link::new(LinkKind::Nic, net.nic));
        if let Some(d) = &node.nvlink_domain {
            let dv = *domain_v.entry(d.as_str()).or_insert_with(|| {
                let v = graph.add_node(Vertex::NvlinkDomain(d.clone()));
                graph.add_edge(
                    rack_v[node.rack],
                    v,
                    Link::new(LinkKind::RackUplink, net.rack_uplink),
                );
                v
            });
            graph.add_edge(dv, nv, Link::new(LinkKind::Nvlink, bw.nvlink));
        }
        let sockets: Vec<_> = (0..fabric::socket_count(node))
            .map(|s| {
                let v = graph.add_node(Vertex::Socket(n, s));
                graph.add_edge(nv, v, Link::new(LinkKind::Socket, bw.socket));
                v
            })
            .collect();
        let links = node_links(node, &bw);
        let mut islands: BTreeMap<usize, NodeIndex> = BTreeMap::new();
        let mut gpu_v: Vec<Option<NodeIndex>> = vec![None; node.gpus as usize];
        let mut vertex = |graph: &mut UnGraph<Vertex, Link>, l: Local| match l {
            Local::Socket(s) => sockets[s],
            Local::Island(i) => *islands
                .entry(i)
                .or_insert_with(|| graph.add_node(Vertex::Island(n, i))),
            Local::Gpu(g) => {
                *gpu_v[g as usize].get_or_insert_with(|| graph.add_node(Vertex::Gpu(n, g)))
            }
        };
        for &(a, b, link) in &links {
            let (va, vb) = (vertex(&mut graph, a), vertex(&mut graph, b));
            graph.add_edge(va, vb, link);
        }
        fabric.push(NodeFabric::from_links(node, &links, bw));
    }
    (graph, node_vertex, fabric)
}

/// Rack, pod and NVLink unit of each node, read off the graph: the rack its NIC links to, the
/// pod that rack's uplink reaches, the NVLink domain it links to (units numbered in node order,
/// a domain at its first node, a node outside any domain a unit of its own).
fn read_locality(
    graph: &UnGraph<Vertex, Link>,
    node_vertex: &[NodeIndex],
) -> (Vec<usize>, Vec<usize>, Vec<usize>, usize) {
    let mut pod_of_rack: BTreeMap<usize, usize> = BTreeMap::new();
    for v in graph.node_indices() {
        if let Vertex::Rack(r) = graph[v] {
            let pod = graph.neighbors(v).find_map(|u| match graph[u] {
                Vertex::Pod(p) => Some(p),
                _ => None,
            });
            pod_of_rack.insert(r, pod.unwrap_or(0));
        }
    }
    let nodes = node_vertex.len();
    let (mut rack_of, mut pod_of, mut unit_of) = (vec![0; nodes], vec![0; nodes], vec![0; nodes]);
    let mut unit_by_domain: BTreeMap<NodeIndex, usize> = BTreeMap::new();
    let mut units = 0;
    for (n, &nv) in node_vertex.iter().enumerate() {
        let mut domain = None;
        for e in graph.edges(nv) {
            let other = if e.source() == nv {
                e.target()
            } else {
                e.source()
            };
            match (&graph[other], e.weight().kind) {
                (Vertex::Rack(r), LinkKind::Nic) => {
                    rack_of[n] = *r;
                    pod_of[n] = pod_of_rack.get(r).copied().unwrap_or(0);
                }
                (Vertex::NvlinkDomain(_), LinkKind::Nvlink) => domain = Some(other),
                _ => {}
            }
        }
        unit_of[n] = match domain {
            Some(d) => *unit_by_domain.entry(d).or_insert_with(|| {
                units += 1;
                units - 1
            }),
            None => {
                units += 1;
                units - 1
            }
        };
    }
    (rack_of, pod_of, unit_of, units)
}

/// Spread penalty of a span, per SPEC weights: `spread * gpus * sum (slowdown - 1) * extra`.
pub fn spread_penalty(
    span: &Span,
    min_units: u32,
    gpus: u32,
    slowdown: &Slowdown,
    spread_weight: f64,
) -> f64 {
    let extra_units = span.units.saturating_sub(min_units) as f64;
    let extra_racks = span.racks.saturating_sub(1) as f64;
    let extra_pods = span.pods.saturating_sub(1) as f64;
    spread_weight
        * gpus as f64
        * ((slowdown.span_nodes - 1.0) * extra_units
            + (slowdown.span_racks - 1.0) * extra_racks
            + (slowdown.span_pods - 1.0) * extra_pods
            + (slowdown.split_island - 1.0) * span.island_splits as f64)
}
