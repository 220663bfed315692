//! Large rounds: the aggregated model (its LP relaxation on the largest rounds) chooses which
//! jobs start (and bounds the objective) while the greedy plans the round on the other core;
//! the greedy machinery then places the chosen jobs first ([`second_stage`]), and the best plan
//! found, or the greedy plan, is returned.
//!
//! On rounds of [`RELAXATION_FROM_NODES`] nodes or more the choice comes from the LP relaxation:
//! there the second stage, not the model's integrality, decides what the plan loses against the
//! bound, and the LP solves several times faster. Smaller rounds solve the relaxation first and
//! then the integer model, and place both choices when the integer model's time ran out
//! ([`answers`]).

pub mod answers;
mod meanwhile;
mod second_stage;

pub use answers::{start, Early, Running};

use super::{
    Answered, BackendStatus, Budget, Fallback, GreedyPlan, MipBackend, Solver, SolverPlan,
    ThreadAnswer,
};
use crate::assignment::Assignment;
use crate::heuristics::repack::repack;
use crate::heuristics::stop::StopWhen;
use crate::heuristics::trade::trade;
use crate::instance::Instance;
use crate::objective::evaluate;
use crate::topology::Topology;
use crate::units::TOLERANCE;
use answers::{ModelAnswer, Stage};
use meanwhile::FirstAnswer;
use second_stage::{log_second_stage, second_stage, Choice, StagePlan};
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::Instant;

/// Rounds of at least this many nodes solve the aggregated model's LP relaxation instead of
/// the integer model; smaller rounds solve the integer model.
///
/// Measured on the generator families at 10k GPUs (1,250 nodes, 4,000 pending; one run each,
/// 10 s limit, loaded 2-core machine): the LP took 0.28-0.72 s against the integer model's
/// 0.62-5.4 s, its optimum was within 0.002% of the integer model's dual bound, and the plans
/// placed from its choice scored from 0.02% below to 0.23% above those placed from the integer
/// incumbent; at 100k GPUs (12,500 nodes) the LP took 1.7-2.8 s against 6.1-10.2 s. On the
/// saved rounds of 48-125 nodes the LP's bound was 0.2-1.7 points looser and its plans within
/// 0.3% either way, while the integer model solves in well under a second: there the integer
/// model stays. The threshold lies between the measured sizes (a choice).
pub const RELAXATION_FROM_NODES: usize = 500;

/// Whether this round solves the aggregated model's LP relaxation ([`RELAXATION_FROM_NODES`]).
pub fn solves_relaxation(inst: &Instance) -> bool {
    inst.nodes.len() >= RELAXATION_FROM_NODES
}

/// Wait for the aggregated model until the budget's work deadline and place the jobs it
/// chose first with the greedy machinery (when the time the greedy took, halved, still fits):
/// where the relaxation answers first, its choice is placed while the integer model runs, and
/// the integer model's choice when it differs; then improve the better plan, or the greedy
/// plan where it is better still, neighbourhood by neighbourhood with `backend`
/// ([`super::neighbourhood`]); the plan when it beats the greedy one, with the lower of the
/// answers' bounds.
///
/// While the model solves, the greedy plan is improved ([`meanwhile`]): the improved plan
/// stands in for the greedy one from then on, and is the round's plan (with the model's bound,
/// where it answered) when no choice could be placed.
pub fn finish(
    running: Running,
    inst: &Arc<Instance>,
    topo: &Arc<Topology>,
    budget: &Budget,
    greedy: &GreedyPlan,
    backend: &Arc<dyn MipBackend>,
) -> Result<SolverPlan, Fallback> {
    let plan = plan_round(&running, inst, topo, budget, greedy, backend)?;
    Ok(with_tightened_bound(plan, &running))
}

