//! One sentence, with numbers, for every job left pending: the constraint that binds, and
//! whether the job is `unresolvable` (no state of this cluster could place it) or
//! `unschedulable` (it would start if something finished or were preempted).
//!
//! The test is a ladder of capacities, each checked against the job's hard shape (GPU type,
//! gang size, `within`, `max_nodes`, `gpus_per_node`):
//!
//! 1. every usable GPU of the cluster: if the shape does not fit, or the job alone exceeds its
//!    tenant's quota, the job is **unresolvable**;
//! 2. the GPUs free after this round: if the shape fits, the job waits for its tenant's quota
//!    or because the round's objective preferred other work;
//! 3. plus the GPUs of running jobs it may preempt (preemptible, strictly lower priority): if
//!    the shape fits now, preemption could make room but was not worth its cost;
//! 4. plus the GPUs of every other running job: the sentence names a smallest set of those
//!    jobs (no job in it can be left out) that would have to stop, and why they may not be
//!    preempted;
//! 5. plus the GPUs of jobs started this round: the sentence names the jobs that took them.
//!
//! Levels 2 to 5 are **unschedulable**. [`AfterRound`] holds what the round left behind.

use super::output::{gpu_word, gpus_phrase, job_name};
use crate::assignment::Assignment;
use crate::instance::{Instance, Locality, NodeIx, PendingJob};
use crate::objective::held_after;
use crate::state::{gpus_within_resources, resource_share, ClusterState, GpuUse};
use std::collections::BTreeMap;

/// Which constraint binds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    /// No node has an accepted GPU type.
    GpuType,
    /// Not enough GPUs of the accepted types in the whole cluster (or free).
    Capacity,
    /// Not enough GPUs within one node, rack or pod.
    Locality,
    /// Not enough nodes with `gpus_per_node` GPUs.
    GpusPerNode,
    /// No `max_nodes` nodes hold the gang.
    MaxNodes,
    /// The tenant's quota.
    Quota,
    /// GPUs held by running jobs that may not be preempted for this job.
    Preemption,
    /// GPUs taken by jobs started this round.
    Competition,
    /// CPU or memory.
    Resources,
    /// No shared GPU has room for a sharer.
    Sharing,
    /// The job fits, but the round's objective preferred not to start it.
    Objective,
    /// Not worked out: the round's time limit ran out before this job's reason was.
    Unexplained,
}

impl Binding {
    /// A short name for machines (`explain --format json`).
    pub fn as_str(self) -> &'static str {
        match self {
            Binding::GpuType => "gpu_type",
            Binding::Capacity => "capacity",
            Binding::Locality => "locality",
            Binding::GpusPerNode => "gpus_per_node",
            Binding::MaxNodes => "max_nodes",
            Binding::Quota => "quota",
            Binding::Preemption => "preemption",
            Binding::Competition => "competition",
            Binding::Resources => "resources",
            Binding::Sharing => "sharing",
            Binding::Objective => "objective",
            Binding::Unexplained => "unexplained",
        }
    }
}

/// The `kind` of a waiting job whose reason the time limit left no time to work out.
pub const UNEXPLAINED: &str = "unexplained";

/// Why a job waits.
#[derive(Debug, Clone, PartialEq)]
pub struct Reason {
    /// The sentence.
    pub text: String,
    /// False when no state of this cluster could place the job.
    pub resolvable: bool,
    /// The constraint that binds.
    pub binding: Binding,
}

impl Reason {
    /// `unschedulable`, `unresolvable`, or `unexplained` when the time limit left no time to
    /// work the reason out.
    pub fn kind(&self) -> &'static str {
        if self.binding == Binding::Unexplained {
            UNEXPLAINED
        } else if self.resolvable {
            "unschedulable"
        } else {
            "unresolvable"
        }
    }
}

impl Reason {
    /// The reason of a job whose reason the round had no time left to work out.
    pub fn unexplained() -> Self {
        Reason {
            text: "waits; the round's time limit ran out before its reason was worked out \
                   (`gangplan explain` on the same instance says why it waits)"
                .to_string(),
            resolvable: true,
            binding: Binding::Unexplained,
        }
    }
}

/// Who holds a GPU after the round.
#[derive(Debug, Clone, PartialEq)]
pub enum Holder {
    /// Out of service.
    Down,
    /// Free whole.
    Free,
    /// A running job that keeps it.
    Running(usize),
    /// Shared by running jobs or new sharers.
    Shared,
    /// A pending job started this round.
    Placed(usize),
}

/// What a round leaves behind: who holds every GPU, free GPUs per node, GPUs per tenant.
#[derive(Debug, Clone)]
pub struct AfterRound {
    /// `holders[n][g]`.
    pub holders: Vec<Vec<Holder>>,
    /// Free whole GPUs per node.
    pub free: Vec<u32>,
    /// GPUs each tenant holds after the round.
    pub held: Vec<f64>,
    /// CPU left per node (`None`: unlimited).
    pub cpu_free: Vec<Option<i64>>,
    /// Memory left per node (`None`: unlimited).
    pub mem_free: Vec<Option<i64>>,
    /// Milli left on every shared GPU: (node, gpu, milli).
    pub share_room: Vec<(usize, u32, u32)>,
    /// Whole GPUs per node of every running job that keeps GPUs.
    pub running_holdings: BTreeMap<usize, Vec<(usize, u32)>>,
    /// Whole GPUs per node of every job started this round.
    pub placed_holdings: BTreeMap<usize, Vec<(usize, u32)>>,
    /// Usable GPUs per node (those not down), whoever holds them.
    pub usable: Vec<u32>,
    /// The nodes with free whole GPUs after the round, ascending.
    pub with_free: Vec<usize>,
    /// The nodes of each GPU type, by type name (each list ascending).
    pub nodes_of_type: BTreeMap<String, Vec<usize>>,
}

