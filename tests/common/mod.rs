//! What several test files share.

#![allow(dead_code)]

pub mod hand;
pub mod plans;

use gangplan::gen::GenParams;

/// A small generated round: racks of 4 nodes, pods of 2 racks, a 5 s limit.
pub fn small_round(nodes: usize, pending: usize, seed: u64, busy: f64, sharers: f64) -> GenParams {
    GenParams {
        nodes,
        pending,
        seed,
        busy,
        sharers,
        nodes_per_rack: 4,
        racks_per_pod: 2,
        time_limit: 5.0,
        ..Default::default()
    }
}
