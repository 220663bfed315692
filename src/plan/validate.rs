//! The independent validator: the rules of SPEC.md checked on a plan and its instance, with
//! no code shared with any planner beyond the instance types. Every plan is validated before
//! it is written; a plan that fails is a bug and is never written.
//!
//! Rules: (0) the plan covers each pending job exactly once and names only known jobs;
//! (1) gang sizes; (2) GPUs exist and are not down; (3) no GPU given twice or while a kept
//! running job holds it, sharers total at most 1000 milli and a shared GPU is never given
//! whole; (4) gpu_type, within, max_nodes, gpus_per_node; (5) only preemptible jobs are
//! preempted, and only for strictly higher-priority work placed on their GPUs; (6) quotas;
//! (7) CPU and memory; (9) a node one of the round's reservations holds for a blocked gang
//! takes that gang and jobs whose time limit ends them by the reservation's start only, and
//! the plan's reservations hold nodes of the instance for jobs it leaves waiting. Rule 8
//! (determinism) is a property of planners, checked by the tests.

use super::types::{Placement, Plan, PLAN_FORMAT};
use crate::error::{Error, Result};
use crate::instance::{Instance, Locality, PendingJob};
use std::collections::{BTreeMap, BTreeSet};

/// Check a plan; `Err(InvalidPlan)` lists every violation.
pub fn validate_plan(inst: &Instance, plan: &Plan) -> Result<()> {
    let v = violations(inst, plan);
    if v.is_empty() {
        Ok(())
    } else {
        Err(Error::InvalidPlan { violations: v })
    }
}

/// Check an assignment before it is rendered (used to vet solver answers). The waiting jobs'
/// reasons are not worked out: no rule reads them.
pub fn check_assignment(inst: &Instance, a: &crate::assignment::Assignment) -> Result<()> {
    let info = super::types::SolverInfo::blank("");
    let now = Some(std::time::Instant::now());
    validate_plan(
        inst,
        &super::render::render_plan_until(inst, a, super::types::Status::Fallback, info, now),
    )
}

/// A placement's or job's `gpu_milli` in words.
fn milli_text(m: Option<u32>) -> String {
    m.map_or("none (whole GPUs)".to_string(), |m| m.to_string())
}

/// Every violation, in words, in rule order: the format, rule 0, the preemption list (rule 5),
/// then each placement (rules 1-5 and 9), then the shared GPUs (rule 3), the victims (rule 5),
/// quotas (rule 6), CPU and memory (rule 7) and the plan's reservations (rule 9). Tests and
/// tools compare these lines.
pub fn violations(inst: &Instance, plan: &Plan) -> Vec<String> {
    let mut out = Vec::new();
    check_format(plan, &mut out);
    let (pending_ix, running_ix) = inst.job_indices();
    check_coverage(inst, plan, &pending_ix, &mut out);
    let preempted = check_preemption_list(inst, plan, &running_ix, &mut out);
    let mut tally = Tally::before_round(inst, &preempted);
    for p in &plan.placements {
        let Some(&j) = pending_ix.get(p.job.as_str()) else {
            continue;
        };
        check_placement(inst, &inst.pending[j], p, &mut tally, &mut out);
    }
    check_shared_gpus(inst, &tally.gpus, &mut out);
    check_victims(inst, plan, &pending_ix, &preempted, &tally.gpus, &mut out);
    check_quotas(inst, &tally.tenants, &mut out);
    check_cpu_and_memory(inst, &tally.nodes, &mut out);
    check_reservations(inst, plan, &mut out);
    out
}

