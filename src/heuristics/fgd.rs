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

use super::best_fit::{gpu_free_milli, place_with, NodeOption};
use super::Planner;
use crate::assignment::Assignment;
pub use crate::instance::task_dist::{frag, frag_for, NodeFree, TaskDist, TaskType, COVERAGE};
use crate::instance::NodeIx;
use crate::round_state::RoundState;
use crate::state::ClusterState;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The free view of node n in a round state (as seen by work of priority `prio`).
pub fn node_free(state: &RoundState, n: NodeIx, prio: i64) -> NodeFree {
    let node = &state.inst.nodes[n];
    let mut free: Vec<u32> = (0..node.gpus)
        .filter(|&g| !node.down[g as usize])
        .map(|g| gpu_free_milli(state, n, g, prio))
        .collect();
    free.sort_unstable_by(|a, b| b.cmp(a));
    NodeFree {
        gpu_type: node.gpu_type.clone(),
        free,
        cpu: state.cpu_free[n],
        mem: state.mem_free[n],
    }
}

/// Entries kept in the memo before it is cleared.
const MEMO_LIMIT: usize = 1 << 20;

/// The FGD planner.
#[derive(Debug, Clone, Default)]
pub struct Fgd {
    /// Task distribution; `None` derives it from each round's running and pending jobs.
    pub dist: Option<Arc<TaskDist>>,
    memo: Arc<Mutex<HashMap<NodeFree, f64>>>,
}

impl Fgd {
    /// FGD against a fixed task distribution.
    pub fn with_dist(dist: TaskDist) -> Self {
        Fgd {
            dist: Some(Arc::new(dist)),
            memo: Arc::default(),
        }
    }
}

impl Planner for Fgd {
    fn name(&self) -> &'static str {
        "fgd"
    }

    fn plan(&self, &super::RoundContext { inst, topo, .. }: &super::RoundContext) -> Assignment {
        let own;
        let (dist, memo_ok) = match &self.dist {
            Some(d) => (d.as_ref(), true),
            None => {
                own = TaskDist::from_types(inst.pending.iter().map(TaskType::of));
                (&own, false)
            }
        };
        let mut local = HashMap::new();
        let mut guard = self.memo.lock().unwrap_or_else(|e| e.into_inner());
        let memo: &mut HashMap<NodeFree, f64> = if memo_ok { &mut guard } else { &mut local };
        if memo.len() > MEMO_LIMIT {
            memo.clear();
        }
        let mut f = |nf: NodeFree| -> f64 {
            if let Some(&v) = memo.get(&nf) {
                return v;
            }
            let v = frag(&nf, dist);
            memo.insert(nf, v);
            v
        };
        let before = ClusterState::new(inst);
        let mut state = RoundState::new(inst, &before);
        for j in 0..inst.pending.len() {
            let job = &inst.pending[j];
            place_with(
                &mut state,
                topo,
                j,
                &mut |s: &RoundState, opts: &[NodeOption]| {
                    let mut best: Option<(f64, NodeIx, usize)> = None;
                    let mut seen: Vec<(NodeIx, u32)> = Vec::new();
                    for (k, o) in opts.iter().enumerate() {
                        let nf = node_free(s, o.node, job.priority);
                        // A sharer: GPUs with the same free capacity are interchangeable.
                        if job.gpu_milli.is_some() {
                            let lvl = o
                                .gpus
                                .first()
                                .map_or(0, |&g| gpu_free_milli(s, o.node, g, job.priority));
                            if seen.contains(&(o.node, lvl)) {
                                continue;
                            }
                            seen.push((o.node, lvl));
                        }
                        let mut after = nf.clone();
                        let take = job.gpu_milli.unwrap_or(1000);
                        for &g in &o.gpus {
                            let lvl = gpu_free_milli(s, o.node, g, job.priority);
                            if let Some(p) = after.free.iter().position(|&x| x == lvl) {
                                after.free[p] = lvl.saturating_sub(take);
                            }
                        }
                        after.free.sort_unstable_by(|a, b| b.cmp(a));
                        if let Some(c) = after.cpu.as_mut() {
                            *c -= job.cpu_milli as i64;
                        }
                        if let Some(m) = after.mem.as_mut() {
                            *m -= job.memory_mib as i64;
                        }
                        let delta = f(after) - f(nf);
                        if best.is_none_or(|(b, bn, _)| {
                            delta < b - 1e-9 || (delta <= b + 1e-9 && o.node < bn)
                        }) {
                            best = Some((delta, o.node, k));
                        }
                    }
                    best.map(|b| b.2)
                },
            );
        }
        state.assignment
    }
}
