//! Multi-node gangs without a fixed shape, split by whether they sit on the fewest nodes.
//!
//! A multi-node gang without a fixed shape (g GPUs, node units of at most C usable GPUs),
//! where every node unit is one node. On the fewest nodes it can use, u = ceil(g / C), every
//! node holds at least m = g - (u - 1) C of its GPUs, so the placement takes u floor(m / L)
//! slots of every size level L <= m, like a fixed-shape gang. On more nodes it takes no slot
//! for sure but pays at least one extra node unit of spread:
//!
//! ```text
//! y_ct <= x_ct                                     (y_ct: jobs of c on the fewest nodes,
//!                                                   integer where x_ct is)
//! slots_L += u floor(m / L) y_ct                   (L = 2, 4, ... <= m)
//! objective -= delta_c (x_ct - y_ct)
//! ```
//!
//! with delta_c the least, over the class, of the spread floor over placements of at least
//! u + 1 units minus the job's floor: the rest of the job's penalty already sits in its value.
//! Where the class's floor counts on victims' GPUs, the delta term is one side of a larger
//! charge ([`super::victim_spread`]). Of the jobs on their fewest nodes, those that also stay
//! in one rack take whole nodes of that rack ([`super::rack_blocks`]); the others pay the
//! floor over placements that leave a rack.

use super::spread::SpreadFloor;
use crate::instance::{Instance, PendingJob};
use crate::topology::Topology;

/// The shape of a class of gangs placed on their fewest nodes.
pub struct CompactGang {
    /// u: the fewest nodes the gang can use.
    pub nodes: u32,
    /// m: GPUs each of those nodes holds at least.
    pub least_per_node: u32,
    /// delta_c: the spread a placement on more nodes pays at least beyond the job's floor.
    pub extra_node: f64,
    /// C: the most GPUs one node of the accepted types offers.
    pub node_capacity: u32,
    /// k = g - u (C - 1): the whole nodes (all C GPUs taken) among the fewest nodes, at
    /// least (0 where none need be whole).
    pub whole_nodes: u32,
    /// The spread a placement on the fewest nodes that leaves one rack pays at least beyond
    /// the job's floor (the least over the class).
    pub extra_rack: f64,
}

impl CompactGang {
    /// The shape of a class of such gangs (`members`: the class's jobs).
    pub fn of(
        inst: &Instance,
        topo: &Topology,
        floor: &mut SpreadFloor,
        members: &[usize],
    ) -> Self {
        let job = &inst.pending[members[0]];
        let per_unit = topo.unit_capacity(inst, job);
        let nodes = job.gpus.div_ceil(per_unit);
        CompactGang {
            nodes,
            least_per_node: job.gpus.saturating_sub((nodes - 1) * per_unit),
            extra_node: least_extra(inst, members, floor, |f, job| f.of_spanning(job, nodes + 1)),
            node_capacity: per_unit,
            whole_nodes: job.gpus.saturating_sub(nodes * (per_unit - 1)),
            extra_rack: least_extra(inst, members, floor, |f, job| f.of_leaving_rack(job)),
        }
    }
}

/// The least, over the class's `members`, of the floor over some placements (`beyond`) less
/// the job's floor: 0 at least, and 0 for a class without members.
pub fn least_extra(
    inst: &Instance,
    members: &[usize],
    floor: &mut SpreadFloor,
    beyond: impl Fn(&mut SpreadFloor, &PendingJob) -> f64,
) -> f64 {
    let least = members
        .iter()
        .map(|&j| {
            let job = &inst.pending[j];
            (beyond(floor, job) - floor.of(job)).max(0.0)
        })
        .fold(f64::INFINITY, f64::min);
    if least.is_finite() {
        least
    } else {
        0.0
    }
}
