//! Topology-aware greedy bin-packer.
//!
//! Jobs go in order of value per GPU (priority plus aging), larger gangs first on ties, then id.
//! Each gang goes where the placement search puts it ([`super::placement::find_placement`]:
//! one node, else the tightest topology domain) and is committed whole or not at all. When a
//! job does not fit and preemption is on, the cheapest strictly-lower-priority preemptible jobs
//! are preempted, inside a [`Transaction`], until it fits; unneeded victims are dropped, and
//! the result is kept only if it raises the objective.
//!
//! When the instance carries a task distribution, one-node jobs (whole-GPU gangs, sharers,
//! CPU-only jobs) go where fragmentation against it grows least
//! ([`super::placement::NodeScorer`]), and jobs of equal value per GPU go in pending order.

use super::placement::find_placement;
use super::Planner;
use crate::assignment::{Assignment, GpuSet};
use crate::instance::{Instance, NodeIx, PendingJob};
use crate::objective::{evaluate, fair_shares, job_spread, job_value, value_per_gpu, victim_cost};
use crate::round_state::{RoundState, Transaction};
use crate::state::ClusterState;
use crate::topology::Topology;
use crate::units::TOLERANCE;
use rayon::prelude::*;
use std::collections::BTreeMap;

/// Most preemption victims tried for one job.
const MAX_VICTIMS_TRIED: usize = 64;

/// The greedy planner.
#[derive(Debug, Clone, Copy, Default)]
pub struct Greedy;

impl Planner for Greedy {
    fn name(&self) -> &'static str {
        "greedy"
    }

    fn plan(&self, &super::RoundContext { inst, topo, .. }: &super::RoundContext) -> Assignment {
        portfolio(inst, topo, None)
    }
}

/// The best, by the objective, of a small portfolio of passes: value per GPU with preemption
/// margins 0 and 0.5 and without preemption, then total value without preemption, size with
/// it (margin 0, where preemption is on), and value per scarce room without it (ties go to the
/// earlier pass). The size pass preempts so that a large gang whose room holds a victim is
/// placed before smaller jobs take the rest of that room: on a 48-node `mixed` round (seed 3,
/// 120 pending) no pass placed a 64-GPU gang `within: rack` that needs one victim's 5 GPUs,
/// and the portfolio ended at 76.2 where a 30 s per-node solve's plan starts it (170.4); with
/// it, 131.9. (Of 80 rounds, the eleven families at 48 nodes (seeds 1-3), 125 nodes (seeds 1-2)
/// and 1,250 nodes (seed 1) and the saved rounds, that one changed; no portfolio fell.)
///
/// The first pass always runs (and considers no job after `deadline`: the jobs it did not
/// reach wait); the others then run in parallel, as many as the time the first one took says
/// fit before `deadline` (all of them without one, when the result is a function of the input
/// alone).
///
/// With a task distribution on the instance the total-value and size passes are left out:
/// they place the largest gangs of a round first, which on the FGD paper's openb workloads
/// left 0.3-0.7 points more GPU capacity unallocated at the end of a fill run than taking
/// jobs in arrival order (value per GPU first, pending order on ties; see
/// docs/results/README.md).
pub fn portfolio(
    inst: &Instance,
    topo: &Topology,
    deadline: Option<std::time::Instant>,
) -> Assignment {
    portfolio_leaving(inst, topo, deadline, 0.0)
}

/// [`portfolio`], its passes after the first ending in time to leave `passes_left` more
/// passes' worth of time (each as long as the first) before `deadline`, for work that follows
/// the portfolio in the round.
pub fn portfolio_leaving(
    inst: &Instance,
    topo: &Topology,
    deadline: Option<std::time::Instant>,
    passes_left: f64,
) -> Assignment {
    let passes: Vec<(Order, Option<f64>)> = [
        (Order::ValuePerGpu, Some(0.0)),
        (Order::ValuePerGpu, None),
        (Order::ValuePerGpu, Some(0.5)),
        (Order::Value, None),
        (Order::Size, inst.policy.preemption.then_some(0.0)),
        (Order::ValuePerScarce, None),
    ]
    .into_iter()
    .filter(|(_, margin)| margin.is_none() || inst.policy.preemption)
    .filter(|(order, _)| inst.task_dist.is_none() || *order == Order::ValuePerGpu)
    .collect();
    let run = |&(order, margin): &(Order, Option<f64>)| {
        let a = greedy_pass(inst, topo, order, margin, deadline);
        let obj = evaluate(inst, topo, &a).total();
        tracing::debug!(?order, ?margin, objective = obj, "greedy pass");
        (obj, a)
    };
    let started = std::time::Instant::now();
    let mut best = run(&passes[0]);
    let first = started.elapsed();
    tracing::debug!(
        seconds = first.as_secs_f64(),
        objective = best.0,
        "first greedy pass done"
    );
    let rest = &passes[1..];
    // Passes run two at a time (or one per core), each about as long as the first.
    let fit = match deadline {
        None => rest.len(),
        Some(d) => {
            let leave = first.mul_f64(passes_left);
            let left = d.saturating_duration_since(std::time::Instant::now() + leave);
            let waves = (left.as_secs_f64() / (2.0 * first.as_secs_f64()).max(1e-6)) as usize;
            rest.len().min(waves * rayon::current_num_threads().max(1))
        }
    };
    let others: Vec<(f64, Assignment)> = rest[..fit].par_iter().map(run).collect();
    for (obj, a) in others {
        if obj > best.0 + TOLERANCE {
            best = (obj, a);
        }
    }
    best.1
}

