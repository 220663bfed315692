//! One cron round's planning step: the same core as `gangplan solve`
//! ([`crate::round::plan_round`]: greedy, MIP, validator), then [`super::stability`].

use super::memory::Memory;
use super::stability::stabilize;
use crate::error::Result;
use crate::instance::Instance;
use crate::plan::Plan;
use crate::round::plan_round;
use crate::solve::PlannerKind;

/// The plan of a round and the placements kept from the round before.
#[derive(Debug, Clone)]
pub struct Planned {
    /// The validated plan.
    pub plan: Plan,
    /// Jobs whose previous placement was kept.
    pub kept: Vec<String>,
}

/// Plan the round, keeping last round's placements where still good.
pub fn plan_with_memory(inst: Instance, planner: PlannerKind, memory: &Memory) -> Result<Planned> {
    let plan = plan_round(inst.clone(), planner, None)?;
    let (plan, kept) = stabilize(&inst, plan, &memory.placements)?;
    Ok(Planned { plan, kept })
}
