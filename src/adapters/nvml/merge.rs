//! Put a discovered node into an instance: update the node of the same name, or add it.

use crate::instance::raw::{RawInstance, RawNode};

/// What [`merge_node`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeAction {
    /// A node of that name existed and was updated.
    Updated,
    /// The node was appended.
    Added,
}

/// Update the node named `node.name` in `inst` with what discovery knows (GPU count, model,
/// GPU type, down GPUs, CPU and memory where read), keeping its rack, pod and NVLink domain
/// unless `node` sets them; or append `node` when no node has that name. Other nodes, tenants,
/// jobs and the policy are untouched.
pub fn merge_node(inst: &mut RawInstance, node: RawNode) -> MergeAction {
    match inst.nodes.iter_mut().find(|n| n.name == node.name) {
        Some(old) => {
            old.gpus = node.gpus;
            old.model = node.model;
            old.gpu_type = node.gpu_type;
            old.down = node.down;
            if node.cpu_milli.is_some() {
                old.cpu_milli = node.cpu_milli;
            }
            if node.memory_mib.is_some() {
                old.memory_mib = node.memory_mib;
            }
            if node.rack.is_some() {
                old.rack = node.rack;
            }
            if node.pod.is_some() {
                old.pod = node.pod;
            }
            if node.nvlink_domain.is_some() {
                old.nvlink_domain = node.nvlink_domain;
            }
            MergeAction::Updated
        }
        None => {
            inst.nodes.push(node);
            MergeAction::Added
        }
    }
}
