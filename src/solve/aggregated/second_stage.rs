//! The second stage: the aggregated model's choice placed on nodes with the greedy machinery
//! (largest and most constrained first, in two orders, each tried again with the chosen jobs it
//! left waiting moved to the front), the most-spread gangs tried left out (swap-out) from both
//! plans, and relocation moves on the best.

use super::super::Budget;
use crate::assignment::Assignment;
use crate::heuristics::greedy::{greedy_order, greedy_sequence, Order};
use crate::heuristics::relocate::relocate;
use crate::instance::Instance;
use crate::objective::{evaluate, job_spread};
use crate::topology::Topology;
use crate::units::TOLERANCE;
use rayon::prelude::*;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// Times a second-stage pass is run again with the chosen jobs it left waiting moved to the
/// front (the first always; the others while a pass still fits before the swap-out's end).
const PROMOTE_ROUNDS: usize = 3;
/// The second stage places each order again with the jobs free to preempt more only where
/// this many greedy passes' time is left before the work deadline.
const EXTRA_PASSES_ROOM: u32 = 2;
/// Rounds of the swap-out search after the second stage.
const SWAP_ROUNDS: usize = 8;
/// Most-spread gangs tried in each round of the swap-out search.
const SWAP_CANDIDATES: usize = 4;

/// The aggregated model's choice.
pub struct Choice {
    /// Jobs the model starts.
    pub chosen: BTreeSet<usize>,
    /// Running jobs it preempts.
    pub victims: Vec<usize>,
    /// The model's objective at the choice.
    pub incumbent: f64,
    /// The spread floors of the chosen jobs, as the model charged them.
    pub spread_floors: f64,
}

/// One placement pass over a sequence of pending jobs.
type Pass<'a> = dyn Fn(&[usize]) -> Assignment + Sync + 'a;

/// A second-stage plan: objective, assignment, the sequence that produced it, and the index
/// of the order it started from (ties go to the earlier).
pub type StagePlan = (f64, Assignment, Vec<usize>, usize);

