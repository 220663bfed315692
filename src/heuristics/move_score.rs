//! What a local move on a finished plan changes of the objective, counted on what the move
//! touched: the value and spread of the jobs it moved, started or left waiting, the fairness
//! term (tenants' GPUs held), and the packing penalty and, on rounds with a task distribution,
//! the priced fragmentation of the nodes whose occupancy it changed:
//!
//! ```text
//! score(jobs, nodes) = sum_{j in jobs, placed} (value(j) - spread(j)) - fairness(held)
//!                      - sum_{n in nodes} (packing(n) + frag_cost F_n)
//! delta(move)        = score after - score before, over the same jobs and nodes
//! ```
//!
//! (F_n: FGD's fragmentation of node n as it is, [`crate::objective::fragmentation_cost`];
//! its value before the round cancels in the delta.) Every other term of the objective is the
//! same before and after such a move, so the delta is the change of
//! [`crate::objective::evaluate`]'s total. Used by [`super::relocate`], [`super::trade`] and
//! [`super::repack`].

use super::placement::free::node_free;
use crate::instance::{Instance, NodeIx};
use crate::objective::{
    fair_shares, fairness_penalty, frag_cost_per_milli, job_spread, job_value, node_packing,
    value_per_gpu,
};
use crate::round_state::RoundState;
use crate::state::ClusterState;
use crate::topology::Topology;

/// Scores the part of the objective a local move can change.
pub struct MoveScore<'s> {
    inst: &'s Instance,
    topo: &'s Topology,
    fair: Vec<f64>,
    /// GPUs busy on each node before the round (for the packing penalty).
    busy_before: Vec<u32>,
    /// Value of each pending job.
    pub value: Vec<f64>,
    /// Value per GPU of each pending job ([`value_per_gpu`]).
    pub per_gpu: Vec<f64>,
}

impl<'s> MoveScore<'s> {
    /// The scorer of the round whose occupancy before it is `before`.
    pub fn new(inst: &'s Instance, topo: &'s Topology, before: &ClusterState) -> Self {
        MoveScore {
            inst,
            topo,
            fair: fair_shares(inst),
            busy_before: (0..inst.nodes.len())
                .map(|n| before.node_busy_count(n))
                .collect(),
            value: inst.pending.iter().map(|j| job_value(inst, j)).collect(),
            per_gpu: inst
                .pending
                .iter()
                .map(|j| value_per_gpu(inst, j))
                .collect(),
        }
    }

    /// The score of `jobs` and `nodes` in `state` (see the module's formula).
    pub fn score<'n>(
        &self,
        state: &RoundState,
        nodes: impl IntoIterator<Item = &'n NodeIx>,
        jobs: &[usize],
    ) -> f64 {
        let inst = self.inst;
        let mut s = -fairness_penalty(&inst.policy.weights, &self.fair, &state.held);
        for &x in jobs {
            if let Some(gpus) = state.assignment.placed.get(&x) {
                s += self.value[x] - job_spread(inst, self.topo, &inst.pending[x], gpus);
            }
        }
        for &n in nodes {
            s -= self.node_cost(state, n);
        }
        s
    }

    /// Node n's packing penalty and priced fragmentation in `state`.
    pub fn node_cost(&self, state: &RoundState, n: NodeIx) -> f64 {
        let packing = node_packing(
            self.inst.packing_weights(),
            self.inst.nodes[n].usable(),
            self.busy_before[n],
            state.busy[n],
        );
        let fragmentation = self.inst.task_dist.as_deref().map_or(0.0, |dist| {
            frag_cost_per_milli(self.inst) * dist.frag_cached(&node_free(state, n, i64::MIN))
        });
        packing + fragmentation
    }
}
