//! The decision of one round, before it is rendered as a plan: which pending jobs start on
//! which GPUs, and which running jobs are preempted. Every planner returns one.

use crate::instance::NodeIx;
use std::collections::BTreeMap;

/// GPUs given to one job: node index -> sorted GPU indices.
pub type GpuSet = BTreeMap<NodeIx, Vec<u32>>;

/// What a planner decided.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Assignment {
    /// Placed pending jobs (index into `Instance::pending`) and their GPUs, sorted by job index.
    /// A CPU-only job maps its node to an empty list.
    pub placed: BTreeMap<usize, GpuSet>,
    /// Preempted running jobs (indices into `Instance::running`).
    pub preempted: Vec<usize>,
}
