//! The planners a replay can run, by name: the project's ILP and greedy, and the baselines,
//! each built by [`PlannerKind::planner`] and run with a per-round time limit.

use crate::assignment::Assignment;
use crate::heuristics::fgd::TaskDist;
use crate::heuristics::{Planner, RoundContext};
use crate::instance::Instance;
use crate::plan::Status;
use crate::solve::{Formulation, PlannerKind, PlannerSetup};
use crate::topology::Topology;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use crate::solve::planner::NAMES;

/// The planner names of a replay: the crate's one planner enum.
pub use crate::solve::PlannerKind as PlannerName;

/// What one round's planner call returned.
#[derive(Debug, Clone)]
pub struct RoundDecision {
    /// The decision.
    pub assignment: Assignment,
    /// The ILP returned the greedy plan (time limit, solver failure, or a worse incumbent).
    pub fell_back: bool,
    /// The ILP hit its time limit.
    pub time_limit_hit: bool,
    /// Why the ILP returned the greedy plan, when it did.
    pub note: Option<String>,
}

/// A planner ready to run rounds.
pub struct RoundPlanner {
    name: PlannerKind,
    setup: PlannerSetup,
    planner: Box<dyn Planner>,
    time_limit: f64,
    /// The ILP's reference: the greedy of the same setup, for [`RoundPlanner::changed_vs_greedy`].
    greedy: Option<Box<dyn Planner>>,
}

impl RoundPlanner {
    /// Build a planner. `dist` is the task distribution FGD measures fragmentation against;
    /// `seed` seeds the random planner; `time_limit` is the ILP's per-round limit (seconds).
    /// The greedy is the pure one (its plan a function of the round alone).
    pub fn new(name: PlannerKind, dist: &TaskDist, seed: u64, time_limit: f64) -> Self {
        let setup = PlannerSetup {
            dist: Some(dist.clone()),
            seed,
            budgeted_greedy: false,
            ..PlannerSetup::default()
        };
        RoundPlanner {
            name,
            planner: name.planner(&setup),
            greedy: (name == PlannerKind::Ilp).then(|| PlannerKind::Greedy.planner(&setup)),
            setup,
            time_limit,
        }
    }

    /// ILP only: the pending jobs of the round that `decided` places otherwise than the
    /// greedy would (on other GPUs, or placed by one and not the other); `None` for the
    /// other planners.
    pub fn changed_vs_greedy(
        &self,
        inst: &Arc<Instance>,
        topo: &Arc<Topology>,
        decided: &Assignment,
    ) -> Option<u64> {
        let greedy = self.greedy.as_ref()?;
        let deadline = Instant::now() + Duration::from_secs_f64(self.time_limit);
        let g = greedy.plan(&RoundContext::new(inst, topo, deadline));
        Some(
            (0..inst.pending.len())
                .filter(|i| g.placed.get(i) != decided.placed.get(i))
                .count() as u64,
        )
    }

    /// The ILP's formulation (default: automatic, per-node for small rounds).
    pub fn with_formulation(mut self, f: Formulation) -> Self {
        self.setup.formulation = f;
        self.planner = self.name.planner(&self.setup);
        self
    }

    /// The planner's name.
    pub fn name(&self) -> PlannerKind {
        self.name
    }

    /// Decide one round.
    pub fn plan(&self, inst: &Arc<Instance>, topo: &Arc<Topology>) -> RoundDecision {
        let deadline = Instant::now() + Duration::from_secs_f64(self.time_limit);
        let ctx = RoundContext::new(inst, topo, deadline);
        if self.name != PlannerKind::Ilp {
            return RoundDecision {
                assignment: self.planner.plan(&ctx),
                fell_back: false,
                time_limit_hit: false,
                note: None,
            };
        }
        let out = self.planner.solve(&ctx);
        RoundDecision {
            assignment: out.assignment,
            fell_back: out.status == Status::Fallback,
            time_limit_hit: out.time_limit_hit,
            note: out.note,
        }
    }
}