impl AfterRound {
    /// `nodes` nodes with nothing on them and no GPUs, for unit tests to fill in.
    #[cfg(test)]
    pub(crate) fn empty_for_tests(nodes: usize) -> Self {
        AfterRound {
            holders: vec![Vec::new(); nodes],
            free: vec![0; nodes],
            held: Vec::new(),
            cpu_free: vec![None; nodes],
            mem_free: vec![None; nodes],
            share_room: Vec::new(),
            running_holdings: BTreeMap::new(),
            placed_holdings: BTreeMap::new(),
            usable: vec![0; nodes],
            with_free: Vec::new(),
            nodes_of_type: BTreeMap::new(),
        }
    }

    /// The state after applying `a` to the cluster.
    pub fn new(inst: &Instance, before: &ClusterState, a: &Assignment) -> Self {
        let mut holders = holders_after_preemption(before, a);
        let mut milli = kept_sharer_milli(inst, before, a);
        let (cpu_free, mem_free) = cpu_and_memory_after(inst, before, a);
        give_placed_gpus(inst, a, &mut holders, &mut milli);
        let free: Vec<u32> = holders
            .iter()
            .map(|h| h.iter().filter(|x| **x == Holder::Free).count() as u32)
            .collect();
        let with_free = (0..free.len()).filter(|&n| free[n] > 0).collect();
        let share_room = milli
            .into_iter()
            .map(|((n, g), m)| (n, g, 1000u32.saturating_sub(m)))
            .collect();
        let running_holdings = holdings(&holders, true);
        let placed_holdings = holdings(&holders, false);
        let mut nodes_of_type: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (n, node) in inst.nodes.iter().enumerate() {
            nodes_of_type
                .entry(node.gpu_type.clone())
                .or_default()
                .push(n);
        }
        AfterRound {
            running_holdings,
            placed_holdings,
            usable: inst.nodes.iter().map(|n| n.usable()).collect(),
            with_free,
            nodes_of_type,
            holders,
            free,
            held: held_after(inst, a),
            cpu_free,
            mem_free,
            share_room,
        }
    }

    /// The nodes whose GPU type the job accepts, ascending.
    pub fn eligible(&self, job: &PendingJob) -> Vec<usize> {
        if job.gpu_types.is_none() {
            return (0..self.usable.len()).collect();
        }
        let mut lists = self
            .nodes_of_type
            .iter()
            .filter(|(t, _)| job.accepts_type(t))
            .map(|(_, ns)| ns);
        let Some(first) = lists.next() else {
            return Vec::new();
        };
        let mut nodes = first.clone();
        let mut more = false;
        for ns in lists {
            nodes.extend_from_slice(ns);
            more = true;
        }
        if more {
            nodes.sort_unstable();
        }
        nodes
    }
}

/// Who holds each GPU once the preempted jobs are gone (a preempted whole holder's GPUs are
/// free; a shared GPU stays shared).
fn holders_after_preemption(before: &ClusterState, a: &Assignment) -> Vec<Vec<Holder>> {
    before
        .gpus
        .iter()
        .map(|node| {
            node.iter()
                .map(|u| match u {
                    GpuUse::Down => Holder::Down,
                    GpuUse::Free => Holder::Free,
                    GpuUse::Whole(k) if a.preempted.contains(k) => Holder::Free,
                    GpuUse::Whole(k) => Holder::Running(*k),
                    GpuUse::Shared { .. } => Holder::Shared,
                })
                .collect()
        })
        .collect()
}

/// Milli of the kept running sharers on every GPU shared before the round.
fn kept_sharer_milli(
    inst: &Instance,
    before: &ClusterState,
    a: &Assignment,
) -> BTreeMap<(usize, u32), u32> {
    let mut milli = BTreeMap::new();
    for (n, node) in before.gpus.iter().enumerate() {
        for (g, u) in node.iter().enumerate() {
            if let GpuUse::Shared { jobs, .. } = u {
                let kept: u32 = jobs
                    .iter()
                    .filter(|k| !a.preempted.contains(k))
                    .map(|&k| inst.running[k].gpu_milli.unwrap_or(0))
                    .sum();
                milli.insert((n, g as u32), kept);
            }
        }
    }
    milli
}

/// CPU and memory left per node after the round: what the preempted jobs free, less what
/// the placed jobs take (`None`: unlimited).
fn cpu_and_memory_after(
    inst: &Instance,
    before: &ClusterState,
    a: &Assignment,
) -> (Vec<Option<i64>>, Vec<Option<i64>>) {
    let mut cpu_free = before.cpu_free.clone();
    let mut mem_free = before.mem_free.clone();
    for &k in &a.preempted {
        let r = &inst.running[k];
        for (n, idx) in &r.gpus {
            let on = idx.len() as u32;
            if let Some(c) = cpu_free[*n].as_mut() {
                *c += resource_share(r.cpu_milli, on, r.gpu_count()) as i64;
            }
            if let Some(m) = mem_free[*n].as_mut() {
                *m += resource_share(r.memory_mib, on, r.gpu_count()) as i64;
            }
        }
    }
    for (&j, set) in &a.placed {
        let job = &inst.pending[j];
        for (&n, idx) in set {
            let on = if job.gpus == 0 { 0 } else { idx.len() as u32 };
            if let Some(c) = cpu_free[n].as_mut() {
                *c -= resource_share(job.cpu_milli, on.max(1), job.gpus.max(1)) as i64;
            }
            if let Some(m) = mem_free[n].as_mut() {
                *m -= resource_share(job.memory_mib, on.max(1), job.gpus.max(1)) as i64;
            }
        }
    }
    (cpu_free, mem_free)
}