/// The order in which a pass considers jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Value per GPU (priority plus aging), larger gangs first on ties (pending order on ties
    /// when the instance carries a task distribution).
    ValuePerGpu,
    /// Total value of the job.
    Value,
    /// Larger gangs first, value per GPU on ties.
    Size,
    /// Value per scarce room ([`scarce_costs`]): where CPU or memory binds, the jobs that
    /// leave the most room for others per unit of value first.
    ValuePerScarce,
}

/// One greedy pass. `preempt_margin`: `None` never preempts; `Some(m)` preempts when the job's
/// value exceeds the victims' cost by the factor `1 + m`. With `until`, the pass considers no
/// job after that instant (the jobs not reached wait): a round too large for its time limit
/// still gets a valid plan in time.
pub fn greedy_pass(
    inst: &Instance,
    topo: &Topology,
    order: Order,
    preempt_margin: Option<f64>,
    until: Option<std::time::Instant>,
) -> Assignment {
    let before = ClusterState::new(inst);
    let mut state = RoundState::new(inst, &before);
    let sequence = greedy_order(inst, order);
    let victims = victims_by_cost(inst);
    let mut memo = FailureMemo::default();
    let out_of_time = || until.is_some_and(|t| std::time::Instant::now() >= t);
    if order != Order::ValuePerGpu || inst.policy.weights.fairness == 0.0 {
        for j in sequence {
            if out_of_time() {
                break;
            }
            memo.place(&mut state, topo, j, preempt_margin, &victims);
        }
        return state.assignment;
    }
    // Value per GPU plus the fairness credit a job earns while its tenant is below its fair
    // share: the head of each tenant's queue competes, best first, earlier in order on ties.
    let fair = fair_shares(inst);
    let per: Vec<f64> = inst
        .pending
        .iter()
        .map(|j| value_per_gpu(inst, j))
        .collect();
    let mut queues: Vec<std::collections::VecDeque<(usize, usize)>> =
        vec![Default::default(); inst.tenants.len()];
    for (rank, &j) in sequence.iter().enumerate() {
        queues[inst.pending[j].tenant].push_back((rank, j));
    }
    loop {
        let mut best: Option<(f64, usize, usize)> = None;
        for (t, q) in queues.iter().enumerate() {
            let Some(&(rank, j)) = q.front() else {
                continue;
            };
            let eq = inst.pending[j].gpu_equivalent().max(1e-9);
            let room = ((fair[t] - state.held[t]) / eq).clamp(0.0, 1.0);
            let key = per[j] + inst.policy.weights.fairness * room;
            if best.is_none_or(|(bk, br, _)| {
                key > bk + 1e-12 || ((key - bk).abs() <= 1e-12 && rank < br)
            }) {
                best = Some((key, rank, t));
            }
        }
        let Some((_, _, t)) = best else { break };
        if out_of_time() {
            break;
        }
        let (_, j) = queues[t].pop_front().expect("a non-empty queue");
        memo.place(&mut state, topo, j, preempt_margin, &victims);
    }
    state.assignment
}

/// A pass over jobs in a given sequence (no fairness interleaving): the second stage of the
/// aggregated model, which puts the jobs it chose first.
///
/// `preempted_first` are preempted before any job is placed (the aggregated model's victims);
/// those whose GPUs, CPU and memory nothing ended up needing are released again at the end.
/// With `until`, the pass considers no job after that instant (the jobs not reached wait).
pub fn greedy_sequence(
    inst: &Instance,
    topo: &Topology,
    sequence: &[usize],
    preempt_margin: Option<f64>,
    preempted_first: &[usize],
    until: Option<std::time::Instant>,
) -> Assignment {
    let before = ClusterState::new(inst);
    let mut state = RoundState::new(inst, &before);
    for &k in preempted_first {
        state.preempt(k);
    }
    let victims = victims_by_cost(inst);
    let mut memo = FailureMemo::default();
    for &j in sequence {
        if until.is_some_and(|t| std::time::Instant::now() >= t) {
            break;
        }
        memo.place(&mut state, topo, j, preempt_margin, &victims);
    }
    let unjustified = keep_needed_victims(&mut state, preempted_first);
    if unjustified.is_empty() {
        return state.assignment;
    }
    // Their quota, CPU or memory went to work that does not outrank them: the pass again
    // without them (each rerun drops at least one victim, so this ends).
    let fewer: Vec<usize> = preempted_first
        .iter()
        .copied()
        .filter(|k| !unjustified.contains(k))
        .collect();
    greedy_sequence(inst, topo, sequence, preempt_margin, &fewer, until)
}

