//! Which rule picks the node of a one-node job (a whole-GPU gang on one node, a sharer, a
//! CPU-only job): best fit, or the least growth of fragmentation against a task distribution.

use super::nodes::Nodes;
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

    /// The node for a whole-GPU gang on one node of a type in `mask`, among `nodes`.
    pub fn single_node(
        &self,
        state: &RoundState,
        mask: &[bool],
        job: &PendingJob,
        nodes: Nodes,
    ) -> Option<NodeIx> {
        match (self, nodes) {
            (NodeScorer::BestFit, Nodes::All) => best_fit::single_node(state, mask, job),
            (NodeScorer::BestFit, Nodes::Only(list)) => {
                best_fit::single_node_among(state, mask, job, list)
            }
            (NodeScorer::Fragmentation(d), _) => {
                fragmentation::single_node(state, mask, job, d, nodes)
            }
        }
    }

    /// The GPU for a sharer, among `nodes`.
    pub fn sharer(
        &self,
        state: &RoundState,
        topo: &Topology,
        job: &PendingJob,
        nodes: Nodes,
    ) -> Option<GpuSet> {
        match (self, nodes) {
            (NodeScorer::BestFit, Nodes::All) => best_fit::sharer(state, topo, job),
            (NodeScorer::BestFit, Nodes::Only(list)) => {
                best_fit::sharer_among(state, topo, job, list)
            }
            (NodeScorer::Fragmentation(d), _) => {
                fragmentation::sharer(state, &topo.type_mask(job), job, d, nodes)
            }
        }
    }

    /// The node for a CPU-only job, among `nodes`.
    pub fn cpu_only(&self, state: &RoundState, job: &PendingJob, nodes: Nodes) -> Option<GpuSet> {
        match self {
            NodeScorer::BestFit => best_fit::cpu_only(state, job, nodes),
            NodeScorer::Fragmentation(d) => fragmentation::cpu_only(state, job, d, nodes),
        }
    }
}