/// The placed jobs' GPUs: a sharer adds its milli and makes the GPU shared, a whole job holds
/// it.
fn give_placed_gpus(
    inst: &Instance,
    a: &Assignment,
    holders: &mut [Vec<Holder>],
    milli: &mut BTreeMap<(usize, u32), u32>,
) {
    for (&j, set) in &a.placed {
        let job = &inst.pending[j];
        for (&n, idx) in set {
            for &g in idx {
                let Some(h) = holders.get_mut(n).and_then(|h| h.get_mut(g as usize)) else {
                    continue;
                };
                if let Some(mj) = job.gpu_milli {
                    *milli.entry((n, g)).or_insert(0) += mj;
                    *h = Holder::Shared;
                } else {
                    *h = Holder::Placed(j);
                }
            }
        }
    }
}

/// Why a gang's shape does not fit a per-node capacity.
#[derive(Debug, Clone, PartialEq)]
enum Miss {
    NoType,
    Total {
        have: u32,
    },
    Domain {
        level: Locality,
        best: u32,
        name: String,
    },
    PerNode {
        per: u32,
        need: u32,
        have: u32,
        domain: Option<(Locality, String)>,
    },
    MaxNodes {
        limit: u32,
        best: u32,
    },
}

fn type_words(job: &PendingJob) -> String {
    match &job.gpu_types {
        Some(ts) if ts.len() == 1 => format!("{} ", ts[0]),
        Some(ts) => format!("{} ", ts.join("/")),
        None => String::new(),
    }
}

/// The level a gang must stay within: `within`, or node when it may span only one node.
fn level_of(job: &PendingJob) -> Option<Locality> {
    job.within
        .or((job.node_limit() == 1).then_some(Locality::Node))
}

fn domain_name(inst: &Instance, n: usize, level: Locality) -> String {
    match level {
        Locality::Node => inst.nodes[n].name.clone(),
        Locality::Rack => inst.racks[inst.nodes[n].rack].clone(),
        Locality::Pod => inst.pods[inst.nodes[n].pod].clone(),
    }
}

/// The nodes a job may use, grouped by the domain it must stay within (one group when none):
/// the groups in domain order, each group's nodes ascending, one after another in `grouped`.
struct Domains {
    eligible: Vec<usize>,
    grouped: Vec<usize>,
    /// Where each group starts in `grouped`, and its end last.
    starts: Vec<usize>,
}

impl Domains {
    fn new(inst: &Instance, after: &AfterRound, job: &PendingJob) -> Self {
        let eligible = after.eligible(job);
        let level = level_of(job);
        let key = |n: usize| match level {
            Some(Locality::Node) => n,
            Some(Locality::Rack) => inst.nodes[n].rack,
            Some(Locality::Pod) => inst.nodes[n].pod,
            None => 0,
        };
        let mut grouped = eligible.clone();
        if matches!(level, Some(Locality::Rack | Locality::Pod)) {
            grouped.sort_by_key(|&n| (key(n), n));
        }
        let mut starts: Vec<usize> = (0..grouped.len())
            .filter(|&i| i == 0 || key(grouped[i]) != key(grouped[i - 1]))
            .collect();
        starts.push(grouped.len());
        Domains {
            eligible,
            grouped,
            starts,
        }
    }

    /// Each domain's nodes, in domain order.
    fn groups(&self) -> impl Iterator<Item = &[usize]> {
        self.starts.windows(2).map(|w| &self.grouped[w[0]..w[1]])
    }
}

/// Whether the gang's shape fits per-node capacities `cap` (GPU counts only).
fn fit(inst: &Instance, job: &PendingJob, doms: &Domains, cap: &[u32]) -> Result<(), Miss> {
    let g = job.gpus;
    if doms.eligible.is_empty() {
        return Err(Miss::NoType);
    }
    let total: u32 = doms.eligible.iter().map(|&n| cap[n]).sum();
    if total < g {
        return Err(Miss::Total { have: total });
    }
    let level = level_of(job);
    let limit = job.node_limit().max(1) as usize;
    // Per domain: (sum, nodes with `per` GPUs, best sum over `limit` nodes); the first node
    // of the best domain names it.
    let mut best_sum: Option<(u32, usize)> = None;
    let mut best_per: Option<(u32, usize)> = None;
    let mut best_top = 0u32;
    let mut caps: Vec<u32> = Vec::new();
    for nodes in doms.groups() {
        let sum: u32 = nodes.iter().map(|&n| cap[n]).sum();
        let fits = match job.gpus_per_node {
            Some(per) => {
                let per = per.max(1);
                let have = nodes.iter().filter(|&&n| cap[n] >= per).count() as u32;
                if best_per.is_none_or(|b| have > b.0) {
                    best_per = Some((have, nodes[0]));
                }
                have >= g / per
            }
            None => {
                caps.clear();
                caps.extend(nodes.iter().map(|&n| cap[n]));
                let top: u32 = if caps.len() > limit {
                    caps.select_nth_unstable_by(limit - 1, |a, b| b.cmp(a));
                    caps[..limit].iter().sum()
                } else {
                    sum
                };
                best_top = best_top.max(top);
                top >= g
            }
        };
        if fits {
            return Ok(());
        }
        if best_sum.is_none_or(|b| sum > b.0) {
            best_sum = Some((sum, nodes[0]));
        }
    }
    Err(shape_miss(
        inst, job, level, limit, best_sum, best_per, best_top,
    ))
}

