//! Assignment -> plan: names instead of indices, a reason for every pending job and every
//! preemption, metrics.

use super::output::{gpus_phrase, job_name};
use super::reasons::{
    capacity_key, reason_with, AfterRound, CapacityKey, Reason, ReasonMemo, UNEXPLAINED,
};
use super::types::*;
use crate::assignment::{Assignment, GpuSet};
use crate::instance::{Instance, NodeIx, Reservation};
use crate::state::{ClusterState, GpuUse};
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Instant;

/// Render an assignment. `solver` is filled by the caller.
pub fn render_plan(inst: &Instance, a: &Assignment, status: Status, solver: SolverInfo) -> Plan {
    render_plan_until(inst, a, status, solver, None)
}

/// Render an assignment, working out the reasons of waiting jobs until `reasons_until` (all of
/// them when `None`). Jobs whose reason was not reached get [`Reason::unexplained`], and the
/// solver note says how many (pending order decides which come first).
pub fn render_plan_until(
    inst: &Instance,
    a: &Assignment,
    status: Status,
    mut solver: SolverInfo,
    reasons_until: Option<Instant>,
) -> Plan {
    let started = Instant::now();
    let before = ClusterState::new(inst);
    let placements = placements(inst, a);
    let takers = gpu_takers(a);
    let preemptions = a
        .preempted
        .iter()
        .map(|&k| preemption(inst, a, &takers, k))
        .collect();
    let after = AfterRound::new(inst, &before, a);
    let waiting: Vec<usize> = (0..inst.pending.len())
        .filter(|j| !a.placed.contains_key(j))
        .collect();
    if reasons_until.is_some() {
        tracing::debug!(
            seconds = started.elapsed().as_secs_f64(),
            "plan rendered up to the reasons"
        );
    }
    let reasons = reasons_by_shape(inst, &after, &waiting, reasons_until);
    let shown = waiting_reservations(inst, a);
    let pending = pending_entries(inst, waiting, &reasons, &shown);
    note_unexplained(&mut solver, &pending);
    let mut reservations: Vec<PlanReservation> = shown.into_iter().map(|(_, p)| p).collect();
    let reservation = reservations.first().cloned();
    if reservations.len() < 2 {
        reservations.clear();
    }
    Plan {
        format: PLAN_FORMAT.to_string(),
        status,
        solver,
        metrics: metrics(inst, &before, a, &placements, &pending),
        placements,
        preemptions,
        pending,
        reservation,
        reservations,
    }
}

/// The placed jobs on each GPU (several where sharers share it), in job order, and those with
/// a GPU on each node.
struct Takers {
    by_gpu: HashMap<(NodeIx, u32), Vec<usize>>,
    by_node: HashMap<NodeIx, BTreeSet<usize>>,
}

/// The [`Takers`] of the GPUs of plan `a`.
fn gpu_takers(a: &Assignment) -> Takers {
    let mut by_gpu: HashMap<(NodeIx, u32), Vec<usize>> = HashMap::new();
    let mut by_node: HashMap<NodeIx, BTreeSet<usize>> = HashMap::new();
    for (&j, set) in &a.placed {
        for (&n, idx) in set {
            for &g in idx {
                by_gpu.entry((n, g)).or_default().push(j);
            }
            if !idx.is_empty() {
                by_node.entry(n).or_default().insert(j);
            }
        }
    }
    Takers { by_gpu, by_node }
}

/// The placed jobs, by name: each one's GPUs per node name.
fn placements(inst: &Instance, a: &Assignment) -> Vec<Placement> {
    a.placed
        .iter()
        .map(|(&j, set)| Placement {
            job: inst.pending[j].id.clone(),
            gpus: set
                .iter()
                .map(|(&n, idx)| (inst.nodes[n].name.clone(), idx.clone()))
                .collect(),
            gpu_milli: inst.pending[j].gpu_milli,
        })
        .collect()
}