/// Rule 9, the plan's own reservations (`reservation` and `reservations`): each holds nodes
/// of the instance for a job the plan leaves waiting.
fn check_reservations(inst: &Instance, plan: &Plan, out: &mut Vec<String>) {
    let waiting: BTreeSet<&str> = plan.pending.iter().map(|p| p.job.as_str()).collect();
    // `reservations` repeats `reservation` as its first entry: each is checked once.
    let listed = plan.reservations.iter();
    let extra = listed.filter(|r| Some(*r) != plan.reservation.as_ref());
    for r in plan.reservation.iter().chain(extra) {
        if !waiting.contains(r.job.as_str()) {
            out.push(format!(
                "rule 9: reservation for job {:?}: the job is not listed in the plan's pending; a reservation holds nodes for a job that waits",
                r.job
            ));
        }
        for n in r
            .nodes
            .iter()
            .filter(|n| !inst.node_by_name.contains_key(*n))
        {
            out.push(format!(
                "rule 9: reservation for job {:?}: node {n:?} is not a node of the instance",
                r.job
            ));
        }
    }
}

/// The plan's `format` string.
fn check_format(plan: &Plan, out: &mut Vec<String>) {
    if plan.format != PLAN_FORMAT {
        out.push(format!(
            "format is {:?}; expected {PLAN_FORMAT:?}",
            plan.format
        ));
    }
}

/// Rule 0: the plan names only pending jobs of the instance, and each of them exactly once
/// (placed or listed as pending).
fn check_coverage(
    inst: &Instance,
    plan: &Plan,
    pending_ix: &BTreeMap<&str, usize>,
    out: &mut Vec<String>,
) {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for id in plan
        .placements
        .iter()
        .map(|p| p.job.as_str())
        .chain(plan.pending.iter().map(|p| p.job.as_str()))
    {
        *seen.entry(id).or_default() += 1;
        if !pending_ix.contains_key(id) {
            out.push(format!(
                "rule 0: job {id:?} is not a pending job of the instance"
            ));
        }
    }
    for j in &inst.pending {
        match seen.get(j.id.as_str()) {
            None => out.push(format!(
                "rule 0: pending job {:?} is neither placed nor listed as pending",
                j.id
            )),
            Some(&c) if c > 1 => {
                out.push(format!("rule 0: pending job {:?} appears {c} times", j.id))
            }
            _ => {}
        }
    }
}

/// Rule 5, the list itself: every preempted job is a preemptible running job, named once.
/// Returns the running indices of the preempted jobs.
fn check_preemption_list(
    inst: &Instance,
    plan: &Plan,
    running_ix: &BTreeMap<&str, usize>,
    out: &mut Vec<String>,
) -> BTreeSet<usize> {
    let mut preempted = BTreeSet::new();
    for p in &plan.preemptions {
        match running_ix.get(p.job.as_str()) {
            None => out.push(format!(
                "rule 5: preempted job {:?} is not a running job",
                p.job
            )),
            Some(&k) => {
                if !inst.running[k].preemptible {
                    out.push(format!(
                        "rule 5: running job {:?} is preempted but not preemptible",
                        p.job
                    ));
                }
                if !preempted.insert(k) {
                    out.push(format!(
                        "rule 5: running job {:?} is preempted twice",
                        p.job
                    ));
                }
            }
        }
    }
    preempted
}

/// A GPU: (node index, GPU index).
type Gpu = (usize, u32);

/// What the round adds up to, as the placements are checked one by one: GPUs, node CPU and
/// memory, and tenants' holdings (each starting from the running jobs the plan keeps).
struct Tally<'i> {
    gpus: GpuTally<'i>,
    nodes: NodeTally,
    tenants: TenantTally,
}

impl<'i> Tally<'i> {
    fn before_round(inst: &'i Instance, preempted: &BTreeSet<usize>) -> Self {
        Tally {
            gpus: GpuTally::before_round(inst, preempted),
            nodes: NodeTally::before_round(inst, preempted),
            tenants: TenantTally::before_round(inst, preempted),
        }
    }
}

/// Who holds each GPU.
struct GpuTally<'i> {
    /// GPU -> the kept running job that holds it whole.
    whole_holder: BTreeMap<Gpu, usize>,
    /// GPU -> milli of its sharers (kept running ones and placed ones).
    milli: BTreeMap<Gpu, u32>,
    /// GPU -> the placed job given it whole.
    given_whole: BTreeMap<Gpu, &'i str>,
    /// GPU -> the preempted running job that held it.
    preempted_at: BTreeMap<Gpu, usize>,
    /// Preempted job -> the highest priority placed on its GPUs.
    victims_used: BTreeMap<usize, i64>,
}