/// [`finish`] up to the bound of the tightened relaxation.
fn plan_round(
    running: &Running,
    inst: &Arc<Instance>,
    topo: &Arc<Topology>,
    budget: &Budget,
    greedy: &GreedyPlan,
    backend: &Arc<dyn MipBackend>,
) -> Result<SolverPlan, Fallback> {
    let first = FirstAnswer::on(&running.answers);
    let Some(improved) = meanwhile::improve(inst, topo, budget, greedy, &first) else {
        return place_and_improve(first, inst, topo, budget, greedy, greedy.objective, backend)
            .map(|(plan, _)| plan);
    };
    let from = GreedyPlan {
        assignment: improved.plan.1.clone(),
        objective: improved.plan.0,
        took: greedy.took,
    };
    match place_and_improve(first, inst, topo, budget, &from, greedy.objective, backend) {
        Ok((mut plan, from_greedy)) => {
            // A plan grown from an improvement cut short depends on the machine's speed.
            plan.time_limit_hit |= from_greedy && improved.cut_short;
            Ok(plan)
        }
        Err(why) => Ok(SolverPlan {
            bound: why.bound(),
            solved: why.bound().is_some(),
            time_limit_hit: true,
            note: Some(format!(
                "large round: {}; the greedy plan improved by trades and repacking while the model solved",
                why.reason()
            )),
            incumbent: None,
            objective: improved.plan.0,
            assignment: improved.plan.1,
        }),
    }
}

/// `plan` with the lower bound of the tightened relaxation ([`Stage::Tightened`]) where it
/// has answered by now; it is not waited for.
fn with_tightened_bound(mut plan: SolverPlan, running: &Running) -> SolverPlan {
    let tightened = tightened_in(&running.answers).and_then(|a| a.bound);
    if let (Some(bound), Some(lower)) = (plan.bound, tightened) {
        tracing::debug!(
            bound,
            tightened = lower,
            "the relaxation with per-node rows answered"
        );
        plan.bound = Some(bound.min(lower));
    }
    plan
}

/// The tightened relaxation's answer ([`Stage::Tightened`]) where it is in by now; it is
/// not waited for.
fn tightened_in(answers: &Receiver<ThreadAnswer<ModelAnswer>>) -> Option<ModelAnswer> {
    answers.try_iter().find_map(|answer| match answer {
        Ok(Ok(a)) if a.stage == Stage::Tightened => Some(a),
        _ => None,
    })
}

/// [`finish`] from `from`, the greedy plan or the plan improved while the model solved
/// (`greedy_objective`: the greedy plan's, which the round's plan must beat): the placed
/// choices ([`placed_choices`]), the best of them traded, repacked and improved neighbourhood
/// by neighbourhood; and whether the plan returned was grown from `from` rather than from a
/// placed choice.
fn place_and_improve(
    first: FirstAnswer<'_>,
    inst: &Arc<Instance>,
    topo: &Arc<Topology>,
    budget: &Budget,
    greedy: &GreedyPlan,
    greedy_objective: f64,
    backend: &Arc<dyn MipBackend>,
) -> Result<(SolverPlan, bool), Fallback> {
    let (placed, mut answered) = placed_choices(first, inst, topo, budget, greedy)?;
    // `greedy` stands above the greedy plan only where it was improved while the model solved.
    let traded_already = greedy_objective < greedy.objective;
    let Some((start, incumbent, from_greedy)) =
        best_traded(inst, topo, budget, greedy, placed, traded_already)
    else {
        return Err(Fallback::NoTimeToPlace(answered));
    };
    let (start, repack_cut_short) = repacked(inst, topo, start, budget.repack_until());
    let improved = super::neighbourhood::improve(inst, topo, backend, budget, start);
    let (objective, assignment) = (improved.objective, improved.plan);
    // A search cut short returns a plan that depends on the machine's speed, and may have
    // missed what beats the greedy plan on a faster machine.
    let cut_short = repack_cut_short || improved.cut_short;
    if objective <= greedy_objective + TOLERANCE {
        answered.time_limit_hit |= cut_short;
        return Err(Fallback::NoBetterThanGreedy(answered));
    }
    // The aggregate's bound proves the plan within the gap only when the gap says so.
    let plan = SolverPlan {
        assignment,
        objective,
        bound: answered.bound,
        solved: true,
        time_limit_hit: answered.time_limit_hit || cut_short,
        note: Some("large round: aggregated model, jobs placed by best fit".to_string()),
        incumbent: Some(incumbent),
    };
    Ok((plan, from_greedy))
}

