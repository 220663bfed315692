//! Heuristic planners behind one trait. The greedy bin-packer is the MIP start, the fallback
//! and the floor of every round; the baselines (best fit, DRF, FGD, FIFO, LAS, random) are the
//! literature's, for comparison. All of them place jobs through [`placement`], the core below
//! them; the baselines share [`baseline`]'s single-node options on top of it.

pub mod greedy;

pub use greedy::Greedy;

use crate::assignment::Assignment;
use crate::instance::Instance;
use crate::topology::Topology;

/// A planner: one round in, one decision out. Pure: same input, same assignment.
pub trait Planner {
    /// Name used on the command line and in reports.
    fn name(&self) -> &'static str;
    /// Decide the round.
    fn plan(&self, inst: &Instance, topo: &Topology) -> Assignment;
}
pub mod baseline;
pub mod best_fit;
pub mod drf;
pub mod fgd;
pub mod fifo;
pub mod las;
pub mod placement;
pub mod random;
pub mod relocate;
