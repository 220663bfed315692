//! The exact per-node MIP of a round ([`crate::model`]), solved on a thread of its own from a
//! start plan, under the time the round's [`Budget`] leaves it: started ([`start`]) and
//! waited for later ([`Running::finish`]), so that the round's thread can go on with the
//! aggregated path while HiGHS works.

use super::{
    await_answer, check_columns, decode, guarded, Answered, BackendResult, BackendSettings,
    BackendStatus, Budget, Fallback, GreedyPlan, MipBackend, SolveOptions, Solver, SolverPlan,
    ThreadAnswer,
};
use crate::assignment::Assignment;
use crate::instance::Instance;
use crate::model;
use crate::objective::evaluate;
use crate::topology::Topology;
use crate::units::TOLERANCE;
use std::sync::{mpsc, Arc};
use std::time::Instant;

/// The answer of the per-node MIP: decision columns decoded, the backend's result, and what
/// turns the model's dual bound into a bound of the plan objective: the objective's constant
/// plus [`model::fragmentation::bound_slack`].
type PerNodeAnswer = (model::start::Decision, BackendResult, f64);

/// A per-node MIP solving on its thread.
pub struct Running {
    answer: mpsc::Receiver<ThreadAnswer<PerNodeAnswer>>,
    /// When it is waited for no longer (the budget's work deadline).
    until: Instant,
    /// The objective of its start, which its plan must reach to be kept.
    start_objective: f64,
}

/// Start the per-node MIP from `start` on a thread of its own, with the time left before
/// the budget's work deadline; `Err` where less than the least solve is left or the thread
/// does not start.
pub fn start(
    inst: &Arc<Instance>,
    topo: &Arc<Topology>,
    opts: &SolveOptions,
    backend: Arc<dyn MipBackend>,
    budget: &Budget,
    start: &GreedyPlan,
) -> Result<Running, Fallback> {
    let limits = budget
        .per_node_limits(Instant::now())
        .ok_or(Fallback::NoTimeToStart)?;
    let settings = BackendSettings {
        time_limit: limits.time_limit,
        mip_gap: opts.mip_gap,
        seed: inst.policy.seed,
        write_model: opts.write_model.clone(),
    };
    let answer = spawn(inst, topo, &start.assignment, backend, settings)
        .map_err(|e| Fallback::ThreadNotStarted(e.to_string()))?;
    Ok(Running {
        answer,
        until: Instant::now() + limits.wait,
        start_objective: start.objective,
    })
}

impl Running {
    /// Wait for the answer until the work deadline and read its plan: decoded, checked
    /// against the rules, and not below its start.
    pub fn finish(self, inst: &Instance, topo: &Topology) -> Result<SolverPlan, Fallback> {
        let wait = self.until.saturating_duration_since(Instant::now());
        let (decision, result, bound_shift) = await_answer(&self.answer, wait, Solver::PerNode)?;
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
        if objective + TOLERANCE < self.start_objective {
            return Err(Fallback::BelowGreedy {
                incumbent: objective,
                greedy: self.start_objective,
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
}

/// Build and solve the per-node MIP, started from `start`, on a thread of its own.
fn spawn(
    inst: &Arc<Instance>,
    topo: &Arc<Topology>,
    start: &Assignment,
    backend: Arc<dyn MipBackend>,
    settings: BackendSettings,
) -> std::io::Result<mpsc::Receiver<ThreadAnswer<PerNodeAnswer>>> {
    let (tx, rx) = mpsc::channel();
    let (inst, topo, start) = (Arc::clone(inst), Arc::clone(topo), start.clone());
    std::thread::Builder::new()
        .name("gangplan-mip".into())
        .spawn(move || {
            let result = guarded(|| answer(&inst, &topo, &start, backend.as_ref(), &settings));
            let _ = tx.send(result);
        })?;
    Ok(rx)
}

/// Build the per-node MIP of `inst`, start it from `start` and solve it on this thread.
pub fn answer(
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
