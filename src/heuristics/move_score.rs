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
    /// What local moves rank pending jobs by under [`Ranking::FairValue`]
    /// ([`MoveScore::ranked_from`]): the value, and the value per GPU.
    pub rank_value: Vec<f64>,
    pub rank_per_gpu: Vec<f64>,
    /// Whether [`Ranking::FairValue`] ranks some job otherwise than [`Ranking::Value`].
    pub fair_differs: bool,
}

/// What local moves rank pending jobs by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ranking {
    /// The job's value.
    Value,
    /// The job's value and what its GPUs take off the fairness term
    /// ([`MoveScore::ranked_from`]).
    FairValue,
}

impl Ranking {
    /// Both rankings where they differ (fairness first: a trade keeps the first fill that
    /// pays), else [`Ranking::Value`] alone.
    pub fn all(score: &MoveScore) -> &'static [Ranking] {
        if score.fair_differs {
            &[Ranking::FairValue, Ranking::Value]
        } else {
            &[Ranking::Value]
        }
    }
}

impl<'s> MoveScore<'s> {
    /// The scorer of the round whose occupancy before it is `before`; it ranks jobs by their
    /// value alone until [`MoveScore::ranked_from`] counts fairness.
    pub fn new(inst: &'s Instance, topo: &'s Topology, before: &ClusterState) -> Self {
        let value: Vec<f64> = inst.pending.iter().map(|j| job_value(inst, j)).collect();
        let per_gpu: Vec<f64> = inst
            .pending
            .iter()
            .map(|j| value_per_gpu(inst, j))
            .collect();
        MoveScore {
            inst,
            topo,
            fair: fair_shares(inst),
            busy_before: (0..inst.nodes.len())
                .map(|n| before.node_busy_count(n))
                .collect(),
            rank_value: value.clone(),
            rank_per_gpu: per_gpu.clone(),
            value,
            per_gpu,
            fair_differs: false,
        }
    }

    /// Rank jobs by their value plus what their GPUs take off the fairness term where their
    /// tenant holds less than its fair share (`held`, per tenant: in the plan the moves start
    /// from): `fairness` per GPU up to the
    /// shortfall, and no further than the tenant's quota leaves room (a job the quota holds
    /// back gains nothing by ranking first). Local moves rank by value per GPU to choose which
    /// waiting jobs to try; without the fairness part they try the jobs of a tenant above its
    /// share first wherever those are worth a little more per GPU, and a plan of a round whose
    /// fair shares bind ends with its under-served tenants further below their shares than
    /// needed. Ranking by it alone tries fewer of the jobs worth most, so moves use one
    /// ranking or the other ([`Ranking`]).
    pub fn ranked_from(mut self, held: &[f64]) -> Self {
        let inst = self.inst;
        let w = inst.policy.weights.fairness;
        self.rank_value = inst
            .pending
            .iter()
            .enumerate()
            .map(|(j, job)| {
                let t = job.tenant;
                let room = inst.tenants[t].quota.map_or(f64::MAX, |q| q - held[t]);
                let short = (self.fair[t] - held[t]).min(room).max(0.0);
                self.value[j] + w * job.gpu_equivalent().min(short)
            })
            .collect();
        self.rank_per_gpu = inst
            .pending
            .iter()
            .enumerate()
            .map(|(j, job)| {
                let bonus = self.rank_value[j] - self.value[j];
                self.per_gpu[j] + bonus / job.gpu_equivalent().max(1e-9)
            })
            .collect();
        self.fair_differs = self.rank_value != self.value;
        self
    }

    /// Job j's value under `ranking`.
    pub fn value_by(&self, ranking: Ranking, j: usize) -> f64 {
        match ranking {
            Ranking::Value => self.value[j],
            Ranking::FairValue => self.rank_value[j],
        }
    }

    /// Job j's value per GPU under `ranking`.
    pub fn per_gpu_by(&self, ranking: Ranking, j: usize) -> f64 {
        match ranking {
            Ranking::Value => self.per_gpu[j],
            Ranking::FairValue => self.rank_per_gpu[j],
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

#[cfg(test)]
mod tests {
    use super::{MoveScore, Ranking};
    use crate::hardware::ModelLibrary;
    use crate::instance::parse_instance;
    use crate::objective::{fair_shares, held_before};
    use crate::state::ClusterState;
    use crate::topology::Topology;

    /// `over` holds 12 of 16 GPUs; `under` holds none and asks for 5 (its fair share, equal
    /// weights); its quota, where given, leaves it room for QUOTA GPUs.
    fn round(quota: &str) -> String {
        format!(
            "
nodes:
  - {{name: n1, gpus: 8}}
  - {{name: n2, gpus: 8}}
tenants:
  - {{name: over}}
  - {{name: under{quota}}}
running:
  - {{id: r1, tenant: over, gpus: {{n1: [0, 1, 2, 3, 4, 5, 6, 7]}}}}
  - {{id: r2, tenant: over, gpus: {{n2: [0, 1, 2, 3]}}}}
pending:
  - {{id: o1, tenant: over, gpus: 1, priority: 1}}
  - {{id: u1, tenant: under, gpus: 1}}
  - {{id: u4, tenant: under, gpus: 4}}
"
        )
    }

    #[test]
    fn jobs_of_a_tenant_below_its_fair_share_rank_up_by_the_fairness_their_gpus_buy() {
        let inst = parse_instance(&round(""), "fair", &ModelLibrary::builtin()).unwrap();
        assert_eq!(fair_shares(&inst), [11.0, 5.0]);
        let (topo, before) = (Topology::new(&inst), ClusterState::new(&inst));
        let s = MoveScore::new(&inst, &topo, &before).ranked_from(&held_before(&inst));
        let w = inst.policy.weights.fairness;
        let near = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(near(s.rank_value[0], s.value[0]), "over is above its share");
        assert!(near(s.rank_value[1], s.value[1] + w));
        assert!(near(s.rank_value[2], s.value[2] + 4.0 * w));
        assert!(near(s.rank_per_gpu[2], s.per_gpu[2] + w));
        assert_eq!(Ranking::all(&s), [Ranking::FairValue, Ranking::Value]);
        // Once the plan gives `under` its share, fairness ranks nothing up.
        let s = s.ranked_from(&[12.0, 5.0]);
        assert_eq!(s.rank_value, s.value);
        assert_eq!(Ranking::all(&s), [Ranking::Value]);
        // A quota with room for 3 GPUs: a job's fairness counts up to 3 of its GPUs.
        let inst = parse_instance(&round(", quota: 3"), "quota", &ModelLibrary::builtin()).unwrap();
        let (topo, before) = (Topology::new(&inst), ClusterState::new(&inst));
        let s = MoveScore::new(&inst, &topo, &before).ranked_from(&held_before(&inst));
        assert!(near(s.rank_value[2], s.value[2] + 3.0 * w));
        assert_eq!(held_before(&inst), [12.0, 0.0]);
    }
}
