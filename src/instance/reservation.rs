//! The round's reservations: time in the plan, the way a backfilling scheduler holds nodes
//! for the jobs it cannot start, in priority order.
//!
//! A round carries time when some running job has `ends_in` or some pending job has
//! `time_limit` (without either, no reservation is made and planning is as before). Then:
//!
//! 1. **Free times.** Each usable GPU frees at 0 (free now), at the largest `ends_in` of the
//!    running jobs holding it, or never (a holder without `ends_in`, a GPU that is down).
//! 2. **The walk.** Pending whole-GPU jobs are taken by priority (highest first), then wait
//!    (longest first), then file order; jobs its tenant's quota cannot hold are skipped. A job
//!    that fits on one node now takes its GPUs there, until its `time_limit`: on the node with
//!    the fewest free GPUs that holds it, in the rack with the fewest, so that a rack with room
//!    for a gang stays whole while a fuller rack holds the job. A job that cannot start on one
//!    node now is **blocked**: it needs several nodes (`gpus_per_node` below `gpus`), or more
//!    GPUs than any node of its type has free now (after the jobs ranked above it).
//! 3. **A blocked job's start T** is the earliest time at which its shape fits on the GPUs
//!    free by then: `gpus_per_node` nodes with that many free, or its GPUs on at most
//!    `max_nodes` nodes, inside one rack or pod when `within` says so, on nodes of a type it
//!    accepts. Its **nodes**, in one rack when one rack holds it by then (else one pod, else
//!    anywhere `within` allows), are for a fixed shape the ones of those free by T that free
//!    latest, as a backfilling scheduler picks them: the start is the same, and the nodes that
//!    free sooner (free now above all) hold no GPU idle for it while jobs that cannot end by T
//!    could use them; without a fixed shape, the nodes with the most GPUs free by T. It is reserved, and every
//!    GPU of its nodes counts as never free for the jobs after it, which plan around them (a
//!    node is reserved for one job at most). No time at which it fits (GPUs held by jobs that
//!    never end): it is passed over.
//! 4. **How many.** The walk stops after `policy.reservations` reservations (default 1; 0: no
//!    reservation). With 1 it stops at the first blocked job whether it is reserved or not, so
//!    that a first blocked gang that never fits leaves the round without a reservation.
//! 5. **The rule** ([`Reservation::admits`], for every reservation): any job may use an
//!    unreserved node; a reserved node takes its reserved job, and another job only if its
//!    `time_limit` ends it by that reservation's T.
//!
//! Simplified: a reserved node is held whole (a job whose time limit runs past T may not use
//! even GPUs of it the reserved gang does not need, and the walk counts none of its GPUs for
//! later jobs); CPU and memory are not part of the fit; preemption is not counted on to free
//! GPUs. The reservations are worked out afresh from the instance every round, so they need no
//! state of their own.

use super::{Instance, NodeIx, PendingJob};
use crate::units::TOLERANCE;
use std::cmp::Reverse;

/// Nodes held for one blocked gang from a time on.
#[derive(Debug, Clone, PartialEq)]
pub struct Reservation {
    /// Index of the reserved job in [`Instance::pending`].
    pub job: usize,
    /// Its id.
    pub job_id: String,
    /// Seconds from now at which its GPUs are free.
    pub start: f64,
    /// The reserved nodes, in index order.
    pub nodes: Vec<NodeIx>,
    /// Per node: whether it is reserved.
    reserved: Vec<bool>,
}

impl Reservation {
    /// Whether `job` may be placed on node n under this reservation.
    pub fn admits(&self, job: &PendingJob, n: NodeIx) -> bool {
        !self.is_reserved(n) || self.open_to(job)
    }

    /// Whether the reserved nodes take `job`: it is the reserved job, or its time limit ends
    /// it by the reservation's start.
    pub fn open_to(&self, job: &PendingJob) -> bool {
        job.id == self.job_id || self.ends_in_time(job)
    }