/// Release again the victims among `preempted` whose GPUs no job took, unless their CPU,
/// memory or their tenant's quota is now needed by the jobs placed.
///
/// Returns the victims kept that SPEC rule 5 does not allow: no job took their GPUs and no
/// placed job outranks them (what they freed went to work of their priority or lower). The
/// caller must not keep the assignment as it is.
#[must_use]
pub fn keep_needed_victims(state: &mut RoundState, preempted: &[usize]) -> Vec<usize> {
    let inst = state.inst;
    let mut unjustified = Vec::new();
    // Releases change no placement: the highest placed priority holds for the whole loop.
    let top = state
        .assignment
        .placed
        .keys()
        .map(|&j| inst.pending[j].priority)
        .max();
    for &k in preempted {
        let r = &inst.running[k];
        let untouched = r.gpus.iter().all(|(n, idx)| {
            idx.iter().all(|&g| {
                state.taken[*n][g as usize].is_none() && state.shared_added[*n][g as usize] == 0
            })
        });
        if !untouched {
            continue;
        }
        let mut release = state.transaction();
        release.unpreempt(k);
        let fits = r.gpus.iter().all(|(n, _)| {
            release.cpu_free[*n].is_none_or(|c| c >= 0)
                && release.mem_free[*n].is_none_or(|m| m >= 0)
        });
        let quota_ok = inst.tenants[r.tenant]
            .quota
            .is_none_or(|q| release.held[r.tenant] <= q + TOLERANCE)
            || !release
                .assignment
                .placed
                .keys()
                .any(|&j| inst.pending[j].tenant == r.tenant);
        if fits && quota_ok {
            release.keep();
            continue;
        }
        drop(release);
        if top.is_none_or(|p| p <= r.priority) {
            unjustified.push(k);
        }
    }
    unjustified
}

/// Pending job indices in a pass's order (ids break ties).
pub fn greedy_order(inst: &Instance, order: Order) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..inst.pending.len()).collect();
    let per: Vec<f64> = inst
        .pending
        .iter()
        .map(|j| value_per_gpu(inst, j))
        .collect();
    let total: Vec<f64> = inst.pending.iter().map(|j| job_value(inst, j)).collect();
    let p = &inst.pending;
    let scarce = (order == Order::ValuePerScarce).then(|| scarce_costs(inst));
    let arrival_ties = inst.task_dist.is_some();
    idx.sort_by(|&a, &b| {
        let primary = match order {
            Order::ValuePerGpu if arrival_ties => per[b].total_cmp(&per[a]).then(a.cmp(&b)),
            Order::ValuePerGpu => per[b].total_cmp(&per[a]).then(p[b].gpus.cmp(&p[a].gpus)),
            Order::Value => total[b].total_cmp(&total[a]),
            Order::Size => p[b].gpus.cmp(&p[a].gpus).then(per[b].total_cmp(&per[a])),
            Order::ValuePerScarce => {
                let c = scarce.as_deref().unwrap_or(&[]);
                let key = |j: usize| total[j] / c.get(j).copied().unwrap_or(1.0).max(1e-12);
                key(b).total_cmp(&key(a)).then(p[b].gpus.cmp(&p[a].gpus))
            }
        };
        primary.then(p[a].id.cmp(&p[b].id))
    });
    idx
}

/// Each pending job's share of the round's scarce room, the effective-gradient weighting of
/// multi-dimensional knapsack heuristics (Toyoda): with S_r the free GPUs (r = GPU) or the
/// CPU or memory left on nodes with free GPUs, D_r what all pending jobs ask of it and a_jr
/// what job j asks,
///
/// ```text
/// cost_j = sum_r (D_r / S_r) a_jr / S_r
/// ```
///
/// so a resource the waiting jobs ask far beyond what is free weighs the most, one they
/// leave spare the least; a resource that some such node does not size (unlimited there)
/// weighs nothing.
///
/// Measured with `gangplan solve --planner greedy` (seed 1 of `gangplan bench`'s rounds; the
/// pass in this order against the best of the other passes): skewed-resources 1k 604.6
/// against 597.5, 10k 5937 against 5648, 100k 52986 against 51046; tight-cpu 10k 6234
/// against 6090, but 1k 504.2 against 522.8 (the portfolio keeps the better).
fn scarce_costs(inst: &Instance) -> Vec<f64> {
    let state = ClusterState::new(inst);
    let mut supply = [0.0f64; 3];
    for n in 0..inst.nodes.len() {
        let free = state.free_count(n);
        if free == 0 {
            continue;
        }
        supply[0] += free as f64;
        supply[1] += state.cpu_free[n].map_or(f64::INFINITY, |c| c.max(0) as f64);
        supply[2] += state.mem_free[n].map_or(f64::INFINITY, |m| m.max(0) as f64);
    }
    let asks = |j: &PendingJob| [j.gpus as f64, j.cpu_milli as f64, j.memory_mib as f64];
    let mut demand = [0.0f64; 3];
    for j in &inst.pending {
        for (d, a) in demand.iter_mut().zip(asks(j)) {
            *d += a;
        }
    }
    let weight: Vec<f64> = (0..3)
        .map(|r| {
            if supply[r] > 0.0 && supply[r].is_finite() {
                demand[r] / supply[r] / supply[r]
            } else {
                0.0
            }
        })
        .collect();
    inst.pending
        .iter()
        .map(|j| asks(j).iter().zip(&weight).map(|(a, w)| a * w).sum())
        .collect()
}