/// Why the shape fits no domain, from the best of them: the most GPUs in one domain
/// (`best_sum`), the most nodes with `gpus_per_node` GPUs (`best_per`), each with a node of
/// that domain to name it, and the most GPUs on `limit` nodes (`best_top`).
fn shape_miss(
    inst: &Instance,
    job: &PendingJob,
    level: Option<Locality>,
    limit: usize,
    best_sum: Option<(u32, usize)>,
    best_per: Option<(u32, usize)>,
    best_top: u32,
) -> Miss {
    let g = job.gpus;
    let name = |b: Option<(u32, usize)>| -> (u32, String) {
        match (b, level) {
            (Some((v, n)), Some(l)) => (v, domain_name(inst, n, l)),
            (Some((v, _)), None) => (v, String::new()),
            (None, _) => (0, String::new()),
        }
    };
    let best_sum = name(best_sum);
    let best_per = name(best_per);
    if let Some(l) = level {
        if best_sum.0 < g {
            return Miss::Domain {
                level: l,
                best: best_sum.0,
                name: best_sum.1,
            };
        }
    }
    match job.gpus_per_node {
        Some(per) => Miss::PerNode {
            per,
            need: g / per.max(1),
            have: best_per.0,
            domain: level
                .filter(|l| *l != Locality::Node)
                .map(|l| (l, best_per.1)),
        },
        None => Miss::MaxNodes {
            limit: limit as u32,
            best: best_top,
        },
    }
}

/// The sentence for a miss; `word` is `usable` or `free`.
fn miss_text(inst: &Instance, job: &PendingJob, miss: &Miss, word: &str) -> (String, Binding) {
    match miss {
        Miss::NoType => (no_type_text(inst, job), Binding::GpuType),
        Miss::Total { have } => (total_text(job, *have, word), Binding::Capacity),
        Miss::Domain { level, best, name } => (
            domain_text(job, *level, *best, name, word),
            Binding::Locality,
        ),
        Miss::PerNode {
            per,
            need,
            have,
            domain,
        } => (
            per_node_text(job, *per, *need, *have, domain.as_ref(), word),
            Binding::GpusPerNode,
        ),
        Miss::MaxNodes { limit, best } => {
            (max_nodes_text(job, *limit, *best, word), Binding::MaxNodes)
        }
    }
}

/// [`Miss::NoType`]: no node has a GPU type the job accepts.
fn no_type_text(inst: &Instance, job: &PendingJob) -> String {
    let mut types: Vec<&str> = inst.nodes.iter().map(|n| n.gpu_type.as_str()).collect();
    types.sort_unstable();
    types.dedup();
    let wanted = job.gpu_types.clone().unwrap_or_default().join(" or ");
    format!(
        "needs {wanted}; no node has {wanted} (GPU types here: {})",
        types.join(", ")
    )
}

/// [`Miss::Total`]: fewer GPUs of its type than the job needs (`have` usable, or free).
fn total_text(job: &PendingJob, have: u32, word: &str) -> String {
    let g = job.gpus;
    let tw = type_words(job);
    if word == "usable" {
        format!(
            "needs {g} {tw}{}; the cluster has only {have} usable",
            gpu_word(g)
        )
    } else {
        format!(
            "needs {g} {tw}{}; {have} {} free after this round",
            gpu_word(g),
            if have == 1 { "is" } else { "are" }
        )
    }
}

/// [`Miss::Domain`]: no domain of its `within` level has enough GPUs.
fn domain_text(job: &PendingJob, level: Locality, best: u32, name: &str, word: &str) -> String {
    let g = job.gpus;
    let tw = type_words(job);
    let at = if name.is_empty() {
        String::new()
    } else {
        format!(" ({name})")
    };
    let l = level.as_str();
    format!(
        "needs {g} {tw}{} within one {l}; the most {word} in any {l} is {best}{at}",
        gpu_word(g)
    )
}

/// [`Miss::PerNode`]: too few nodes (in one domain, when it must stay within one) have
/// `gpus_per_node` GPUs.
fn per_node_text(
    job: &PendingJob,
    per: u32,
    need: u32,
    have: u32,
    domain: Option<&(Locality, String)>,
    word: &str,
) -> String {
    let tw = type_words(job);
    let within = match domain {
        Some((l, name)) if !name.is_empty() => {
            format!(
                " within one {}; the best {} ({name}) has {have}",
                l.as_str(),
                l.as_str()
            )
        }
        Some((l, _)) => format!(" within one {}; the best has {have}", l.as_str()),
        None => format!(
            "; {have} {} that many",
            if have == 1 { "has" } else { "have" }
        ),
    };
    format!(
        "needs {need} {} with {per} {word} {tw}{}{}{within}",
        if need == 1 { "node" } else { "nodes" },
        gpu_word(per),
        if need == 1 { "" } else { " each" }
    )
}

