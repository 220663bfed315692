//! Neighbourhood search: the aggregated path's plan improved one neighbourhood at a time by
//! the exact per-node model.
//!
//! The second stage places the aggregated model's choice job by job, and loses what a joint
//! placement would have kept: holes no waiting job fits, a CPU-bound node given to the wrong
//! job, a gang spread because smaller jobs came first. Each neighbourhood (a rack, or a few
//! small racks of one pod: [`choose::neighbourhoods`]) is cut out of the round with what runs
//! and is placed on it and a few waiting candidates ([`cut`]), solved exactly by the per-node
//! MIP from the current plan, and put back when the round's objective rises and the quotas
//! hold. Two neighbourhoods are solved at a time (one per core), those with the most idle GPUs
//! first (a neighbourhood with none can still gain by moving its jobs: on the 1k-GPU
//! mixed-types round, 942 of 952 GPUs busy, skipping them lost the whole gain); the search
//! ends at its share of the round, after a full pass that improved nothing, or after
//! [`MAX_FRUITLESS`] neighbourhoods in a row that improved nothing. Every accepted plan is a
//! plan of the round: the cut fixes what reaches outside it, so the gang, capacity, topology
//! and preemption rules hold by construction, and the quota rule is checked on the whole round
//! before a neighbourhood's plan is kept. The validator checks the final plan once more; a
//! plan it refuses is dropped for the one the search started from (with a warning: that would
//! be a bug of the cut).

pub mod choose;
pub mod cut;

use super::{BackendSettings, BackendStatus, Budget, MipBackend};
use crate::assignment::Assignment;
use crate::heuristics::greedy::{greedy_order, Order};
use crate::instance::Instance;
use crate::objective::{evaluate, held_after, held_before};
use crate::topology::Topology;
use crate::units::TOLERANCE;
use rayon::prelude::*;
use std::collections::BTreeSet;
use std::sync::{mpsc, Arc};
use std::time::Instant;

/// Gap each neighbourhood is solved to: the cuts are small, so they are solved (almost) to
/// optimality.
const CUT_GAP: f64 = 1e-4;

/// Passes over every neighbourhood at most (the search usually stops earlier: after a pass
/// that improved nothing, or at the deadline).
const MAX_PASSES: usize = 3;

/// Neighbourhoods solved one after another without a gain after which the search stops: they
/// are tried most idle GPUs first, so the ones left are the least likely to gain. (On the
/// 10k-GPU family rounds the kept neighbourhoods came among the first tried.)
const MAX_FRUITLESS: usize = 16;

/// Neighbourhoods solved at a time (the development machine's cores).
const BATCH: usize = 2;

/// What the search found: the plan, its objective, and the neighbourhoods solved and kept.
pub struct Improved {
    /// Objective of `plan`.
    pub objective: f64,
    /// The plan.
    pub plan: Assignment,
    /// Neighbourhoods re-solved.
    pub solved: usize,
    /// Neighbourhoods whose plan was kept.
    pub kept: usize,
    /// Whether time decided where the search ended: a re-solve stopped at its time limit, or
    /// the search's share of the round ran out before it was done.
    pub cut_short: bool,
}

