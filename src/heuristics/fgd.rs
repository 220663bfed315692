//! Fragmentation gradient descent (FGD; Weng et al., USENIX ATC'23, "Beware of Fragmentation:
//! Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent"), scored as the
//! paper's artifact (github.com/hkust-adsl/kubernetes-scheduler-simulator, commit `8f3d6417`,
//! `pkg/simulator/plugin/fgd_score.go`, `pkg/utils/frag.go`) scores it.
//!
//! The fragmentation of a node against one task type m is the GPU capacity on the node that m
//! could not use: all of the node's free GPU capacity when m cannot run there at all (wrong GPU
//! type, too little CPU or memory, too few GPUs with room, or m is a CPU-only type), else the
//! free capacity of the GPUs too full for m's per-GPU demand. Against the task distribution M
//! (the artifact's "typical pods"), F_n(M) = sum_m p_m F_n(m).
//!
//! As in the artifact, a node's score for a task is the integer
//! `floor(100 * sigmoid((F_n(M) before - F_n(M) after) / 1000))` (Kubernetes scores are
//! integers; the artifact weights the plugin by 1000, which does not change the order). For a
//! GPU-sharing task the node's score is that of its best GPU (the lowest GPU index among
//! equals). The task goes to a node of the highest score; among equal scores the artifact's
//! (modified) `selectHost` takes the smallest node name, and its simulator prefixes every node
//! name with its place in a random permutation of the nodes (`syncClusterResourceList`): ties
//! go to the first node of one random node order, fixed for the whole run. This planner draws
//! that order from a generator seeded by `policy.seed` on its first round and keeps it across
//! rounds. Jobs go in arrival order. The task distribution is given
//! by the caller (the simulator passes the artifact's typical pods,
//! `crate::sim::engine::typical_pods`) or, by default, taken from the round's own jobs.
//!
//! Known differences from the artifact: its random generator (Go's `math/rand`) is not ours,
//! so seed 42 is another node order (and another pod order, `crate::sim::engine`); its filter
//! and ours agree on CPU, memory, GPU type and GPU room.

use super::baseline::{place_with, Baseline, Cutoff, NodeOption};
use super::placement::fragmentation::growth;
use super::placement::free::{gpu_free_milli, node_free};
use crate::assignment::Assignment;
pub use crate::instance::task_dist::{frag, frag_for, NodeFree, TaskDist, TaskType, COVERAGE};
use crate::instance::NodeIx;
use crate::round_state::RoundState;
use crate::state::ClusterState;
use crate::units::MILLI_PER_GPU;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::sync::{Arc, Mutex};

/// The FGD planner.
#[derive(Debug, Clone, Default)]
pub struct Fgd {
    /// Task distribution; `None` derives it from each round's running and pending jobs.
    pub dist: Option<Arc<TaskDist>>,
    /// Tie-break rank of every node (a random permutation drawn on the first round from its
    /// `policy.seed`; smaller wins).
    ranks: Arc<Mutex<Option<Vec<u32>>>>,
}

impl Fgd {
    /// FGD against a fixed task distribution.
    pub fn with_dist(dist: TaskDist) -> Self {
        Fgd {
            dist: Some(Arc::new(dist)),
            ranks: Arc::default(),
        }
    }
}

pub use crate::instance::task_dist::artifact_score;

impl Baseline for Fgd {
    const NAME: &'static str = "fgd";

    fn plan_cut(
        &self,
        &super::RoundContext { inst, topo, .. }: &super::RoundContext,
        cut: &mut Cutoff,
    ) -> Assignment {
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
        let mut guard = self.ranks.lock().unwrap_or_else(|e| e.into_inner());
        if guard.as_ref().is_none_or(|r| r.len() != inst.nodes.len()) {
            let mut r: Vec<u32> = (0..inst.nodes.len() as u32).collect();
            r.shuffle(&mut ChaCha8Rng::seed_from_u64(inst.policy.seed));
            *guard = Some(r);
        }
        let ranks = guard.as_deref().unwrap_or(&[]);
        for j in 0..inst.pending.len() {
            if !cut.next_job() {
                break;
            }
            place_with(
                &mut state,
                topo,
                j,
                &mut |s: &RoundState, opts: &[NodeOption]| best_score(s, j, opts, dist, ranks),
            );
        }
        state.assignment
    }
}

/// The option of pending job j with the highest artifact score: per node its best option
/// (the first among equal scores, i.e. the lowest GPU index for a sharer), then among nodes of
/// equal score the one of smallest rank.
fn best_score(
    state: &RoundState,
    j: usize,
    opts: &[NodeOption],
    dist: &TaskDist,
    ranks: &[u32],
) -> Option<usize> {
    let job = &state.inst.pending[j];
    let take = job.gpu_milli.unwrap_or(MILLI_PER_GPU);
    // Per node: (node, best score, option index), in node order.
    let mut per_node: Vec<(NodeIx, i64, usize)> = Vec::new();
    let mut levels: Vec<u32> = Vec::new();
    let mut memo: Vec<(u32, i64)> = Vec::new();
    for (k, o) in opts.iter().enumerate() {
        if per_node.last().is_none_or(|p| p.0 != o.node) {
            memo.clear();
        }
        levels.clear();
        match o.shared_gpu {
            Some(g) => levels.push(gpu_free_milli(state, o.node, g, job.priority)),
            // A whole-GPU job takes whole GPUs (free, or freed by a preemption); a CPU-only
            // job none.
            None => levels.extend(std::iter::repeat_n(MILLI_PER_GPU, job.gpus as usize)),
        }
        // A sharer's GPUs of one node with the same free capacity score the same.
        let lvl = levels.first().copied().unwrap_or(0);
        let score = match memo.iter().find(|m| job.gpu_milli.is_some() && m.0 == lvl) {
            Some(m) => m.1,
            None => {
                let before = node_free(state, o.node, job.priority);
                let g = growth(dist, &before, &levels, take, job.cpu_milli, job.memory_mib);
                let s = artifact_score(g);
                memo.push((lvl, s));
                s
            }
        };
        match per_node.last_mut() {
            Some(p) if p.0 == o.node => {
                if score > p.1 {
                    (p.1, p.2) = (score, k);
                }
            }
            _ => per_node.push((o.node, score, k)),
        }
    }
    let rank = |n: NodeIx| ranks.get(n).copied().unwrap_or(u32::MAX);
    per_node
        .iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(rank(b.0).cmp(&rank(a.0))))
        .map(|b| b.2)
}