/// What makes two jobs interchangeable for fitting, CPU and memory aside: type, size, shape,
/// and which of the round's reservations have their nodes open to them (a bit mask).
type ShapeKey<'a> = (
    Option<&'a [String]>,
    u32,
    Option<crate::instance::Locality>,
    Option<u32>,
    Option<u32>,
    Option<u32>,
    u64,
);

/// A shape's failure: the CPU and memory the job asked, and the priority it failed at.
type Failure = (u64, u64, i64);

/// Shapes that failed to fit in this pass. The state only fills up between preemptions, so a
/// shape that did not fit (at a priority, with some CPU and memory) will not fit later at that
/// priority or lower with as much CPU and memory or more, until a preemption frees GPUs; then
/// the memo is cleared. Saves most placement searches on crowded rounds, and where CPU and
/// memory differ from job to job.
#[derive(Debug, Default)]
struct FailureMemo<'a> {
    failed: BTreeMap<ShapeKey<'a>, Vec<Failure>>,
    preemptions_seen: usize,
}

impl<'a> FailureMemo<'a> {
    fn place(
        &mut self,
        state: &mut RoundState<'a>,
        topo: &Topology,
        j: usize,
        preempt_margin: Option<f64>,
        victims: &[usize],
    ) -> bool {
        let inst: &'a Instance = state.inst;
        let job = &inst.pending[j];
        if !state.quota_allows(job) {
            return false;
        }
        let key: ShapeKey<'a> = (
            job.gpu_types.as_deref(),
            job.gpus,
            job.within,
            job.max_nodes,
            job.gpus_per_node,
            job.gpu_milli,
            inst.reserved_nodes_open_to(job),
        );
        let priority_matters = preempt_margin.is_some() && state.inst.policy.preemption;
        let (cpu, mem) = (job.cpu_milli, job.memory_mib);
        let known = self.failed.get(&key).is_some_and(|fs| {
            fs.iter()
                .any(|&(c, m, p)| c <= cpu && m <= mem && job.priority <= p)
        });
        if known {
            return false;
        }
        let outcome = place_job(state, topo, j, preempt_margin, victims);
        if state.assignment.preempted.len() != self.preemptions_seen {
            self.preemptions_seen = state.assignment.preempted.len();
            self.failed.clear();
        } else if outcome == PlaceOutcome::NoRoom {
            let p = if priority_matters {
                job.priority
            } else {
                i64::MAX
            };
            let fs = self.failed.entry(key).or_default();
            // Keep only the failures no other one implies.
            fs.retain(|&(c, m, q)| !(cpu <= c && mem <= m && p >= q));
            fs.push((cpu, mem, p));
        }
        outcome == PlaceOutcome::Placed
    }
}

/// What became of one job in a pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlaceOutcome {
    /// Placed and committed.
    Placed,
    /// No placement (or quota, or preemption that pays) was found.
    NoRoom,
    /// A placement exists but its spread penalty eats the job's whole value.
    NotWorth,
}

/// Preemptible running jobs, cheapest victim first (ties by index).
pub fn victims_by_cost(inst: &Instance) -> Vec<usize> {
    let cost: Vec<f64> = inst.running.iter().map(|r| victim_cost(inst, r)).collect();
    let mut v: Vec<usize> = (0..inst.running.len())
        .filter(|&k| inst.running[k].preemptible)
        .collect();
    v.sort_by(|&a, &b| cost[a].total_cmp(&cost[b]).then(a.cmp(&b)));
    v
}

