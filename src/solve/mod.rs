//! One round, solved: greedy first (MIP start, fallback, floor), then the MIP under a
//! deadline enforced outside HiGHS, then the better of the two, with objective, bound and gap
//! recomputed from the returned assignment.
//!
//! - [`budget`]: the round's time budget; every phase asks it when to stop.
//! - [`outcome`]: a solver's plan or the typed [`Fallback`] to the greedy plan, and the
//!   [`SolveOutcome`] both become.
//! - [`aggregated`]: large rounds (aggregated model, then a greedy second stage).
//! - [`neighbourhood`]: the aggregated path's plan improved by exact re-solves of one
//!   neighbourhood (a rack) at a time.
//! - [`backend`], [`decode`]: HiGHS behind a trait, and its answer read back.
//! - [`planner`]: [`PlannerKind`] (every planner by name) and the ILP as a
//!   [`crate::heuristics::Planner`].

pub mod aggregated;
pub mod backend;
pub mod budget;
pub mod decode;
pub mod neighbourhood;
pub mod outcome;
pub mod per_node;
pub mod planner;

pub use backend::{BackendResult, BackendSettings, BackendStatus, Highs, MipBackend};
pub use budget::Budget;
pub use outcome::{Answered, Fallback, SolveOutcome, Solver, SolverPlan};
pub use planner::{PlannerKind, PlannerSetup, SolvePlanner};

use crate::assignment::Assignment;
use crate::instance::Instance;
use crate::objective::evaluate;
use crate::topology::Topology;
use crate::units::TOLERANCE;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// Settings of one solve.
#[derive(Debug, Clone)]
pub struct SolveOptions {
    /// [`PlannerKind::Ilp`] runs the MIP after the greedy; any other kind returns the greedy
    /// plan (the baselines are built by [`PlannerKind::planner`]).
    pub planner: PlannerKind,
    /// When the whole command must be done (the plan written).
    pub deadline: Instant,
    /// Relative MIP gap.
    pub mip_gap: f64,
    /// Write the MIP here before solving.
    pub write_model: Option<PathBuf>,
    /// Which MIP formulation.
    pub formulation: Formulation,
}

/// Which MIP formulation a round is solved with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Formulation {
    /// Aggregated past [`PER_NODE_COLUMN_LIMIT`]; under it both at once (the per-node model
    /// started from the greedy plan), and the better plan and the lower bound are kept.
    #[default]
    Auto,
    /// The exact per-node model.
    PerNode,
    /// The aggregated model with a best-fit second stage.
    Aggregated,
}

impl SolveOptions {
    /// Options from the instance policy, starting the clock now.
    pub fn from_policy(inst: &Instance, planner: PlannerKind) -> Self {
        SolveOptions {
            planner,
            deadline: Instant::now() + Duration::from_secs_f64(inst.policy.time_limit),
            mip_gap: inst.policy.mip_gap,
            write_model: None,
            formulation: Formulation::Auto,
        }
    }
}

/// Rounds whose per-node model would have more (job, node) columns than this are solved with
/// the aggregated model instead (the per-node model does not reach sub-minute rounds past a
/// few hundred nodes on 2 cores).
pub const PER_NODE_COLUMN_LIMIT: usize = 20_000;

/// Estimated (job, node) columns of the per-node model.
pub fn per_node_columns(inst: &Instance, topo: &Topology) -> usize {
    let mut nodes_of_type = vec![0usize; topo.type_names.len()];
    for &t in &topo.node_type {
        nodes_of_type[t] += 1;
    }
    inst.pending
        .iter()
        .map(|j| {
            let mask = topo.type_mask(j);
            let nodes: usize = (0..mask.len())
                .filter(|&t| mask[t])
                .map(|t| nodes_of_type[t])
                .sum();
            if j.node_limit() > 1 {
                2 * nodes
            } else {
                nodes
            }
        })
        .sum()
}

/// What a solver thread sends back: its answer, or the panic that stopped it.
type ThreadAnswer<T> = std::thread::Result<crate::Result<T>>;

/// `f` on this thread, a panic in it caught (a solver thread's work, so that a panic is
/// its answer rather than a silent end).
fn guarded<T>(f: impl FnOnce() -> T) -> std::thread::Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
}

/// Wait up to `wait` for a solver thread's answer; when there is none, why.
fn await_answer<T>(
    rx: &mpsc::Receiver<ThreadAnswer<T>>,
    wait: Duration,
    solver: Solver,
) -> Result<T, Fallback> {
    match rx.recv_timeout(wait) {
        Ok(answer) => answer_of(answer, solver),
        Err(_) => Err(Fallback::NoAnswerInTime {
            solver,
            waited: wait,
        }),
    }
}