/// Improve `start` (a plan of the round and its objective) neighbourhood by neighbourhood
/// until the budget's [`Budget::search_until`].
pub fn improve(
    inst: &Instance,
    topo: &Topology,
    backend: &Arc<dyn MipBackend>,
    budget: &Budget,
    start: (f64, Assignment),
) -> Improved {
    let (start_objective, start_plan) = start;
    let mut best = Improved {
        objective: start_objective,
        plan: start_plan.clone(),
        solved: 0,
        kept: 0,
        cut_short: false,
    };
    let until = budget.search_until();
    // With no time left for one cut, nothing is built (the neighbourhoods of a 100k-GPU round
    // take tens of milliseconds to list).
    if Budget::cut_time_limit(until, 1).is_none() {
        best.cut_short = true;
        return best;
    }
    let order = greedy_order(inst, Order::ValuePerGpu);
    let groups = choose::neighbourhoods(inst);
    let mut fruitless = 0;
    'passes: for _ in 0..MAX_PASSES {
        let idle = choose::idle_gpus(inst, &best.plan);
        let mut queue: Vec<usize> = (0..groups.len()).collect();
        queue.sort_by_key(|&g| std::cmp::Reverse(groups[g].iter().map(|&n| idle[n]).sum::<u32>()));
        let kept_before = best.kept;
        let batches = queue.len().div_ceil(BATCH);
        for (i, batch) in queue.chunks(BATCH).enumerate() {
            if Budget::cut_time_limit(until, batches - i).is_none() {
                best.cut_short = true;
                break 'passes;
            }
            let base = best.plan.clone();
            let answers: Vec<Option<CutAnswer>> = batch
                .par_iter()
                .map(|&g| {
                    let candidates = choose::candidates(inst, &base, &groups[g], &order);
                    let cut = cut::cut(inst, &base, &groups[g], &candidates)?;
                    // The time limit is taken once the cut is built: building one takes tens
                    // of milliseconds at 100k GPUs.
                    Some(match Budget::cut_time_limit(until, batches - i) {
                        Some(limit) => solve_cut_by(cut, backend, limit, inst.policy.seed, until),
                        None => CutAnswer::Unsolved,
                    })
                })
                .collect();
            for answer in answers.into_iter().flatten() {
                let CutAnswer::Solved(cut, CutPlan { plan, hit, gain }) = answer else {
                    best.cut_short = true;
                    continue;
                };
                best.solved += 1;
                best.cut_short |= hit;
                let kept = best.kept;
                // The cut's objective is the round's less a constant: a cut that gained
                // nothing cannot raise the round's (and evaluating the round is not free: 40 ms
                // at 100k GPUs).
                if gain > TOLERANCE {
                    keep_if_better(inst, topo, &base, &cut, &plan, &mut best);
                }
                fruitless = if best.kept > kept { 0 } else { fruitless + 1 };
            }
            if fruitless >= MAX_FRUITLESS {
                break 'passes;
            }
        }
        if best.kept == kept_before {
            break;
        }
    }
    if best.kept > 0 && crate::plan::validate::check_assignment(inst, &best.plan).is_err() {
        tracing::warn!("the neighbourhood search's plan broke a rule; the plan before it is kept");
        return Improved {
            objective: start_objective,
            plan: start_plan,
            ..best
        };
    }
    tracing::debug!(
        neighbourhoods = groups.len(),
        solved = best.solved,
        kept = best.kept,
        objective = best.objective,
        "neighbourhood search done"
    );
    best
}

/// What became of a neighbourhood's cut: solved (the cut and the solver's plan), or not (no
/// time was left, the solver failed, or it gave no answer by the search's end; which depends
/// on the machine's speed, as a time limit does).
enum CutAnswer {
    /// The cut and the solver's plan of it.
    Solved(Box<cut::Cut>, CutPlan),
    /// No plan: the neighbourhood stays as it is.
    Unsolved,
}

/// [`solve_cut`] on a thread of its own, waited for until `until`. HiGHS looks at its time
/// limit only now and then: on a 15-node cut of 167 waiting sharers its presolve's probing ran
/// 0.59 s against a limit of about 0.1 s, and the round ended 0.2-0.3 s past its own limit. A
/// re-solve still running at `until` is left to finish on its own thread (its answer is
/// dropped) and its neighbourhood stays as it is.
fn solve_cut_by(
    cut: cut::Cut,
    backend: &Arc<dyn MipBackend>,
    time_limit: f64,
    seed: u64,
    until: Instant,
) -> CutAnswer {
    let (tx, rx) = mpsc::channel();
    let backend = Arc::clone(backend);
    let spawned = std::thread::Builder::new()
        .name("gangplan-cut".into())
        .spawn(move || {
            let plan = solve_cut(&cut, backend.as_ref(), time_limit, seed);
            let _ = tx.send(plan.map(|p| CutAnswer::Solved(Box::new(cut), p)));
        });
    if spawned.is_err() {
        return CutAnswer::Unsolved;
    }
    let wait = until.saturating_duration_since(Instant::now());
    match rx.recv_timeout(wait) {
        Ok(Some(answer)) => answer,
        Ok(None) => CutAnswer::Unsolved,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            tracing::debug!(
                waited_s = wait.as_secs_f64(),
                "a neighbourhood re-solve gave no answer by the search's end; left running"
            );
            CutAnswer::Unsolved
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            tracing::warn!(
                "a neighbourhood re-solve stopped without an answer (its thread panicked)"
            );
            CutAnswer::Unsolved
        }
    }
}

