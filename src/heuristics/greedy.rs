//! Topology-aware greedy bin-packer.
//!
//! Jobs go in order of value per GPU (priority plus aging), larger gangs first on ties, then id.
//! Each gang is tried inside a transaction (a copy of the [`RoundState`]) and committed whole or
//! not at all. Placement, tightest domain first: one node (best fit, nodes already in use
//! first), then one rack-scale NVLink domain, one rack, one pod, the cluster, as far as
//! `within` allows; inside a domain the fewest nodes, best fit for the last piece. Sharers go to
//! the fullest GPU they fit on. When a job does not fit and preemption is on, the cheapest
//! strictly-lower-priority preemptible jobs are added as victims until it fits, unneeded
//! victims are dropped, and the result is kept only if it raises the objective.

use super::Planner;
use crate::assignment::{Assignment, GpuSet};
use crate::instance::{Instance, Locality, NodeIx, PendingJob};
use crate::objective::{evaluate, fair_shares, job_value, value_per_gpu, victim_cost};
use crate::round_state::RoundState;
use crate::state::ClusterState;
use crate::topology::{spread_penalty, Topology};

/// Most preemption victims tried for one job.
const MAX_VICTIMS_TRIED: usize = 64;

/// The greedy planner.
#[derive(Debug, Clone, Copy, Default)]
pub struct Greedy;

impl Planner for Greedy {
    fn name(&self) -> &'static str {
        "greedy"
    }

    /// The best, by the objective, of a small portfolio of passes: three job orders times
    /// three preemption margins (ties go to the earlier pass, so the result is deterministic).
    fn plan(&self, inst: &Instance, topo: &Topology) -> Assignment {
        let mut best: Option<(f64, Assignment)> = None;
        for order in [Order::ValuePerGpu, Order::Value, Order::Size] {
            for margin in [Some(0.0), Some(0.5), None] {
                if margin.is_some() && !inst.policy.preemption {
                    continue;
                }
                let a = greedy_pass(inst, topo, order, margin);
                let obj = evaluate(inst, topo, &a).total();
                if best.as_ref().is_none_or(|(b, _)| obj > *b + 1e-9) {
                    best = Some((obj, a));
                }
            }
        }
        best.map(|(_, a)| a).unwrap_or_default()
    }
}

/// The order in which a pass considers jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Value per GPU (priority plus aging), larger gangs first on ties.
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
    if order != Order::ValuePerGpu || inst.policy.weights.fairness == 0.0 {
        for j in sequence {
            place_job(&mut state, topo, j, preempt_margin);
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
        place_job(&mut state, topo, j, preempt_margin);
    }
    state.assignment
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
    idx.sort_by(|&a, &b| {
        let primary = match order {
            Order::ValuePerGpu => per[b].total_cmp(&per[a]).then(p[b].gpus.cmp(&p[a].gpus)),
            Order::Value => total[b].total_cmp(&total[a]),
            Order::Size => p[b].gpus.cmp(&p[a].gpus).then(per[b].total_cmp(&per[a])),
        };
        primary.then(p[a].id.cmp(&p[b].id))
    });
    idx
}

/// Try to place job j (with preemption when allowed); commit on success.
pub fn place_job(
    state: &mut RoundState,
    topo: &Topology,
    j: usize,
    preempt_margin: Option<f64>,
) -> bool {
    let inst = state.inst;
    let job = &inst.pending[j];
    if !state.quota_allows(job) {
        return false;
    }
    if let Some(set) = find_placement(state, topo, j) {
        state.commit(j, set);
        return true;
    }
    let Some(margin) = preempt_margin else {
        return false;
    };
    if !inst.policy.preemption || job.gpus == 0 {
        return false;
    }
    let mut candidates: Vec<usize> = (0..inst.running.len())
        .filter(|&k| {
            let r = &inst.running[k];
            r.preemptible
                && !state.preempted[k]
                && r.priority < job.priority
                && r.gpus
                    .iter()
                    .any(|(n, _)| job.accepts_type(&inst.nodes[*n].gpu_type))
        })
        .collect();
    if candidates.is_empty() {
        return false;
    }
    candidates.sort_by(|&a, &b| {
        victim_cost(inst, &inst.running[a])
            .total_cmp(&victim_cost(inst, &inst.running[b]))
            .then(a.cmp(&b))
    });
    candidates.truncate(MAX_VICTIMS_TRIED);
    let mut trial = state.clone();
    let mut victims = Vec::new();
    let mut found = None;
    for &k in &candidates {
        trial.preempt(k);
        victims.push(k);
        if let Some(set) = find_placement(&trial, topo, j) {
            found = Some(set);
            break;
        }
    }
    let Some(mut set) = found else { return false };
    // Drop victims the placement does not need, most expensive first.
    for &k in victims.clone().iter().rev() {
        let mut without = state.clone();
        for &v in victims.iter().filter(|&&v| v != k) {
            without.preempt(v);
        }
        if let Some(s) = find_placement(&without, topo, j) {
            victims.retain(|&v| v != k);
            set = s;
        }
    }
    let min = topo.min_units(
        inst,
        |n| job.accepts_type(&inst.nodes[n].gpu_type),
        job.gpus,
        job.gpus_per_node,
    );
    let spread = if job.gpus > 1 {
        spread_penalty(
            &topo.span(inst, &set),
            min,
            job.gpus,
            &job.slowdown,
            inst.policy.weights.spread,
        )
    } else {
        0.0
    };
    let cost: f64 = victims
        .iter()
        .map(|&k| victim_cost(inst, &inst.running[k]))
        .sum();
    if job_value(inst, job) - spread <= cost * (1.0 + margin) {
        return false;
    }
    for &k in &victims {
        state.preempt(k);
    }
    state.commit(j, set);
    true
}

