//! A neighbourhood of a round cut out as a round of its own, and its plan put back.
//!
//! The cut holds a set of nodes, everything running on them, the pending jobs the current plan
//! places wholly on them (free to move or to wait) and a few waiting candidates. What the cut
//! cannot change is fixed in it:
//!
//! ```text
//! running job wholly inside            a running job of the cut (kept or preempted)
//! running job reaching outside         fixed: a non-preemptible running job per inside node
//! placed job reaching outside          fixed: likewise, on the GPUs the plan gives it inside
//! preempted job reaching outside       a running job of the cut holding its GPUs inside, that
//!                                      the cut's plan must preempt (a plan keeping it is not
//!                                      put back: the job's GPUs outside may be taken)
//! placed job reaching outside on the   no cut (the cut could keep the victim under it)
//!   GPUs of a preempted job inside
//! preempted job no job of the cut       no cut (the cut could not keep it preempted)
//!   outranks
//! ```
//!
//! Quotas and fairness couple the cut to the rest of the round through each tenant's holdings
//! outside it after the current plan, `O_t`. The cut keeps the round's rows exactly by
//! shifting them:
//!
//! ```text
//! quota:     H_t^cut <= q_t - O_t     (a fraction where sharers make O_t one: rounded up,
//!                                      it let a cut's plan pass the quota by a share, and
//!                                      every such plan was then refused on the whole round)
//! fairness:  sigma_t >= (F_t - O_t) - H_t^cut (F_t: the round's fair share, Instance::fair_share)
//! ```
//! Value, spread, preemption and packing are sums over jobs and nodes, so the cut's objective
//! is the round's objective less a constant (a gang fixed across the boundary is a constant
//! of both). Fragmentation, where the round carries a task distribution, is per node too. The
//! round's reservations hold in the cut on the cut's nodes.

use crate::assignment::{Assignment, GpuSet};
use crate::instance::{Instance, NodeIx, RunningJob};
use crate::objective::{fair_shares, held_after};
use crate::state::resource_share;
use std::collections::BTreeSet;

/// A neighbourhood cut out of a round.
pub struct Cut {
    /// The cut as a round of its own.
    pub inst: Instance,
    /// The current plan inside the cut, in the cut's indices: the MIP start.
    pub start: Assignment,
    /// The round's node of each node of the cut.
    nodes: Vec<NodeIx>,
    /// The round's pending job of each pending job of the cut.
    pending: Vec<usize>,
    /// The round's running job of each running job of the cut; `None` for what is fixed.
    running: Vec<Option<usize>>,
    /// The cut's running jobs that are the inside part of a preempted job reaching outside:
    /// a plan of the cut that keeps one is not put back ([`Cut::keeps_a_part`]).
    parts: Vec<usize>,
}

/// Which node of the cut a node of the round is, if any.
type NodeMap = Vec<Option<usize>>;

