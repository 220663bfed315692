//! One planning round as a library call: solve, render, validate.

use crate::error::Result;
use crate::instance::Instance;
use crate::plan::{render_plan, validate_plan, Plan};
use crate::solve::{solve, PlannerKind, SolveOptions};
use crate::topology::Topology;
use std::sync::Arc;
use std::time::Instant;

/// Plan a round: greedy, MIP (for [`PlannerKind::Ilp`]), render, validate. `opts` defaults to
/// the instance policy with the clock started now. An `Err(InvalidPlan)` is a planner bug.
pub fn plan_round(
    inst: Instance,
    planner: PlannerKind,
    opts: Option<SolveOptions>,
) -> Result<Plan> {
    let started = Instant::now();
    let opts = opts.unwrap_or_else(|| SolveOptions::from_policy(&inst, planner));
    let inst = Arc::new(inst);
    let topo = Arc::new(Topology::new(&inst));
    let out = solve(&inst, &topo, &SolveOptions { planner, ..opts });
    let info = out.solver_info(started.elapsed().as_secs_f64());
    let plan = render_plan(&inst, &out.assignment, out.status, info);
    validate_plan(&inst, &plan)?;
    Ok(plan)
}