/// Where job j would go in this state, or `None`.
pub fn find_placement(state: &RoundState, topo: &Topology, j: usize) -> Option<GpuSet> {
    let inst = state.inst;
    let job = &inst.pending[j];
    if job.gpus == 0 {
        return place_cpu_only(state, job);
    }
    if job.is_sharer() {
        return place_sharer(state, job);
    }
    let eligible: Vec<NodeIx> = (0..inst.nodes.len())
        .filter(|&n| job.accepts_type(&inst.nodes[n].gpu_type))
        .collect();
    // One node.
    if job.gpus_per_node.is_none_or(|g| g == job.gpus) {
        let mut best: Option<((bool, u32, NodeIx), NodeIx)> = None;
        for &n in &eligible {
            let avail = state.allowed_whole(n, job.priority).len() as u32;
            if avail >= job.gpus && state.fits_resources(n, job, job.gpus) {
                let key = (!state.node_in_use(n), avail - job.gpus, n);
                if best.as_ref().is_none_or(|(b, _)| key < *b) {
                    best = Some((key, n));
                }
            }
        }
        if let Some((_, n)) = best {
            return state.pick_indices(j, &[(n, job.gpus)]);
        }
    }
    if job.node_limit() < 2 {
        return None;
    }
    // Several nodes: tightest domain level first.
    let levels: &[Locality] = match job.within {
        Some(Locality::Node) => &[],
        Some(Locality::Rack) => &[Locality::Node, Locality::Rack],
        Some(Locality::Pod) => &[Locality::Node, Locality::Rack, Locality::Pod],
        None => &[Locality::Node, Locality::Rack, Locality::Pod, Locality::Pod],
    };
    for (li, &level) in levels.iter().enumerate() {
        let cluster_wide = li == 3;
        // Group eligible nodes by domain at this level (Node level = NVLink unit).
        let mut domains: std::collections::BTreeMap<usize, Vec<NodeIx>> = Default::default();
        for &n in &eligible {
            let d = if cluster_wide {
                0
            } else {
                match level {
                    Locality::Node => topo.unit_of[n],
                    Locality::Rack => inst.nodes[n].rack,
                    Locality::Pod => inst.nodes[n].pod,
                }
            };
            domains.entry(d).or_default().push(n);
        }
        let mut best: Option<((u32, u32, usize), Vec<(NodeIx, u32)>)> = None;
        for (&d, nodes) in &domains {
            if level == Locality::Node && !cluster_wide && nodes.len() < 2 {
                continue; // single nodes were tried above
            }
            if let Some((counts, leftover)) = pack(state, job, nodes) {
                let key = (counts.len() as u32, leftover, d);
                if best.as_ref().is_none_or(|(b, _)| key < *b) {
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
        .map(|&n| (n, state.allowed_whole(n, job.priority).len() as u32))
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

fn place_sharer(state: &RoundState, job: &PendingJob) -> Option<GpuSet> {
    let inst = state.inst;
    let m = job.gpu_milli.unwrap_or(1000);
    // (prefer already shared, then least milli left after, in-use nodes, node, gpu)
    let mut best: Option<((bool, u32, bool, NodeIx, u32), (NodeIx, u32))> = None;
    for n in 0..inst.nodes.len() {
        if !job.accepts_type(&inst.nodes[n].gpu_type) || !state.fits_resources(n, job, 1) {
            continue;
        }
        let in_use = state.node_in_use(n);
        for g in 0..inst.nodes[n].gpus {
            if let Some(left) = state.shareable_milli(n, g, job.priority) {
                if left >= m {
                    let key = (!state.is_shared(n, g), left - m, !in_use, n, g);
                    if best.as_ref().is_none_or(|(b, _)| key < *b) {
                        best = Some((key, (n, g)));
                    }
                }
            }
        }
    }
    best.map(|(_, (n, g))| GpuSet::from([(n, vec![g])]))
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