impl GpuTally<'_> {
    /// The GPUs of the running jobs: whole holders and sharers of the kept ones, and where
    /// the preempted ones were.
    fn before_round(inst: &Instance, preempted: &BTreeSet<usize>) -> Self {
        let mut whole_holder = BTreeMap::new();
        let mut milli: BTreeMap<Gpu, u32> = BTreeMap::new();
        for (k, r) in inst.running.iter().enumerate() {
            if preempted.contains(&k) {
                continue;
            }
            for (n, idx) in &r.gpus {
                for &g in idx {
                    match r.gpu_milli {
                        Some(m) => *milli.entry((*n, g)).or_default() += m,
                        None => {
                            whole_holder.insert((*n, g), k);
                        }
                    }
                }
            }
        }
        let mut preempted_at = BTreeMap::new();
        for &k in preempted {
            for (n, idx) in &inst.running[k].gpus {
                for &g in idx {
                    preempted_at.insert((*n, g), k);
                }
            }
        }
        GpuTally {
            whole_holder,
            milli,
            given_whole: BTreeMap::new(),
            preempted_at,
            victims_used: BTreeMap::new(),
        }
    }
}

/// CPU and memory per node, before the round and after it.
struct NodeTally {
    cpu_used: Vec<i128>,
    mem_used: Vec<i128>,
    cpu_before: Vec<i128>,
    mem_before: Vec<i128>,
    /// What the placed jobs take, per node.
    cpu_placed: Vec<i128>,
    mem_placed: Vec<i128>,
}

impl NodeTally {
    /// Every running job's share on each of its nodes (before), the kept ones' (used).
    fn before_round(inst: &Instance, preempted: &BTreeSet<usize>) -> Self {
        let mut t = NodeTally {
            cpu_used: vec![0; inst.nodes.len()],
            mem_used: vec![0; inst.nodes.len()],
            cpu_before: vec![0; inst.nodes.len()],
            mem_before: vec![0; inst.nodes.len()],
            cpu_placed: vec![0; inst.nodes.len()],
            mem_placed: vec![0; inst.nodes.len()],
        };
        for (k, r) in inst.running.iter().enumerate() {
            let total: usize = r.gpus.iter().map(|(_, g)| g.len()).sum();
            for (n, idx) in &r.gpus {
                t.cpu_before[*n] += node_share(r.cpu_milli, idx.len(), total);
                t.mem_before[*n] += node_share(r.memory_mib, idx.len(), total);
                if !preempted.contains(&k) {
                    t.cpu_used[*n] += node_share(r.cpu_milli, idx.len(), total);
                    t.mem_used[*n] += node_share(r.memory_mib, idx.len(), total);
                }
            }
        }
        t
    }
}

/// A job's share of `total` CPU or memory on a node where it has `on` of its `gpus` GPUs:
/// ceil(total × on / gpus), all of it for a job of at most one GPU.
fn node_share(total: u64, on: usize, gpus: usize) -> i128 {
    if gpus <= 1 {
        total as i128
    } else {
        (total as i128 * on as i128 + gpus as i128 - 1) / gpus as i128
    }
}

/// GPUs each tenant holds (a sharer counts its milli / 1000), and which tenants got a job.
struct TenantTally {
    held: Vec<f64>,
    held_before: Vec<f64>,
    placed: BTreeSet<usize>,
}

impl TenantTally {
    fn before_round(inst: &Instance, preempted: &BTreeSet<usize>) -> Self {
        let mut held = vec![0.0f64; inst.tenants.len()];
        let mut held_before = vec![0.0f64; inst.tenants.len()];
        for (k, r) in inst.running.iter().enumerate() {
            let eq = r
                .gpu_milli
                .map_or(r.gpu_count() as f64, |m| m as f64 / 1000.0);
            held_before[r.tenant] += eq;
            if !preempted.contains(&k) {
                held[r.tenant] += eq;
            }
        }
        TenantTally {
            held,
            held_before,
            placed: BTreeSet::new(),
        }
    }
}