/// [`Miss::MaxNodes`]: no `max_nodes` nodes together have the job's GPUs.
fn max_nodes_text(job: &PendingJob, limit: u32, best: u32, word: &str) -> String {
    let g = job.gpus;
    let tw = type_words(job);
    let nodes = if limit == 1 {
        "one node has".to_string()
    } else {
        format!("{limit} nodes have")
    };
    format!(
        "max_nodes {limit}, but no {nodes} {g} {word} {tw}{} (at most {best})",
        gpu_word(g)
    )
}

/// Whole GPUs each listed job holds per node after the round (running: kept GPUs).
fn holdings(holders: &[Vec<Holder>], running: bool) -> BTreeMap<usize, Vec<(usize, u32)>> {
    let mut out: BTreeMap<usize, BTreeMap<usize, u32>> = BTreeMap::new();
    for (n, node) in holders.iter().enumerate() {
        for h in node {
            match (h, running) {
                (Holder::Running(k), true) | (Holder::Placed(k), false) => {
                    *out.entry(*k).or_default().entry(n).or_default() += 1
                }
                _ => {}
            }
        }
    }
    out.into_iter()
        .map(|(k, m)| (k, m.into_iter().collect()))
        .collect()
}

/// Largest set [`minimal_set`] prunes member by member; a larger set is reported as found.
const PRUNE_LIMIT: usize = 32;