/// Try to place job j; commit on success. With `preempt_margin` set and preemption allowed,
/// a job that does not fit may preempt the cheapest strictly-lower-priority preemptible jobs
/// (`victims`: see [`victims_by_cost`]) when its value minus spread exceeds their cost by the
/// factor `1 + margin`; trial preemptions are undone when it does not pay or fit. A placement
/// whose spread penalty is at least the job's value lowers the objective and is not taken.
pub fn place_job(
    state: &mut RoundState,
    topo: &Topology,
    j: usize,
    preempt_margin: Option<f64>,
    victims: &[usize],
) -> PlaceOutcome {
    let inst = state.inst;
    let job = &inst.pending[j];
    if !state.quota_allows(job) {
        return PlaceOutcome::NoRoom;
    }
    if let Some(set) = find_placement(state, topo, j) {
        if job_value(inst, job) - job_spread(inst, topo, job, &set) <= 0.0 {
            return PlaceOutcome::NotWorth;
        }
        state.commit(j, set);
        return PlaceOutcome::Placed;
    }
    match preempt_margin {
        Some(margin) if inst.policy.preemption && job.gpus > 0 => {
            place_by_preemption(state, topo, j, margin, victims)
        }
        _ => PlaceOutcome::NoRoom,
    }
}

/// Place job j, which does not fit as the state stands, by preempting victims: the cheapest
/// candidates ([`victim_candidates`]) until it fits, less those the placement does not need;
/// kept when the job's value minus spread exceeds the victims' cost by the factor
/// `1 + margin`, else every trial preemption is undone.
fn place_by_preemption(
    state: &mut RoundState,
    topo: &Topology,
    j: usize,
    margin: f64,
    victims: &[usize],
) -> PlaceOutcome {
    let inst = state.inst;
    let job = &inst.pending[j];
    let mask = topo.type_mask(job);
    let candidates = victim_candidates(state, topo, j, &mask, victims);
    if candidates.is_empty() {
        return PlaceOutcome::NoRoom;
    }
    // One pass over the cluster: whole GPUs free to the job, and those its CPU and memory allow.
    let room = room_on(state, topo, j, &mask, 0..inst.nodes.len());
    let value = job_value(inst, job);
    let pays = |cost: f64| value > cost * (1.0 + margin);
    let need = job.gpus.saturating_sub(room.0);
    let least = least_victim_cost(inst, topo, &mask, need, &candidates);
    if least.is_none_or(|c| !job.is_sharer() && !pays(c)) {
        return PlaceOutcome::NoRoom;
    }
    let mut trial = state.transaction();
    let Some((set, chosen)) = preempt_until_fits(&mut trial, topo, j, &mask, &candidates, room)
    else {
        return PlaceOutcome::NoRoom;
    };
    let Some((set, chosen)) = drop_unneeded_victims(&mut trial, topo, j, &mask, set, chosen, pays)
    else {
        return PlaceOutcome::NoRoom;
    };
    let cost: f64 = chosen
        .iter()
        .map(|&k| victim_cost(inst, &inst.running[k]))
        .sum();
    if value - job_spread(inst, topo, job, &set) <= cost * (1.0 + margin) {
        return PlaceOutcome::NoRoom;
    }
    trial.commit(j, set);
    trial.keep();
    PlaceOutcome::Placed
}

/// A lower bound on what the victims of a placement cost that frees `need` more whole GPUs
/// of the job's types (`mask`): the cheapest cover of `need` GPUs by `candidates`, a victim
/// allowed in part (cheapest per GPU first); `None` when all of them hold fewer. Any victims
/// the placement keeps free at least `need` GPUs, so cost at least this: a job worth no more
/// needs no search.
fn least_victim_cost(
    inst: &Instance,
    topo: &Topology,
    mask: &[bool],
    need: u32,
    candidates: &[usize],
) -> Option<f64> {
    let mut per_gpu: Vec<(f64, u32)> = candidates
        .iter()
        .map(|&k| (k, whole_gpus_held(inst, topo, mask, k)))
        .filter(|&(_, g)| g > 0)
        .map(|(k, g)| (victim_cost(inst, &inst.running[k]) / g as f64, g))
        .collect();
    per_gpu.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (mut left, mut cost) = (need, 0.0);
    for (c, g) in per_gpu {
        if left == 0 {
            break;
        }
        let take = g.min(left);
        cost += c * take as f64;
        left -= take;
    }
    (left == 0).then_some(cost)
}

/// Whole GPUs of the types in `mask` running job k holds (0 for a sharer).
fn whole_gpus_held(inst: &Instance, topo: &Topology, mask: &[bool], k: usize) -> u32 {
    let r = &inst.running[k];
    if r.gpu_milli.is_some() {
        return 0;
    }
    r.gpus
        .iter()
        .filter(|(n, _)| mask[topo.node_type[*n]])
        .map(|(_, g)| g.len() as u32)
        .sum()
}

