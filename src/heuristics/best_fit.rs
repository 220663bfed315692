//! Best fit, and the placement machinery the other baselines share.
//!
//! A baseline decides two things: the order in which pending jobs are tried and, for each
//! job, which of its feasible single-node placements ([`single_node_options`]) to take. Gangs
//! no single node can hold go to the greedy's topology-aware packer
//! ([`super::greedy::find_placement`]), the same for every baseline, so the baselines differ
//! where the literature's do: order and node choice. Each job is placed whole or not at all.

use super::greedy::find_placement;
use super::Planner;
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

/// Milli free on GPU g of node n for work of priority `prio` (1000 when free or freed by a
/// preemption this round, the unshared rest when shared, 0 when held whole or down).
pub fn gpu_free_milli(state: &RoundState, n: NodeIx, g: u32, prio: i64) -> u32 {
    if state.whole_gpu(n, g, prio).is_some() {
        return 1000;
    }
    state.shareable_milli(n, g, prio).unwrap_or(0)
}

/// Total milli free on node n.
pub fn node_free_milli(state: &RoundState, n: NodeIx, prio: i64) -> u32 {
    (0..state.inst.nodes[n].gpus)
        .map(|g| gpu_free_milli(state, n, g, prio))
        .sum()
}

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

/// Place job j: `pick` chooses among its single-node options; when there are none and the job
/// may span nodes, the greedy's topology-aware packer places it. Returns whether it was placed.
pub fn place_with(
    state: &mut RoundState,
    topo: &Topology,
    j: usize,
    pick: &mut dyn FnMut(&RoundState, &[NodeOption]) -> Option<usize>,
) -> bool {
    let options = single_node_options(state, j);
    if !options.is_empty() {
        if let Some(k) = pick(state, &options) {
            let o = &options[k.min(options.len() - 1)];
            state.commit(j, GpuSet::from([(o.node, o.gpus.clone())]));
            return true;
        }
        return false;
    }
    let job = &state.inst.pending[j];
    if job.gpus < 2 || job.node_limit() < 2 || !state.quota_allows(job) {
        return false;
    }
    match find_placement(state, topo, j) {
        Some(set) if set.len() > 1 => {
            state.commit(j, set);
            true
        }
        _ => false,
    }
}

/// Run one pass over `order` with a node chooser; the assignment of the round.
pub fn run_pass(
    inst: &Instance,
    topo: &Topology,
    order: &[usize],
    pick: &mut dyn FnMut(&RoundState, &[NodeOption]) -> Option<usize>,
) -> Assignment {
    let before = ClusterState::new(inst);
    let mut state = RoundState::new(inst, &before);
    for &j in order {
        place_with(&mut state, topo, j, pick);
    }
    state.assignment
}

/// The best-fit choice: the option leaving the least GPU capacity free on its node (then on its
/// GPU, for a sharer; then the least CPU left), lowest node index on ties.
pub fn best_fit_choice(state: &RoundState, j: usize, options: &[NodeOption]) -> Option<usize> {
    let job = &state.inst.pending[j];
    let ask = match job.gpu_milli {
        Some(m) => m,
        None => job.gpus * 1000,
    };
    options
        .iter()
        .enumerate()
        .min_by_key(|(_, o)| {
            let node_left = node_free_milli(state, o.node, job.priority).saturating_sub(ask);
            let gpu_left = o
                .gpus
                .first()
                .filter(|_| job.gpu_milli.is_some())
                .map_or(0, |&g| {
                    gpu_free_milli(state, o.node, g, job.priority).saturating_sub(ask)
                });
            let cpu_left = state.cpu_free[o.node].unwrap_or(i64::MAX);
            (node_left, gpu_left, cpu_left, o.node)
        })
        .map(|(k, _)| k)
}

/// Best fit: jobs in arrival (pending) order; each to the node it fills most tightly.
#[derive(Debug, Clone, Copy, Default)]
pub struct BestFit;

impl Planner for BestFit {
    fn name(&self) -> &'static str {
        "best-fit"
    }

    fn plan(&self, &super::RoundContext { inst, topo, .. }: &super::RoundContext) -> Assignment {
        let before = ClusterState::new(inst);
        let mut state = RoundState::new(inst, &before);
        for j in 0..inst.pending.len() {
            place_with(&mut state, topo, j, &mut |s, o| best_fit_choice(s, j, o));
        }
        state.assignment
    }
}