/// The model's answers, waited for until the work deadline, each choice placed while the
/// time the greedy took, halved, still fits (or placed early on the model's thread): the
/// relaxation's while the integer model runs, then the integer model's where it differs;
/// and what the answers report (the lower bound).
fn placed_choices(
    first: FirstAnswer<'_>,
    inst: &Instance,
    topo: &Topology,
    budget: &Budget,
    greedy: &GreedyPlan,
) -> Result<(Vec<Placed>, Answered), Fallback> {
    let waited = Instant::now();
    let wait = || {
        budget
            .work_until()
            .saturating_duration_since(Instant::now())
    };
    // A choice placed early is waited for; the second stage goes on from it where no pass
    // fits any more (what follows stops at the deadline).
    let place = |mut a: ModelAnswer| {
        let early = a
            .early
            .take()
            .and_then(|plan| plan.recv_timeout(wait()).ok());
        (early.is_some() || budget.can_place_choice(greedy.took))
            .then(|| Placed::of(inst, topo, budget, greedy, a, early))
    };
    let answers = first.channel();
    let first = first.take(wait())?;
    let (stage, status, bound) = (first.stage, first.status, first.bound);
    let mut placed: Vec<Placed> = place(first).into_iter().collect();
    let mut answered = Answered {
        bound,
        time_limit_hit: stage == Stage::RelaxationFirst
            || status == BackendStatus::LimitWithIncumbent,
    };
    if stage == Stage::RelaxationFirst {
        match super::await_answer(answers, wait(), Solver::Aggregated) {
            Ok(last) => {
                answered = Answered {
                    bound: [bound, last.bound].into_iter().flatten().reduce(f64::min),
                    time_limit_hit: last.status == BackendStatus::LimitWithIncumbent,
                };
                if placed.iter().all(|p| p.differs(&last)) {
                    placed.extend(place(last));
                }
            }
            Err(why) => {
                tracing::debug!(%why, "the integer model did not answer; the relaxation's choice stands")
            }
        }
    } else if let Some(tight) = tightened_in(answers) {
        answered.bound = [bound, tight.bound].into_iter().flatten().reduce(f64::min);
        if placed.iter().all(|p| p.differs(&tight)) {
            placed.extend(place(tight));
        }
    }
    tracing::debug!(
        waited_s = waited.elapsed().as_secs_f64(),
        "aggregated model answered"
    );
    Ok((placed, answered))
}

/// `plan` after trades on its nodes whose free GPUs lack CPU or memory ([`trade`]) until
/// `until`, when they raise its objective.
fn traded(
    inst: &Instance,
    topo: &Topology,
    (objective, plan): (f64, Assignment),
    until: impl StopWhen,
) -> (f64, Assignment) {
    let started = Instant::now();
    if until.reached() {
        return (objective, plan); // setting up the trades alone takes 0.1 s at 100k GPUs
    }
    let (after, kept) = trade(inst, topo, &plan, until);
    if kept == 0 {
        return (objective, plan);
    }
    let after_objective = evaluate(inst, topo, &after).total();
    tracing::debug!(
        seconds = started.elapsed().as_secs_f64(),
        kept,
        objective = after_objective,
        "trades done"
    );
    if after_objective > objective + TOLERANCE {
        (after_objective, after)
    } else {
        (objective, plan)
    }
}

