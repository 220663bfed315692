//! The placement machinery the baseline planners share.
//!
//! A baseline decides two things: the order in which pending jobs are tried and, for each
//! job, which of its feasible single-node placements ([`single_node_options`]) to take. Gangs
//! no single node can hold go to the topology-aware placement search
//! ([`super::placement::find_placement`]), the same for every baseline, so the baselines differ
//! where the literature's do: order and node choice. Each job is placed whole or not at all.

use super::placement::find_placement;
use crate::assignment::{Assignment, GpuSet};
use crate::instance::{Instance, NodeIx};
use crate::round_state::RoundState;
use crate::state::ClusterState;
use crate::topology::Topology;

/// One way to place a job on one node: the node and the GPU indices (empty for CPU-only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeOption {
    /// Node.
    pub node: NodeIx,
    /// GPU indices (one for a sharer).
    pub gpus: Vec<u32>,
}

/// A baseline's node choice: the index of the option to take among a job's single-node
/// options, or `None` to leave the job waiting.
pub type Pick<'p> = dyn FnMut(&RoundState, &[NodeOption]) -> Option<usize> + 'p;

/// Every feasible single-node placement of pending job j, by node then GPU. A whole-GPU job
/// gets one option per node (indices chosen inside NVLink islands); a sharer one option per
/// GPU with room; a CPU-only job one option per node with room. GPUs freed by a preemption
/// this round count as free (free ones are used first).
pub fn single_node_options(state: &RoundState, j: usize) -> Vec<NodeOption> {
    let inst = state.inst;
    let job = &inst.pending[j];
    let mut out = Vec::new();
    if !state.quota_allows(job) {
        return out;
    }
    let fits_one_node = job.gpus_per_node.is_none_or(|g| g == job.gpus);
    for (n, node) in inst.nodes.iter().enumerate() {
        if job.gpus > 0 && !job.accepts_type(&node.gpu_type) {
            continue;
        }
        if job.gpus == 0 {
            if state.fits_resources(n, job, 0) {
                out.push(NodeOption {
                    node: n,
                    gpus: Vec::new(),
                });
            }
        } else if let Some(m) = job.gpu_milli {
            if !state.fits_resources(n, job, 1) {
                continue;
            }
            for g in 0..node.gpus {
                if state
                    .shareable_milli(n, g, job.priority)
                    .is_some_and(|f| f >= m)
                {
                    out.push(NodeOption {
                        node: n,
                        gpus: vec![g],
                    });
                }
            }
        } else if fits_one_node && node.gpus >= job.gpus {
            let allowed = state.allowed_whole(n, job.priority);
            if allowed.len() as u32 >= job.gpus && state.fits_resources(n, job, job.gpus) {
                if let Some(set) = state.pick_indices(j, &[(n, job.gpus)]) {
                    if let Some(idx) = set.get(&n) {
                        out.push(NodeOption {
                            node: n,
                            gpus: idx.clone(),
                        });
                    }
                }
            }
        }
    }
    out
}

/// Where job j goes: the single-node option `pick` chooses; when there is none and the job may
/// span nodes, the placement search's multi-node placement. `None`: it waits.
pub fn placement_for(
    state: &RoundState,
    topo: &Topology,
    j: usize,
    pick: &mut Pick,
) -> Option<GpuSet> {
    let options = single_node_options(state, j);
    if !options.is_empty() {
        let k = pick(state, &options)?;
        let o = &options[k.min(options.len() - 1)];
        return Some(GpuSet::from([(o.node, o.gpus.clone())]));
    }
    let job = &state.inst.pending[j];
    if job.gpus < 2 || job.node_limit() < 2 || !state.quota_allows(job) {
        return None;
    }
    find_placement(state, topo, j).filter(|set| set.len() > 1)
}

/// Place job j where [`placement_for`] puts it. Returns whether it was placed.
pub fn place_with(state: &mut RoundState, topo: &Topology, j: usize, pick: &mut Pick) -> bool {
    match placement_for(state, topo, j, pick) {
        Some(set) => {
            state.commit(j, set);
            true
        }
        None => false,
    }
}

/// Run one pass over `order` with a node chooser; the assignment of the round.
pub fn run_pass(inst: &Instance, topo: &Topology, order: &[usize], pick: &mut Pick) -> Assignment {
    let before = ClusterState::new(inst);
    let mut state = RoundState::new(inst, &before);
    for &j in order {
        place_with(&mut state, topo, j, pick);
    }
    state.assignment
}
