//! Topology-aware greedy bin-packer.
//!
//! Jobs go in order of value per GPU (priority plus aging), larger gangs first on ties, then id.
//! Each gang is tried inside a transaction (a copy of the [`RoundState`]) and committed whole or
//! not at all. Placement, tightest domain first: one node (best fit, nodes already in use
//! first), then one rack-scale NVLink domain, one rack, one pod, the cluster, as far as
//! `within` allows; inside a domain the fewest nodes, best fit for the last piece; among the
//! domains of a level, the lowest spread penalty, then the fewest nodes. Sharers go to
//! the fullest GPU they fit on. When a job does not fit and preemption is on, the cheapest
//! strictly-lower-priority preemptible jobs are added as victims until it fits, unneeded
//! victims are dropped, and the result is kept only if it raises the objective.
//!
//! When the instance carries a task distribution, one-node jobs (whole-GPU gangs, sharers,
//! CPU-only jobs) go instead where fragmentation against it grows least, best fit breaking ties
//! ([`super::frag_aware`]), and jobs of equal value per GPU go in pending order.

use super::frag_aware as frag;
use super::Planner;
use crate::assignment::{Assignment, GpuSet};
use crate::instance::{Instance, Locality, NodeIx, PendingJob};
use crate::objective::{evaluate, fair_shares, job_spread, job_value, value_per_gpu, victim_cost};
use crate::round_state::RoundState;
use crate::state::ClusterState;
use crate::topology::{spread_penalty, Level, Span, Topology};
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
/// margins 0 and 0.5 and without preemption, then total value and size orders without
/// preemption (ties go to the earlier pass). The first pass always runs; the others then run
/// in parallel, as many as the time the first one took says fit before `deadline` (all of them
/// without one, when the result is a function of the input alone).
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
    let passes: Vec<(Order, Option<f64>)> = [
        (Order::ValuePerGpu, Some(0.0)),
        (Order::ValuePerGpu, None),
        (Order::ValuePerGpu, Some(0.5)),
        (Order::Value, None),
        (Order::Size, None),
    ]
    .into_iter()
    .filter(|(_, margin)| margin.is_none() || inst.policy.preemption)
    .filter(|(order, _)| inst.task_dist.is_none() || *order == Order::ValuePerGpu)
    .collect();
    let run = |&(order, margin): &(Order, Option<f64>)| {
        let a = greedy_pass(inst, topo, order, margin);
        (evaluate(inst, topo, &a).total(), a)
    };
    let started = std::time::Instant::now();
    let mut best = run(&passes[0]);
    let first = started.elapsed();
    let rest = &passes[1..];
    // Passes run two at a time (or one per core), each about as long as the first.
    let fit = match deadline {
        None => rest.len(),
        Some(d) => {
            let left = d.saturating_duration_since(std::time::Instant::now());
            let waves = (left.as_secs_f64() / (2.0 * first.as_secs_f64()).max(1e-6)) as usize;
            rest.len().min(waves * rayon::current_num_threads().max(1))
        }
    };
    let others: Vec<(f64, Assignment)> = rest[..fit].par_iter().map(run).collect();
    for (obj, a) in others {
        if obj > best.0 + 1e-9 {
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
}

/// One greedy pass. `preempt_margin`: `None` never preempts; `Some(m)` preempts when the job's
/// value exceeds the victims' cost by the factor `1 + m`.
pub fn greedy_pass(
    inst: &Instance,
    topo: &Topology,
    order: Order,
    preempt_margin: Option<f64>,
) -> Assignment {
    let before = ClusterState::new(inst);
    let mut state = RoundState::new(inst, &before);
    let sequence = greedy_order(inst, order);
    let victims = victims_by_cost(inst);
    let mut memo = FailureMemo::default();
    if order != Order::ValuePerGpu || inst.policy.weights.fairness == 0.0 {
        for j in sequence {
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
pub fn greedy_sequence(
    inst: &Instance,
    topo: &Topology,
    sequence: &[usize],
    preempt_margin: Option<f64>,
    preempted_first: &[usize],
) -> Assignment {
    let before = ClusterState::new(inst);
    let mut state = RoundState::new(inst, &before);
    for &k in preempted_first {
        state.preempt(k);
    }
    let victims = victims_by_cost(inst);
    let mut memo = FailureMemo::default();
    for &j in sequence {
        memo.place(&mut state, topo, j, preempt_margin, &victims);
    }
    keep_needed_victims(&mut state, preempted_first);
    state.assignment
}

/// Release again the victims among `preempted` whose GPUs no job took, unless their CPU,
/// memory or their tenant's quota is now needed by the jobs placed.
pub fn keep_needed_victims(state: &mut RoundState, preempted: &[usize]) {
    let inst = state.inst;
    for &k in preempted {
        let r = &inst.running[k];
        let untouched = r.gpus.iter().all(|(n, idx)| {
            idx.iter().all(|&g| {
                state.taken[*n][g as usize].is_none() && state.shared_added[*n][g as usize] == 0
            })
        });
        if untouched {
            state.unpreempt(k);
            let fits = r.gpus.iter().all(|(n, _)| {
                state.cpu_free[*n].is_none_or(|c| c >= 0)
                    && state.mem_free[*n].is_none_or(|m| m >= 0)
            });
            let quota_ok = inst.tenants[r.tenant]
                .quota
                .is_none_or(|q| state.held[r.tenant] <= q as f64 + 1e-9)
                || !state
                    .assignment
                    .placed
                    .keys()
                    .any(|&j| inst.pending[j].tenant == r.tenant);
            if !fits || !quota_ok {
                state.preempt(k);
            }
        }
    }
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
    let arrival_ties = inst.task_dist.is_some();
    idx.sort_by(|&a, &b| {
        let primary = match order {
            Order::ValuePerGpu if arrival_ties => per[b].total_cmp(&per[a]).then(a.cmp(&b)),
            Order::ValuePerGpu => per[b].total_cmp(&per[a]).then(p[b].gpus.cmp(&p[a].gpus)),
            Order::Value => total[b].total_cmp(&total[a]),
            Order::Size => p[b].gpus.cmp(&p[a].gpus).then(per[b].total_cmp(&per[a])),
        };
        primary.then(p[a].id.cmp(&p[b].id))
    });
    idx
}

/// What makes two jobs interchangeable for fitting: type, size, shape, resources.
type ShapeKey = (
    Option<Vec<String>>,
    u32,
    Option<crate::instance::Locality>,
    Option<u32>,
    Option<u32>,
    Option<u32>,
    u64,
    u64,
);

/// Shapes that failed to fit in this pass. The state only fills up between preemptions, so a
/// shape that did not fit (at a priority) will not fit later (at that priority or lower) until
/// a preemption frees GPUs; then the memo is cleared. Saves most placement searches on
/// crowded rounds.
#[derive(Debug, Default)]
struct FailureMemo {
    failed: BTreeMap<ShapeKey, i64>,
    preemptions_seen: usize,
}

impl FailureMemo {
    fn place(
        &mut self,
        state: &mut RoundState,
        topo: &Topology,
        j: usize,
        preempt_margin: Option<f64>,
        victims: &[usize],
    ) -> bool {
        let job = &state.inst.pending[j];
        if !state.quota_allows(job) {
            return false;
        }
        let key: ShapeKey = (
            job.gpu_types.clone(),
            job.gpus,
            job.within,
            job.max_nodes,
            job.gpus_per_node,
            job.gpu_milli,
            job.cpu_milli,
            job.memory_mib,
        );
        let priority_matters = preempt_margin.is_some() && state.inst.policy.preemption;
        if self.failed.get(&key).is_some_and(|&p| job.priority <= p) {
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
            let e = self.failed.entry(key).or_insert(i64::MIN);
            *e = (*e).max(p);
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
    use PlaceOutcome::{NoRoom, NotWorth, Placed};
    let inst = state.inst;
    let job = &inst.pending[j];
    if !state.quota_allows(job) {
        return NoRoom;
    }
    let spread_of = |set: &GpuSet| job_spread(inst, topo, job, set);
    if let Some(set) = find_placement(state, topo, j) {
        if job_value(inst, job) - spread_of(&set) <= 0.0 {
            return NotWorth;
        }
        state.commit(j, set);
        return Placed;
    }
    let Some(margin) = preempt_margin else {
        return NoRoom;
    };
    let mask = topo.type_mask(job);
    if !inst.policy.preemption || job.gpus == 0 {
        return NoRoom;
    }
    let candidates: Vec<usize> = victims
        .iter()
        .copied()
        .filter(|&k| {
            let r = &inst.running[k];
            !state.preempted[k]
                && r.priority < job.priority
                && r.gpus.iter().any(|(n, _)| mask[topo.node_type[*n]])
        })
        .take(MAX_VICTIMS_TRIED)
        .collect();
    if candidates.is_empty() {
        return NoRoom;
    }
    // Cheap necessary condition before each trial: enough GPUs with the victims so far gone.
    let victim_gpus = |k: usize| -> u32 {
        let r = &inst.running[k];
        if r.gpu_milli.is_some() {
            return 0;
        }
        r.gpus
            .iter()
            .filter(|(n, _)| mask[topo.node_type[*n]])
            .map(|(_, g)| g.len() as u32)
            .sum()
    };
    let mut reachable: u32 = (0..inst.nodes.len())
        .filter(|&n| mask[topo.node_type[n]])
        .map(|n| state.avail_count(n, job.priority))
        .sum();
    if reachable + candidates.iter().map(|&k| victim_gpus(k)).sum::<u32>() < job.gpus {
        return NoRoom;
    }
    let mut chosen = Vec::new();
    let mut found = None;
    // A gang over several nodes is searched for after 1, 2, 4, ... victims (each search scans
    // the cluster); the unneeded victims are dropped below.
    let several = job.node_limit() > 1;
    for (i, &k) in candidates.iter().enumerate() {
        state.preempt(k);
        chosen.push(k);
        reachable += victim_gpus(k);
        if reachable < job.gpus {
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
                .any(|(n, _)| state.avail_count(*n, job.priority) >= job.gpus)
        {
            continue;
        }
        if let Some(set) = find_placement(state, topo, j) {
            found = Some(set);
            break;
        }
    }
    let Some(mut set) = found else {
        for &k in chosen.iter().rev() {
            state.unpreempt(k);
        }
        return NoRoom;
    };
    // Drop victims the placement does not need, most expensive first. A victim on no node of
    // the placement is dropped without a new search: the placement stands without it.
    for &k in chosen.clone().iter().rev() {
        state.unpreempt(k);
        if inst.running[k]
            .gpus
            .iter()
            .all(|(n, _)| !set.contains_key(n))
        {
            chosen.retain(|&v| v != k);
            continue;
        }
        match find_placement(state, topo, j) {
            Some(s) => {
                chosen.retain(|&v| v != k);
                set = s;
            }
            None => state.preempt(k),
        }
    }
    let spread = spread_of(&set);
    let cost: f64 = chosen
        .iter()
        .map(|&k| victim_cost(inst, &inst.running[k]))
        .sum();
    if job_value(inst, job) - spread <= cost * (1.0 + margin) {
        for &k in &chosen {
            state.unpreempt(k);
        }
        return NoRoom;
    }
    state.commit(j, set);
    Placed
}

/// How a domain's placement of a gang ranks: spread penalty (islands aside), nodes, GPUs left
/// free in the domain, domain index; lowest first.
type DomainKey = (f64, u32, u32, usize);

/// One GPU: node and index.
type Gpu = (NodeIx, u32);

/// Where job j would go in this state, or `None`.
pub fn find_placement(state: &RoundState, topo: &Topology, j: usize) -> Option<GpuSet> {
    let inst = state.inst;
    let job = &inst.pending[j];
    let dist = inst.task_dist.as_deref();
    if job.gpus == 0 {
        return match dist {
            Some(d) => frag::cpu_only(state, job, d),
            None => place_cpu_only(state, job),
        };
    }
    if job.is_sharer() {
        return match dist {
            Some(d) => frag::sharer(state, &topo.type_mask(job), job, d),
            None => place_sharer(state, topo, job),
        };
    }
    let mask = topo.type_mask(job);
    let ok = |n: NodeIx| mask[topo.node_type[n]];
    // One node.
    if job.gpus_per_node.is_none_or(|g| g == job.gpus) {
        let one = match dist {
            Some(d) => frag::single_node(state, &mask, job, d),
            None => best_single_node(state, &mask, job),
        };
        if let Some(n) = one {
            return state.pick_indices(j, &[(n, job.gpus)]);
        }
    }
    if job.node_limit() < 2 {
        return None;
    }
    // Several nodes: tightest domain level first.
    let levels: &[Level] = match job.within {
        Some(Locality::Node) => &[],
        Some(Locality::Rack) => &[Level::Unit, Level::Rack],
        Some(Locality::Pod) => &[Level::Unit, Level::Rack, Level::Pod],
        None => &[Level::Unit, Level::Rack, Level::Pod, Level::Cluster],
    };
    // GPUs the job may take per domain at every level, from one pass over the nodes.
    let mut reach: [Vec<u32>; 4] = std::array::from_fn(|l| vec![0; topo.domains[l].len()]);
    // The most GPUs one node of the domain offers (capped by gpus_per_node).
    let mut widest: [Vec<u32>; 4] = std::array::from_fn(|l| vec![0; topo.domains[l].len()]);
    for n in (0..inst.nodes.len()).filter(|&n| ok(n)) {
        let a = state.avail_count(n, job.priority);
        if a > 0 {
            let w = job.gpus_per_node.map_or(a, |k| a.min(k));
            let at = [topo.unit_of[n], inst.nodes[n].rack, inst.nodes[n].pod, 0];
            for l in 0..4 {
                reach[l][at[l]] += a;
                widest[l][at[l]] = widest[l][at[l]].max(w);
            }
        }
    }
    let fewest_nodes = job.gpus.div_ceil(widest[Level::Cluster as usize][0].max(1));
    // Where every unit is one node, a domain's fewest nodes bound its units from below.
    let units_are_nodes = topo.units == inst.nodes.len();
    let mut nodes: Vec<NodeIx> = Vec::new();
    let min_units = topo.min_units(inst, job);
    for &level in levels {
        // Key: spread penalty of the node set (islands aside), nodes, GPUs left, domain.
        let mut best: Option<(DomainKey, Vec<(NodeIx, u32)>)> = None;
        // Domains best fit first (a domain leaves reach - gpus GPUs free): once one gives no
        // spread penalty on the fewest nodes possible, no later domain can beat it.
        let reach_here = &reach[level as usize];
        let mut order: Vec<usize> = (0..reach_here.len())
            .filter(|&d| reach_here[d] >= job.gpus)
            .collect();
        order.sort_unstable_by_key(|&d| (reach_here[d], d));
        for d in order {
            let members = &topo.domains[level as usize][d];
            if best
                .as_ref()
                .is_some_and(|(b, _)| b.0 <= 0.0 && b.1 <= fewest_nodes)
            {
                break;
            }
            // Skip a domain whose best conceivable key (fewest nodes, one rack and pod, its
            // known leftover) already loses to the best found.
            let least_nodes = job.gpus.div_ceil(widest[level as usize][d].max(1));
            let floor_span = Span {
                nodes: least_nodes,
                units: if units_are_nodes { least_nodes } else { 1 },
                racks: 1,
                pods: 1,
                island_splits: 0,
            };
            let floor = spread_penalty(
                &floor_span,
                min_units,
                job.gpus,
                &job.slowdown,
                inst.policy.weights.spread,
            );
            let floor_key = (least_nodes, reach_here[d] - job.gpus, d);
            if best.as_ref().is_some_and(|(b, _)| {
                floor
                    .total_cmp(&b.0)
                    .then(floor_key.cmp(&(b.1, b.2, b.3)))
                    .is_gt()
            }) {
                continue;
            }
            if level == Level::Unit && members.len() < 2 {
                continue; // single nodes were tried above
            }
            // An NVLink unit may span racks or pods: it is tighter only inside them.
            if level == Level::Unit {
                let nodes_of = &state.inst.nodes;
                let spans = |f: fn(&crate::instance::Node) -> usize| {
                    members
                        .iter()
                        .any(|&n| f(&nodes_of[n]) != f(&nodes_of[members[0]]))
                };
                match job.within {
                    Some(Locality::Rack) if spans(|n| n.rack) => continue,
                    Some(Locality::Pod) if spans(|n| n.pod) => continue,
                    _ => {}
                }
            }
            nodes.clear();
            nodes.extend(members.iter().copied().filter(|&n| ok(n)));
            let penalty = |counts: &[(NodeIx, u32)]| {
                spread_penalty(
                    &topo.span_of_nodes(inst, counts.iter().map(|c| c.0)),
                    min_units,
                    job.gpus,
                    &job.slowdown,
                    inst.policy.weights.spread,
                )
            };
            if let Some((counts, leftover)) = pack(state, job, &nodes) {
                let key = (penalty(&counts), counts.len() as u32, leftover, d);
                let better = best.as_ref().is_none_or(|(b, _)| {
                    key.0
                        .total_cmp(&b.0)
                        .then((key.1, key.2, key.3).cmp(&(b.1, b.2, b.3)))
                        .is_lt()
                });
                if better {
                    best = Some((key, counts));
                }
            }
        }
        if let Some((_, counts)) = best {
            return state.pick_indices(j, &counts);
        }
    }
    None
}

/// The best node for a whole gang on one node: in use before empty, then the fewest GPUs
/// left, then the lowest index; O(log n) per GPU type through the round state's index.
fn best_single_node(state: &RoundState, mask: &[bool], job: &PendingJob) -> Option<NodeIx> {
    let g = job.gpus;
    let mut best: Option<(bool, u32, NodeIx)> = None;
    let mut offer = |key: (bool, u32, NodeIx)| {
        if best.is_none_or(|b| key < b) {
            best = Some(key);
        }
    };
    for (t, set) in state.by_free.iter().enumerate() {
        if !state.inst.nodes.is_empty() && !mask.get(t).copied().unwrap_or(false) {
            continue;
        }
        for empty in [false, true] {
            let found = set
                .range((empty, g, 0)..=(empty, u32::MAX, usize::MAX))
                .find(|&&(_, _, n)| state.freed[n].is_empty() && state.fits_resources(n, job, g));
            if let Some(&(e, free, n)) = found {
                offer((e, free - g, n));
                break;
            }
        }
    }
    for &n in &state.freed_nodes {
        if !mask.get(state.node_type[n]).copied().unwrap_or(false) {
            continue;
        }
        let avail = state.avail_count(n, job.priority);
        if avail >= g && state.fits_resources(n, job, g) {
            offer((!state.node_in_use(n), avail - g, n));
        }
    }
    best.map(|(_, _, n)| n)
}

/// Split a gang over `nodes` with the fewest nodes (largest free first, best fit for the last
/// piece), honouring `gpus_per_node` and `max_nodes`. Returns per-node counts and the GPUs
/// left free in the domain.
fn pack(
    state: &RoundState,
    job: &PendingJob,
    nodes: &[NodeIx],
) -> Option<(Vec<(NodeIx, u32)>, u32)> {
    let avail: Vec<(NodeIx, u32)> = nodes
        .iter()
        .map(|&n| (n, state.avail_count(n, job.priority)))
        .filter(|&(_, a)| a > 0)
        .collect();
    let total: u32 = avail.iter().map(|a| a.1).sum();
    if total < job.gpus {
        return None;
    }
    let limit = job.node_limit();
    let mut counts = Vec::new();
    if let Some(per) = job.gpus_per_node {
        let mut fit: Vec<(NodeIx, u32)> = avail
            .into_iter()
            .filter(|&(n, a)| a >= per && state.fits_resources(n, job, per))
            .collect();
        fit.sort_by_key(|&(n, a)| (!state.node_in_use(n), a - per, n));
        let need = (job.gpus / per) as usize;
        if fit.len() < need || need as u32 > limit {
            return None;
        }
        counts = fit[..need].iter().map(|&(n, _)| (n, per)).collect();
    } else {
        let mut by_size = avail.clone();
        by_size.sort_by_key(|&(n, a)| (std::cmp::Reverse(a), n));
        let mut left = job.gpus;
        let mut used = std::collections::BTreeSet::new();
        while left > 0 {
            if counts.len() as u32 >= limit {
                return None;
            }
            // Best fit for the last piece: the smallest node that holds all that is left.
            let last = avail
                .iter()
                .filter(|&&(n, a)| {
                    !used.contains(&n) && a >= left && state.fits_resources(n, job, left)
                })
                .min_by_key(|&&(n, a)| (a, n));
            if let Some(&(n, _)) = last {
                counts.push((n, left));
                break;
            }
            let next = by_size
                .iter()
                .find(|&&(n, a)| !used.contains(&n) && state.fits_resources(n, job, a.min(left)))?;
            let take = next.1.min(left);
            counts.push((next.0, take));
            used.insert(next.0);
            left -= take;
        }
    }
    let used: u32 = counts.iter().map(|c| c.1).sum();
    counts.sort_unstable();
    Some((counts, total - used))
}

fn place_sharer(state: &RoundState, topo: &Topology, job: &PendingJob) -> Option<GpuSet> {
    let inst = state.inst;
    let m = job.gpu_milli.unwrap_or(1000);
    let mask = topo.type_mask(job);
    // A GPU already shared: the one left fullest (least milli left after), in-use nodes first.
    // Key: milli left after, node not in use, node, GPU.
    let mut best: Option<((u32, bool, NodeIx, u32), Gpu)> = None;
    for &(n, g) in &state.shared {
        if !mask[topo.node_type[n]] || !state.fits_resources(n, job, 1) {
            continue;
        }
        if let Some(left) = state
            .shareable_milli(n, g, job.priority)
            .filter(|&l| l >= m)
        {
            let key = (left - m, !state.node_in_use(n), n, g);
            if best.as_ref().is_none_or(|(b, _)| key < *b) {
                best = Some((key, (n, g)));
            }
        }
    }
    if let Some((_, (n, g))) = best {
        return Some(GpuSet::from([(n, vec![g])]));
    }
    // Else a fresh free GPU on the best-fit node in use (the highest free index, so low
    // indices stay together for gangs).
    let n = (0..inst.nodes.len())
        .filter(|&n| {
            mask[topo.node_type[n]] && state.free[n] > 0 && state.fits_resources(n, job, 1)
        })
        .min_by_key(|&n| (!state.node_in_use(n), state.free[n], n))?;
    let g = (0..inst.nodes[n].gpus)
        .rev()
        .find(|&g| state.whole_gpu(n, g, i64::MIN) == Some(true))?;
    Some(GpuSet::from([(n, vec![g])]))
}

fn place_cpu_only(state: &RoundState, job: &PendingJob) -> Option<GpuSet> {
    (0..state.inst.nodes.len())
        .filter(|&n| state.fits_resources(n, job, 0))
        .min_by_key(|&n| {
            (
                !state.node_in_use(n),
                state.cpu_free[n].unwrap_or(i64::MAX),
                n,
            )
        })
        .map(|n| GpuSet::from([(n, Vec::new())]))
}