/// A set of `candidates` whose GPUs, added to `cap`, let the shape fit: the shortest prefix
/// of the candidates taken largest first (found by bisection, fit being monotone in the
/// prefix), then pruned so that no member can be dropped (when it has at most
/// [`PRUNE_LIMIT`] members). `None` if even all of them do not.
fn minimal_set(
    inst: &Instance,
    job: &PendingJob,
    doms: &Domains,
    cap: &[u32],
    candidates: &[(usize, &[(usize, u32)])],
) -> Option<Vec<usize>> {
    let mut c = cap.to_vec();
    let mut with = |set: &[usize]| {
        c.copy_from_slice(cap);
        for &i in set {
            for &(n, k) in candidates[i].1 {
                c[n] += k;
            }
        }
        fit(inst, job, doms, &c).is_ok()
    };
    let mut order: Vec<usize> = (0..candidates.len()).collect();
    order.sort_by_key(|&i| {
        let gpus: u32 = candidates[i].1.iter().map(|x| x.1).sum();
        (std::cmp::Reverse(gpus), i)
    });
    if !with(&order) {
        return None;
    }
    // Shortest fitting prefix: fits(order[..hi]) holds, fits(order[..lo]) does not.
    let (mut lo, mut hi) = (0usize, order.len());
    if with(&[]) {
        hi = 0;
    }
    while hi > lo + 1 {
        let mid = (lo + hi) / 2;
        if with(&order[..mid]) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let mut set: Vec<usize> = order[..hi].to_vec();
    if set.len() <= PRUNE_LIMIT {
        // Drop every member the rest can do without, smallest first.
        let mut i = set.len();
        while i > 0 {
            i -= 1;
            let mut rest = set.clone();
            rest.remove(i);
            if with(&rest) {
                set = rest;
            }
        }
    }
    set.sort_unstable();
    Some(set)
}

fn where_text(inst: &Instance, on: &[(usize, u32)]) -> String {
    on.iter()
        .map(|&(n, k)| format!("{k} {} on {}", gpu_word(k), inst.nodes[n].name))
        .collect::<Vec<_>>()
        .join(", ")
}

fn list(names: &[String]) -> String {
    const SHOWN: usize = 5;
    if names.len() > SHOWN + 1 {
        return format!(
            "{} and {} more",
            names[..SHOWN].join(", "),
            names.len() - SHOWN
        );
    }
    match names.len() {
        0 => String::new(),
        1 => names[0].clone(),
        _ => format!(
            "{} and {}",
            names[..names.len() - 1].join(", "),
            names[names.len() - 1]
        ),
    }
}

/// The reason pending job `j` waits after the round described by `after`. In turn: a quota
/// the job alone exceeds, CPU-only jobs and sharers (their own rules), a shape no usable GPUs
/// fit, CPU or memory no node has, then (the job fits the usable GPUs) whether it fits the
/// free ones (and, where it does, with the CPU and memory left beside them), and if not what
/// blocks it (see [`blocked_tail`]).
pub fn reason(inst: &Instance, after: &AfterRound, j: usize) -> Reason {
    reason_with(inst, after, &mut ReasonMemo::default(), j)
}

/// What the GPU side of a reason depends on: accepted types, size, `within`, `max_nodes`,
/// `gpus_per_node`, share and priority (CPU, memory and tenant aside). Jobs of one key fit
/// the same capacities and may preempt the same jobs.
pub type CapacityKey = (
    Option<Vec<String>>,
    u32,
    Option<Locality>,
    Option<u32>,
    Option<u32>,
    Option<u32>,
    i64,
);

/// Pending job's [`CapacityKey`].
pub fn capacity_key(job: &PendingJob) -> CapacityKey {
    (
        job.gpu_types.clone(),
        job.gpus,
        job.within,
        job.max_nodes,
        job.gpus_per_node,
        job.gpu_milli,
        job.priority,
    )
}

/// What the reasons of jobs of one [`CapacityKey`] share, worked out for the first of them:
/// their domains, whether they fit the usable and the free GPUs, and what blocks them. Reuse
/// one memo only for jobs of one key.
#[derive(Default)]
pub struct ReasonMemo {
    domains: Option<Domains>,
    usable_fit: Option<Result<(), Miss>>,
    free_fit: Option<Result<(), Miss>>,
    blocked: Option<BlockedTail>,
}

/// [`reason`], with what jobs of `j`'s [`CapacityKey`] share taken from (or put in) `memo`.
pub fn reason_with(inst: &Instance, after: &AfterRound, memo: &mut ReasonMemo, j: usize) -> Reason {
    let job = &inst.pending[j];
    if let Some(r) = quota_alone(inst, job) {
        return r;
    }
    if job.gpus == 0 {
        return cpu_only_reason(inst, after, job);
    }
    if job.is_sharer() {
        return sharer_reason(inst, after, job);
    }
    let doms = memo
        .domains
        .get_or_insert_with(|| Domains::new(inst, after, job));
    let usable_fit = memo
        .usable_fit
        .get_or_insert_with(|| fit(inst, job, doms, &after.usable));
    if let Err(miss) = usable_fit {
        let (text, b) = miss_text(inst, job, miss, "usable");
        return unresolvable(text, b);
    }
    if let Some(text) = resources_never_fit(inst, job, doms) {
        return unresolvable(text, Binding::Resources);
    }
    let quota_text = quota_after(inst, after, job);
    let free_fit = memo
        .free_fit
        .get_or_insert_with(|| fit(inst, job, doms, &after.free));
    let Err(miss) = free_fit else {
        return fits_free_reason(inst, after, job, doms, quota_text);
    };
    if let Some(text) = shape_never_fits_resources(inst, after, job, doms) {
        return unresolvable(text, Binding::Resources);
    }
    let (head, binding) = miss_text(inst, job, miss, "free");
    let head = match &quota_text {
        Some(q) => format!("{head}; also, {q}"),
        None => head,
    };
    let (tail, tail_binding) = memo
        .blocked
        .get_or_insert_with(|| blocked_tail(inst, after, job, doms));
    unschedulable(format!("{head}{tail}"), tail_binding.unwrap_or(binding))
}

/// A reason no state of this cluster resolves.
fn unresolvable(text: String, binding: Binding) -> Reason {
    Reason {
        text,
        resolvable: false,
        binding,
    }
}

/// A reason another state of the cluster could resolve.
fn unschedulable(text: String, binding: Binding) -> Reason {
    Reason {
        text,
        resolvable: true,
        binding,
    }
}

/// The tenant's quota, when the job alone needs more.
fn quota_alone(inst: &Instance, job: &PendingJob) -> Option<Reason> {
    let tenant = &inst.tenants[job.tenant];
    let need = job.gpu_equivalent();
    let q = tenant.quota?;
    (need > q + 1e-9).then(|| {
        unresolvable(
            format!(
                "tenant {}'s quota is {q} GPUs; this job alone needs {}",
                tenant.name,
                fmt_gpus(need)
            ),
            Binding::Quota,
        )
    })
}

/// A job whose shape fits the GPUs free after the round: its tenant's quota, else the CPU
/// and memory left beside those GPUs (where the shape does not fit the GPUs each node has
/// them for), else the round's objective.
fn fits_free_reason(
    inst: &Instance,
    after: &AfterRound,
    job: &PendingJob,
    doms: &Domains,
    quota_text: Option<String>,
) -> Reason {
    if let Some(text) = quota_text {
        return unschedulable(text, Binding::Quota);
    }
    // The eligible nodes with free GPUs (the others have none), each with its free GPUs cut to
    // what its CPU and memory hold for the job: their sum settles most shapes, and the shape
    // test runs only where it does not.
    let cut: Vec<(NodeIx, u32, u32)> = after
        .with_free
        .iter()
        .filter(|n| doms.eligible.binary_search(n).is_ok())
        .map(|&n| {
            let within = gpus_within_resources(job, after.cpu_free[n], after.mem_free[n]);
            (n, after.free[n], after.free[n].min(within))
        })
        .collect();
    let free_total: u32 = cut.iter().map(|c| c.1).sum();
    let most: u32 = cut.iter().map(|c| c.2).sum();
    let (verb, them) = if free_total == 1 {
        ("is", "it")
    } else {
        ("are", "them")
    };
    let free = format!(
        "{free_total} {}{} {verb} free after this round and its shape fits {them}",
        type_words(job),
        gpu_word(free_total),
    );
    let shape_fits = most >= job.gpus && {
        let mut room = after.free.clone();
        for &(n, _, r) in &cut {
            room[n] = r;
        }
        fit(inst, job, doms, &room).is_ok()
    };
    if !shape_fits {
        if let Some(text) = shape_never_fits_resources(inst, after, job, doms) {
            return unresolvable(text, Binding::Resources);
        }
        let held = if most < job.gpus {
            format!("{most} of its {}", gpus_phrase(job.gpus))
        } else {
            "all its GPUs, but not in its shape".to_string()
        };
        return unschedulable(
            format!(
                "{free}, but not the CPU and memory left beside {them} (it asks {} cpu_milli and {} memory_mib; what is left there holds {held})",
                job.cpu_milli, job.memory_mib
            ),
            Binding::Resources,
        );
    }
    unschedulable(
        format!(
            "{free} with the CPU and memory left beside {them}, but starting it would lower the round's objective (higher-value jobs, spread or fairness costs)"
        ),
        Binding::Objective,
    )
}

/// A job and the whole GPUs it holds per node.
type Holding<'a> = (usize, &'a [(usize, u32)]);

/// What a reason adds after the sentence's head (what the job misses) and the binding it
/// names instead of the miss's (`None`: the miss's).
type BlockedTail = (String, Option<Binding>);