/// Place the model's choice: the second-stage passes (or the plan of the choice placed
/// `early`, [`first_pass`], where no pass fits any more), swap-out from each, then relocation;
/// the best objective and plan found.
pub fn second_stage(
    inst: &Instance,
    topo: &Topology,
    choice: &Choice,
    budget: &Budget,
    greedy_took: Duration,
    early: Option<StagePlan>,
) -> (f64, Assignment) {
    let stage_started = Instant::now();
    let chosen = &choice.chosen;
    let order = greedy_order(inst, Order::ValuePerGpu);
    // A pass still under way at the work deadline leaves the jobs it did not reach waiting
    // (chosen jobs come first), so a loaded machine costs plan quality, not the deadline.
    let until = Some(budget.work_until());
    let pass_with = |margin: Option<f64>| {
        move |seq: &[usize]| greedy_sequence(inst, topo, seq, margin, &choice.victims, until)
    };
    let pass = pass_with(None);
    // The model's victims are its LP's, rounded: a chosen job may need others. Each order is
    // placed again with the jobs free to preempt more where that pays (value above the
    // victims' cost).
    let pass_preempting = pass_with(Some(0.0));
    // A choice placed early stands where no pass fits any more; where one does, the passes
    // run (their first order repeats it and goes further).
    let plans = match early {
        Some(plan) if !Budget::pass_fits(greedy_took, budget.passes_until()) => vec![plan],
        _ => {
            // Only where the passes fit twice over (four on two cores) before the work
            // deadline: on the largest rounds the phases after them need the time (100k GPUs,
            // tight CPU: -2% when they ran regardless).
            let fits = Budget::pass_fits(greedy_took * EXTRA_PASSES_ROOM, budget.work_until());
            let preempting =
                (inst.policy.preemption && fits).then_some(&pass_preempting as &Pass<'_>);
            placement_passes(
                inst,
                topo,
                chosen,
                &order,
                (&pass, preempting),
                budget,
                greedy_took,
            )
        }
    };
    tracing::debug!(
        seconds = stage_started.elapsed().as_secs_f64(),
        first_order = plans[0].0,
        second_order = plans.get(1).map(|p| p.0),
        "second-stage passes done"
    );
    // Two orders, so two plans; the best first.
    let (mut objective, mut assignment) = (plans[0].0, plans[0].1.clone());
    // Swap-out from the best plans in turn, while time allows.
    for (obj, plan, sequence, _) in plans {
        let until = budget.passes_until();
        let (obj, plan) = swap_out(
            inst,
            topo,
            &sequence,
            &pass,
            (obj, plan),
            greedy_took,
            until,
        );
        if obj > objective + TOLERANCE {
            (objective, assignment) = (obj, plan);
        }
    }
    tracing::debug!(
        seconds = stage_started.elapsed().as_secs_f64(),
        objective,
        "swap-out done"
    );
    // Relocation: split gangs onto whole nodes, then the chosen jobs still waiting (by value
    // per GPU), each moving the jobs in its way when that pays. (Trying every waiting job as
    // well doubled the 10k-GPU round's time for no gain.)
    let insert: Vec<usize> = order
        .iter()
        .copied()
        .filter(|j| chosen.contains(j))
        .collect();
    if let Some(relocated) = relocate(inst, topo, &assignment, &insert, budget.relocation_until()) {
        let relocated_objective = evaluate(inst, topo, &relocated).total();
        if relocated_objective > objective + TOLERANCE {
            (objective, assignment) = (relocated_objective, relocated);
        }
    }
    tracing::debug!(
        seconds = stage_started.elapsed().as_secs_f64(),
        objective,
        "relocation done"
    );
    (objective, assignment)
}

/// The first of the second stage's passes alone (the first order, no repeats), cut at
/// `until`: the model's choice placed on the model's thread while the greedy still runs
/// ([`super::answers::Early`]).
pub fn first_pass(inst: &Instance, topo: &Topology, choice: &Choice, until: Instant) -> StagePlan {
    let order = greedy_order(inst, Order::ValuePerGpu);
    let [first, _] = most_constrained_first(inst, topo);
    let sequence = chosen_then_rest(&choice.chosen, &first, &order);
    let a = greedy_sequence(inst, topo, &sequence, None, &choice.victims, Some(until));
    (evaluate(inst, topo, &a).total(), a, sequence, 0)
}

/// `head`'s chosen jobs, then every other job in `order`.
fn chosen_then_rest(chosen: &BTreeSet<usize>, head: &[usize], order: &[usize]) -> Vec<usize> {
    head.iter()
        .copied()
        .filter(|j| chosen.contains(j))
        .chain(order.iter().copied().filter(|j| !chosen.contains(j)))
        .collect()
}

/// The second-stage passes: the model's victims preempted, the chosen jobs first (largest and
/// most constrained first, in two orders that differ on ties: the two passes run in parallel),
/// then the rest in greedy `order`. Each sequence's pass runs again with the chosen jobs it
/// left waiting moved to the front (they lost their room to jobs placed before them) while a
/// pass still fits; the better stays. Best plan first, the earlier order on ties.
fn placement_passes(
    inst: &Instance,
    topo: &Topology,
    chosen: &BTreeSet<usize>,
    order: &[usize],
    (pass, preempting): (&Pass<'_>, Option<&Pass<'_>>),
    budget: &Budget,
    greedy_took: Duration,
) -> Vec<StagePlan> {
    let sequences = most_constrained_first(inst, topo).map(|o| chosen_then_rest(chosen, &o, order));
    // Each order with the model's victims only, and again with more where that pays.
    let mut runs: Vec<(&Vec<usize>, &Pass<'_>)> = sequences.iter().map(|s| (s, pass)).collect();
    if let Some(p) = preempting {
        runs.extend(sequences.iter().map(|s| (s, p)));
    }
    let mut plans: Vec<StagePlan> = runs
        .par_iter()
        .enumerate()
        .map(|(i, &(sequence, pass))| {
            let scored = |seq: &[usize]| {
                let a = pass(seq);
                (evaluate(inst, topo, &a).total(), a)
            };
            let (mut obj, mut a) = scored(sequence);
            let mut sequence = sequence.clone();
            for round in 0..PROMOTE_ROUNDS {
                // A pass started past the work deadline places no job: it is not started
                // (at 100k GPUs its setup and scoring alone ran 0.1-0.2 s past the deadline).
                let no_time = Instant::now() >= budget.work_until();
                if no_time || (round > 0 && !Budget::pass_fits(greedy_took, budget.passes_until()))
                {
                    break;
                }
                let (waiting, rest): (Vec<usize>, Vec<usize>) = sequence
                    .iter()
                    .partition(|j| chosen.contains(j) && !a.placed.contains_key(j));
                if waiting.is_empty() {
                    break;
                }
                let promoted: Vec<usize> = waiting.into_iter().chain(rest).collect();
                let (obj2, a2) = scored(&promoted);
                tracing::debug!(
                    order = i,
                    round,
                    objective = obj,
                    promoted = obj2,
                    "second-stage pass with the chosen jobs it left waiting first"
                );
                if obj2 <= obj + TOLERANCE {
                    break;
                }
                (obj, a, sequence) = (obj2, a2, promoted);
            }
            (obj, a, sequence, i)
        })
        .collect();
    plans.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.3.cmp(&b.3)));
    plans
}

