//! The planners a replay can run, by name: the project's ILP and greedy, and the baselines.

use crate::assignment::Assignment;
use crate::heuristics::best_fit::BestFit;
use crate::heuristics::drf::Drf;
use crate::heuristics::fgd::{Fgd, TaskDist};
use crate::heuristics::fifo::Fifo;
use crate::heuristics::las::Las;
use crate::heuristics::random::RandomFit;
use crate::heuristics::{Greedy, Planner};
use crate::instance::Instance;
use crate::plan::Status;
use crate::solve::{solve, Formulation, PlannerKind, SolveOptions};
use crate::topology::Topology;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Planner names accepted by `--planner`.
pub const NAMES: &[&str] = &[
    "ilp", "greedy", "fifo", "best-fit", "las", "drf", "fgd", "random",
];

/// A planner chosen by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlannerName {
    /// Greedy start, then the MIP under a per-round time limit.
    Ilp,
    /// The project's greedy.
    Greedy,
    /// FIFO first fit.
    Fifo,
    /// Best fit.
    BestFit,
    /// Tiresias 2D-LAS, preemptive.
    Las,
    /// Dominant resource fairness.
    Drf,
    /// Fragmentation gradient descent.
    Fgd,
    /// Seeded random.
    Random,
}

impl PlannerName {
    /// Parse a name; `None` if unknown.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "ilp" => Self::Ilp,
            "greedy" => Self::Greedy,
            "fifo" => Self::Fifo,
            "best-fit" | "bestfit" | "best_fit" => Self::BestFit,
            "las" => Self::Las,
            "drf" => Self::Drf,
            "fgd" => Self::Fgd,
            "random" => Self::Random,
            _ => return None,
        })
    }

    /// The canonical name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ilp => "ilp",
            Self::Greedy => "greedy",
            Self::Fifo => "fifo",
            Self::BestFit => "best-fit",
            Self::Las => "las",
            Self::Drf => "drf",
            Self::Fgd => "fgd",
            Self::Random => "random",
        }
    }
}

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
    name: PlannerName,
    baseline: Option<Box<dyn Planner>>,
    time_limit: f64,
    formulation: Formulation,
}

impl RoundPlanner {
    /// Build a planner. `dist` is the task distribution FGD measures fragmentation against;
    /// `seed` seeds the random planner; `time_limit` is the ILP's per-round limit (seconds).
    pub fn new(name: PlannerName, dist: &TaskDist, seed: u64, time_limit: f64) -> Self {
        let baseline: Option<Box<dyn Planner>> = match name {
            PlannerName::Ilp => None,
            PlannerName::Greedy => Some(Box::new(Greedy)),
            PlannerName::Fifo => Some(Box::new(Fifo)),
            PlannerName::BestFit => Some(Box::new(BestFit)),
            PlannerName::Las => Some(Box::new(Las)),
            PlannerName::Drf => Some(Box::new(Drf)),
            PlannerName::Fgd => Some(Box::new(Fgd::with_dist(dist.clone()))),
            PlannerName::Random => Some(Box::new(RandomFit { seed })),
        };
        RoundPlanner {
            name,
            baseline,
            time_limit,
            formulation: Formulation::Auto,
        }
    }

    /// The ILP's formulation (default: automatic, per-node for small rounds).
    pub fn with_formulation(mut self, f: Formulation) -> Self {
        self.formulation = f;
        self
    }

    /// The planner's name.
    pub fn name(&self) -> PlannerName {
        self.name
    }

    /// Decide one round.
    pub fn plan(&self, inst: &Arc<Instance>, topo: &Arc<Topology>) -> RoundDecision {
        if let Some(b) = &self.baseline {
            return RoundDecision {
                assignment: b.plan(inst, topo),
                fell_back: false,
                time_limit_hit: false,
                note: None,
            };
        }
        let opts = SolveOptions {
            deadline: Instant::now() + Duration::from_secs_f64(self.time_limit),
            formulation: self.formulation,
            ..SolveOptions::from_policy(inst, PlannerKind::Ilp)
        };
        let out = solve(inst, topo, &opts);
        RoundDecision {
            assignment: out.assignment,
            fell_back: out.status == Status::Fallback,
            time_limit_hit: out.time_limit_hit,
            note: out.note,
        }
    }
}