/// A solver thread's answer, or why there is none: its error, or its panic.
fn answer_of<T>(answer: ThreadAnswer<T>, solver: Solver) -> Result<T, Fallback> {
    match answer {
        Ok(Ok(a)) => Ok(a),
        Ok(Err(e)) => Err(Fallback::SolverFailed {
            solver,
            error: e.to_string(),
        }),
        Err(_) => Err(Fallback::Panicked(solver)),
    }
}

/// The greedy's plan of the round, its objective, and the time it took.
pub struct GreedyPlan {
    /// The plan.
    pub assignment: Assignment,
    /// Its objective.
    pub objective: f64,
    /// Wall time of the greedy portfolio.
    pub took: Duration,
}

impl GreedyPlan {
    /// The greedy portfolio, starting no pass after the budget's work deadline; with
    /// `choice_follows` (the aggregated model is solving), its later passes leave time to place
    /// the model's choice ([`Budget::PASSES_TO_PLACE_CHOICE`]).
    fn run(inst: &Instance, topo: &Topology, budget: &Budget, choice_follows: bool) -> Self {
        let started = Instant::now();
        let leave = if choice_follows {
            Budget::PASSES_TO_PLACE_CHOICE
        } else {
            0.0
        };
        let assignment = crate::heuristics::greedy::portfolio_leaving(
            inst,
            topo,
            Some(budget.work_until()),
            leave,
        );
        let took = started.elapsed();
        let objective = evaluate(inst, topo, &assignment).total();
        tracing::debug!(
            seconds = took.as_secs_f64(),
            objective,
            "greedy portfolio done"
        );
        GreedyPlan {
            assignment,
            objective,
            took,
        }
    }
}

/// Solve a round with HiGHS.
pub fn solve(inst: &Arc<Instance>, topo: &Arc<Topology>, opts: &SolveOptions) -> SolveOutcome {
    solve_with(inst, topo, opts, Arc::new(Highs))
}

/// How a round is solved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// The per-node model alone.
    PerNode,
    /// The aggregated model alone.
    Aggregated,
    /// The aggregated path and the per-node model (started from the greedy plan) at once; the
    /// better plan and the lower bound are kept.
    Both,
}

/// How the round is solved for a formulation.
fn mode(inst: &Instance, topo: &Topology, formulation: Formulation) -> Mode {
    match formulation {
        Formulation::Auto if per_node_columns(inst, topo) > PER_NODE_COLUMN_LIMIT => {
            Mode::Aggregated
        }
        Formulation::Auto => Mode::Both,
        Formulation::PerNode => Mode::PerNode,
        Formulation::Aggregated => Mode::Aggregated,
    }
}

/// Solve a round with a given backend: the greedy plan (while the aggregated model solves on
/// the other core), then, for the ILP, the solver's plan when it beats the greedy one, else the
/// greedy plan with the [`Fallback`] that says why.
pub fn solve_with(
    inst: &Arc<Instance>,
    topo: &Arc<Topology>,
    opts: &SolveOptions,
    backend: Arc<dyn MipBackend>,
) -> SolveOutcome {
    let mode = mode(inst, topo, opts.formulation);
    let budget = Budget::new(inst, opts.deadline);
    let ilp = opts.planner == PlannerKind::Ilp;
    let limit = budget.aggregated_time_limit();
    // The aggregated model needs no MIP start: it runs while the greedy plans.
    let greedy_done = Arc::new(AtomicBool::new(false));
    let early = (ilp && mode != Mode::PerNode && budget.can_start_aggregated()).then(|| {
        let placing = aggregated::Early {
            greedy_done: Arc::clone(&greedy_done),
            until: budget.early_placement_until(),
        };
        aggregated::start(inst, topo, opts, Arc::clone(&backend), limit, placing)
    });
    let choice_follows = matches!(early, Some(Ok(_)));
    let greedy = GreedyPlan::run(inst, topo, &budget, choice_follows);
    greedy_done.store(true, Ordering::Release);
    if !ilp {
        return SolveOutcome::heuristic("greedy", greedy.assignment, greedy.objective);
    }
    let solved = match (mode, early) {
        (Mode::PerNode, _) => per_node::start(inst, topo, opts, backend, &budget, &greedy)
            .and_then(|running| running.finish(inst, topo)),
        (Mode::Both, early) => solve_both(early, inst, topo, opts, backend, &budget, &greedy),
        (_, Some(Ok(running))) => {
            aggregated::finish(running, inst, topo, &budget, &greedy, &backend)
        }
        (_, Some(Err(e))) => Err(Fallback::ThreadNotStarted(e.to_string())),
        (_, None) => Err(Fallback::NoTimeToStart),
    };
    match solved {
        Ok(plan) => plan.into_outcome(greedy.objective, opts.mip_gap),
        Err(fallback) => fallback.into_outcome(greedy.assignment, greedy.objective),
    }
}

