//! One cron round's planning step: the same core as `gangplan solve`
//! ([`crate::round::plan_round_with`]: greedy, MIP, validator), then [`super::stability`].

use super::memory::Memory;
use super::stability::stabilize;
use crate::error::Result;
use crate::instance::Instance;
use crate::plan::Plan;
use crate::round::{plan_round_with, RoundSettings};
use crate::solve::{PlannerKind, SolveOptions};
use std::time::{Duration, Instant};

/// The plan of a round and the placements kept from the round before.
#[derive(Debug, Clone)]
pub struct Planned {
    /// The validated plan.
    pub plan: Plan,
    /// Jobs whose previous placement was kept.
    pub kept: Vec<String>,
}

/// Plan the round, keeping last round's placements where still good.
///
/// The round's time limit counts from `started`, when the command started (before the
/// instance was read or fetched), as `gangplan solve`'s does.
pub fn plan_with_memory(
    inst: Instance,
    planner: PlannerKind,
    memory: &Memory,
    started: Instant,
) -> Result<Planned> {
    let opts = SolveOptions::from_policy(&inst, planner);
    let settings = RoundSettings {
        started,
        deadline: started + Duration::from_secs_f64(inst.policy.time_limit),
        ..RoundSettings::from_options(planner, &opts)
    };
    let plan = plan_round_with(inst.clone(), &settings)?;
    let (plan, kept) = stabilize(&inst, plan, &memory.placements)?;
    Ok(Planned { plan, kept })
}