/// Running job k preempted, with what it frees and for whom: `frees 4 GPUs on n1 for a, b`
/// (the placed jobs given any of its GPUs); a sharer `frees 500 milli of GPU n1:3 for a`; a
/// CPU-only job `frees its CPU and memory on n1 for a` (the jobs placed on its node). A job
/// whose GPUs nobody takes was preempted for its CPU and memory or for its tenant's quota:
/// `frees 4 GPUs on n1; its CPU and memory there go to a` (the higher-priority jobs placed on
/// its nodes), else `frees 4 GPUs on n1 of tenant t's quota for a` (its tenant's
/// higher-priority jobs placed, where the tenant has a quota), else `frees 4 GPUs on n1 for
/// higher-priority work`.
fn preemption(inst: &Instance, a: &Assignment, takers: &Takers, k: usize) -> Preemption {
    let r = &inst.running[k];
    // A job without a GPU on a node frees its CPU and memory there: the jobs placed with GPUs
    // on that node take them.
    let on_gpuless_nodes = r
        .gpus
        .iter()
        .filter(|(_, idx)| idx.is_empty())
        .filter_map(|(n, _)| takers.by_node.get(n))
        .flatten();
    let on_its_gpus: BTreeSet<usize> = r
        .gpus
        .iter()
        .flat_map(|(n, idx)| idx.iter().map(move |&g| (*n, g)))
        .filter_map(|gpu| takers.by_gpu.get(&gpu))
        .flatten()
        .chain(on_gpuless_nodes)
        .copied()
        .collect();
    let takers: Vec<String> = on_its_gpus
        .into_iter()
        .map(|j| job_name(&inst.pending[j].id))
        .collect();
    let where_: Vec<String> = r
        .gpus
        .iter()
        .map(|(n, idx)| match (idx.len(), r.gpu_milli) {
            (0, _) => format!("its CPU and memory on {}", inst.nodes[*n].name),
            (_, Some(m)) => format!("{m} milli of GPU {}:{}", inst.nodes[*n].name, idx[0]),
            (g, None) => format!("{} on {}", gpus_phrase(g as u32), inst.nodes[*n].name),
        })
        .collect();
    let frees = where_.join(", ");
    let reason = if !takers.is_empty() {
        format!("frees {frees} for {}", takers.join(", "))
    } else if let Some(on_nodes) = outranking_on_its_nodes(inst, a, k) {
        format!("frees {frees}; its CPU and memory there go to {on_nodes}")
    } else if let Some((tenant, jobs)) = outranking_in_its_quota(inst, a, k) {
        format!("frees {frees} of tenant {tenant}'s quota for {jobs}")
    } else {
        format!("frees {frees} for higher-priority work")
    };
    Preemption {
        job: r.id.clone(),
        reason,
    }
}

/// The placed jobs of higher priority than running job k, by name, among those `keep` keeps;
/// `None` when there are none.
fn outranking(
    inst: &Instance,
    a: &Assignment,
    k: usize,
    keep: impl Fn(usize, &GpuSet) -> bool,
) -> Option<String> {
    let priority = inst.running[k].priority;
    let names: Vec<String> = a
        .placed
        .iter()
        .filter(|&(&j, set)| inst.pending[j].priority > priority && keep(j, set))
        .map(|(&j, _)| job_name(&inst.pending[j].id))
        .collect();
    (!names.is_empty()).then(|| names.join(", "))
}

/// The higher-priority jobs placed on running job k's nodes (they took its CPU and memory).
fn outranking_on_its_nodes(inst: &Instance, a: &Assignment, k: usize) -> Option<String> {
    let nodes: BTreeSet<NodeIx> = inst.running[k].gpus.iter().map(|(n, _)| *n).collect();
    outranking(inst, a, k, |_, set| set.keys().any(|n| nodes.contains(n)))
}

/// Running job k's tenant, where it has a quota, and the tenant's higher-priority jobs placed
/// (the quota k frees goes to them).
fn outranking_in_its_quota(inst: &Instance, a: &Assignment, k: usize) -> Option<(String, String)> {
    let t = inst.running[k].tenant;
    inst.tenants[t].quota?;
    let jobs = outranking(inst, a, k, |j, _| inst.pending[j].tenant == t)?;
    Some((inst.tenants[t].name.clone(), jobs))
}

/// What decides why a waiting job waits: its [`CapacityKey`] (shape and priority), its CPU
/// and memory, and its tenant.
type Shape = (CapacityKey, u64, u64, usize);

