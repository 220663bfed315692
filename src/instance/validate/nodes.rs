//! The `nodes` section: each node's GPUs (from its fields or its hardware model), down GPUs,
//! rack and pod, NVLink islands and NUMA halves.

use super::issues::Issues;
use super::limits;
use crate::hardware::{HardwareModel, ModelLibrary};
use crate::instance::raw::RawNode;
use crate::instance::text::{quoted, shorten, ECHO_CHARS};
use crate::instance::{Node, NodeIx};
use std::collections::BTreeMap;

/// The nodes checked so far, indexed as in the file.
#[derive(Debug, Default)]
pub struct NodeTable {
    /// One entry per node of the file, at the node's index: `None` for a node refused outright
    /// (too many GPUs to build it), which always leaves an issue.
    pub nodes: Vec<Option<Node>>,
    /// Node index by name.
    pub by_name: BTreeMap<String, NodeIx>,
    /// Rack names, in order of first use.
    pub racks: Vec<String>,
    /// Pod of each rack.
    pub rack_pod: Vec<usize>,
    /// Pod names, in order of first use.
    pub pods: Vec<String>,
    rack_ix: BTreeMap<String, usize>,
    pod_ix: BTreeMap<String, usize>,
}

impl NodeTable {
    /// GPUs of node n, when the node was built.
    pub fn gpus(&self, n: NodeIx) -> Option<u32> {
        self.nodes
            .get(n)
            .and_then(Option::as_ref)
            .map(|node| node.gpus)
    }

    /// The index of a rack in its pod, adding both on first use; an issue when the rack was
    /// seen in another pod.
    fn place(
        &mut self,
        is: &mut Issues,
        p: &str,
        rack_name: String,
        pod_name: String,
    ) -> (usize, usize) {
        let pod = *self.pod_ix.entry(pod_name.clone()).or_insert_with(|| {
            self.pods.push(pod_name.clone());
            self.pods.len() - 1
        });
        let rack = match self.rack_ix.get(&rack_name) {
            Some(&r) => {
                if self.rack_pod[r] != pod {
                    let earlier = &self.pods[self.rack_pod[r]];
                    is.push(
                        format!("{p}.pod"),
                        format!(
                            "{} but {} is in {} on an earlier node; a rack belongs to one pod: \
                             give its nodes the same pod",
                            if pod_name.is_empty() {
                                "is not given".to_string()
                            } else {
                                format!("is {}", quoted(&pod_name))
                            },
                            unnamed_or("rack", &rack_name),
                            unnamed_or("pod", earlier)
                        ),
                    );
                }
                r
            }
            None => {
                self.racks.push(rack_name.clone());
                self.rack_pod.push(pod);
                self.rack_ix.insert(rack_name, self.racks.len() - 1);
                self.racks.len() - 1
            }
        };
        (rack, pod)
    }
}

/// `rack "r1"`, or for the empty name `the unnamed rack` (of the nodes that give none).
fn unnamed_or(kind: &str, name: &str) -> String {
    if name.is_empty() {
        format!("the unnamed {kind} (of the nodes that give none)")
    } else {
        format!("{kind} {}", quoted(name))
    }
}

/// Check every node; each keeps its file index in the table, built or not.
pub fn check(is: &mut Issues, raw: &[RawNode], models: &ModelLibrary) -> NodeTable {
    let mut table = NodeTable {
        nodes: Vec::with_capacity(raw.len()),
        ..NodeTable::default()
    };
    for (i, rn) in raw.iter().enumerate() {
        let p = format!("nodes[{i}]");
        is.name(&format!("{p}.name"), &rn.name);
        if table.by_name.insert(rn.name.clone(), i).is_some() {
            is.push(
                format!("{p}.name"),
                format!(
                    "{} is used by an earlier node; node names must be unique",
                    quoted(&rn.name)
                ),
            );
        }
        let node = node(is, &p, rn, models, &mut table);
        table.nodes.push(node);
    }
    table
}