    /// The same reservation in an instance holding only `nodes` of this one (in that order),
    /// where the reserved job is pending job `job` (one past the last pending job when that
    /// instance does not hold it: the rule names the job by id).
    pub fn on_nodes(&self, nodes: &[NodeIx], job: usize) -> Reservation {
        let reserved: Vec<bool> = nodes.iter().map(|&n| self.is_reserved(n)).collect();
        Reservation {
            job,
            job_id: self.job_id.clone(),
            start: self.start,
            nodes: (0..nodes.len()).filter(|&i| reserved[i]).collect(),
            reserved,
        }
    }

    /// Whether node n is reserved.
    pub fn is_reserved(&self, n: NodeIx) -> bool {
        self.reserved.get(n).copied().unwrap_or(false)
    }

    /// Whether `job`'s time limit ends it by the reservation's start.
    pub fn ends_in_time(&self, job: &PendingJob) -> bool {
        job.time_limit.is_some_and(|t| t <= self.start + TOLERANCE)
    }
}

/// Whether the round carries time: a running job's `ends_in` or a pending job's `time_limit`.
pub fn carries_time(inst: &Instance) -> bool {
    inst.running.iter().any(|r| r.ends_in.is_some())
        || inst.pending.iter().any(|p| p.time_limit.is_some())
}

/// The round's reservations (see the module docs), in the walk's order: at most
/// `policy.reservations` of them, none when the round carries no time.
pub fn plan(inst: &Instance) -> Vec<Reservation> {
    let most = inst.policy.reservations as usize;
    let mut out = Vec::new();
    if most == 0 || !carries_time(inst) {
        return out;
    }
    let mut free_at = free_times(inst);
    for j in ranked_jobs(inst) {
        let job = &inst.pending[j];
        let several = job.gpus_per_node.is_some_and(|g| g < job.gpus);
        if !several && take_one_node_now(inst, job, &mut free_at) {
            continue;
        }
        // A blocked job that never fits is passed over.
        if let Some((start, nodes)) = earliest_fit(inst, job, &free_at) {
            out.push(reserve(inst, j, start, nodes, &mut free_at));
        }
        // With one reservation the walk ends at the first blocked job, reserved or not.
        if out.len() >= most || most == 1 {
            break;
        }
    }
    out
}

/// The reservation of pending job j from `start` on `nodes`; every GPU of those nodes is
/// marked never free in `free_at`, so that the jobs after it plan around them.
fn reserve(
    inst: &Instance,
    j: usize,
    start: f64,
    mut nodes: Vec<NodeIx>,
    free_at: &mut [Vec<f64>],
) -> Reservation {
    nodes.sort_unstable();
    let mut reserved = vec![false; inst.nodes.len()];
    for &n in &nodes {
        reserved[n] = true;
        free_at[n].fill(f64::INFINITY);
    }
    Reservation {
        job: j,
        job_id: inst.pending[j].id.clone(),
        start,
        nodes,
        reserved,
    }
}

/// When each GPU frees: 0 when free now, the latest `ends_in` of its holders, or infinity.
pub fn free_times(inst: &Instance) -> Vec<Vec<f64>> {
    let mut at: Vec<Vec<f64>> = inst
        .nodes
        .iter()
        .map(|n| {
            n.down
                .iter()
                .map(|&d| if d { f64::INFINITY } else { 0.0 })
                .collect()
        })
        .collect();
    for r in &inst.running {
        let ends = r.ends_in.unwrap_or(f64::INFINITY);
        for (n, idx) in &r.gpus {
            for &g in idx {
                if let Some(t) = at[*n].get_mut(g as usize) {
                    *t = t.max(ends);
                }
            }
        }
    }
    at
}