/// Cut `nodes` (sorted) out of the round `inst` under its current plan `plan`, with the
/// waiting jobs `candidates` free to start there. `None` where the module comment says so.
pub fn cut(
    inst: &Instance,
    plan: &Assignment,
    nodes: &[NodeIx],
    candidates: &[usize],
) -> Option<Cut> {
    let mut map: NodeMap = vec![None; inst.nodes.len()];
    for (i, &n) in nodes.iter().enumerate() {
        map[n] = Some(i);
    }
    let preempted: BTreeSet<usize> = plan.preempted.iter().copied().collect();
    let mut running = Vec::new();
    let mut running_map = Vec::new();
    let mut parts = Vec::new();
    for (k, r) in inst.running.iter().enumerate() {
        let nodes = || r.gpus.iter().map(|(n, _)| *n);
        if !touches(&map, nodes()) {
            continue;
        }
        if inside(&map, nodes()) {
            running.push(RunningJob {
                gpus: relabel(&r.gpus, &map),
                ..r.clone()
            });
            running_map.push(Some(k));
        } else if preempted.contains(&k) {
            parts.push(running.len());
            running.push(inside_part(r, &map));
            running_map.push(Some(k));
        } else {
            for fixed in fixed_pieces(r, &map) {
                running.push(fixed);
                running_map.push(None);
            }
        }
    }
    // GPUs of the victims the cut holds: a job reaching outside must not sit on them (the cut
    // could keep such a victim and the fixed job would then share its GPUs).
    let victim_gpus: BTreeSet<(NodeIx, u32)> = running_map
        .iter()
        .flatten()
        .filter(|k| preempted.contains(k))
        .flat_map(|&k| inst.running[k].gpus.iter())
        .filter(|(n, _)| map[*n].is_some())
        .flat_map(|(n, g)| g.iter().map(move |&i| (*n, i)))
        .collect();
    let mut pending_set: BTreeSet<usize> = candidates.iter().copied().collect();
    for (&j, set) in &plan.placed {
        if !touches(&map, set.keys().copied()) {
            continue;
        }
        if inside(&map, set.keys().copied()) {
            pending_set.insert(j);
            continue;
        }
        let on_victim =
            |(&n, g): (&NodeIx, &Vec<u32>)| g.iter().any(|&i| victim_gpus.contains(&(n, i)));
        if set.iter().any(on_victim) {
            return None;
        }
        let gpus: Vec<(NodeIx, Vec<u32>)> = set.iter().map(|(&n, g)| (n, g.clone())).collect();
        for fixed in fixed_pieces(&placed_as_running(inst, j, &gpus), &map) {
            running.push(fixed);
            running_map.push(None);
        }
    }
    let pending: Vec<usize> = pending_set.into_iter().collect();
    let top = pending.iter().map(|&j| inst.pending[j].priority).max();
    let outranked = |k: usize| top.is_some_and(|p| p > inst.running[k].priority);
    if running_map
        .iter()
        .flatten()
        .any(|&k| preempted.contains(&k) && !outranked(k))
    {
        return None;
    }
    let sub = Instance {
        nodes: nodes.iter().map(|&n| inst.nodes[n].clone()).collect(),
        racks: inst.racks.clone(),
        rack_pod: inst.rack_pod.clone(),
        pods: inst.pods.clone(),
        tenants: inst.tenants.clone(),
        running,
        pending: pending.iter().map(|&j| inst.pending[j].clone()).collect(),
        policy: inst.policy,
        node_by_name: nodes
            .iter()
            .enumerate()
            .map(|(i, &n)| (inst.nodes[n].name.clone(), i))
            .collect(),
        task_dist: inst.task_dist.clone(),
        fair_share: None,
        reservations: inst
            .reservations
            .iter()
            .map(|r| {
                let job = pending.iter().position(|&j| j == r.job);
                r.on_nodes(nodes, job.unwrap_or(pending.len()))
            })
            .collect(),
    };
    let mut out = Cut {
        inst: sub,
        start: Assignment::default(),
        nodes: nodes.to_vec(),
        pending,
        running: running_map,
        parts,
    };
    out.start = out.restrict(plan, &map);
    out.shift_tenant_rows(inst, plan);
    Some(out)
}

impl Cut {
    /// The current plan inside the cut, in the cut's indices.
    fn restrict(&self, plan: &Assignment, map: &NodeMap) -> Assignment {
        let mut a = Assignment::default();
        for (i, &j) in self.pending.iter().enumerate() {
            if let Some(set) = plan.placed.get(&j) {
                a.placed.insert(
                    i,
                    set.iter()
                        .map(|(&n, g)| (map[n].expect("inside"), g.clone()))
                        .collect(),
                );
            }
        }
        let preempted: BTreeSet<usize> = plan.preempted.iter().copied().collect();
        a.preempted = (0..self.running.len())
            .filter(|&i| self.running[i].is_some_and(|k| preempted.contains(&k)))
            .collect();
        a
    }

    /// Quotas and fair shares less what each tenant holds outside the cut (module comment).
    fn shift_tenant_rows(&mut self, round: &Instance, plan: &Assignment) {
        let total = held_after(round, plan);
        let inside = held_after(&self.inst, &self.start);
        let outside: Vec<f64> = total.iter().zip(&inside).map(|(t, i)| t - i).collect();
        for (tenant, o) in self.inst.tenants.iter_mut().zip(&outside) {
            if let Some(q) = tenant.quota {
                tenant.quota = Some((q - o).max(0.0));
            }
        }
        let fair = fair_shares(round);
        self.inst.fair_share = Some(fair.iter().zip(&outside).map(|(f, o)| f - o).collect());
    }

