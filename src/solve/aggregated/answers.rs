//! The aggregated model's solve, on a thread of its own, and its answers.
//!
//! Rounds that solve the integer model ([`super::solves_relaxation`] false) solve its LP
//! relaxation first and send that answer too: the integer model's incumbent at a short time
//! limit can be far worse than what the relaxation's choice places. Measured on the generator
//! families at 1k GPUs (125 nodes, 400 pending, seed 1, 1 s limit, one run each): with the
//! integer model alone the default round ended 2.91% from its bound and tight-cpu, sharers
//! and whole-nodes kept the greedy plan (its incumbent was below greedy's); the relaxation's
//! choice placed the default round 0.95% from the bound and tight-cpu 4.3% (from 7.25%),
//! while on quotas and mixed-types the integer incumbent placed better. So both are placed
//! and the better plan stays ([`super::finish`]).

use super::super::{
    guarded, BackendSettings, BackendStatus, Budget, MipBackend, SolveOptions, ThreadAnswer,
};
use super::second_stage::{first_pass, Choice, StagePlan};
use super::solves_relaxation;
use crate::instance::Instance;
use crate::model::{aggregate, MipModel};
use crate::topology::Topology;

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Instant;

/// Which model an answer comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// The LP relaxation, solved first; the integer model's answer follows.
    RelaxationFirst,
    /// The round's own model: the integer model, or the relaxation on the largest rounds.
    Last,
    /// On rounds that solve the relaxation, after `Last`: the relaxation again with the
    /// per-node rows ([`aggregate::node_levels`]), taken where it is in in time.
    Tightened,
}

/// One answer of the aggregated model.
pub struct ModelAnswer {
    /// Which model answered.
    pub stage: Stage,
    /// Pending jobs it starts.
    pub chosen: BTreeSet<usize>,
    /// Running jobs it preempts.
    pub victims: Vec<usize>,
    /// How the solve ended.
    pub status: BackendStatus,
    /// Its proven upper bound on the round's objective, if any.
    pub bound: Option<f64>,
    /// The model's own objective at its answer: what the choice promised before the second
    /// stage placed it.
    pub incumbent: f64,
    /// The spread floors of the jobs it starts (what its objective charges them for spread).
    pub spread_floors: f64,
    /// The columns the per-node rows ([`aggregate::node_levels`]) take in this model's
    /// round, whether they are in it or not.
    pub node_level_columns: usize,
    /// Where the model's thread is placing the choice itself because the greedy was still
    /// running ([`Early`]): the plan of that pass comes here.
    pub early: Option<mpsc::Receiver<StagePlan>>,
}

/// On rounds that solve the relaxation (the largest), the model's choice is placed by the
/// second stage's first pass on the model's own thread as soon as it has answered, when the
/// greedy is still running on the other core: there the greedy and the model take about as
/// long (0.5-1.1 s each at 100k GPUs), and the second stage, which otherwise starts only after
/// the greedy, was cut by the work deadline on a loaded machine, so the round kept the greedy
/// plan (default 100k: 4.44% from the bound in one run of two).
pub struct Early {
    /// Set by the caller once the greedy is done; from then on the second stage runs on the
    /// caller's thread and no early pass starts.
    pub greedy_done: Arc<AtomicBool>,
    /// When the pass stops ([`Budget::early_placement_until`]); the jobs it has not reached
    /// wait.
    pub until: Instant,
}

impl Early {
    /// Send answer `a` on `tx`; then, where the round solves the relaxation and the greedy is
    /// not done, place its choice here and send that plan on the channel the answer names.
    fn send(
        &self,
        inst: &Instance,
        topo: &Topology,
        tx: &mpsc::Sender<ThreadAnswer<ModelAnswer>>,
        answer: ThreadAnswer<ModelAnswer>,
    ) {
        let Ok(Ok(mut a)) = answer else {
            let _ = tx.send(answer);
            return;
        };
        if !solves_relaxation(inst) || self.greedy_done.load(Ordering::Acquire) {
            let _ = tx.send(Ok(Ok(a)));
            return;
        }
        let choice = Choice {
            chosen: a.chosen.clone(),
            victims: a.victims.clone(),
            incumbent: a.incumbent,
            spread_floors: a.spread_floors,
        };
        let (plan_tx, plan_rx) = mpsc::channel();
        a.early = Some(plan_rx);
        if tx.send(Ok(Ok(a))).is_err() {
            return;
        }
        let started = Instant::now();
        let placed = guarded(|| first_pass(inst, topo, &choice, self.until));
        if let Ok(plan) = placed {
            tracing::debug!(
                seconds = started.elapsed().as_secs_f64(),
                objective = plan.0,
                "choice placed early, while the greedy ran"
            );
            let _ = plan_tx.send(plan);
        }
    }
}