/// The pending jobs the walk takes, in its order: whole-GPU jobs (no sharers, no CPU-only
/// jobs) whose tenant's quota holds them, by priority (highest first), wait (longest first)
/// and file order.
fn ranked_jobs(inst: &Instance) -> Vec<usize> {
    let mut held = vec![0.0; inst.tenants.len()];
    for r in &inst.running {
        held[r.tenant] += r.gpu_equivalent();
    }
    let mut order: Vec<usize> = (0..inst.pending.len())
        .filter(|&j| {
            let job = &inst.pending[j];
            let quota_ok = inst.tenants[job.tenant]
                .quota
                .is_none_or(|q| held[job.tenant] + job.gpus as f64 <= q + TOLERANCE);
            job.gpus > 0 && !job.is_sharer() && quota_ok
        })
        .collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (&inst.pending[a], &inst.pending[b]);
        Reverse(x.priority)
            .cmp(&Reverse(y.priority))
            .then(y.wait.total_cmp(&x.wait))
            .then(a.cmp(&b))
    });
    order
}

/// Whether `job` fits now on one node it accepts; if so its GPUs there are taken in
/// `free_at` (free again at its time limit, or never), on the node with the fewest free GPUs
/// that holds it, and among those in the rack with the fewest free GPUs (best fit by node,
/// then by rack: a rack with room for a gang is not broken up while a fuller rack has a node
/// that holds the job).
fn take_one_node_now(inst: &Instance, job: &PendingJob, free_at: &mut [Vec<f64>]) -> bool {
    let free_now = |n: NodeIx| free_at[n].iter().filter(|&&t| t <= 0.0).count() as u32;
    let mut rack_free: Vec<u32> = vec![0; inst.racks.len().max(1)];
    for n in 0..inst.nodes.len() {
        rack_free[inst.nodes[n].rack] += free_now(n);
    }
    let best = (0..inst.nodes.len())
        .filter(|&n| job.accepts_type(&inst.nodes[n].gpu_type) && free_now(n) >= job.gpus)
        .min_by_key(|&n| (free_now(n), rack_free[inst.nodes[n].rack], n));
    let Some(n) = best else {
        return false;
    };
    let until = job.time_limit.unwrap_or(f64::INFINITY);
    for t in free_at[n]
        .iter_mut()
        .filter(|t| **t <= 0.0)
        .take(job.gpus as usize)
    {
        *t = until;
    }
    true
}