/// One node, or `None` when its GPU count is over the limit (the rest of it is not checked).
fn node(
    is: &mut Issues,
    p: &str,
    rn: &RawNode,
    models: &ModelLibrary,
    table: &mut NodeTable,
) -> Option<Node> {
    let model = hardware_model(is, p, rn, models);
    let gpus = gpu_count(is, p, rn, model);
    if gpus > limits::MAX_GPUS_PER_NODE {
        is.push(
            format!("{p}.gpus"),
            format!(
                "is {gpus}; expected at most {} GPUs per node",
                limits::MAX_GPUS_PER_NODE
            ),
        );
        return None;
    }
    let gpus = gpus as u32;
    let gpu_type = gpu_type(is, p, rn, model);
    let down = down_gpus(is, p, rn, gpus);
    let (rack, pod) = table.place(
        is,
        p,
        rn.rack.clone().unwrap_or_default(),
        rn.pod.clone().unwrap_or_default(),
    );
    let (islands, numa) = islands_and_numa(model, gpus);
    if let Some(d) = &rn.nvlink_domain {
        is.name(&format!("{p}.nvlink_domain"), d);
    }
    let cpu_milli = is.resource(
        &format!("{p}.cpu_milli"),
        rn.cpu_milli.or(model.and_then(|m| m.cpu_milli)),
    );
    let memory_mib = is.resource(
        &format!("{p}.memory_mib"),
        rn.memory_mib.or(model.and_then(|m| m.memory_mib)),
    );
    Some(Node {
        name: rn.name.clone(),
        gpus,
        gpu_type,
        rack,
        pod,
        down,
        cpu_milli,
        memory_mib,
        islands,
        numa,
        nvlink_domain: rn.nvlink_domain.clone(),
        model: rn.model.clone(),
    })
}

/// The node's hardware model, if it names a known one.
fn hardware_model<'m>(
    is: &mut Issues,
    p: &str,
    rn: &RawNode,
    models: &'m ModelLibrary,
) -> Option<&'m HardwareModel> {
    let m = rn.model.as_ref()?;
    let found = models.hardware.get(m);
    if found.is_none() {
        is.push(
            format!("{p}.model"),
            format!(
                "{} is not a known hardware model; expected one of {}",
                quoted(m),
                models
                    .hardware
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
    }
    found
}

/// GPUs from the node's field or its model (0 with an issue when neither gives them).
fn gpu_count(is: &mut Issues, p: &str, rn: &RawNode, model: Option<&HardwareModel>) -> u64 {
    match (rn.gpus, model) {
        (Some(g), Some(m)) if g != m.gpus as u64 => {
            is.push(
                format!("{p}.gpus"),
                format!(
                    "is {g} but model {} has {} GPUs; drop gpus or make them equal",
                    m.name, m.gpus
                ),
            );
            g
        }
        (Some(g), _) => g,
        (None, Some(m)) => m.gpus as u64,
        (None, None) => {
            if rn.model.is_none() {
                is.push(
                    format!("{p}.gpus"),
                    "is missing; give a GPU count or a model",
                );
            }
            0
        }
    }
}

/// GPU type from the node's field or its model (`generic` when neither names one).
fn gpu_type(is: &mut Issues, p: &str, rn: &RawNode, model: Option<&HardwareModel>) -> String {
    match (&rn.gpu_type, model) {
        (Some(t), Some(m)) if *t != m.gpu_type => {
            is.push(
                format!("{p}.gpu_type"),
                format!(
                    "is {} but model {} has {:?}; drop gpu_type or make them equal",
                    quoted(t),
                    m.name,
                    m.gpu_type
                ),
            );
            t.clone()
        }
        (Some(t), _) => {
            is.name(&format!("{p}.gpu_type"), t);
            t.clone()
        }
        (None, Some(m)) => m.gpu_type.clone(),
        (None, None) => "generic".to_string(),
    }
}

/// `down[g]` per GPU; indices out of range or listed twice are issues.
fn down_gpus(is: &mut Issues, p: &str, rn: &RawNode, gpus: u32) -> Vec<bool> {
    let mut down = vec![false; gpus as usize];
    for (k, &d) in rn.down.iter().enumerate() {
        if d >= gpus as u64 {
            is.push(
                format!("{p}.down[{k}]"),
                format!(
                    "GPU index {d} does not exist; node {} has GPUs 0..{}",
                    shorten(&rn.name, ECHO_CHARS),
                    gpus.saturating_sub(1)
                ),
            );
        } else if down[d as usize] {
            is.push(
                format!("{p}.down[{k}]"),
                format!("GPU index {d} is listed twice; list each down GPU once"),
            );
        } else {
            down[d as usize] = true;
        }
    }
    down
}

/// NVLink islands and NUMA halves from the model when its GPU count matches; one island and
/// one NUMA set of all GPUs otherwise.
fn islands_and_numa(model: Option<&HardwareModel>, gpus: u32) -> (Vec<Vec<u32>>, Vec<Vec<u32>>) {
    let all: Vec<u32> = (0..gpus).collect();
    match model {
        Some(m) if m.gpus == gpus => (
            if m.nvlink_islands.is_empty() {
                all.iter().map(|&g| vec![g]).collect()
            } else {
                m.nvlink_islands.clone()
            },
            if m.numa_nodes.is_empty() {
                vec![all.clone()]
            } else {
                m.numa_nodes.clone()
            },
        ),
        _ => (vec![all.clone()], vec![all]),
    }
}
