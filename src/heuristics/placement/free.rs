//! Free capacity in a round state, as work of a given priority sees it: milli free per GPU and
//! per node, and the node's free shape that fragmentation is measured on.

use crate::instance::task_dist::NodeFree;
use crate::instance::NodeIx;
use crate::round_state::RoundState;
use crate::units::MILLI_PER_GPU;

/// Milli free on GPU g of node n for work of priority `prio` (a whole GPU when free or freed
/// by a preemption this round, the unshared rest when shared, 0 when held whole or down).
pub fn gpu_free_milli(state: &RoundState, n: NodeIx, g: u32, prio: i64) -> u32 {
    if state.whole_gpu(n, g, prio).is_some() {
        return MILLI_PER_GPU;
    }
    state.shareable_milli(n, g, prio).unwrap_or(0)
}

/// Total milli free on node n.
pub fn node_free_milli(state: &RoundState, n: NodeIx, prio: i64) -> u32 {
    (0..state.inst.nodes[n].gpus)
        .map(|g| gpu_free_milli(state, n, g, prio))
        .sum()
}

/// The free view of node n (as seen by work of priority `prio`): its GPU type, the milli free
/// on each GPU in service (most free first), CPU and memory left.
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
