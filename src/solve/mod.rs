//! One round, solved: greedy first (MIP start, fallback, floor), then the MIP under a
//! deadline enforced outside HiGHS, then the better of the two, with objective, bound and gap
//! recomputed from the returned assignment.

pub mod aggregated;
pub mod backend;
pub mod decode;

pub use backend::{BackendResult, BackendSettings, BackendStatus, Highs, MipBackend};

use crate::assignment::Assignment;
use crate::instance::Instance;
use crate::model;
use crate::objective::evaluate;
use crate::plan::Status;
use crate::topology::Topology;
use std::path::PathBuf;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// Which planner produces the round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlannerKind {
    /// Greedy start, then the MIP.
    Ilp,
    /// Greedy only.
    Greedy,
}

/// Settings of one solve.
#[derive(Debug, Clone)]
pub struct SolveOptions {
    /// Which planner.
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
    /// Per-node when its size stays under [`PER_NODE_COLUMN_LIMIT`], else aggregated.
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

/// The result of a solve.
#[derive(Debug, Clone)]
pub struct SolveOutcome {
    /// The decision.
    pub assignment: Assignment,
    /// optimal / feasible / fallback.
    pub status: Status,
    /// `ilp` or `greedy`.
    pub path: &'static str,
    /// Objective of the returned assignment.
    pub objective: f64,
    /// Proven upper bound, if any.
    pub bound: Option<f64>,
    /// Whether the time limit cut the solve.
    pub time_limit_hit: bool,
    /// Objective of the greedy plan.
    pub greedy_objective: f64,
    /// Why the plan is the greedy one, when it is.
    pub note: Option<String>,
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

impl SolveOutcome {
    /// The gap of the returned plan against the bound, where one exists.
    pub fn gap(&self) -> Option<f64> {
        self.bound
            .map(|b| (b - self.objective) / self.objective.abs().max(1.0))
    }

    /// The plan's solver report, with the wall seconds of the command so far.
    pub fn solver_info(&self, seconds: f64) -> crate::plan::SolverInfo {
        crate::plan::SolverInfo {
            path: self.path.to_string(),
            seconds,
            objective: self.objective,
            bound: self.bound,
            gap: self.gap(),
            time_limit_hit: self.time_limit_hit,
            greedy_objective: Some(self.greedy_objective),
            note: self.note.clone(),
        }
    }

