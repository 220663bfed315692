//! Which rule picks the node of a one-node job (a whole-GPU gang on one node, a sharer, a
//! CPU-only job): best fit, or the least growth of fragmentation against a task distribution.

use super::{best_fit, fragmentation};
use crate::assignment::GpuSet;
use crate::instance::task_dist::TaskDist;
use crate::instance::{Instance, NodeIx, PendingJob};
use crate::round_state::RoundState;
use crate::topology::Topology;

/// The node rule for one-node jobs.
#[derive(Debug, Clone, Copy)]
pub enum NodeScorer<'d> {
    /// Best fit ([`best_fit`]): in use before empty, fewest left, lowest index.
    BestFit,
    /// Least growth of fragmentation against the distribution ([`fragmentation`]), best fit
    /// on ties.
    Fragmentation(&'d TaskDist),
}

impl<'d> NodeScorer<'d> {
    /// The rule of an instance: fragmentation-aware when it carries a task distribution,
    /// best fit otherwise.
    pub fn of(inst: &'d Instance) -> Self {
        match inst.task_dist.as_deref() {
            Some(d) => NodeScorer::Fragmentation(d),
            None => NodeScorer::BestFit,
        }
    }

    /// The node for a whole-GPU gang on one node of a type in `mask`.
    pub fn single_node(
        &self,
        state: &RoundState,
        mask: &[bool],
        job: &PendingJob,
    ) -> Option<NodeIx> {
        match self {
            NodeScorer::BestFit => best_fit::single_node(state, mask, job),
            NodeScorer::Fragmentation(d) => fragmentation::single_node(state, mask, job, d),
        }
    }

    /// The GPU for a sharer.
    pub fn sharer(&self, state: &RoundState, topo: &Topology, job: &PendingJob) -> Option<GpuSet> {
        match self {
            NodeScorer::BestFit => best_fit::sharer(state, topo, job),
            NodeScorer::Fragmentation(d) => {
                fragmentation::sharer(state, &topo.type_mask(job), job, d)
            }
        }
    }

    /// The node for a CPU-only job.
    pub fn cpu_only(&self, state: &RoundState, job: &PendingJob) -> Option<GpuSet> {
        match self {
            NodeScorer::BestFit => best_fit::cpu_only(state, job),
            NodeScorer::Fragmentation(d) => fragmentation::cpu_only(state, job, d),
        }
    }
}