/// The debug log of what the second stage made of the model's choice.
pub fn log_second_stage(
    inst: &Instance,
    topo: &Topology,
    choice: &Choice,
    assignment: &Assignment,
) {
    if !tracing::enabled!(tracing::Level::DEBUG) {
        return;
    }
    let (chosen, victims) = (&choice.chosen, &choice.victims);
    let terms = evaluate(inst, topo, assignment);
    let value = |js: &mut dyn Iterator<Item = &usize>| -> f64 {
        js.map(|&j| crate::objective::job_value(inst, &inst.pending[j]))
            .sum()
    };
    tracing::debug!(
        chosen = chosen.len(),
        chosen_value = value(&mut chosen.iter()),
        victims = victims.len(),
        victims_cost = victims
            .iter()
            .map(|&k| crate::objective::victim_cost(inst, &inst.running[k]))
            .sum::<f64>(),
        placed = assignment.placed.len(),
        chosen_waiting = chosen
            .iter()
            .filter(|j| !assignment.placed.contains_key(j))
            .count(),
        chosen_waiting_jobs = ?chosen
            .iter()
            .filter(|j| !assignment.placed.contains_key(j))
            .take(12)
            .map(|&j| (inst.pending[j].id.as_str(), inst.pending[j].gpus))
            .collect::<Vec<_>>(),
        placed_value = terms.value,
        preempted = assignment.preempted.len(),
        preemption = terms.preemption,
        spread = terms.spread,
        model_spread_floors = choice.spread_floors,
        model_objective = choice.incumbent,
        fairness = terms.fairness,
        packing = terms.packing,
        "second stage against the model's choice"
    );
}

/// Pending jobs largest first, and among jobs of one size the most constrained first: fewest
/// accepted GPU types, then fewest nodes allowed (they have the fewest places to go); then
/// value per GPU and id. The second order breaks the ties of the first by the tenant furthest
/// below its fair share before value per GPU.
///
/// On the bench rounds (10k GPUs, seeds 1-3) this order placed the aggregated model's choice
/// 9-18 objective points better than plain largest first and 43-72 better than value per GPU
/// (before relocation), and at 100k GPUs 230-280 better than largest first.
fn most_constrained_first(inst: &Instance, topo: &Topology) -> [Vec<usize>; 2] {
    let types: Vec<usize> = inst
        .pending
        .iter()
        .map(|j| topo.type_mask(j).iter().filter(|&&m| m).count())
        .collect();
    let key = |j: usize| {
        let job = &inst.pending[j];
        (std::cmp::Reverse(job.gpus), types[j], job.node_limit())
    };
    let mut first = greedy_order(inst, Order::Size);
    first.sort_by_key(|&j| key(j));
    let fair = crate::objective::fair_shares(inst);
    let held = crate::objective::held_before(inst);
    let shortfall = |j: usize| {
        let t = inst.pending[j].tenant;
        fair[t] - held[t]
    };
    let mut second = first.clone();
    second.sort_by(|&a, &b| {
        key(a)
            .cmp(&key(b))
            .then(shortfall(b).total_cmp(&shortfall(a)))
    });
    [first, second]
}

/// Swap-out: a gang placed with spread may be worth less than what its GPUs hold for the
/// jobs behind it. Plan again without each of the few most-spread gangs (in parallel) and
/// keep the best improvement, for a few rounds while a pass (`pass_takes`) still fits before
/// `until`. Returns the best objective and plan found, `start` when nothing improves on it.
fn swap_out(
    inst: &Instance,
    topo: &Topology,
    sequence: &[usize],
    pass: &(dyn Fn(&[usize]) -> Assignment + Sync),
    start: (f64, Assignment),
    pass_takes: Duration,
    until: Instant,
) -> (f64, Assignment) {
    let (mut objective, mut assignment) = start;
    let mut left_out: BTreeSet<usize> = BTreeSet::new();
    for _ in 0..SWAP_ROUNDS {
        if !Budget::pass_fits(pass_takes, until) {
            break;
        }
        let mut spread: Vec<(f64, usize)> = assignment
            .placed
            .iter()
            .map(|(&j, gpus)| (job_spread(inst, topo, &inst.pending[j], gpus), j))
            .filter(|&(p, _)| p > 0.0)
            .collect();
        spread.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        spread.truncate(SWAP_CANDIDATES);
        let trials: Vec<(f64, usize, Assignment)> = spread
            .par_iter()
            .map(|&(_, j)| {
                let without: Vec<usize> = sequence
                    .iter()
                    .copied()
                    .filter(|&x| x != j && !left_out.contains(&x))
                    .collect();
                let a = pass(&without);
                (evaluate(inst, topo, &a).total(), j, a)
            })
            .collect();
        let Some((obj, j, a)) =
            trials
                .into_iter()
                .reduce(|x, y| if y.0 > x.0 + TOLERANCE { y } else { x })
        else {
            break;
        };
        if obj <= objective + TOLERANCE {
            break;
        }
        (objective, assignment) = (obj, a);
        left_out.insert(j);
    }
    (objective, assignment)
}