/// Rules 1-5 and 9 for one placement of a pending job, adding it to the tally.
fn check_placement<'i>(
    inst: &Instance,
    job: &'i PendingJob,
    p: &Placement,
    tally: &mut Tally<'i>,
    out: &mut Vec<String>,
) {
    tally.tenants.placed.insert(job.tenant);
    tally.tenants.held[job.tenant] += job.gpu_milli.map_or(job.gpus as f64, |m| m as f64 / 1000.0);
    check_gang(job, p, out);
    let mut racks = BTreeSet::new();
    let mut pods = BTreeSet::new();
    for (name, idx) in &p.gpus {
        let Some(&n) = inst.node_by_name.get(name) else {
            out.push(format!(
                "rule 2: job {:?} uses unknown node {name:?}",
                job.id
            ));
            continue;
        };
        racks.insert(inst.nodes[n].rack);
        pods.insert(inst.nodes[n].pod);
        check_node_part(inst, job, n, idx, out);
        let mut uniq = BTreeSet::new();
        for &g in idx {
            check_gpu(inst, job, n, g, &mut uniq, &mut tally.gpus, out);
        }
        let total = job.gpus as usize;
        let (cpu, mem) = (
            node_share(job.cpu_milli, idx.len(), total),
            node_share(job.memory_mib, idx.len(), total),
        );
        tally.nodes.cpu_used[n] += cpu;
        tally.nodes.mem_used[n] += mem;
        tally.nodes.cpu_placed[n] += cpu;
        tally.nodes.mem_placed[n] += mem;
    }
    check_locality(job, p.gpus.len() as u32, racks.len(), pods.len(), out);
}

/// Rule 1: the gang gets all its GPUs, with the job's own `gpu_milli`; a CPU-only job sits on
/// exactly one node.
fn check_gang(job: &PendingJob, p: &Placement, out: &mut Vec<String>) {
    let id = &job.id;
    let count: usize = p.gpus.values().map(|v| v.len()).sum();
    let want = job.gpus as usize;
    if count != want {
        out.push(format!(
            "rule 1: job {id:?} gets {count} GPUs but asks for {want} (gang: all or nothing)"
        ));
    }
    if p.gpu_milli != job.gpu_milli {
        out.push(format!(
            "rule 1: job {id:?} is placed with gpu_milli {} but asks for {}",
            milli_text(p.gpu_milli),
            milli_text(job.gpu_milli)
        ));
    }
    if job.gpus == 0 && p.gpus.len() != 1 {
        out.push(format!(
            "rule 1: CPU-only job {id:?} must be placed on exactly one node"
        ));
    }
}

/// The rules about one node of a placement as a whole: its GPU type (rule 4), the round's
/// reservations (rule 9) and `gpus_per_node` (rule 4).
fn check_node_part(
    inst: &Instance,
    job: &PendingJob,
    n: usize,
    idx: &[u32],
    out: &mut Vec<String>,
) {
    let id = &job.id;
    let node = &inst.nodes[n];
    let name = &node.name;
    if !job.accepts_type(&node.gpu_type) && job.gpus > 0 {
        out.push(format!(
            "rule 4: job {id:?} needs gpu_type {:?} but node {name} has {}",
            job.gpu_types.clone().unwrap_or_default(),
            node.gpu_type
        ));
    }
    for r in inst.reservations.iter().filter(|r| !r.admits(job, n)) {
        out.push(format!(
            "rule 9: job {id:?} is on node {name}, reserved for job {:?} from {} s on, \
             but its time limit ({}) does not end it by then",
            r.job_id,
            r.start,
            job.time_limit
                .map_or("none".to_string(), |t| format!("{t} s"))
        ));
    }
    if let Some(per) = job.gpus_per_node {
        if idx.len() as u32 != per {
            out.push(format!(
                "rule 4: job {id:?} has {} GPUs on {name} but gpus_per_node is {per}",
                idx.len()
            ));
        }
    }
}