/// Both models at once: the per-node MIP starts from the greedy plan on a thread of its own
/// and solves while the aggregated path (its model on another thread, its second stage,
/// repacking and search on the round's) makes its plan. The better plan is kept, with the
/// lower of the two bounds (each is valid for the round).
///
/// The per-node model once started only after the aggregated path, from its plan, with the
/// time that path left it. On a 52-node round made outside `gen` (200 pending, reservations,
/// a 128-GPU gang) the per-node model alone proves the optimum (355.1) in 0.6 s, while the
/// aggregated model, which then knew no reservation, chose jobs worth 731, of which its second
/// stage placed 322, and repacking kept nothing in 0.52 s: the per-node model was left
/// 0.09 s, and the round ended at 326.9, 18% from its bound. Started with the aggregated
/// path, it ends at 355.1 (1 s). On 71 rounds of 4-192 nodes (the eleven families at 48
/// nodes, seeds 1-3, the saved rounds, 24 rounds of `scripts/rounds/independent_rounds.py`;
/// 1 s) the other plans stayed within their run-to-run spread.
fn solve_both(
    early: Option<std::io::Result<aggregated::Running>>,
    inst: &Arc<Instance>,
    topo: &Arc<Topology>,
    opts: &SolveOptions,
    backend: Arc<dyn MipBackend>,
    budget: &Budget,
    greedy: &GreedyPlan,
) -> Result<SolverPlan, Fallback> {
    let exact = per_node::start(inst, topo, opts, Arc::clone(&backend), budget, greedy);
    let agg = match early {
        Some(Ok(running)) => aggregated::finish(running, inst, topo, budget, greedy, &backend),
        Some(Err(e)) => Err(Fallback::ThreadNotStarted(e.to_string())),
        None => Err(Fallback::NoTimeToStart),
    };
    let exact = exact.and_then(|running| running.finish(inst, topo));
    let lower = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    };
    match (exact, agg) {
        (Ok(e), Ok(a)) => {
            let bound = lower(e.bound, a.bound);
            let hit = e.time_limit_hit || a.time_limit_hit;
            let mut best = if e.objective + TOLERANCE >= a.objective {
                e
            } else {
                a
            };
            // As on the aggregated path, the plan is proven when the lower bound says so.
            (best.bound, best.time_limit_hit, best.solved) = (bound, hit, true);
            Ok(best)
        }
        (Ok(e), Err(f)) => Ok(SolverPlan {
            bound: lower(e.bound, f.bound()),
            // Where the aggregated path ran out of time, the plan depends on the machine's
            // speed.
            time_limit_hit: e.time_limit_hit || f.time_limit_hit(),
            ..e
        }),
        (Err(f), Ok(a)) => Ok(SolverPlan {
            bound: lower(a.bound, f.bound()),
            time_limit_hit: a.time_limit_hit || f.time_limit_hit(),
            ..a
        }),
        // The aggregated model's bound holds for the round when neither plan beat greedy.
        (Err(f), Err(a)) => Err(f.either(a)),
    }
}

/// A backend's answer must give one finite value per column of the model; anything else is a
/// solver failure (and the round falls back to the greedy plan), never an index out of range.
fn check_columns(r: BackendResult, columns: usize) -> crate::Result<BackendResult> {
    if r.columns.len() != columns {
        return Err(crate::Error::Solver(format!(
            "the answer has {} column values for a model of {columns} columns",
            r.columns.len()
        )));
    }
    if let Some(i) = r.columns.iter().position(|v| !v.is_finite()) {
        return Err(crate::Error::Solver(format!(
            "the answer's column {i} is {}",
            r.columns[i]
        )));
    }
    if r.dual_bound.is_some_and(|b| !b.is_finite()) {
        return Err(crate::Error::Solver(
            "the answer's dual bound is not finite".into(),
        ));
    }
    Ok(r)
}