/// Why a job whose shape does not fit the GPUs free after the round waits, after the head of
/// its sentence. The smallest set that would make room is sought, in turn, among the running
/// jobs it may preempt (the objective judged it not worth it), then, with those freed, the
/// running jobs it may not preempt, then, with those freed too, the jobs started this round
/// (competition). When none does, nothing.
fn blocked_tail(
    inst: &Instance,
    after: &AfterRound,
    job: &PendingJob,
    doms: &Domains,
) -> BlockedTail {
    let running = &after.running_holdings;
    let may = |k: usize| {
        let r = &inst.running[k];
        inst.policy.preemption && r.preemptible && r.priority < job.priority
    };
    let allowed: Vec<Holding> = running
        .iter()
        .filter(|(k, _)| may(**k))
        .map(|(k, v)| (*k, v.as_slice()))
        .collect();
    let mut cap = after.free.clone();
    if let Some(set) = minimal_set(inst, job, doms, &cap, &allowed) {
        let tail = format!(
            "; preempting {} would make room, but the round's objective judged it not worth the cost",
            list(&preemptible_names(inst, &allowed, &set))
        );
        return (tail, None);
    }
    add_holdings(&mut cap, &allowed);
    let others: Vec<Holding> = running
        .iter()
        .filter(|(k, _)| !may(**k))
        .map(|(k, v)| (*k, v.as_slice()))
        .collect();
    if let Some(set) = minimal_set(inst, job, doms, &cap, &others) {
        let verb = if allowed.is_empty() {
            "would need to preempt"
        } else {
            "even with preemption, would need to preempt"
        };
        let tail = format!(
            "; {verb} {}",
            list(&unpreemptible_names(inst, job, &others, &set))
        );
        return (tail, Some(Binding::Preemption));
    }
    add_holdings(&mut cap, &others);
    let placed: Vec<Holding> = after
        .placed_holdings
        .iter()
        .map(|(k, v)| (*k, v.as_slice()))
        .collect();
    if let Some(set) = minimal_set(inst, job, doms, &cap, &placed) {
        return competition_tail(inst, &placed, &set, !others.is_empty());
    }
    (String::new(), None)
}

/// Add the GPUs of `jobs` to per-node capacities `cap`.
fn add_holdings(cap: &mut [u32], jobs: &[Holding]) {
    for (_, on) in jobs {
        for &(n, k) in *on {
            cap[n] += k;
        }
    }
}

/// The running jobs `set` (indices into `allowed`) by name, with where they hold GPUs.
fn preemptible_names(inst: &Instance, allowed: &[Holding], set: &[usize]) -> Vec<String> {
    set.iter()
        .map(|&i| {
            let (k, on) = &allowed[i];
            format!(
                "{} ({})",
                job_name(&inst.running[*k].id),
                where_text(inst, on)
            )
        })
        .collect()
}

/// The running jobs `set` (indices into `others`) by name, with where they hold GPUs and why
/// the job may not preempt them.
fn unpreemptible_names(
    inst: &Instance,
    job: &PendingJob,
    others: &[Holding],
    set: &[usize],
) -> Vec<String> {
    set.iter()
        .map(|&i| {
            let (k, on) = &others[i];
            let r = &inst.running[*k];
            let why = if !r.preemptible {
                "not preemptible".to_string()
            } else if !inst.policy.preemption {
                "not preemptible this round (policy.preemption is off)".to_string()
            } else {
                format!("priority {} is not below its {}", r.priority, job.priority)
            };
            format!("{} ({}; {why})", job_name(&r.id), where_text(inst, on))
        })
        .collect()
}

/// The GPUs the job needs went to the jobs `set` (indices into `placed`) started this round
/// (`blocked`: and to running jobs it may not preempt).
fn competition_tail(
    inst: &Instance,
    placed: &[Holding],
    set: &[usize],
    blocked: bool,
) -> BlockedTail {
    let names: Vec<String> = set
        .iter()
        .map(|&i| job_name(&inst.pending[placed[i].0].id))
        .collect();
    let blocked = if blocked {
        " and running jobs it may not preempt".to_string()
    } else {
        String::new()
    };
    let tail = format!(
        "; the GPUs it needs went to {} (started this round, worth more to the round's objective){blocked}",
        list(&names)
    );
    (tail, Some(Binding::Competition))
}

fn fmt_gpus(x: f64) -> String {
    if (x - x.round()).abs() < 1e-9 {
        format!("{}", x.round() as i64)
    } else {
        format!("{x:.3}")
    }
}

/// Whether no node could ever hold the job's CPU or memory share (per node it may use).
fn resources_never_fit(inst: &Instance, job: &PendingJob, doms: &Domains) -> Option<String> {
    if job.cpu_milli == 0 && job.memory_mib == 0 {
        return None;
    }
    // The smallest share a node can carry: gpus_per_node GPUs, or one GPU.
    let on = job
        .gpus_per_node
        .unwrap_or(if job.node_limit() == 1 { job.gpus } else { 1 });
    let cpu = resource_share(job.cpu_milli, on, job.gpus);
    let mem = resource_share(job.memory_mib, on, job.gpus);
    let ok = doms
        .eligible
        .iter()
        .any(|&n| inst.nodes[n].sizes_hold(cpu, mem));
    (!ok).then(|| {
        format!(
            "needs at least {cpu} cpu_milli and {mem} memory_mib on each node it uses; no {}node has that much",
            type_words(job)
        )
    })
}

