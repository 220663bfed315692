//! The interconnect as a petgraph graph: cluster spine -> pods -> racks (leaf switches) ->
//! nodes (or rack-scale NVLink domains of nodes) -> NVLink islands / NUMA halves -> GPUs.
//!
//! Planners use it for three things: the locality domains of a node (rack, pod, NVLink unit),
//! the [`Span`] and spread cost of a set of GPUs, and the choice of GPU indices inside a node
//! ([`choose_indices`]).

mod indices;

pub use indices::choose_indices;

use crate::hardware::Slowdown;
use crate::instance::{Instance, NodeIx};
use petgraph::graph::{NodeIndex, UnGraph};
use std::collections::{BTreeMap, BTreeSet};

/// A vertex of the interconnect graph.
#[derive(Debug, Clone, PartialEq)]
pub enum Vertex {
    /// The cluster spine.
    Cluster,
    /// A pod (spine group).
    Pod(usize),
    /// A rack (leaf switch).
    Rack(usize),
    /// A rack-scale NVLink domain joining several nodes.
    NvlinkDomain(String),
    /// A node.
    Node(NodeIx),
    /// An NVLink island (or NVSwitch domain) inside a node.
    Island(NodeIx, usize),
    /// A GPU.
    Gpu(NodeIx, u32),
}

/// An edge of the interconnect graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// Pod to spine.
    Spine,
    /// Rack to pod.
    Leaf,
    /// Node NIC to its rack (or its NVLink domain).
    Nic,
    /// NVLink switch fabric.
    Nvlink,
    /// PCIe.
    Pcie,
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
    /// Nodes where the GPUs touch more NVLink islands than their count needs.
    pub island_splits: u32,
}

/// Accepted GPU types and GPUs per node: what a unit's capacity for a job depends on.
type CapacityKey = (Vec<bool>, Option<u32>);

/// The interconnect graph and the locality indices derived from it.
#[derive(Debug)]
pub struct Topology {
    /// The graph.
    pub graph: UnGraph<Vertex, Link>,
    /// Graph vertex of each node.
    pub node_vertex: Vec<NodeIndex>,
    /// Locality unit of each node: nodes of one rack-scale NVLink domain share a unit.
    pub unit_of: Vec<usize>,
    /// Number of units.
    pub units: usize,
    /// Largest NVLink island per node.
    pub largest_island: Vec<u32>,
    /// Nodes of each unit, rack and pod, and all nodes: the locality domains, tightest first.
    pub domains: [Vec<Vec<NodeIx>>; 4],
    /// Distinct GPU types, and each node's index into them.
    pub type_names: Vec<String>,
    /// GPU type index of each node.
    pub node_type: Vec<usize>,
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

impl Topology {
    /// Build the graph of an instance.
    pub fn new(inst: &Instance) -> Self {
        let mut graph = UnGraph::new_undirected();
        let root = graph.add_node(Vertex::Cluster);
        let pod_v: Vec<_> = (0..inst.pods.len())
            .map(|p| {
                let v = graph.add_node(Vertex::Pod(p));
                graph.add_edge(root, v, Link::Spine);
                v
            })
            .collect();
        let rack_v: Vec<_> = (0..inst.racks.len())
            .map(|r| {
                let v = graph.add_node(Vertex::Rack(r));
                graph.add_edge(pod_v[inst.rack_pod[r]], v, Link::Leaf);
                v
            })
            .collect();
        let mut domains: BTreeMap<String, NodeIndex> = BTreeMap::new();
        let mut unit_by_domain: BTreeMap<String, usize> = BTreeMap::new();
        let mut unit_of = Vec::with_capacity(inst.nodes.len());
        let mut units = 0;
        let mut node_vertex = Vec::with_capacity(inst.nodes.len());
        let mut largest_island = Vec::with_capacity(inst.nodes.len());
        for (n, node) in inst.nodes.iter().enumerate() {
            let nv = graph.add_node(Vertex::Node(n));
            node_vertex.push(nv);
            graph.add_edge(rack_v[node.rack], nv, Link::Nic);
            match &node.nvlink_domain {
                Some(d) => {
                    let dv = *domains.entry(d.clone()).or_insert_with(|| {
                        let v = graph.add_node(Vertex::NvlinkDomain(d.clone()));
                        graph.add_edge(rack_v[node.rack], v, Link::Leaf);
                        v
                    });
                    graph.add_edge(dv, nv, Link::Nvlink);
                    let u = *unit_by_domain.entry(d.clone()).or_insert_with(|| {
                        units += 1;
                        units - 1
                    });
                    unit_of.push(u);
                }
                None => {
                    unit_of.push(units);
                    units += 1;
                }
            }
            let mut in_island = BTreeSet::new();
            for (i, island) in node.islands.iter().enumerate() {
                let iv = graph.add_node(Vertex::Island(n, i));
                graph.add_edge(nv, iv, Link::Pcie);
                for &g in island {
                    let gv = graph.add_node(Vertex::Gpu(n, g));
                    graph.add_edge(iv, gv, Link::Nvlink);
                    in_island.insert(g);
                }
            }
            for g in (0..node.gpus).filter(|g| !in_island.contains(g)) {
                let gv = graph.add_node(Vertex::Gpu(n, g));
                graph.add_edge(nv, gv, Link::Pcie);
            }
            largest_island.push(
                node.islands
                    .iter()
                    .map(|i| i.len() as u32)
                    .max()
                    .unwrap_or(1)
                    .max(1),
            );
        }
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
            domains[1][node.rack].push(n);
            domains[2][node.pod].push(n);
            node_type.push(type_names.binary_search(&node.gpu_type).unwrap_or(0));
        }
        Topology {
            graph,
            node_vertex,
            unit_of,
            units,
            largest_island,
            domains,
            type_names,
            node_type,
            unit_capacity: Default::default(),
        }
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
        for (&n, idx) in gpus {
            let touched = inst.nodes[n]
                .islands
                .iter()
                .filter(|isl| isl.iter().any(|g| idx.contains(g)))
                .count() as u32;
            let needed = (idx.len() as u32).div_ceil(self.largest_island[n]);
            if touched > needed {
                span.island_splits += 1;
            }
        }
        span
    }

    /// The span of a set of nodes, NVLink islands aside (for comparing candidate node sets
    /// before GPUs are picked); `nodes` sorted or not.
    pub fn span_of_nodes(&self, inst: &Instance, nodes: impl Iterator<Item = NodeIx>) -> Span {
        let (mut units, mut racks, mut pods) = (Vec::new(), Vec::new(), Vec::new());
        let mut count = 0;
        for n in nodes {
            count += 1;
            units.push(self.unit_of[n]);
            racks.push(inst.nodes[n].rack);
            pods.push(inst.nodes[n].pod);
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
        let mask = self.type_mask(job);
        let per_node = job.gpus_per_node;
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

    /// Shortest hop count between two GPUs in the graph (a locality distance for reports).
    pub fn gpu_hops(&self, a: (NodeIx, u32), b: (NodeIx, u32)) -> Option<usize> {
        let find = |(n, g): (NodeIx, u32)| {
            self.graph
                .node_indices()
                .find(|&v| self.graph[v] == Vertex::Gpu(n, g))
        };
        let (va, vb) = (find(a)?, find(b)?);
        let dist = petgraph::algo::dijkstra(&self.graph, va, Some(vb), |_| 1usize);
        dist.get(&vb).copied()
    }
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