/// Pending job j's [`Shape`].
fn shape(inst: &Instance, j: usize) -> Shape {
    let p = &inst.pending[j];
    (capacity_key(p), p.cpu_milli, p.memory_mib, p.tenant)
}

/// The reason of every waiting shape. Jobs of one shape, tenant and priority wait for the same
/// reason: it is computed once per shape, for the first waiting job of the shape. Shapes of
/// one [`capacity_key`] share what their GPUs say ([`ReasonMemo`]): each key's shapes are
/// worked out in turn, the keys in parallel (the result does not depend on the order). Shapes
/// not reached by `reasons_until` get [`Reason::unexplained`].
fn reasons_by_shape(
    inst: &Instance,
    after: &AfterRound,
    waiting: &[usize],
    reasons_until: Option<Instant>,
) -> BTreeMap<Shape, Reason> {
    let mut first_of_shape = BTreeMap::new();
    for &j in waiting {
        first_of_shape.entry(shape(inst, j)).or_insert(j);
    }
    let mut by_capacity: BTreeMap<CapacityKey, Vec<(Shape, usize)>> = BTreeMap::new();
    for (key, j) in first_of_shape {
        by_capacity.entry(key.0.clone()).or_default().push((key, j));
    }
    // Keys whose first job comes first in pending order go first.
    let mut groups: Vec<Vec<(Shape, usize)>> = by_capacity.into_values().collect();
    for g in &mut groups {
        g.sort_by_key(|&(_, j)| j);
    }
    groups.sort_by_key(|g| g[0].1);
    let in_time = || reasons_until.is_none_or(|t| Instant::now() < t);
    let started = Instant::now();
    // A render that works out no reason (a plan vetted before it is rendered) logs nothing.
    let logged = in_time();
    let reasons: BTreeMap<Shape, Reason> = groups
        .into_par_iter()
        .flat_map_iter(|group| {
            let mut memo = ReasonMemo::default();
            group.into_iter().map(move |(key, j)| {
                let r = if in_time() {
                    reason_with(inst, after, &mut memo, j)
                } else {
                    Reason::unexplained()
                };
                (key, r)
            })
        })
        .collect();
    if !logged {
        return reasons;
    }
    tracing::debug!(
        seconds = started.elapsed().as_secs_f64(),
        shapes = reasons.len(),
        unexplained = reasons.values().filter(|r| r.kind() == UNEXPLAINED).count(),
        "reasons of the waiting shapes"
    );
    reasons
}

/// A reservation of the round with its form in the plan (by names).
type Shown<'i> = (&'i Reservation, PlanReservation);

/// The round's reservations whose job is not placed, in the round's order, each with its form
/// in the plan.
fn waiting_reservations<'i>(inst: &'i Instance, a: &Assignment) -> Vec<Shown<'i>> {
    inst.reservations
        .iter()
        .filter(|r| !a.placed.contains_key(&r.job))
        .map(|r| {
            let shown = PlanReservation {
                job: r.job_id.clone(),
                starts_in: r.start,
                nodes: r
                    .nodes
                    .iter()
                    .map(|&n| inst.nodes[n].name.clone())
                    .collect(),
            };
            (r, shown)
        })
        .collect()
}

/// The waiting jobs, in pending order, each with its shape's reason and what the round's
/// reservations (those `shown`) mean for it.
fn pending_entries(
    inst: &Instance,
    waiting: Vec<usize>,
    reasons: &BTreeMap<Shape, Reason>,
    shown: &[Shown],
) -> Vec<PendingEntry> {
    waiting
        .into_iter()
        .map(|j| {
            let r = &reasons[&shape(inst, j)];
            let mut reason = r.text.clone();
            if let Some(said) = reservation_note(inst, shown, j) {
                reason = format!("{reason}; {said}");
            }
            PendingEntry {
                job: inst.pending[j].id.clone(),
                kind: Some(r.kind().to_string()),
                reason,
            }
        })
        .collect()
}