/// A solve of the aggregated model running on its own thread: one answer, or two when the
/// relaxation is solved first ([`Stage`]).
pub struct Running {
    pub(super) answers: mpsc::Receiver<ThreadAnswer<ModelAnswer>>,
}

/// Build and solve the aggregated model on a thread of its own, within the budget's share
/// for it (the model needs no MIP start, so it runs while the greedy plans the round); on the
/// largest rounds its choice is placed there too while the greedy runs ([`Early`]).
/// `time_limit`: HiGHS's own limit for both stages together, seconds
/// ([`Budget::aggregated_time_limit`]).
pub fn start(
    inst: &Arc<Instance>,
    topo: &Arc<Topology>,
    opts: &SolveOptions,
    backend: Arc<dyn MipBackend>,
    time_limit: f64,
    early: Early,
) -> std::io::Result<Running> {
    let settings = BackendSettings {
        time_limit,
        mip_gap: Budget::aggregated_gap(opts.mip_gap),
        seed: inst.policy.seed,
        write_model: opts.write_model.clone(),
    };
    let (tx, rx) = mpsc::channel();
    let (inst, topo) = (Arc::clone(inst), Arc::clone(topo));
    std::thread::Builder::new()
        .name("gangplan-aggregate".into())
        .spawn(move || run_stages(&inst, &topo, &*backend, settings, time_limit, early, &tx))?;
    Ok(Running { answers: rx })
}

/// The model's thread: on rounds that solve the integer model, the relaxation first (sent)
/// and whether the per-node rows cut it; then the round's own model (sent, and placed here
/// where [`Early`] says so); then, where it fits ([`tightened_fits`]), the tightened
/// relaxation (sent). `time_limit`: HiGHS's limit for all of them together, seconds.
fn run_stages(
    inst: &Instance,
    topo: &Topology,
    backend: &dyn MipBackend,
    settings: BackendSettings,
    time_limit: f64,
    early: Early,
    tx: &mpsc::Sender<ThreadAnswer<ModelAnswer>>,
) {
    let started = Instant::now();
    let left = || BackendSettings {
        time_limit: (time_limit - started.elapsed().as_secs_f64()).max(0.0),
        ..settings.clone()
    };
    let node_levels = match solves_relaxation(inst) {
        true => false,
        false => match relaxation_first(inst, topo, backend, &settings, tx) {
            Some(cut) => cut,
            None => return, // the round's thread has gone
        },
    };
    let last = left();
    let solving = Instant::now();
    let answer = guarded(|| solve(inst, topo, Stage::Last, backend, &last, node_levels));
    let took = solving.elapsed().as_secs_f64();
    let columns = match &answer {
        Ok(Ok(a)) => a.node_level_columns,
        _ => 0,
    };
    early.send(inst, topo, tx, answer);
    let rest = BackendSettings {
        write_model: None,
        ..left()
    };
    if tightened_fits(inst, columns, took, rest.time_limit) {
        if let Ok(Some(answer)) = guarded(|| tightened_relaxation(inst, topo, backend, &rest)) {
            let _ = tx.send(Ok(Ok(answer)));
        }
    }
}