    /// The outcome of a solver plan at least as good as greedy: `optimal` when the solver
    /// finished (`solved`) and the recomputed gap is within `mip_gap`, else `feasible`.
    #[allow(clippy::too_many_arguments)]
    pub fn from_solver(
        assignment: Assignment,
        objective: f64,
        bound: Option<f64>,
        solved: bool,
        time_limit_hit: bool,
        greedy_objective: f64,
        mip_gap: f64,
        note: Option<String>,
    ) -> Self {
        let gap = bound.map(|b| (b - objective) / objective.abs().max(1.0));
        let proven = solved && gap.is_none_or(|g| g <= mip_gap + 1e-9);
        SolveOutcome {
            assignment,
            status: if proven {
                Status::Optimal
            } else {
                Status::Feasible
            },
            path: "ilp",
            objective,
            bound,
            time_limit_hit,
            greedy_objective,
            note,
        }
    }
}

/// Time kept back from the deadline for rendering, validating and writing the plan: a tenth
/// of the round (50-500 ms) plus the reasons of the jobs left waiting, which grow with nodes x
/// pending jobs (0.4-0.7 s for 12,500 nodes and 20,000 jobs on the development machine with
/// both cores, about twice that while a solver that overran its own limit holds one),
/// never more than half the round.
pub fn reserve(inst: &Instance, total: Duration) -> Duration {
    let base = (total / 10).clamp(Duration::from_millis(50), Duration::from_millis(500));
    let reasons = Duration::from_secs_f64(
        inst.nodes.len() as f64 * inst.pending.len() as f64 * RENDER_SECONDS_PER_NODE_JOB,
    );
    (base + reasons).min(total / 2)
}

/// Share of the round after which the aggregated path starts no more repeat or swap-out
/// passes. Rounds of up to ~10k GPUs converge long before. On the 100k-GPU bench rounds with a
/// 10 s limit, since the second stage places the most constrained jobs first, 0.45 bought
/// nothing over 0.3 (gaps 0.58%, 0.64%, 0.65% for seeds 1-3 either way) for 0.5-0.9 s more
/// (4.3-4.8 s against 3.5-3.9 s); only the tight 100k round gained (2.14% against 3.00%).
const SWAP_SHARE: f64 = 0.3;

/// Measured rendering cost per (node, pending job) pair, seconds.
const RENDER_SECONDS_PER_NODE_JOB: f64 = 5e-9;

/// What a solver thread sends back: its answer, or the panic that stopped it.
type ThreadAnswer<T> = std::thread::Result<crate::Result<T>>;

/// Wait up to `wait` for a solver thread's answer; when there is none, the plan's note (naming
/// the `solver`) and whether the time limit cut it.
fn await_answer<T>(
    rx: &mpsc::Receiver<ThreadAnswer<T>>,
    wait: Duration,
    solver: &str,
) -> std::result::Result<T, (String, bool)> {
    match rx.recv_timeout(wait) {
        Ok(Ok(Ok(a))) => Ok(a),
        Ok(Ok(Err(e))) => Err((format!("{solver} failed ({e}); greedy plan used"), false)),
        Ok(Err(_)) => Err((format!("{solver} panicked; greedy plan used"), false)),
        Err(_) => Err((
            format!(
                "the {solver} did not return within the time limit ({:.2} s); greedy plan used",
                wait.as_secs_f64()
            ),
            true,
        )),
    }
}

/// Solve a round with HiGHS.
pub fn solve(inst: &Arc<Instance>, topo: &Arc<Topology>, opts: &SolveOptions) -> SolveOutcome {
    solve_with(inst, topo, opts, Arc::new(Highs))
}

/// Solve a round with a given backend.
pub fn solve_with(
    inst: &Arc<Instance>,
    topo: &Arc<Topology>,
    opts: &SolveOptions,
    backend: Arc<dyn MipBackend>,
) -> SolveOutcome {
    let round_started = Instant::now();
    let total = opts.deadline.saturating_duration_since(round_started);
    let reserved = reserve(inst, total);
    let wait_until = opts.deadline - reserved;
    let aggregated = opts.planner == PlannerKind::Ilp
        && match opts.formulation {
            Formulation::Auto => per_node_columns(inst, topo) > PER_NODE_COLUMN_LIMIT,
            Formulation::PerNode => false,
            Formulation::Aggregated => true,
        };
    // The aggregated model needs no MIP start: it runs while the greedy plans.
    let early = if aggregated && total > Duration::from_millis(20) + reserved {
        Some(aggregated::start(
            inst,
            topo,
            opts,
            Arc::clone(&backend),
            total - reserved,
        ))
    } else {
        None
    };
    let greedy_started = Instant::now();
    let greedy = crate::heuristics::greedy::portfolio(inst, topo, Some(wait_until));
    let greedy_took = greedy_started.elapsed();
    let greedy_objective = evaluate(inst, topo, &greedy).total();
    tracing::debug!(
        seconds = greedy_took.as_secs_f64(),
        objective = greedy_objective,
        "greedy portfolio done"
    );
    let fallback = |note: Option<String>, bound: Option<f64>, hit: bool| SolveOutcome {
        assignment: greedy.clone(),
        status: Status::Fallback,
        path: if opts.planner == PlannerKind::Greedy {
            "greedy"
        } else {
            "ilp"
        },
        objective: greedy_objective,
        bound,
        time_limit_hit: hit,
        greedy_objective,
        note,
    };
    if opts.planner == PlannerKind::Greedy {
        return fallback(None, None, false);
    }
    match early {
        Some(Ok(running)) => {
            return aggregated::finish(
                running,
                inst,
                topo,
                opts,
                wait_until,
                round_started + total.mul_f64(SWAP_SHARE),
                aggregated::GreedyPlan {
                    assignment: greedy,
                    objective: greedy_objective,
                    took: greedy_took,
                },
            )
        }
        Some(Err(e)) => {
            return fallback(
                Some(format!(
                    "could not start the solver thread ({e}); greedy plan used"
                )),
                None,
                false,
            )
        }
        None if aggregated => {
            return fallback(
                Some("time limit reached before the MIP could start; greedy plan used".into()),
                None,
                true,
            )
        }
        None => {}
    }
    let now = Instant::now();
    let total = opts.deadline.saturating_duration_since(now);
    let budget = total.saturating_sub(reserve(inst, total));
    if budget < Duration::from_millis(20) {
        return fallback(
            Some("time limit reached before the MIP could start; greedy plan used".into()),
            None,
            true,
        );
    }
    let (tx, rx) = mpsc::channel();
    let settings = BackendSettings {
        time_limit: budget.as_secs_f64() * 0.9,
        mip_gap: opts.mip_gap,
        seed: inst.policy.seed,
        write_model: opts.write_model.clone(),
    };
    let spawned = {
        let (inst, topo, greedy) = (Arc::clone(inst), Arc::clone(topo), greedy.clone());
        std::thread::Builder::new()
            .name("gangplan-mip".into())
            .spawn(move || {
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    let mut m = model::build(&inst, &topo);
                    let start = model::start::start_values(&inst, &topo, &m, &greedy);
                    let constant = m.constant;
                    let columns = m.columns();
                    let vars = std::mem::take(&mut m.vars);
                    backend
                        .solve(m, &start, &settings)
                        .and_then(|r| check_columns(r, columns))
                        .map(|r| (model::start::decode(&vars, &r.columns), r, constant))
                }));
                let _ = tx.send(result);
            })
    };
    if let Err(e) = spawned {
        return fallback(
            Some(format!(
                "could not start the solver thread ({e}); greedy plan used"
            )),
            None,
            false,
        );
    }
    let answer = match await_answer(&rx, budget, "solver") {
        Ok(a) => a,
        Err((note, hit)) => return fallback(Some(note), None, hit),
    };
    let (decision, result, constant) = answer;
    let bound = result.dual_bound.map(|b| b + constant);
    let hit = result.status == BackendStatus::LimitWithIncumbent;
    let assignment = match decode::to_assignment(inst, &decision) {
        Ok(a) => a,
        Err(e) => {
            return fallback(
                Some(format!("solver answer unusable ({e}); greedy plan used")),
                bound,
                hit,
            )
        }
    };
    if let Err(e) = crate::plan::validate::check_assignment(inst, &assignment) {
        return fallback(
            Some(format!(
                "solver answer broke a rule ({e}); greedy plan used"
            )),
            bound,
            hit,
        );
    }
    let objective = evaluate(inst, topo, &assignment).total();
    if objective + 1e-9 < greedy_objective {
        return fallback(Some(format!("solver incumbent {objective:.4} is below the greedy plan's {greedy_objective:.4}; greedy plan used")), bound, hit);
    }
    SolveOutcome::from_solver(
        assignment,
        objective,
        bound,
        result.status == BackendStatus::Optimal,
        hit,
        greedy_objective,
        opts.mip_gap,
        None,
    )
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