/// One GPU given to a placed job: listed once (rule 3), exists and is up (rule 2), no kept
/// running job holds it (rule 3), a preempted holder had strictly lower priority (rule 5), and
/// nobody else gets it whole (rule 3). `uniq`: the job's GPUs on this node so far.
fn check_gpu<'i>(
    inst: &Instance,
    job: &'i PendingJob,
    n: usize,
    g: u32,
    uniq: &mut BTreeSet<u32>,
    gpus: &mut GpuTally<'i>,
    out: &mut Vec<String>,
) {
    let id = &job.id;
    let node = &inst.nodes[n];
    let name = &node.name;
    if !uniq.insert(g) {
        out.push(format!("rule 3: job {id:?} lists GPU {name}:{g} twice"));
        return;
    }
    if g >= node.gpus {
        out.push(format!(
            "rule 2: job {id:?} uses GPU {name}:{g}, which does not exist"
        ));
        return;
    }
    if node.down[g as usize] {
        out.push(format!(
            "rule 2: job {id:?} uses GPU {name}:{g}, which is down"
        ));
    }
    if let Some(&k) = gpus.whole_holder.get(&(n, g)) {
        out.push(format!("rule 3: job {id:?} uses GPU {name}:{g}, held by running job {:?} which is not preempted", inst.running[k].id));
    }
    if let Some(&k) = gpus.preempted_at.get(&(n, g)) {
        let r = &inst.running[k];
        let e = gpus.victims_used.entry(k).or_insert(i64::MIN);
        *e = (*e).max(job.priority);
        if job.priority <= r.priority {
            out.push(format!("rule 5: job {id:?} (priority {}) takes GPU {name}:{g} from preempted job {:?} (priority {}); preemption is only for strictly higher priority", job.priority, r.id, r.priority));
        }
    }
    match job.gpu_milli {
        Some(m) => *gpus.milli.entry((n, g)).or_default() += m,
        None => {
            if let Some(other) = gpus.given_whole.insert((n, g), id) {
                out.push(format!(
                    "rule 3: GPU {name}:{g} is given to both {other:?} and {id:?}"
                ));
            }
        }
    }
}

/// Rule 4: `within` (the placement's node, rack and pod counts) and `max_nodes`.
fn check_locality(job: &PendingJob, nodes: u32, racks: usize, pods: usize, out: &mut Vec<String>) {
    let id = &job.id;
    match job.within {
        Some(Locality::Node) if nodes > 1 => out.push(format!(
            "rule 4: job {id:?} must sit within one node but spans {nodes}"
        )),
        Some(Locality::Rack) if racks > 1 => out.push(format!(
            "rule 4: job {id:?} must sit within one rack but spans {racks}"
        )),
        Some(Locality::Pod) if pods > 1 => out.push(format!(
            "rule 4: job {id:?} must sit within one pod but spans {pods}"
        )),
        _ => {}
    }
    if let Some(m) = job.max_nodes {
        if nodes > m {
            out.push(format!(
                "rule 4: job {id:?} spans {nodes} nodes; max_nodes is {m}"
            ));
        }
    }
}

