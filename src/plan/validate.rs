//! The independent validator: the rules of SPEC.md checked on a plan and its instance, with
//! no code shared with any planner beyond the instance types. Every plan is validated before
//! it is written; a plan that fails is a bug and is never written.
//!
//! Rules: (0) the plan covers each pending job exactly once and names only known jobs;
//! (1) gang sizes; (2) GPUs exist and are not down; (3) no GPU given twice or while a kept
//! running job holds it, sharers total at most 1000 milli and a shared GPU is never given
//! whole; (4) gpu_type, within, max_nodes, gpus_per_node; (5) only preemptible jobs are
//! preempted, and only for strictly higher-priority work placed on their GPUs; (6) quotas;
//! (7) CPU and memory; (9) a node the round reserves for a blocked gang takes that gang and
//! jobs whose time limit ends them by the reservation's start only. Rule 8 (determinism) is a
//! property of planners, checked by the tests.

use super::types::{Plan, PLAN_FORMAT};
use crate::error::{Error, Result};
use crate::instance::{Instance, Locality};
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

/// Every violation, in words.
pub fn violations(inst: &Instance, plan: &Plan) -> Vec<String> {
    let mut out = Vec::new();
    if plan.format != PLAN_FORMAT {
        out.push(format!(
            "format is {:?}; expected {PLAN_FORMAT:?}",
            plan.format
        ));
    }
    let (pending_ix, running_ix) = inst.job_indices();

    // Rule 0: coverage.
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

    // Rule 5: preemptions.
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

    // Occupancy before the round: whole holders and sharer milli per GPU.
    let mut whole_holder: BTreeMap<(usize, u32), usize> = BTreeMap::new();
    let mut milli: BTreeMap<(usize, u32), u32> = BTreeMap::new();
    let mut cpu_used = vec![0i128; inst.nodes.len()];
    let mut mem_used = vec![0i128; inst.nodes.len()];
    let mut cpu_before = vec![0i128; inst.nodes.len()];
    let mut mem_before = vec![0i128; inst.nodes.len()];
    let share = |total: u64, on: usize, gpus: usize| -> i128 {
        if gpus <= 1 {
            total as i128
        } else {
            (total as i128 * on as i128 + gpus as i128 - 1) / gpus as i128
        }
    };
    for (k, r) in inst.running.iter().enumerate() {
        let kept = !preempted.contains(&k);
        let total: usize = r.gpus.iter().map(|(_, g)| g.len()).sum();
        for (n, idx) in &r.gpus {
            cpu_before[*n] += share(r.cpu_milli, idx.len(), total);
            mem_before[*n] += share(r.memory_mib, idx.len(), total);
            if !kept {
                continue;
            }
            cpu_used[*n] += share(r.cpu_milli, idx.len(), total);
            mem_used[*n] += share(r.memory_mib, idx.len(), total);
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

    // Rules 1-4 and 7 for each placement.
    let mut given_whole: BTreeMap<(usize, u32), &str> = BTreeMap::new();
    let mut held = vec![0.0f64; inst.tenants.len()];
    let mut held_before = vec![0.0f64; inst.tenants.len()];
    let mut placed_tenants = BTreeSet::new();
    for (k, r) in inst.running.iter().enumerate() {
        let eq = r
            .gpu_milli
            .map_or(r.gpu_count() as f64, |m| m as f64 / 1000.0);
        held_before[r.tenant] += eq;
        if !preempted.contains(&k) {
            held[r.tenant] += eq;
        }
    }
    let mut preempted_at: BTreeMap<(usize, u32), usize> = BTreeMap::new();
    for &k in &preempted {
        for (n, idx) in &inst.running[k].gpus {
            for &g in idx {
                preempted_at.insert((*n, g), k);
            }
        }
    }
    let mut victims_used: BTreeMap<usize, i64> = BTreeMap::new(); // victim -> highest priority placed on its GPUs
    for p in &plan.placements {
        let Some(&j) = pending_ix.get(p.job.as_str()) else {
            continue;
        };
        let job = &inst.pending[j];
        let id = &job.id;
        placed_tenants.insert(job.tenant);
        held[job.tenant] += job.gpu_milli.map_or(job.gpus as f64, |m| m as f64 / 1000.0);
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
        let mut racks = BTreeSet::new();
        let mut pods = BTreeSet::new();
        for (name, idx) in &p.gpus {
            let Some(&n) = inst.node_by_name.get(name) else {
                out.push(format!("rule 2: job {id:?} uses unknown node {name:?}"));
                continue;
            };
            let node = &inst.nodes[n];
            racks.insert(node.rack);
            pods.insert(node.pod);
            if !job.accepts_type(&node.gpu_type) && job.gpus > 0 {
                out.push(format!(
                    "rule 4: job {id:?} needs gpu_type {:?} but node {name} has {}",
                    job.gpu_types.clone().unwrap_or_default(),
                    node.gpu_type
                ));
            }
            if let Some(r) = inst.reservation.as_ref().filter(|r| !r.admits(job, n)) {
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
            let mut uniq = BTreeSet::new();
            for &g in idx {
                if !uniq.insert(g) {
                    out.push(format!("rule 3: job {id:?} lists GPU {name}:{g} twice"));
                    continue;
                }
                if g >= node.gpus {
                    out.push(format!(
                        "rule 2: job {id:?} uses GPU {name}:{g}, which does not exist"
                    ));
                    continue;
                }
                if node.down[g as usize] {
                    out.push(format!(
                        "rule 2: job {id:?} uses GPU {name}:{g}, which is down"
                    ));
                }
                if let Some(&k) = whole_holder.get(&(n, g)) {
                    out.push(format!("rule 3: job {id:?} uses GPU {name}:{g}, held by running job {:?} which is not preempted", inst.running[k].id));
                }
                if let Some(&k) = preempted_at.get(&(n, g)) {
                    let r = &inst.running[k];
                    let e = victims_used.entry(k).or_insert(i64::MIN);
                    *e = (*e).max(job.priority);
                    if job.priority <= r.priority {
                        out.push(format!("rule 5: job {id:?} (priority {}) takes GPU {name}:{g} from preempted job {:?} (priority {}); preemption is only for strictly higher priority", job.priority, r.id, r.priority));
                    }
                }
                match job.gpu_milli {
                    Some(m) => *milli.entry((n, g)).or_default() += m,
                    None => {
                        if let Some(other) = given_whole.insert((n, g), id) {
                            out.push(format!(
                                "rule 3: GPU {name}:{g} is given to both {other:?} and {id:?}"
                            ));
                        }
                    }
                }
            }
            let total = job.gpus as usize;
            cpu_used[n] += share(job.cpu_milli, idx.len(), total);
            mem_used[n] += share(job.memory_mib, idx.len(), total);
        }
        let nodes = p.gpus.len() as u32;
        match job.within {
            Some(Locality::Node) if nodes > 1 => out.push(format!(
                "rule 4: job {id:?} must sit within one node but spans {nodes}"
            )),
            Some(Locality::Rack) if racks.len() > 1 => out.push(format!(
                "rule 4: job {id:?} must sit within one rack but spans {}",
                racks.len()
            )),
            Some(Locality::Pod) if pods.len() > 1 => out.push(format!(
                "rule 4: job {id:?} must sit within one pod but spans {}",
                pods.len()
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
    for (&(n, g), &m) in &milli {
        if m > 1000 {
            out.push(format!(
                "rule 3: GPU {}:{g} carries {m} milli of sharers; at most 1000",
                inst.nodes[n].name
            ));
        }
        if let Some(id) = given_whole.get(&(n, g)) {
            out.push(format!(
                "rule 3: GPU {}:{g} is shared but also given whole to {id:?}",
                inst.nodes[n].name
            ));
        }
    }
    for &k in &preempted {
        if !victims_used.contains_key(&k) && !plan.placements.is_empty() {
            // A victim whose GPUs nobody took is allowed (its CPU or memory may have been
            // needed), but it must have freed something for strictly higher-priority work.
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

    // Rule 6: quotas.
    for (t, tenant) in inst.tenants.iter().enumerate() {
        if let Some(q) = tenant.quota {
            let over = held[t] > q as f64 + 1e-9;
            let grew = placed_tenants.contains(&t) || held[t] > held_before[t] + 1e-9;
            if over && grew {
                out.push(format!(
                    "rule 6: tenant {:?} holds {} GPUs after the round; its quota is {q}",
                    tenant.name, held[t]
                ));
            }
        }
    }

    // Rule 7: CPU and memory.
    for (n, node) in inst.nodes.iter().enumerate() {
        if let Some(c) = node.cpu_milli {
            if cpu_used[n] > c as i128 && cpu_used[n] > cpu_before[n] {
                out.push(format!(
                    "rule 7: node {} needs {} cpu_milli; it has {c}",
                    node.name, cpu_used[n]
                ));
            }
        }
        if let Some(m) = node.memory_mib {
            if mem_used[n] > m as i128 && mem_used[n] > mem_before[n] {
                out.push(format!(
                    "rule 7: node {} needs {} memory_mib; it has {m}",
                    node.name, mem_used[n]
                ));
            }
        }
    }
    out
}