    /// The round's plan with the cut's part replaced by `inner` (a plan of the cut).
    pub fn put_back(&self, plan: &Assignment, inner: &Assignment) -> Assignment {
        let mine: BTreeSet<usize> = self.pending.iter().copied().collect();
        let mine_running: BTreeSet<usize> = self.running.iter().flatten().copied().collect();
        let mut out = Assignment {
            placed: plan
                .placed
                .iter()
                .filter(|(j, _)| !mine.contains(j))
                .map(|(&j, s)| (j, s.clone()))
                .collect(),
            preempted: plan
                .preempted
                .iter()
                .copied()
                .filter(|k| !mine_running.contains(k))
                .collect(),
        };
        for (&i, set) in &inner.placed {
            let gpus: GpuSet = set
                .iter()
                .map(|(&n, g)| (self.nodes[n], g.clone()))
                .collect();
            out.placed.insert(self.pending[i], gpus);
        }
        out.preempted
            .extend(inner.preempted.iter().filter_map(|&i| self.running[i]));
        out.preempted.sort_unstable();
        out
    }

    /// Whether a plan of the cut keeps (does not preempt) the inside part of a preempted job
    /// reaching outside the cut: such a plan cannot be put back.
    pub fn keeps_a_part(&self, inner: &Assignment) -> bool {
        let preempted: BTreeSet<usize> = inner.preempted.iter().copied().collect();
        self.parts.iter().any(|i| !preempted.contains(i))
    }

    /// The round's pending jobs of the cut.
    pub fn pending(&self) -> &[usize] {
        &self.pending
    }
}

/// Whether every node of a job is inside the cut.
fn inside(map: &NodeMap, mut nodes: impl Iterator<Item = NodeIx>) -> bool {
    nodes.all(|n| map[n].is_some())
}

/// Whether some node of a job is inside the cut.
fn touches(map: &NodeMap, mut nodes: impl Iterator<Item = NodeIx>) -> bool {
    nodes.any(|n| map[n].is_some())
}

/// The node list of a running job in the cut's node indices (every node is inside).
fn relabel(gpus: &[(NodeIx, Vec<u32>)], map: &NodeMap) -> Vec<(NodeIx, Vec<u32>)> {
    gpus.iter()
        .map(|(n, g)| (map[*n].expect("inside"), g.clone()))
        .collect()
}

/// The part inside the cut of a preempted job reaching outside it, preemptible: its GPUs
/// inside, at least the CPU and memory the round charges those nodes for it (a share of a share
/// rounds up), no checkpoint cost (the cut's plan must preempt it anyway).
fn inside_part(job: &RunningJob, map: &NodeMap) -> RunningJob {
    let total = job.gpu_count();
    let gpus: Vec<(NodeIx, Vec<u32>)> = job
        .gpus
        .iter()
        .filter_map(|(n, g)| map[*n].map(|i| (i, g.clone())))
        .collect();
    let held: u32 = gpus.iter().map(|(_, g)| g.len() as u32).sum();
    RunningJob {
        cpu_milli: resource_share(job.cpu_milli, held, total),
        memory_mib: resource_share(job.memory_mib, held, total),
        checkpoint_cost: 0.0,
        gpus,
        ..job.clone()
    }
}

/// A job reaching outside the cut as fixed, non-preemptible running jobs, one per inside node,
/// each holding the CPU and memory the round charges that node for it.
fn fixed_pieces(job: &RunningJob, map: &NodeMap) -> Vec<RunningJob> {
    let total = job.gpu_count();
    job.gpus
        .iter()
        .filter_map(|(n, g)| map[*n].map(|i| (i, g)))
        .map(|(i, g)| RunningJob {
            id: format!("{}@{i}", job.id),
            preemptible: false,
            checkpoint_cost: 0.0,
            gpus: vec![(i, g.clone())],
            cpu_milli: resource_share(job.cpu_milli, g.len() as u32, total),
            memory_mib: resource_share(job.memory_mib, g.len() as u32, total),
            ..job.clone()
        })
        .collect()
}

/// Pending job `j`, placed on `gpus` (the round's node indices), as a running job.
fn placed_as_running(inst: &Instance, j: usize, gpus: &[(NodeIx, Vec<u32>)]) -> RunningJob {
    let job = &inst.pending[j];
    RunningJob {
        id: job.id.clone(),
        tenant: job.tenant,
        priority: job.priority,
        preemptible: false,
        checkpoint_cost: 0.0,
        gpus: gpus.to_vec(),
        gpu_milli: job.gpu_milli,
        cpu_milli: job.cpu_milli,
        memory_mib: job.memory_mib,
        ends_in: job.time_limit,
    }
}