/// `plan` after repacking ([`repack`]) until `until` ([`Budget::repack_until`] after a placed
/// choice), when it raises its objective; and whether `until` cut the repacking short.
fn repacked(
    inst: &Instance,
    topo: &Topology,
    (objective, plan): (f64, Assignment),
    until: impl StopWhen,
) -> ((f64, Assignment), bool) {
    let started = Instant::now();
    if until.reached() {
        // Setting up the moves alone takes about 0.1 s at 100k GPUs.
        return ((objective, plan), true);
    }
    let (after, done) = repack(inst, topo, &plan, until);
    // A repacking that kept no move returns the plan it started from.
    let after_objective = if done.kept + done.sideways > 0 {
        evaluate(inst, topo, &after).total()
    } else {
        objective
    };
    tracing::debug!(
        seconds = started.elapsed().as_secs_f64(),
        tried = done.tried,
        kept = done.kept,
        sideways = done.sideways,
        cut_short = done.cut_short,
        objective = after_objective,
        "repacking done"
    );
    if after_objective > objective + TOLERANCE {
        ((after_objective, after), done.cut_short)
    } else {
        ((objective, plan), done.cut_short)
    }
}

/// The plan the neighbourhood search starts from, the model's objective at its choice, and
/// whether that plan is the greedy one: each placed choice (or the greedy plan where it is
/// better) after its trades ([`traded`]), the best of them (the later answer on ties). `None`
/// when no choice was placed. Where the greedy plan was traded already while the model solved
/// (`greedy_traded`, [`meanwhile`]), every choice is traded and the greedy plan stands beside
/// them as it is: the trades raise a choice more than a plan they have been through (10k-GPU
/// tight-cpu round of `gangplan bench`, seed 1: the greedy plan traded while the model solved
/// 6,505.5, the choice placed 6,372.3 and traded 6,711.5).
///
/// Trading each placed choice, not only the better placed one, is measured on the 1k-GPU
/// skewed-resources round of `gangplan bench` (seed 1): the relaxation's choice placed 631.9
/// against the integer model's 622.7, and after the trades 643.4 against 653.4.
fn best_traded(
    inst: &Instance,
    topo: &Topology,
    budget: &Budget,
    greedy: &GreedyPlan,
    placed: Vec<Placed>,
    mut greedy_traded: bool,
) -> Option<((f64, Assignment), f64, bool)> {
    let mut best: Option<((f64, Assignment), f64, bool)> = None;
    let traded_before = greedy_traded;
    for p in placed.into_iter().rev() {
        let from_greedy = !traded_before && greedy.objective > p.plan.0 + TOLERANCE;
        let start = if from_greedy {
            if greedy_traded {
                continue; // another choice placed below the greedy plan traded it already
            }
            greedy_traded = true;
            (greedy.objective, greedy.assignment.clone())
        } else {
            p.plan
        };
        let after = traded(inst, topo, start, budget.work_until());
        tracing::debug!(
            placed_from = p.incumbent,
            objective = after.0,
            "choice placed and traded"
        );
        if best.as_ref().is_none_or(|b| after.0 > b.0 .0 + TOLERANCE) {
            best = Some((after, p.incumbent, from_greedy));
        }
    }
    match best {
        Some((plan, incumbent, _)) if traded_before && greedy.objective > plan.0 + TOLERANCE => {
            Some((
                (greedy.objective, greedy.assignment.clone()),
                incumbent,
                true,
            ))
        }
        best => best,
    }
}

/// One answer's choice placed by the second stage.
struct Placed {
    /// The choice.
    choice: Choice,
    /// The plan's objective and the plan.
    plan: (f64, Assignment),
    /// The model's objective at the answer.
    incumbent: f64,
}

impl Placed {
    /// Place answer `a`'s choice (from its `early` placement, where it has one).
    fn of(
        inst: &Instance,
        topo: &Topology,
        budget: &Budget,
        greedy: &GreedyPlan,
        a: ModelAnswer,
        early: Option<StagePlan>,
    ) -> Self {
        let choice = Choice {
            chosen: a.chosen,
            victims: a.victims,
            incumbent: a.incumbent,
            spread_floors: a.spread_floors,
        };
        let plan = second_stage(inst, topo, &choice, budget, greedy.took, early);
        log_second_stage(inst, topo, &choice, &plan.1);
        Placed {
            choice,
            plan,
            incumbent: a.incumbent,
        }
    }

    /// Whether answer `a` chose other jobs or victims than this.
    fn differs(&self, a: &ModelAnswer) -> bool {
        self.choice.chosen != a.chosen || self.choice.victims != a.victims
    }
}