/// Whether the job's shape fits no nodes even with every running job gone, once each node's
/// usable GPUs are cut to what its CPU and memory sizes hold for the job: a gang that must
/// span nodes of which some can never give it their share waits whatever finishes.
fn shape_never_fits_resources(
    inst: &Instance,
    after: &AfterRound,
    job: &PendingJob,
    doms: &Domains,
) -> Option<String> {
    if job.cpu_milli == 0 && job.memory_mib == 0 {
        return None;
    }
    let size = |v: Option<u64>| v.map(|x| i64::try_from(x).unwrap_or(i64::MAX));
    let held = |n: NodeIx| {
        let node = &inst.nodes[n];
        gpus_within_resources(job, size(node.cpu_milli), size(node.memory_mib))
    };
    // Their sum settles it where the job may spread over any nodes (counted until it holds
    // the job); its shape needs the test.
    let mut most = 0u32;
    for &n in &doms.eligible {
        most = most.saturating_add(after.usable[n].min(held(n)));
        if most >= job.gpus {
            break;
        }
    }
    let spreads_freely =
        job.within.is_none() && job.gpus_per_node.is_none() && job.node_limit() >= job.gpus;
    let fits = most >= job.gpus
        && (spreads_freely || {
            let mut room = after.usable.clone();
            for &n in &doms.eligible {
                room[n] = room[n].min(held(n));
            }
            fit(inst, job, doms, &room).is_ok()
        });
    let held = if most < job.gpus {
        format!("{most} of its {}", gpus_phrase(job.gpus))
    } else {
        format!("its {} but not in its shape", gpus_phrase(job.gpus))
    };
    (!fits).then(|| {
        format!(
            "asks {} cpu_milli and {} memory_mib; even with every running job gone, the CPU and memory of the {}nodes it may use hold {held}",
            job.cpu_milli,
            job.memory_mib,
            type_words(job),
        )
    })
}

fn cpu_only_reason(inst: &Instance, after: &AfterRound, job: &PendingJob) -> Reason {
    let fits = |cpu: Option<i64>, mem: Option<i64>| {
        cpu.is_none_or(|c| c >= job.cpu_milli as i64)
            && mem.is_none_or(|m| m >= job.memory_mib as i64)
    };
    let ever = inst.nodes.iter().any(|n| {
        fits(
            n.cpu_milli.map(|c| c as i64),
            n.memory_mib.map(|m| m as i64),
        )
    });
    if !ever {
        return Reason {
            text: format!(
                "needs {} cpu_milli and {} memory_mib on one node; no node has that much",
                job.cpu_milli, job.memory_mib
            ),
            resolvable: false,
            binding: Binding::Resources,
        };
    }
    let now = (0..inst.nodes.len()).any(|n| fits(after.cpu_free[n], after.mem_free[n]));
    let best_cpu = after.cpu_free.iter().flatten().max().copied();
    Reason {
        text: if now {
            "a node has room for its CPU and memory, but starting it would lower the round's objective".to_string()
        } else {
            format!(
                "needs {} cpu_milli and {} memory_mib on one node; no node has that much left after this round (most CPU left: {})",
                job.cpu_milli,
                job.memory_mib,
                best_cpu.map_or("unlimited".to_string(), |c| c.to_string())
            )
        },
        resolvable: true,
        binding: if now {
            Binding::Objective
        } else {
            Binding::Resources
        },
    }
}

/// The tenant's quota, when the GPUs it holds after the round leave no room for the job.
fn quota_after(inst: &Instance, after: &AfterRound, job: &PendingJob) -> Option<String> {
    let tenant = &inst.tenants[job.tenant];
    let need = job.gpu_equivalent();
    tenant.quota.and_then(|q| {
        (after.held[job.tenant] + need > q + 1e-9).then(|| {
            format!(
                "tenant {} holds {} GPUs of its quota {q} after this round; this job needs {} more",
                tenant.name,
                fmt_gpus(after.held[job.tenant]),
                fmt_gpus(need)
            )
        })
    })
}

fn sharer_reason(inst: &Instance, after: &AfterRound, job: &PendingJob) -> Reason {
    let mj = job.gpu_milli.unwrap_or(0);
    let eligible = after.eligible(job);
    if eligible.is_empty() {
        let (text, binding) = miss_text(inst, job, &Miss::NoType, "usable");
        return Reason {
            text,
            resolvable: false,
            binding,
        };
    }
    if eligible.iter().all(|&n| after.usable[n] == 0) {
        return Reason {
            text: format!("needs one {}GPU; every one is down", type_words(job)),
            resolvable: false,
            binding: Binding::Capacity,
        };
    }
    let free: u32 = eligible.iter().map(|&n| after.free[n]).sum();
    let room = after
        .share_room
        .iter()
        .filter(|(n, _, _)| eligible.binary_search(n).is_ok())
        .map(|x| x.2)
        .max()
        .unwrap_or(0);
    if free > 0 || room >= mj {
        if let Some(text) = quota_after(inst, after, job) {
            return Reason {
                text,
                resolvable: true,
                binding: Binding::Quota,
            };
        }
        return Reason {
            text: format!(
                "a {}GPU has room for its {mj} milli, but starting it would lower the round's objective",
                type_words(job)
            ),
            resolvable: true,
            binding: Binding::Objective,
        };
    }
    Reason {
        text: format!(
            "needs {mj} milli of one {}GPU; no GPU is free after this round and the most room on a shared one is {room} milli",
            type_words(job)
        ),
        resolvable: true,
        binding: Binding::Sharing,
    }
}
