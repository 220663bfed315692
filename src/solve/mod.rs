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
pub mod planner;

pub use backend::{BackendResult, BackendSettings, BackendStatus, Highs, MipBackend};
pub use budget::Budget;
pub use outcome::{Answered, Fallback, SolveOutcome, Solver, SolverPlan};
pub use planner::{PlannerKind, PlannerSetup, SolvePlanner};

use crate::assignment::Assignment;
use crate::instance::Instance;
use crate::model;
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
    /// Aggregated past [`PER_NODE_COLUMN_LIMIT`]; under it both: the aggregated model's plan
    /// is the start of the per-node model, and the better plan and the lower bound are kept.
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
    /// The aggregated model, then the per-node model started from the better of its plan and
    /// the greedy one.
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
    let budget = match mode {
        Mode::Both => Budget::new(inst, opts.deadline).racing(),
        _ => Budget::new(inst, opts.deadline),
    };
    let ilp = opts.planner == PlannerKind::Ilp;
    let limit = match mode {
        Mode::Both => budget.race_aggregated_time_limit(),
        _ => budget.aggregated_time_limit(),
    };
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
        (Mode::PerNode, _) => solve_per_node(inst, topo, opts, backend, &budget, &greedy),
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

/// Both models: the aggregated model's plan (improved neighbourhood by neighbourhood, when it
/// beats greedy) is the per-node MIP's start, and the per-node model gets the rest of the
/// round; the better plan is kept, with the lower of the two bounds (each is valid for the
/// round). On rounds where the per-node model cannot close in time the aggregated plan and
/// bound stand; where it can, its plan is at least the aggregated one.
fn solve_both(
    early: Option<std::io::Result<aggregated::Running>>,
    inst: &Arc<Instance>,
    topo: &Arc<Topology>,
    opts: &SolveOptions,
    backend: Arc<dyn MipBackend>,
    budget: &Budget,
    greedy: &GreedyPlan,
) -> Result<SolverPlan, Fallback> {
    let agg = match early {
        Some(Ok(running)) => aggregated::finish(running, inst, topo, budget, greedy, &backend),
        Some(Err(e)) => Err(Fallback::ThreadNotStarted(e.to_string())),
        None => Err(Fallback::NoTimeToStart),
    };
    let start = match &agg {
        Ok(a) => GreedyPlan {
            assignment: a.assignment.clone(),
            objective: a.objective,
            took: greedy.took,
        },
        Err(_) => GreedyPlan {
            assignment: greedy.assignment.clone(),
            objective: greedy.objective,
            took: greedy.took,
        },
    };
    let exact = solve_per_node(inst, topo, opts, backend, budget, &start);
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
            // The per-node model started from the greedy plan: where the aggregated path ran
            // out of time, that start, and so the plan, depends on the machine's speed.
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

/// The answer of the per-node MIP: decision columns decoded, the backend's result, and what
/// turns the model's dual bound into a bound of the plan objective: the objective's constant
/// plus [`model::fragmentation::bound_slack`].
type PerNodeAnswer = (model::start::Decision, BackendResult, f64);

/// Build and solve the per-node MIP, started from the greedy plan, on a thread of its own.
fn spawn_per_node(
    inst: &Arc<Instance>,
    topo: &Arc<Topology>,
    greedy: &Assignment,
    backend: Arc<dyn MipBackend>,
    settings: BackendSettings,
) -> std::io::Result<mpsc::Receiver<ThreadAnswer<PerNodeAnswer>>> {
    let (tx, rx) = mpsc::channel();
    let (inst, topo, greedy) = (Arc::clone(inst), Arc::clone(topo), greedy.clone());
    std::thread::Builder::new()
        .name("gangplan-mip".into())
        .spawn(move || {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                per_node_answer(&inst, &topo, &greedy, backend.as_ref(), &settings)
            }));
            let _ = tx.send(result);
        })?;
    Ok(rx)
}

/// Build the per-node MIP of `inst`, start it from `start` and solve it on this thread.
fn per_node_answer(
    inst: &Instance,
    topo: &Topology,
    start: &Assignment,
    backend: &dyn MipBackend,
    settings: &BackendSettings,
) -> crate::Result<PerNodeAnswer> {
    let mut m = model::build(inst, topo);
    let start = model::start::start_values(inst, topo, &m, start);
    let bound_shift = m.constant + model::fragmentation::bound_slack(inst, &m.vars);
    let columns = m.columns();
    let vars = std::mem::take(&mut m.vars);
    backend
        .solve(m, &start, settings)
        .and_then(|r| check_columns(r, columns))
        .map(|r| (model::start::decode(&vars, &r.columns), r, bound_shift))
}

/// The per-node MIP, started from the greedy plan, under the budget left after the greedy.
fn solve_per_node(
    inst: &Arc<Instance>,
    topo: &Arc<Topology>,
    opts: &SolveOptions,
    backend: Arc<dyn MipBackend>,
    budget: &Budget,
    greedy: &GreedyPlan,
) -> Result<SolverPlan, Fallback> {
    let limits = budget
        .per_node_limits(Instant::now())
        .ok_or(Fallback::NoTimeToStart)?;
    let settings = BackendSettings {
        time_limit: limits.time_limit,
        mip_gap: opts.mip_gap,
        seed: inst.policy.seed,
        write_model: opts.write_model.clone(),
    };
    let rx = spawn_per_node(inst, topo, &greedy.assignment, backend, settings)
        .map_err(|e| Fallback::ThreadNotStarted(e.to_string()))?;
    let (decision, result, bound_shift) = await_answer(&rx, limits.wait, Solver::PerNode)?;
    let answered = Answered {
        bound: result.dual_bound.map(|b| b + bound_shift),
        time_limit_hit: result.status == BackendStatus::LimitWithIncumbent,
    };
    let assignment =
        decode::to_assignment(inst, &decision).map_err(|e| Fallback::AnswerUnusable {
            error: e.to_string(),
            answered,
        })?;
    crate::plan::validate::check_assignment(inst, &assignment).map_err(|e| {
        Fallback::AnswerBrokeRule {
            error: e.to_string(),
            answered,
        }
    })?;
    let objective = evaluate(inst, topo, &assignment).total();
    if objective + TOLERANCE < greedy.objective {
        return Err(Fallback::BelowGreedy {
            incumbent: objective,
            greedy: greedy.objective,
            answered,
        });
    }
    Ok(SolverPlan {
        assignment,
        objective,
        bound: answered.bound,
        solved: result.status == BackendStatus::Optimal,
        time_limit_hit: answered.time_limit_hit,
        note: None,
        incumbent: None,
    })
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
