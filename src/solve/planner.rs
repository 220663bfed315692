//! The planners by name: [`PlannerKind`] names all eight, and [`PlannerKind::planner`] builds
//! the [`Planner`] behind each name, in one place. The ILP is [`SolvePlanner`]: the greedy
//! portfolio under the round's budget, then the MIP; the same type with
//! [`PlannerKind::Greedy`] is the round's greedy (the portfolio under the budget, no MIP).

use super::{solve_with, Formulation, Highs, MipBackend, SolveOptions, SolveOutcome};
use crate::assignment::Assignment;
use crate::heuristics::best_fit::BestFit;
use crate::heuristics::drf::Drf;
use crate::heuristics::fgd::{Fgd, TaskDist};
use crate::heuristics::fifo::Fifo;
use crate::heuristics::las::Las;
use crate::heuristics::random::RandomFit;
use crate::heuristics::{Greedy, Planner, RoundContext};
use crate::topology::Topology;
use std::path::PathBuf;
use std::sync::Arc;

/// Every planner, by the name `--planner` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PlannerKind {
    /// Greedy start, then the MIP (HiGHS); never worse than greedy.
    Ilp,
    /// The topology-aware greedy bin-packer alone.
    Greedy,
    /// FIFO first fit.
    Fifo,
    /// Best fit.
    #[value(name = "best-fit", alias = "bestfit", alias = "best_fit")]
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

/// Planner names accepted by `--planner`, canonical spelling.
pub const NAMES: &[&str] = &[
    "ilp", "greedy", "fifo", "best-fit", "las", "drf", "fgd", "random",
];

impl PlannerKind {
    /// Parse a name (the canonical ones and `bestfit`, `best_fit`); `None` if unknown.
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
    pub fn name(self) -> &'static str {
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

    /// The canonical name (the same as [`PlannerKind::name`]).
    pub fn as_str(self) -> &'static str {
        self.name()
    }

    /// The planner behind the name. With `setup.budgeted_greedy` the greedy is the round's
    /// ([`SolvePlanner`]: its portfolio starts no pass after the budget's work deadline),
    /// else the pure [`Greedy`].
    pub fn planner(self, setup: &PlannerSetup) -> Box<dyn Planner> {
        match self {
            Self::Ilp => Box::new(SolvePlanner::new(self, setup)),
            Self::Greedy if setup.budgeted_greedy => Box::new(SolvePlanner::new(self, setup)),
            Self::Greedy => Box::new(Greedy),
            Self::Fifo => Box::new(Fifo),
            Self::BestFit => Box::new(BestFit),
            Self::Las => Box::new(Las),
            Self::Drf => Box::new(Drf),
            Self::Fgd => Box::new(match &setup.dist {
                Some(d) => Fgd::with_dist(d.clone()),
                None => Fgd::default(),
            }),
            Self::Random => Box::new(RandomFit { seed: setup.seed }),
        }
    }
}

/// What building a planner needs besides its name.
#[derive(Clone)]
pub struct PlannerSetup {
    /// The task distribution FGD measures fragmentation against (`None`: each round's own).
    pub dist: Option<TaskDist>,
    /// Seed of the random planner.
    pub seed: u64,
    /// The ILP's formulation.
    pub formulation: Formulation,
    /// The ILP's relative gap; `None`: each round's `policy.mip_gap`.
    pub mip_gap: Option<f64>,
    /// Write the MIP here before solving.
    pub write_model: Option<PathBuf>,
    /// The MIP backend.
    pub backend: Arc<dyn MipBackend>,
    /// Whether `greedy` is the round's greedy, under the budget (the CLI rounds), or the pure
    /// one (replays).
    pub budgeted_greedy: bool,
}

impl Default for PlannerSetup {
    fn default() -> Self {
        PlannerSetup {
            dist: None,
            seed: 0,
            formulation: Formulation::Auto,
            mip_gap: None,
            write_model: None,
            backend: Arc::new(Highs),
            budgeted_greedy: true,
        }
    }
}

/// The round solved by [`solve_with`]: the greedy portfolio under the round's budget, then,
/// for [`PlannerKind::Ilp`], the MIP.
pub struct SolvePlanner {
    kind: PlannerKind,
    formulation: Formulation,
    mip_gap: Option<f64>,
    write_model: Option<PathBuf>,
    backend: Arc<dyn MipBackend>,
}

impl SolvePlanner {
    /// The planner of `kind` (`Ilp` or `Greedy`) with the setup's formulation and backend.
    pub fn new(kind: PlannerKind, setup: &PlannerSetup) -> Self {
        SolvePlanner {
            kind,
            formulation: setup.formulation,
            mip_gap: setup.mip_gap,
            write_model: setup.write_model.clone(),
            backend: Arc::clone(&setup.backend),
        }
    }

    /// The solve options of a round.
    pub fn options(&self, ctx: &RoundContext) -> SolveOptions {
        SolveOptions {
            planner: self.kind,
            deadline: ctx.deadline,
            mip_gap: self.mip_gap.unwrap_or(ctx.inst.policy.mip_gap),
            write_model: self.write_model.clone(),
            formulation: self.formulation,
        }
    }
}

impl Planner for SolvePlanner {
    fn name(&self) -> &'static str {
        self.kind.name()
    }

    fn plan(&self, ctx: &RoundContext) -> Assignment {
        self.solve(ctx).assignment
    }

    fn solve(&self, ctx: &RoundContext) -> SolveOutcome {
        let backend = Arc::clone(&self.backend);
        match ctx.shared() {
            Some((inst, topo)) => solve_with(inst, topo, &self.options(ctx), backend),
            None => {
                let inst = Arc::new(ctx.inst.clone());
                let topo = Arc::new(Topology::new(&inst));
                solve_with(&inst, &topo, &self.options(ctx), backend)
            }
        }
    }
}