/// The solver's plan of a cut.
struct CutPlan {
    /// The plan, in the cut's indices.
    plan: Assignment,
    /// Whether the solver stopped at its time limit.
    hit: bool,
    /// Its objective less the cut's current plan's, in the cut.
    gain: f64,
}

/// Solve a cut exactly from its current plan; `None` when the solver failed (the cut is then
/// left as it is).
fn solve_cut(
    cut: &cut::Cut,
    backend: &dyn MipBackend,
    time_limit: f64,
    seed: u64,
) -> Option<CutPlan> {
    let topo = Topology::new(&cut.inst);
    let settings = BackendSettings {
        time_limit,
        mip_gap: CUT_GAP,
        seed,
        write_model: None,
    };
    let t = std::time::Instant::now();
    let (decision, r, c) =
        super::per_node::answer(&cut.inst, &topo, &cut.start, backend, &settings).ok()?;
    let plan = super::decode::to_assignment(&cut.inst, &decision).ok()?;
    let start = evaluate(&cut.inst, &topo, &cut.start).total();
    let found = evaluate(&cut.inst, &topo, &plan).total();
    tracing::trace!(
        seconds = t.elapsed().as_secs_f64(),
        status = ?r.status,
        nodes = cut.inst.nodes.len(),
        pending = cut.inst.pending.len(),
        running = cut.inst.running.len(),
        start,
        found,
        bound = r.dual_bound.map(|b| b + c),
        "neighbourhood solved"
    );
    Some(CutPlan {
        plan,
        hit: r.status == BackendStatus::LimitWithIncumbent,
        gain: found - start,
    })
}

/// Put the cut's plan `inner` back into the best plan when the cut was cut from the plan as it
/// still is there (`base`: another neighbourhood of the batch may have started one of its
/// candidates), the round's objective rises and the quotas hold.
fn keep_if_better(
    inst: &Instance,
    topo: &Topology,
    base: &Assignment,
    cut: &cut::Cut,
    inner: &Assignment,
    best: &mut Improved,
) {
    let unchanged = cut
        .pending()
        .iter()
        .all(|j| best.plan.placed.get(j) == base.placed.get(j));
    if !unchanged || cut.keeps_a_part(inner) {
        return;
    }
    let plan = cut.put_back(&best.plan, inner);
    let objective = evaluate(inst, topo, &plan).total();
    if objective > best.objective + TOLERANCE && within_quotas(inst, &plan) {
        (best.objective, best.plan) = (objective, plan);
        best.kept += 1;
    }
}

/// Whether no tenant that starts a job or grows ends the round above its quota (the
/// validator's quota rule, on an assignment).
fn within_quotas(inst: &Instance, a: &Assignment) -> bool {
    let held = held_after(inst, a);
    let before = held_before(inst);
    let starts: BTreeSet<usize> = a.placed.keys().map(|&j| inst.pending[j].tenant).collect();
    inst.tenants.iter().enumerate().all(|(t, tenant)| {
        tenant.quota.is_none_or(|q| {
            let over = held[t] > q + 1e-9;
            let grew = starts.contains(&t) || held[t] > before[t] + 1e-9;
            !(over && grew)
        })
    })
}