/// The victims job j may try, cheapest first: not preempted yet, of strictly lower priority,
/// holding GPUs of a type the job accepts; at most [`MAX_VICTIMS_TRIED`].
fn victim_candidates(
    state: &RoundState,
    topo: &Topology,
    j: usize,
    mask: &[bool],
    victims: &[usize],
) -> Vec<usize> {
    let inst = state.inst;
    let job = &inst.pending[j];
    victims
        .iter()
        .copied()
        .filter(|&k| {
            let r = &inst.running[k];
            !state.preempted[k]
                && r.priority < job.priority
                && r.gpus.iter().any(|(n, _)| mask[topo.node_type[*n]])
                && state.may_preempt(k)
        })
        .take(MAX_VICTIMS_TRIED)
        .collect()
}

/// The nodes running job k holds GPUs on, each once.
fn victim_nodes(inst: &Instance, k: usize) -> Vec<NodeIx> {
    let mut on: Vec<NodeIx> = inst.running[k].gpus.iter().map(|(n, _)| *n).collect();
    on.sort_unstable();
    on.dedup();
    on
}

/// On `nodes` of the job's types (`mask`): the whole GPUs free to job j, and those of them
/// the CPU and memory each node has left allow ([`RoundState::whole_gpus_for`], summed).
fn room_on(
    state: &RoundState,
    topo: &Topology,
    j: usize,
    mask: &[bool],
    nodes: impl IntoIterator<Item = NodeIx>,
) -> (u32, u32) {
    let job = &state.inst.pending[j];
    nodes
        .into_iter()
        .filter(|&n| mask[topo.node_type[n]])
        .map(|n| state.whole_gpus_for(n, job))
        .fold((0, 0), |(free, fit), (f, c)| (free + f, fit + c))
}

/// Victims preempted for job j in a trial, with the whole GPUs the job could take over the
/// cluster with the CPU and memory left (`u32::MAX` for a sharer, which whole-GPU counts do
/// not bound): below the gang, no placement exists, so no search is needed to know it.
struct Victims {
    chosen: Vec<usize>,
    fitting: u32,
}

impl Victims {
    /// Preempt (`go`) or bring back running job k in `trial`, the count kept up to date over
    /// k's nodes.
    fn toggle(
        &mut self,
        trial: &mut Transaction,
        topo: &Topology,
        j: usize,
        mask: &[bool],
        k: usize,
        go: bool,
    ) {
        let on = victim_nodes(trial.inst, k);
        let counted = self.fitting != u32::MAX;
        let before = if counted {
            room_on(trial, topo, j, mask, on.iter().copied()).1
        } else {
            0
        };
        if go {
            trial.preempt(k);
        } else {
            trial.unpreempt(k);
        }
        if counted {
            self.fitting = self.fitting - before + room_on(trial, topo, j, mask, on).1;
        }
    }
}

/// Preempt `candidates` in order until job j fits; its placement and the victims preempted,
/// or `None` when even all of them leave it without room (or GPUs enough). `room`: the whole
/// GPUs free to the job before any victim goes, and those of them the CPU and memory left on
/// their nodes allow ([`RoundState::whole_gpus_for`], summed over the nodes it accepts).
///
/// The placement is searched for only once the second count reaches the gang, kept up to date
/// node by node as victims go: on rounds where CPU or memory bind, most trials end without a
/// search of the cluster.
fn preempt_until_fits(
    trial: &mut Transaction,
    topo: &Topology,
    j: usize,
    mask: &[bool],
    candidates: &[usize],
    room: (u32, u32),
) -> Option<(GpuSet, Victims)> {
    let inst = trial.inst;
    let job = &inst.pending[j];
    let victim_gpus = |k: usize| whole_gpus_held(inst, topo, mask, k);
    // GPUs the job may take, with the victims so far gone.
    let mut reachable = room.0;
    if reachable + candidates.iter().map(|&k| victim_gpus(k)).sum::<u32>() < job.gpus {
        return None;
    }
    // A sharer may go on a shared GPU, which whole-GPU counts do not see.
    let fitting = if job.is_sharer() { u32::MAX } else { room.1 };
    let mut victims = Victims {
        chosen: Vec::new(),
        fitting,
    };
    // A gang over several nodes is searched for after 1, 2, 4, ... victims (each search scans
    // the cluster); the unneeded victims are dropped afterwards.
    let several = job.node_limit() > 1;
    for (i, &k) in candidates.iter().enumerate() {
        victims.toggle(trial, topo, j, mask, k, true);
        victims.chosen.push(k);
        reachable += victim_gpus(k);
        if reachable < job.gpus || victims.fitting < job.gpus {
            continue;
        }
        if several && !(i + 1).is_power_of_two() && i + 1 < candidates.len() {
            continue;
        }
        // A one-node job can only newly fit on a node this victim freed GPUs on.
        if job.node_limit() == 1
            && !inst.running[k]
                .gpus
                .iter()
                .any(|(n, _)| trial.avail_count(*n, job.priority) >= job.gpus)
        {
            continue;
        }
        if let Some(set) = find_placement(trial, topo, j) {
            return Some((set, victims));
        }
    }
    None
}

