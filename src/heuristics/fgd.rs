//! Fragmentation gradient descent (FGD; Weng et al., USENIX ATC'23, "Beware of Fragmentation:
//! Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent").
//!
//! The fragmentation of a node against one task type m is the GPU capacity on the node that m
//! could not use: all of the node's free GPU capacity when m cannot run there at all (wrong GPU
//! type, too little CPU or memory, too few GPUs with room), else the free capacity of the GPUs
//! too full for m's per-GPU demand. Against the task distribution M (the popular task types of
//! the workload and their frequencies), F_n(M) = sum_m p_m F_n(m). FGD places each task where
//! F_n(M) grows the least: it tries every feasible node (and, for a GPU-sharing task, every
//! distinct way to pick its GPU) and takes the smallest increase, lowest node index on ties.
//! Jobs go in arrival order. The task distribution is given by the caller (the simulator
//! passes the trace's) or, by default, taken from the round's own jobs.

use super::baseline::{place_with, NodeOption};
use super::placement::fragmentation::growth;
use super::placement::free::{gpu_free_milli, node_free};
use super::Planner;
use crate::assignment::Assignment;
pub use crate::instance::task_dist::{frag, frag_for, NodeFree, TaskDist, TaskType, COVERAGE};
use crate::instance::NodeIx;
use crate::round_state::RoundState;
use crate::state::ClusterState;
use crate::units::{MILLI_PER_GPU, TOLERANCE};
use std::sync::Arc;

/// The FGD planner.
#[derive(Debug, Clone, Default)]
pub struct Fgd {
    /// Task distribution; `None` derives it from each round's running and pending jobs.
    pub dist: Option<Arc<TaskDist>>,
}

impl Fgd {
    /// FGD against a fixed task distribution.
    pub fn with_dist(dist: TaskDist) -> Self {
        Fgd {
            dist: Some(Arc::new(dist)),
        }
    }
}

impl Planner for Fgd {
    fn name(&self) -> &'static str {
        "fgd"
    }

    fn plan(&self, &super::RoundContext { inst, topo, .. }: &super::RoundContext) -> Assignment {
        let own;
        let dist = match &self.dist {
            Some(d) => d.as_ref(),
            None => {
                own = TaskDist::from_types(inst.pending.iter().map(TaskType::of));
                &own
            }
        };
        let before = ClusterState::new(inst);
        let mut state = RoundState::new(inst, &before);
        for j in 0..inst.pending.len() {
            place_with(
                &mut state,
                topo,
                j,
                &mut |s: &RoundState, opts: &[NodeOption]| least_growth(s, j, opts, dist),
            );
        }
        state.assignment
    }
}

/// The option of pending job j whose node's fragmentation grows least, lowest node index on
/// ties. A sharer's GPUs of one node with the same free capacity are interchangeable: the
/// first of them stands for all.
fn least_growth(
    state: &RoundState,
    j: usize,
    opts: &[NodeOption],
    dist: &TaskDist,
) -> Option<usize> {
    let job = &state.inst.pending[j];
    let take = job.gpu_milli.unwrap_or(MILLI_PER_GPU);
    let mut best: Option<(f64, NodeIx, usize)> = None;
    let mut seen: Vec<(NodeIx, u32)> = Vec::new();
    let mut levels: Vec<u32> = Vec::new();
    for (k, o) in opts.iter().enumerate() {
        if job.gpu_milli.is_some() {
            let lvl = o
                .gpus
                .first()
                .map_or(0, |&g| gpu_free_milli(state, o.node, g, job.priority));
            if seen.contains(&(o.node, lvl)) {
                continue;
            }
            seen.push((o.node, lvl));
        }
        levels.clear();
        levels.extend(
            o.gpus
                .iter()
                .map(|&g| gpu_free_milli(state, o.node, g, job.priority)),
        );
        let before = node_free(state, o.node, job.priority);
        let delta = growth(dist, &before, &levels, take, job.cpu_milli, job.memory_mib);
        if best.is_none_or(|(b, bn, _)| {
            delta < b - TOLERANCE || (delta <= b + TOLERANCE && o.node < bn)
        }) {
            best = Some((delta, o.node, k));
        }
    }
    best.map(|b| b.2)
}