/// On rounds that solve the integer model: the relaxation, sent first, and whether the
/// per-node rows cut it ([`node_levels_cut`]); `None` when the round's thread has gone.
fn relaxation_first(
    inst: &Instance,
    topo: &Topology,
    backend: &dyn MipBackend,
    settings: &BackendSettings,
    tx: &mpsc::Sender<ThreadAnswer<ModelAnswer>>,
) -> Option<bool> {
    let first = BackendSettings {
        write_model: None,
        ..settings.clone()
    };
    let answer = guarded(|| solve(inst, topo, Stage::RelaxationFirst, backend, &first, false));
    let bound = match &answer {
        Ok(Ok(a)) => a.bound,
        _ => None,
    };
    tx.send(answer).ok()?;
    Some(bound.is_some_and(|bound| {
        guarded(|| node_levels_cut(inst, topo, backend, &first, bound)).unwrap_or(false)
    }))
}

/// Least relative fall of the relaxation's bound for which the integer model takes the
/// per-node rows ([`aggregate::node_levels`]): where they cut the relaxation by less, they
/// only slow the integer model down (on the 48-node tight-cpu round of seed 1 the relaxation
/// is 309.9 with and without them, and the integer model took 0.45 s with them, 0.28 s
/// without).
const NODE_LEVELS_MIN_CUT: f64 = 1e-3;

/// Whether the per-node rows ([`aggregate::node_levels`]) lower the relaxation's bound
/// (`bound`: without them) by [`NODE_LEVELS_MIN_CUT`] or more: the relaxation solved again
/// with them, where their columns stay within their budget.
fn node_levels_cut(
    inst: &Instance,
    topo: &Topology,
    backend: &dyn MipBackend,
    settings: &BackendSettings,
    bound: f64,
) -> bool {
    let most = aggregate::node_levels::MOST_COLUMNS;
    let stage = Stage::RelaxationFirst;
    let Some(tight) = relaxation_with_rows(inst, topo, backend, settings, most, stage) else {
        return false;
    };
    let cut = tight
        .bound
        .is_some_and(|b| b < bound - NODE_LEVELS_MIN_CUT * bound.abs().max(1.0));
    tracing::debug!(
        without = bound,
        with = tight.bound,
        cut,
        "the relaxation with per-node rows of CPU, memory and GPUs by pair of levels"
    );
    cut
}

/// The LP relaxation with the per-node rows ([`aggregate::node_levels`]), solved on this
/// thread as `stage`; `None` where the rows take more than `most` columns (or none) and so
/// stay out, or the solve fails.
fn relaxation_with_rows(
    inst: &Instance,
    topo: &Topology,
    backend: &dyn MipBackend,
    settings: &BackendSettings,
    most: usize,
    stage: Stage,
) -> Option<ModelAnswer> {
    let form = aggregate::Form {
        integer: false,
        node_levels: Some(most),
    };
    let agg = build(inst, topo, form);
    if !agg.node_levels {
        return None;
    }
    solve_built(inst, agg, stage, backend, settings).ok()
}

/// Build the aggregated model in `form`, saying so.
fn build(inst: &Instance, topo: &Topology, form: aggregate::Form) -> aggregate::AggregateModel {
    let building = Instant::now();
    let agg = aggregate::build_with(inst, topo, form);
    tracing::debug!(
        seconds = building.elapsed().as_secs_f64(),
        integer = form.integer,
        node_levels = agg.node_levels,
        classes = agg.classes.len(),
        columns = agg.model.columns(),
        rows = agg.model.constraints.len(),
        "aggregated model built"
    );
    agg
}

/// Build the aggregated model (integer unless this is the relaxation solved first or the
/// round solves the relaxation; with the per-node rows where `node_levels`) and solve it on
/// this thread.
fn solve(
    inst: &Instance,
    topo: &Topology,
    stage: Stage,
    backend: &dyn MipBackend,
    settings: &BackendSettings,
    node_levels: bool,
) -> crate::Result<ModelAnswer> {
    let integer = stage == Stage::Last && !solves_relaxation(inst);
    let node_levels = node_levels.then_some(aggregate::node_levels::MOST_COLUMNS);
    let agg = build(
        inst,
        topo,
        aggregate::Form {
            integer,
            node_levels,
        },
    );
    solve_built(inst, agg, stage, backend, settings)
}