/// Undo the preemptions the placement of job j does not need, most expensive first, with the
/// placement found without them. A victim on no node of the placement is dropped without a
/// new search: the placement stands without it; one whose return leaves the job fewer GPUs
/// with CPU and memory than the gang asks is kept without one: no placement exists then.
/// `None` once the victims found needed cost more than `pays` allows: every victim kept so
/// far stays in the end, so the placement cannot pay (the job's spread only adds to what it
/// must beat).
fn drop_unneeded_victims(
    trial: &mut Transaction,
    topo: &Topology,
    j: usize,
    mask: &[bool],
    mut set: GpuSet,
    mut victims: Victims,
    pays: impl Fn(f64) -> bool,
) -> Option<(GpuSet, Vec<usize>)> {
    let inst = trial.inst;
    let gpus = inst.pending[j].gpus;
    let mut needed = 0.0;
    for &k in victims.chosen.clone().iter().rev() {
        let kept_fitting = victims.fitting;
        victims.toggle(trial, topo, j, mask, k, false);
        if inst.running[k]
            .gpus
            .iter()
            .all(|(n, _)| !set.contains_key(n))
        {
            victims.chosen.retain(|&v| v != k);
            continue;
        }
        let found = if victims.fitting < gpus {
            None
        } else {
            find_placement(trial, topo, j)
        };
        match found {
            Some(s) => {
                victims.chosen.retain(|&v| v != k);
                set = s;
            }
            None => {
                trial.preempt(k);
                victims.fitting = kept_fitting;
                needed += victim_cost(inst, &inst.running[k]);
                if !pays(needed) {
                    return None;
                }
            }
        }
    }
    Some((set, victims.chosen))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hardware::ModelLibrary;
    use crate::instance::parse_instance;

    /// Three preemptible jobs: `a` 4 GPUs, `b` 2 GPUs and little work lost, `c` 8 GPUs and a
    /// day of work lost.
    const VICTIMS: &str = "
nodes:
  - {name: n1, gpus: 8}
  - {name: n2, gpus: 8}
running:
  - {id: a, gpus: {n1: [0, 1, 2, 3]}, preemptible: true, checkpoint_cost: 36000}
  - {id: b, gpus: {n1: [4, 5]}, preemptible: true, checkpoint_cost: 60}
  - {id: c, gpus: {n2: [0, 1, 2, 3, 4, 5, 6, 7]}, preemptible: true, checkpoint_cost: 86400}
pending:
  - {id: big, gpus: 8, priority: 5}
";

    /// One node of 8 GPUs and 16 CPUs: `wide` (4 GPUs, all 16 CPUs, waiting a little longer)
    /// is worth the most per GPU, but takes the CPU two `lean` jobs (4 GPUs and 4 CPUs each)
    /// would leave room for.
    const CPU_BOUND: &str = "
nodes:
  - {name: n1, gpus: 8, cpu_milli: 16000}
pending:
  - {id: wide, gpus: 4, cpu_milli: 16000, wait: 3600}
  - {id: lean1, gpus: 4, cpu_milli: 4000}
  - {id: lean2, gpus: 4, cpu_milli: 4000}
";

    #[test]
    fn value_per_scarce_room_starts_the_jobs_that_leave_room_for_others() {
        let inst = parse_instance(CPU_BOUND, "cpu", &ModelLibrary::builtin()).unwrap();
        let topo = Topology::new(&inst);
        assert_eq!(greedy_order(&inst, Order::ValuePerGpu)[0], 0);
        assert_eq!(greedy_order(&inst, Order::ValuePerScarce), [1, 2, 0]);
        let pass = |order| greedy_pass(&inst, &topo, order, None, None);
        let (per_gpu, scarce) = (pass(Order::ValuePerGpu), pass(Order::ValuePerScarce));
        assert_eq!(per_gpu.placed.keys().copied().collect::<Vec<_>>(), [0]);
        assert_eq!(scarce.placed.keys().copied().collect::<Vec<_>>(), [1, 2]);
        let value = |a: &Assignment| evaluate(&inst, &topo, a).total();
        assert!(value(&scarce) > value(&per_gpu));
        assert_eq!(portfolio(&inst, &topo, None).placed, scarce.placed);
    }

    /// A round of `nodes` 8-GPU nodes of 64 CPUs full of preemptible running jobs of 1-4 GPUs
    /// and random CPU and checkpoint costs, and gangs of 2-24 GPUs of higher priority asking
    /// 1-12 CPUs per GPU, some on at most 2 nodes.
    fn crowded_round(rng: &mut rand_chacha::ChaCha8Rng, nodes: usize) -> String {
        use rand::Rng;
        let mut yaml = String::from("nodes:\n");
        for n in 0..nodes {
            yaml += &format!(
                "  - {{name: n{n}, gpus: 8, cpu_milli: 64000, rack: r{}}}\n",
                n / 3
            );
        }
        yaml += "running:\n";
        for n in 0..nodes {
            let mut g = rng.gen_range(0..3);
            while g < 8 {
                let take = rng.gen_range(1..=4).min(8 - g);
                let gpus: Vec<String> = (g..g + take).map(|x| x.to_string()).collect();
                let (cpu, cost) = (rng.gen_range(1..16) * 1000, rng.gen_range(1..20) * 600);
                yaml += &format!(
                    "  - {{id: r{n}x{g}, gpus: {{n{n}: [{}]}}, cpu_milli: {cpu}, preemptible: true, checkpoint_cost: {cost}}}\n",
                    gpus.join(", ")
                );
                g += take + rng.gen_range(0..2);
            }
        }
        yaml += "pending:\n";
        for j in 0..10 {
            let gpus = rng.gen_range(2..=24);
            let cpu = gpus * rng.gen_range(1..=12) * 1000;
            let limit = if rng.gen_bool(0.3) {
                ", max_nodes: 2"
            } else {
                ""
            };
            yaml += &format!(
                "  - {{id: j{j}, gpus: {gpus}, cpu_milli: {cpu}, priority: 5, wait: 36000{limit}}}\n"
            );
        }
        yaml
    }

    /// What a trial's drop phase kept (placement and victims, `None` where it cannot pay),
    /// and how many victims the trial had preempted before it.
    type Dropped = (Option<(GpuSet, Vec<usize>)>, usize);

    /// The victims a trial preempted for job j and the placement found, after the unneeded
    /// ones went: with the count of GPUs with CPU and memory kept (`counted`), or with every
    /// return searched for.
    fn dropped(
        state: &mut RoundState,
        topo: &Topology,
        j: usize,
        counted: bool,
    ) -> Option<Dropped> {
        let inst = state.inst;
        let job = &inst.pending[j];
        let mask = topo.type_mask(job);
        let candidates = victim_candidates(state, topo, j, &mask, &victims_by_cost(inst));
        let room = room_on(state, topo, j, &mask, 0..inst.nodes.len());
        let mut trial = state.transaction();
        let (set, mut victims) = preempt_until_fits(&mut trial, topo, j, &mask, &candidates, room)?;
        let tried = victims.chosen.len();
        if !counted {
            victims.fitting = u32::MAX;
        }
        let value = job_value(inst, job);
        let pays = |cost: f64| value > cost;
        Some((
            drop_unneeded_victims(&mut trial, topo, j, &mask, set, victims, pays),
            tried,
        ))
    }

    #[test]
    fn victims_kept_by_their_count_are_those_a_search_keeps() {
        use rand::SeedableRng;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let mut several = 0;
        for _ in 0..40 {
            let yaml = crowded_round(&mut rng, 9);
            let inst = parse_instance(&yaml, "crowded", &ModelLibrary::builtin()).unwrap();
            let topo = Topology::new(&inst);
            let before = ClusterState::new(&inst);
            let mut state = RoundState::new(&inst, &before);
            for j in 0..inst.pending.len() {
                let with_count = dropped(&mut state, &topo, j, true);
                let searched = dropped(&mut state, &topo, j, false);
                assert_eq!(with_count, searched, "job {j} in\n{yaml}");
                several += usize::from(with_count.is_some_and(|(_, tried)| tried > 1));
            }
        }
        assert!(
            several > 20,
            "only {several} trials preempted several victims"
        );
    }

    #[test]
    fn the_least_victim_cost_covers_the_gpus_needed_cheapest_per_gpu_first() {
        let inst = parse_instance(VICTIMS, "victims", &ModelLibrary::builtin()).unwrap();
        let topo = Topology::new(&inst);
        let cost = |k: usize| victim_cost(&inst, &inst.running[k]);
        let (a, b, c) = (cost(0), cost(1), cost(2));
        assert!(
            b / 2.0 < a / 4.0 && a / 4.0 < c / 8.0,
            "per GPU: b, then a, then c"
        );
        let least = |need| least_victim_cost(&inst, &topo, &[true], need, &[0, 1, 2]);
        assert_eq!(least(0), Some(0.0));
        // 5 GPUs: all of b's 2, then 3 of a's 4.
        let five = least(5).unwrap();
        assert!((five - (b + 0.75 * a)).abs() < 1e-9, "{five}");
        // 14 GPUs: all three; 15 is more than they hold.
        assert!((least(14).unwrap() - (a + b + c)).abs() < 1e-9);
        assert_eq!(least(15), None);
        // Without b among the candidates, 2 GPUs cost half of a.
        let without_b = least_victim_cost(&inst, &topo, &[true], 2, &[0, 2]).unwrap();
        assert!((without_b - 0.5 * a).abs() < 1e-9);
    }
}
