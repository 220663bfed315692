//! What several test files share.

#![allow(dead_code)]

pub mod hand;
pub mod plans;

use gangplan::gen::{generate, Family, GenParams};
use gangplan::hardware::ModelLibrary;
use gangplan::instance::{validate::validate, Instance};
use std::time::{Duration, Instant};

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

/// The families a local move's property tests draw from: the default, CPU and memory tight,
/// binding quotas, and every feature at once.
pub const LOCAL_MOVE_FAMILIES: [Family; 4] = [
    Family::Default,
    Family::TightCpu,
    Family::Quotas,
    Family::Mixed,
];

/// A [`small_round`] of `family`, generated and validated.
pub fn family_round(params: GenParams, family: Family) -> Instance {
    let lib = ModelLibrary::builtin();
    validate(&generate(&GenParams { family, ..params }), &lib).unwrap()
}

/// A deadline a minute away: local moves on small rounds end long before it.
pub fn later() -> Instant {
    Instant::now() + Duration::from_secs(60)
}