/// Add to the solver note how many waiting jobs the time limit left unexplained, if any.
fn note_unexplained(solver: &mut SolverInfo, pending: &[PendingEntry]) {
    let unexplained = pending
        .iter()
        .filter(|e| e.kind.as_deref() == Some(UNEXPLAINED))
        .count();
    if unexplained > 0 {
        let said = format!(
            "the time limit left no time to work out why {unexplained} of {} waiting jobs wait \
             (their reason says `unexplained`)",
            pending.len()
        );
        solver.note = Some(match solver.note.take() {
            Some(n) => format!("{n}; {said}"),
            None => said,
        });
    }
}

/// Usable GPUs some job holds after the round: a kept running job (whole, or one sharer of
/// it at least) or a placed job.
fn busy_after(before: &ClusterState, a: &Assignment) -> u32 {
    let preempted: BTreeSet<usize> = a.preempted.iter().copied().collect();
    let mut busy: BTreeSet<(NodeIx, u32)> = BTreeSet::new();
    for (n, gpus) in before.gpus.iter().enumerate() {
        for (g, u) in gpus.iter().enumerate() {
            let kept = match u {
                GpuUse::Whole(k) => !preempted.contains(k),
                GpuUse::Shared { jobs, .. } => jobs.iter().any(|k| !preempted.contains(k)),
                _ => false,
            };
            if kept {
                busy.insert((n, g as u32));
            }
        }
    }
    for set in a.placed.values() {
        busy.extend(
            set.iter()
                .flat_map(|(n, idx)| idx.iter().map(move |&g| (*n, g))),
        );
    }
    busy.len() as u32
}

/// The round's metrics. Busy after the round = usable GPUs some job holds after it (a GPU
/// whose sharers are all preempted and that nothing takes is idle).
fn metrics(
    inst: &Instance,
    before: &ClusterState,
    a: &Assignment,
    placements: &[Placement],
    pending: &[PendingEntry],
) -> Metrics {
    let usable = inst.gpus_usable();
    Metrics {
        gpus_total: inst.gpus_total(),
        gpus_busy_before: before.busy_count(),
        gpus_busy_after: busy_after(before, a),
        gpus_down: inst.gpus_total() - usable,
        jobs_placed: placements.len() as u32,
        jobs_pending: pending.len() as u32,
        jobs_preempted: a.preempted.len() as u32,
    }
}

/// What the round's reservations (those `shown`) mean for waiting job j: what one promises
/// its reserved job, or what the first that keeps nodes from j does (its time limit runs past
/// that reservation's start).
fn reservation_note(inst: &Instance, shown: &[Shown], j: usize) -> Option<String> {
    let job = &inst.pending[j];
    if let Some((_, held)) = shown.iter().find(|(_, held)| held.job == job.id) {
        return Some(reserved_phrase(held));
    }
    let (_, held) = shown.iter().find(|(r, _)| !r.ends_in_time(job))?;
    let limit = job.time_limit.map_or("no time limit".to_string(), |t| {
        format!("a time limit of {t} s")
    });
    Some(format!(
        "{} reserved for job {} from {:.0} s on, and it has {limit}",
        held.nodes.join(", "),
        held.job,
        held.starts_in
    ))
}

/// What a waiting job's reservation promises, in words: `nodes a, b reserved for it from
/// 40 s on (their jobs' time limits end by then)`.
fn reserved_phrase(r: &PlanReservation) -> String {
    let nodes = if r.nodes.len() == 1 { "node" } else { "nodes" };
    let when = if r.starts_in <= 0.0 {
        "now".to_string()
    } else {
        format!(
            "from {:.0} s on (the time limits of the jobs there end by then)",
            r.starts_in
        )
    };
    format!("{nodes} {} reserved for it {when}", r.nodes.join(", "))
}

/// The plan as an assignment (names back to indices; the inverse of [`render_plan`]), or `None`
/// if it names a job or node the instance does not have.
pub fn assignment_of(inst: &Instance, plan: &Plan) -> Option<Assignment> {
    let mut a = Assignment::default();
    for p in &plan.placements {
        let j = inst.pending_index(&p.job)?;
        let mut set = GpuSet::new();
        for (node, idx) in &p.gpus {
            set.insert(*inst.node_by_name.get(node)?, idx.clone());
        }
        a.placed.insert(j, set);
    }
    for p in &plan.preemptions {
        a.preempted.push(inst.running_index(&p.job)?);
    }
    a.preempted.sort_unstable();
    Some(a)
}