/// How much longer than the round's LP its tightened relaxation ([`Stage::Tightened`]) is
/// taken to need: two to four times as long where measured (the 10k-GPU skewed-resources
/// round 0.8-1.0 s against 0.2-0.3 s, tight-cpu 0.41-0.58 s against 0.22-0.32 s).
const TIGHTENED_SLOWDOWN: f64 = 4.0;

/// Whether the tightened relaxation is worth starting: on a round that solves the
/// relaxation, with the per-node rows within
/// [`aggregate::node_levels::MOST_COLUMNS_RELAXATION`] columns (`columns`, as the round's
/// build counted them), and `left` seconds of the model's time limit for
/// [`TIGHTENED_SLOWDOWN`] times what the round's LP took (`took`, seconds, its build
/// included): on the 100k-GPU default round (a 0.5 s LP in a 3 s round) it was built and
/// started and never answered.
fn tightened_fits(inst: &Instance, columns: usize, took: f64, left: f64) -> bool {
    let most = aggregate::node_levels::MOST_COLUMNS_RELAXATION;
    solves_relaxation(inst) && (1..=most).contains(&columns) && left >= took * TIGHTENED_SLOWDOWN
}

/// On rounds that solve the relaxation, after the round's own answer: the relaxation again
/// with the per-node rows ([`aggregate::node_levels`], within
/// [`aggregate::node_levels::MOST_COLUMNS_RELAXATION`] columns), on the model's thread while
/// the round's thread places the first answer's choice; `None` where the rows stay out or the
/// solve proves no bound in the time left. The round does not wait for it (the 10k-GPU
/// rounds' LP takes two to four times as long with the rows): its choice is placed where it
/// is in once the first choice is placed, its bound taken where it is in by the end.
fn tightened_relaxation(
    inst: &Instance,
    topo: &Topology,
    backend: &dyn MipBackend,
    settings: &BackendSettings,
) -> Option<ModelAnswer> {
    if settings.time_limit <= 0.0 {
        return None;
    }
    let most = aggregate::node_levels::MOST_COLUMNS_RELAXATION;
    relaxation_with_rows(inst, topo, backend, settings, most, Stage::Tightened)
        .filter(|answer| answer.bound.is_some())
}

/// Solve the built model `agg` on this thread and read its answer.
fn solve_built(
    inst: &Instance,
    mut agg: aggregate::AggregateModel,
    stage: Stage,
    backend: &dyn MipBackend,
    settings: &BackendSettings,
) -> crate::Result<ModelAnswer> {
    let integer = stage == Stage::Last && !solves_relaxation(inst);
    let constant = agg.model.constant;
    let model = std::mem::replace(&mut agg.model, MipModel::empty());
    let columns = model.columns();
    let objective = model.objective.clone();
    let started = Instant::now();
    let r = backend
        .solve(model, &[], settings)
        .and_then(|r| super::super::check_columns(r, columns))?;
    let values: HashMap<good_lp::Variable, f64> = agg
        .columns
        .iter()
        .map(|(&v, &i)| (v, r.columns[i]))
        .collect();
    let incumbent = constant + objective.eval_with(&values);
    // The model has no fragmentation term; the plan objective's may lower its costs below 0.
    let bound = r
        .dual_bound
        .map(|b| b + constant + crate::objective::fragmentation_slack(inst));
    tracing::debug!(
        seconds = started.elapsed().as_secs_f64(),
        integer,
        incumbent,
        bound,
        "aggregated model solved"
    );
    let chosen = agg.chosen(&r.columns);
    let victims = agg.victims(&r.columns);
    tracing::trace!(
        chosen = ?chosen
            .iter()
            .map(|&j| (inst.pending[j].id.as_str(), agg.spread_floors[j]))
            .collect::<Vec<_>>(),
        victims = ?victims.iter().map(|&k| inst.running[k].id.as_str()).collect::<Vec<_>>(),
        "aggregated model's choice (job, spread floor) and victims"
    );
    Ok(ModelAnswer {
        stage,
        spread_floors: chosen.iter().map(|&j| agg.spread_floors[j]).sum(),
        chosen,
        victims,
        status: r.status,
        bound,
        incumbent,
        node_level_columns: agg.node_level_columns,
        early: None,
    })
}
