//! Heuristic planners behind one trait. The greedy bin-packer is the MIP start, the fallback
//! and the floor of every round.

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
pub mod best_fit;
pub mod drf;
pub mod fgd;
pub mod fifo;
pub mod frag_aware;
pub mod las;
pub mod random;
pub mod relocate;
