//! One planning round as a library call: plan, render, validate. `gangplan solve`, `gangplan
//! plan` and the Slurm round all plan through [`plan_round_with`].

use crate::error::Result;
use crate::heuristics::RoundContext;
use crate::instance::Instance;
use crate::plan::{render_plan_until, validate_plan, Plan};
use crate::solve::budget::Budget;
use crate::solve::{PlannerKind, PlannerSetup, SolveOptions};
use crate::topology::Topology;
use std::sync::Arc;
use std::time::Instant;

/// How a round is planned: by which planner, from when, by when.
#[derive(Clone)]
pub struct RoundSettings {
    /// Which planner.
    pub planner: PlannerKind,
    /// When the command started: the plan's `solver.seconds` count from here.
    pub started: Instant,
    /// When the plan must be written.
    pub deadline: Instant,
    /// What building the planner needs (formulation, model file, backend, ...).
    pub setup: PlannerSetup,
}

impl RoundSettings {
    /// Settings from solve options, the command started now.
    pub fn from_options(planner: PlannerKind, opts: &SolveOptions) -> Self {
        RoundSettings {
            planner,
            started: Instant::now(),
            deadline: opts.deadline,
            setup: PlannerSetup {
                formulation: opts.formulation,
                mip_gap: Some(opts.mip_gap),
                write_model: opts.write_model.clone(),
                ..PlannerSetup::default()
            },
        }
    }
}

/// Plan a round: greedy, MIP (for [`PlannerKind::Ilp`]), render, validate. `opts` defaults to
/// the instance policy with the clock started now. An `Err(InvalidPlan)` is a planner bug.
pub fn plan_round(
    inst: Instance,
    planner: PlannerKind,
    opts: Option<SolveOptions>,
) -> Result<Plan> {
    let opts = opts.unwrap_or_else(|| SolveOptions::from_policy(&inst, planner));
    plan_round_with(inst, &RoundSettings::from_options(planner, &opts))
}

/// Plan a round with the given settings: the planner's outcome, rendered and validated.
pub fn plan_round_with(inst: Instance, settings: &RoundSettings) -> Result<Plan> {
    let phase = |name: &str, since: Instant| {
        tracing::debug!(
            phase = name,
            seconds = since.elapsed().as_secs_f64(),
            "round phase done"
        );
        Instant::now()
    };
    let t = Instant::now();
    let inst = Arc::new(inst);
    let topo = Arc::new(Topology::new(&inst));
    let t = phase("topology", t);
    let planner = settings.planner.planner(&settings.setup);
    let out = planner.solve(&RoundContext::new(&inst, &topo, settings.deadline));
    let t = phase("solve", t);
    let info = out.solver_info(settings.started.elapsed().as_secs_f64());
    let budget = Budget::starting_at(&inst, settings.started, settings.deadline);
    let plan = render_plan_until(
        &inst,
        &out.assignment,
        out.status,
        info,
        Some(budget.reasons_until()),
    );
    let t = phase("render", t);
    validate_plan(&inst, &plan)?;
    phase("validate", t);
    Ok(plan)
}