/// The earliest time at which `job`'s shape fits on the GPUs free by then, and the nodes it
/// would take. Fitting only gets easier as time goes on, so the time is found by bisection
/// over the distinct free times.
fn earliest_fit(
    inst: &Instance,
    job: &PendingJob,
    free_at: &[Vec<f64>],
) -> Option<(f64, Vec<NodeIx>)> {
    let eligible: Vec<NodeIx> = (0..inst.nodes.len())
        .filter(|&n| job.accepts_type(&inst.nodes[n].gpu_type))
        .collect();
    let mut times: Vec<f64> = eligible
        .iter()
        .flat_map(|&n| free_at[n].iter().copied())
        .filter(|t| t.is_finite())
        .collect();
    times.sort_by(f64::total_cmp);
    times.dedup();
    let fits = |t: f64| fit_at(inst, job, free_at, &eligible, t);
    let last = *times.last()?;
    fits(last)?;
    let (mut lo, mut hi) = (0usize, times.len() - 1);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if fits(times[mid]).is_some() {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    fits(times[lo]).map(|nodes| (times[lo], nodes))
}

/// The nodes `job` would take at time t, or `None` when its shape does not fit then.
fn fit_at(
    inst: &Instance,
    job: &PendingJob,
    free_at: &[Vec<f64>],
    eligible: &[NodeIx],
    t: f64,
) -> Option<Vec<NodeIx>> {
    let rack = |n: NodeIx| inst.nodes[n].rack;
    let pod = |n: NodeIx| inst.nodes[n].pod;
    let anywhere = |_: NodeIx| 0;
    // One rack when one holds it, else one pod, else anywhere `within` allows.
    let tiers: Vec<&dyn Fn(NodeIx) -> usize> = match job.within {
        Some(super::Locality::Rack) => vec![&rack],
        Some(super::Locality::Pod) => vec![&rack, &pod],
        _ => vec![&rack, &pod, &anywhere],
    };
    tiers
        .into_iter()
        .find_map(|group| fit_in_one_group(job, free_at, eligible, t, group))
}

/// The nodes of the first group (by `group`'s number) of `eligible` that holds `job` at time t.
fn fit_in_one_group(
    job: &PendingJob,
    free_at: &[Vec<f64>],
    eligible: &[NodeIx],
    t: f64,
    group: &dyn Fn(NodeIx) -> usize,
) -> Option<Vec<NodeIx>> {
    let mut groups: Vec<usize> = eligible.iter().map(|&n| group(n)).collect();
    groups.sort_unstable();
    groups.dedup();
    groups.into_iter().find_map(|g| {
        let members: Vec<NodeIx> = eligible
            .iter()
            .copied()
            .filter(|&n| group(n) == g)
            .collect();
        fit_in(job, free_at, &members, t)
    })
}

/// The nodes of `members` that hold `job` at time t: for a fixed shape, of the nodes free by
/// t the ones that free latest; otherwise the ones with the most GPUs free by t.
fn fit_in(
    job: &PendingJob,
    free_at: &[Vec<f64>],
    members: &[NodeIx],
    t: f64,
) -> Option<Vec<NodeIx>> {
    let limit = job.node_limit() as usize;
    // For each node: GPUs free by t, and when its k-th GPU frees (k: what it must give).
    let by_t = |n: NodeIx| free_at[n].iter().filter(|&&x| x <= t).count() as u32;
    let kth_free = |n: NodeIx, k: u32| {
        let mut ts: Vec<f64> = free_at[n].clone();
        ts.sort_by(f64::total_cmp);
        ts.get(k.saturating_sub(1) as usize)
            .copied()
            .unwrap_or(f64::INFINITY)
    };
    match job.gpus_per_node {
        Some(per) => {
            let need = (job.gpus / per.max(1)) as usize;
            let mut fit: Vec<(f64, NodeIx)> = members
                .iter()
                .filter(|&&n| by_t(n) >= per)
                .map(|&n| (kth_free(n, per), n))
                .collect();
            // Latest-free first: the same start t, and the nodes free sooner (free now
            // above all) stay open to the jobs that cannot end by t.
            fit.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            (fit.len() >= need && need <= limit).then(|| fit[..need].iter().map(|x| x.1).collect())
        }
        None => {
            let mut caps: Vec<(u32, NodeIx)> = members
                .iter()
                .map(|&n| (by_t(n), n))
                .filter(|c| c.0 > 0)
                .collect();
            caps.sort_by_key(|&(c, n)| (Reverse(c), n));
            let mut left = job.gpus;
            let mut nodes = Vec::new();
            for (c, n) in caps.into_iter().take(limit) {
                nodes.push(n);
                left = left.saturating_sub(c);
                if left == 0 {
                    return Some(nodes);
                }
            }
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hardware::ModelLibrary;
    use crate::instance::parse_instance;

    fn inst(yaml: &str) -> Instance {
        parse_instance(yaml, "test", &ModelLibrary::builtin()).expect("valid instance")
    }

    /// Four 8-GPU nodes in two racks; each node fully held by one job ending at the given time
    /// (`None`: no end known; `Some(0)`: the node is free).
    fn cluster(ends: [Option<f64>; 4], pending: &str) -> Instance {
        cluster_with(ends, pending, "")
    }

    /// [`cluster`] with a `policy` block (e.g. `{reservations: 2}`; empty: none).
    fn cluster_with(ends: [Option<f64>; 4], pending: &str, policy: &str) -> Instance {
        let mut y = if policy.is_empty() {
            String::from("nodes:\n")
        } else {
            format!("policy: {policy}\nnodes:\n")
        };
        for i in 0..4 {
            y += &format!("  - {{name: n{i}, gpus: 8, rack: r{}}}\n", i / 2);
        }
        y += "running:\n";
        for (i, e) in ends.iter().enumerate() {
            match e {
                Some(t) if *t == 0.0 => {}
                Some(t) => {
                    y += &format!(
                        "  - {{id: r{i}, gpus: {{n{i}: [0,1,2,3,4,5,6,7]}}, ends_in: {t}}}\n"
                    )
                }
                None => y += &format!("  - {{id: r{i}, gpus: {{n{i}: [0,1,2,3,4,5,6,7]}}}}\n"),
            }
        }
        inst(&(y + "pending:\n" + pending))
    }

    #[test]
    fn a_blocked_gang_gets_the_nodes_free_by_its_earliest_start() {
        let i = cluster(
            [Some(50.0), Some(10.0), Some(30.0), Some(20.0)],
            "  - {id: big, gpus: 16, gpus_per_node: 8, max_nodes: 2}\n  - {id: small, gpus: 1, time_limit: 5}\n",
        );
        let r = i.reservations.first().cloned().expect("a reservation");
        assert_eq!(r.job_id, "big");
        assert_eq!(r.start, 20.0);
        assert_eq!(r.nodes, vec![1, 3]);
        assert!(r.admits(&i.pending[1], 1), "a 5 s job ends before 20 s");
    }

    #[test]
    fn within_rack_reserves_inside_one_rack() {
        let i = cluster(
            [Some(50.0), Some(10.0), Some(30.0), Some(20.0)],
            "  - {id: big, gpus: 16, gpus_per_node: 8, within: rack}\n",
        );
        let r = i.reservations.first().cloned().expect("a reservation");
        // Rack r0 (n0, n1) is whole at 50 s, rack r1 (n2, n3) at 30 s.
        assert_eq!((r.start, r.nodes.clone()), (30.0, vec![2, 3]));
    }

    #[test]
    fn one_rack_is_preferred_when_it_holds_the_gang_as_soon() {
        // n0, n2 and n3 are free now; only rack r1 (n2, n3) holds two of them.
        let i = cluster(
            [Some(0.0), Some(50.0), Some(0.0), Some(0.0)],
            "  - {id: big, gpus: 16, gpus_per_node: 8}\n",
        );
        let r = i.reservations.first().cloned().expect("a reservation");
        assert_eq!((r.start, r.nodes), (0.0, vec![2, 3]));
    }

    #[test]
    fn jobs_that_never_end_leave_no_reservation_on_their_nodes() {
        let i = cluster(
            [None, Some(10.0), None, None],
            "  - {id: big, gpus: 16, gpus_per_node: 8}\n",
        );
        assert_eq!(i.reservations, vec![], "only one node ever frees");
        let i = cluster(
            [None, Some(10.0), None, Some(40.0)],
            "  - {id: big, gpus: 16, gpus_per_node: 8}\n",
        );
        assert_eq!(
            i.reservations.first().cloned().map(|r| (r.start, r.nodes)),
            Some((40.0, vec![1, 3]))
        );
    }

    #[test]
    fn the_highest_ranked_blocked_gang_is_reserved_and_fitting_jobs_are_not() {
        let i = cluster(
            [Some(0.0), Some(10.0), Some(30.0), Some(20.0)],
            "  - {id: fits, gpus: 8, priority: 5}\n  - {id: young, gpus: 24, gpus_per_node: 8, wait: 10}\n  - {id: old, gpus: 24, gpus_per_node: 8, wait: 99}\n",
        );
        let r = i.reservations.first().cloned().expect("a reservation");
        assert_eq!(
            r.job_id, "old",
            "a one-node job that fits now is not reserved; the older gang is"
        );
        assert_eq!(
            (r.start, r.nodes),
            (30.0, vec![1, 2, 3]),
            "n0 goes to the higher-ranked job that fits there now"
        );
        assert!(i.may_use_node(&i.pending[0], 0));
    }

    #[test]
    fn an_older_one_node_job_that_fits_now_keeps_its_node_from_a_younger_gang() {
        // n0 is free now; an 8-GPU job that waited longer than the gang takes it.
        let i = cluster(
            [Some(0.0), Some(10.0), Some(30.0), Some(20.0)],
            "  - {id: gang, gpus: 16, gpus_per_node: 8, wait: 5, time_limit: 60}\n  - {id: whole, gpus: 8, wait: 9, time_limit: 60}\n",
        );
        let r = i.reservations.first().cloned().expect("a reservation");
        assert_eq!(r.job_id, "gang");
        assert_eq!((r.start, r.nodes.clone()), (20.0, vec![1, 3]));
        assert!(i.may_use_node(&i.pending[1], 0), "n0 is not reserved");
    }

    #[test]
    fn a_job_ranked_above_the_gang_takes_a_node_of_the_fullest_rack() {
        // n0, n1 (rack r0) and n2 (rack r1) are free now; an 8-GPU job that waited longer
        // than the 2 x 8 gang fits on each of them. Taking n0 would leave the gang n1 and n2,
        // in two racks; it takes n2, and the gang keeps rack r0.
        let i = cluster(
            [Some(0.0), Some(0.0), Some(0.0), Some(50.0)],
            "  - {id: gang, gpus: 16, gpus_per_node: 8, wait: 5, time_limit: 60}\n  - {id: whole, gpus: 8, wait: 9, time_limit: 60}\n",
        );
        let r = i.reservations.first().cloned().expect("a reservation");
        assert_eq!(r.job_id, "gang");
        assert_eq!((r.start, r.nodes.clone()), (0.0, vec![0, 1]));
        assert!(
            i.may_use_node(&i.pending[1], 2),
            "n2 is left to the older job"
        );
    }

    #[test]
    fn a_round_without_time_has_no_reservation() {
        let i = inst(
            "nodes: [{name: a, gpus: 8}]\nrunning: [{id: r, gpus: {a: [0,1,2,3,4,5,6,7]}}]\npending: [{id: p, gpus: 8}]\n",
        );
        assert_eq!(i.reservations, vec![]);
    }

    #[test]
    fn the_rule_admits_short_jobs_and_the_reserved_job_only() {
        let i = cluster(
            [Some(0.0), Some(0.0), Some(30.0), Some(60.0)],
            "  - {id: big, gpus: 32, gpus_per_node: 8}\n  - {id: short, gpus: 1, time_limit: 60}\n  - {id: long, gpus: 1, time_limit: 61}\n  - {id: open, gpus: 1}\n",
        );
        let r = i.reservations.first().cloned().expect("a reservation");
        assert_eq!((r.start, r.nodes.len()), (60.0, 4));
        let may = |j: usize| (0..4).all(|n| i.may_use_node(&i.pending[j], n));
        assert!(may(0) && may(1));
        assert!(!may(2), "a 61 s job runs past the start at 60 s");
        assert!(!may(3), "a job without a time limit may never end");
    }

    /// Two 2 x 8 gangs, the older first, on nodes ending at 10, 20, 30 and 40 s, and a 1-GPU
    /// job with a 35 s limit.
    const TWO_GANGS: &str = "  - {id: old, gpus: 16, gpus_per_node: 8, wait: 9}\n  - {id: young, gpus: 16, gpus_per_node: 8, wait: 5}\n  - {id: short, gpus: 1, time_limit: 35}\n  - {id: long, gpus: 1, time_limit: 45}\n";
    const ENDS: [Option<f64>; 4] = [Some(10.0), Some(20.0), Some(30.0), Some(40.0)];

    /// (job, start, nodes) of each reservation.
    fn summary(i: &Instance) -> Vec<(String, f64, Vec<NodeIx>)> {
        i.reservations
            .iter()
            .map(|r| (r.job_id.clone(), r.start, r.nodes.clone()))
            .collect()
    }

    #[test]
    fn a_second_blocked_gang_is_reserved_around_the_first() {
        let i = cluster_with(ENDS, TWO_GANGS, "{reservations: 2}");
        // `old` gets rack r0, whole at 20 s; without it `young` would too, but n0 and n1 are
        // taken, and rack r1 (n2, n3) is whole at 40 s.
        assert_eq!(
            summary(&i),
            vec![
                ("old".to_string(), 20.0, vec![0, 1]),
                ("young".to_string(), 40.0, vec![2, 3]),
            ]
        );
        let (short, long) = (&i.pending[2], &i.pending[3]);
        assert!(
            !i.may_use_node(short, 0),
            "35 s runs past old's start at 20 s"
        );
        assert!(
            i.may_use_node(short, 2),
            "35 s ends by young's start at 40 s"
        );
        assert!(
            !i.may_use_node(long, 2),
            "45 s runs past young's start at 40 s"
        );
        assert!(i.may_use_node(&i.pending[1], 3) && !i.may_use_node(&i.pending[1], 0));
        assert_ne!(
            i.reserved_nodes_open_to(short),
            i.reserved_nodes_open_to(long),
            "the two fit differently"
        );
    }

    #[test]
    fn one_reservation_is_the_first_of_several_and_zero_is_none() {
        let one = cluster_with(ENDS, TWO_GANGS, "{reservations: 1}");
        assert_eq!(summary(&one), vec![("old".to_string(), 20.0, vec![0, 1])]);
        assert_eq!(
            one.reservations,
            cluster(ENDS, TWO_GANGS).reservations,
            "the default"
        );
        assert!(one.may_use_node(&one.pending[3], 2), "n2 is not reserved");
        let none = cluster_with(ENDS, TWO_GANGS, "{reservations: 0}");
        assert_eq!(none.reservations, vec![]);
        assert!((0..4).all(|n| none.may_use_node(&none.pending[3], n)));
    }

    #[test]
    fn a_first_gang_that_never_fits_is_passed_over_only_with_several() {
        // `huge` needs three whole nodes; only n1 and n3 ever free.
        let pending = "  - {id: huge, gpus: 24, gpus_per_node: 8, wait: 9}\n  - {id: next, gpus: 16, gpus_per_node: 8, wait: 5}\n";
        let ends = [None, Some(10.0), None, Some(40.0)];
        assert_eq!(cluster(ends, pending).reservations, vec![], "as with one");
        let two = cluster_with(ends, pending, "{reservations: 2}");
        assert_eq!(summary(&two), vec![("next".to_string(), 40.0, vec![1, 3])]);
    }

    #[test]
    fn the_first_of_several_reservations_is_the_one_a_single_reservation_makes() {
        let pendings = [
            TWO_GANGS,
            "  - {id: fits, gpus: 8, priority: 5}\n  - {id: young, gpus: 24, gpus_per_node: 8, wait: 10}\n  - {id: old, gpus: 24, gpus_per_node: 8, wait: 99}\n",
            "  - {id: gang, gpus: 16, gpus_per_node: 8, wait: 5, time_limit: 60}\n  - {id: whole, gpus: 8, wait: 9, time_limit: 60}\n  - {id: six, gpus: 6, time_limit: 9}\n",
            "  - {id: a, gpus: 12, wait: 3}\n  - {id: b, gpus: 8, wait: 2}\n  - {id: c, gpus: 16, gpus_per_node: 8, within: rack, wait: 1}\n",
        ];
        let ends = [
            ENDS,
            [Some(0.0), Some(10.0), Some(30.0), Some(20.0)],
            [Some(0.0), Some(0.0), Some(0.0), Some(50.0)],
            [None, Some(10.0), None, Some(40.0)],
            [Some(5.0), None, Some(0.0), Some(15.0)],
        ];
        let mut several_made = 0;
        for p in pendings {
            for e in ends {
                let mut i = cluster(e, p);
                let one = plan(&i);
                assert!(one.len() <= 1);
                for most in [2, 3, 64] {
                    i.policy.reservations = most;
                    let many = plan(&i);
                    assert!(many.len() <= most as usize);
                    if let Some(first) = one.first() {
                        assert_eq!(many.first(), Some(first), "{e:?} {p}");
                    }
                    several_made += usize::from(many.len() > 1);
                    let mut nodes: Vec<NodeIx> =
                        many.iter().flat_map(|r| r.nodes.clone()).collect();
                    let all = nodes.len();
                    nodes.sort_unstable();
                    nodes.dedup();
                    assert_eq!(nodes.len(), all, "no node in two reservations: {e:?} {p}");
                }
            }
        }
        assert!(several_made > 0);
    }
}