/// Rule 3 for shared GPUs: sharers total at most 1000 milli, and a shared GPU is not also
/// given whole; a GPU running sharers held before the round stays shared for the round, even
/// with them all preempted (the planners never give it whole, and their bounds count on it).
fn check_shared_gpus(inst: &Instance, gpus: &GpuTally, out: &mut Vec<String>) {
    let shared_before: BTreeSet<(usize, u32)> = inst
        .running
        .iter()
        .filter(|r| r.gpu_milli.is_some())
        .flat_map(|r| {
            r.gpus
                .iter()
                .flat_map(|(n, idx)| idx.iter().map(|&g| (*n, g)))
        })
        .collect();
    for gpu in shared_before
        .iter()
        .filter(|gpu| !gpus.milli.contains_key(gpu))
    {
        if let Some(id) = gpus.given_whole.get(gpu) {
            out.push(format!(
                "rule 3: GPU {}:{} was shared before the round and is never given whole; it is given whole to {id:?}",
                inst.nodes[gpu.0].name, gpu.1
            ));
        }
    }
    for (&(n, g), &m) in &gpus.milli {
        if m > 1000 {
            out.push(format!(
                "rule 3: GPU {}:{g} carries {m} milli of sharers; at most 1000",
                inst.nodes[n].name
            ));
        }
        if let Some(id) = gpus.given_whole.get(&(n, g)) {
            out.push(format!(
                "rule 3: GPU {}:{g} is shared but also given whole to {id:?}",
                inst.nodes[n].name
            ));
        }
    }
}

/// Rule 5 for each victim: something is placed, and a victim whose GPUs nobody took is allowed
/// (its CPU or memory may have been needed) but must have freed something for strictly
/// higher-priority work.
fn check_victims(
    inst: &Instance,
    plan: &Plan,
    pending_ix: &BTreeMap<&str, usize>,
    preempted: &BTreeSet<usize>,
    gpus: &GpuTally,
    out: &mut Vec<String>,
) {
    for &k in preempted {
        if !gpus.victims_used.contains_key(&k) && !plan.placements.is_empty() {
            let r = &inst.running[k];
            let best = plan
                .placements
                .iter()
                .filter_map(|p| pending_ix.get(p.job.as_str()))
                .map(|&j| inst.pending[j].priority)
                .max()
                .unwrap_or(i64::MIN);
            if best <= r.priority {
                out.push(format!("rule 5: job {:?} is preempted but no placed job has a higher priority than its {}", r.id, r.priority));
            }
        } else if plan.placements.is_empty() {
            out.push(format!(
                "rule 5: job {:?} is preempted but nothing is placed",
                inst.running[k].id
            ));
        }
    }
}

/// Rule 6: a tenant over its quota after the round, unless the round gave it nothing and it
/// holds no more than before (a tenant already over its quota is not made to shed jobs).
fn check_quotas(inst: &Instance, tenants: &TenantTally, out: &mut Vec<String>) {
    for (t, tenant) in inst.tenants.iter().enumerate() {
        if let Some(q) = tenant.quota {
            let held = tenants.held[t];
            let over = held > q + 1e-9;
            let grew = tenants.placed.contains(&t) || held > tenants.held_before[t] + 1e-9;
            if over && grew {
                out.push(format!(
                    "rule 6: tenant {:?} holds {} GPUs after the round; its quota is {q}",
                    tenant.name, held
                ));
            }
        }
    }
}

/// Rule 7: CPU and memory, where a node gives them, fit after the round, unless the node was
/// over before the round and the plan adds nothing to it (it places no job that takes the
/// resource there, and the running jobs it keeps need no more than before).
fn check_cpu_and_memory(inst: &Instance, nodes: &NodeTally, out: &mut Vec<String>) {
    let adds = |used: i128, before: i128, placed: i128| used > before || placed > 0;
    for (n, node) in inst.nodes.iter().enumerate() {
        if let Some(c) = node.cpu_milli {
            let (used, placed) = (nodes.cpu_used[n], nodes.cpu_placed[n]);
            if used > c as i128 && adds(used, nodes.cpu_before[n], placed) {
                out.push(format!(
                    "rule 7: node {} needs {} cpu_milli; it has {c}",
                    node.name, nodes.cpu_used[n]
                ));
            }
        }
        if let Some(m) = node.memory_mib {
            let (used, placed) = (nodes.mem_used[n], nodes.mem_placed[n]);
            if used > m as i128 && adds(used, nodes.mem_before[n], placed) {
                out.push(format!(
                    "rule 7: node {} needs {} memory_mib; it has {m}",
                    node.name, nodes.mem_used[n]
                ));
            }
        }
    }
}
