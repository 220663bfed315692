//! One sentence, with numbers, for every job left pending: the constraint that binds, and
//! whether the job is `unresolvable` (no state of this cluster could place it) or
//! `unschedulable` (it would start if something finished or were preempted).

use crate::assignment::Assignment;
use crate::instance::{Instance, Locality, PendingJob};
use crate::state::{ClusterState, GpuUse};
use std::collections::BTreeMap;

/// Why a job waits.
#[derive(Debug, Clone, PartialEq)]
pub struct Reason {
    /// The sentence.
    pub text: String,
    /// False when no state of this cluster could place the job.
    pub resolvable: bool,
}

/// Free whole GPUs per node after the assignment.
pub fn free_after(inst: &Instance, before: &ClusterState, a: &Assignment) -> Vec<u32> {
    let mut free: Vec<u32> = (0..inst.nodes.len())
        .map(|n| {
            before.gpus[n]
                .iter()
                .filter(|u| match u {
                    GpuUse::Free => true,
                    GpuUse::Whole(k) => a.preempted.contains(k),
                    _ => false,
                })
                .count() as u32
        })
        .collect();
    for (&j, set) in &a.placed {
        for (n, idx) in set {
            if inst.pending[j].is_sharer() {
                // A sharer on a previously free GPU makes it unavailable whole.
                let fresh = idx
                    .iter()
                    .filter(|&&g| before.gpus[*n][g as usize] == GpuUse::Free)
                    .count() as u32;
                free[*n] = free[*n].saturating_sub(fresh);
            } else {
                free[*n] = free[*n].saturating_sub(idx.len() as u32);
            }
        }
    }
    free
}

fn type_words(job: &PendingJob) -> String {
    match &job.gpu_types {
        Some(ts) if ts.len() == 1 => format!("{} ", ts[0]),
        Some(ts) => format!("{} ", ts.join("/")),
        None => String::new(),
    }
}

/// The reason job j waits, given the GPUs free after the round and what its tenant holds.
pub fn reason(inst: &Instance, j: usize, free: &[u32], held: &[f64]) -> Reason {
    let job = &inst.pending[j];
    let g = job.gpus;
    let tw = type_words(job);
    let eligible: Vec<usize> = (0..inst.nodes.len())
        .filter(|&n| job.accepts_type(&inst.nodes[n].gpu_type))
        .collect();
    let usable = |n: usize| inst.nodes[n].down.iter().filter(|d| !**d).count() as u32;
    let fixed = |text: String| Reason {
        text,
        resolvable: false,
    };
    let waiting = |text: String| Reason {
        text,
        resolvable: true,
    };
    if g > 0 && eligible.is_empty() {
        let mut types: Vec<&str> = inst.nodes.iter().map(|n| n.gpu_type.as_str()).collect();
        types.sort_unstable();
        types.dedup();
        return fixed(format!(
            "needs {}GPUs; no node has that type (types here: {})",
            tw,
            types.join(", ")
        ));
    }
    let total: u32 = eligible.iter().map(|&n| usable(n)).sum();
    if g > total {
        return fixed(format!(
            "needs {g} {tw}GPUs; the cluster has only {total} usable"
        ));
    }
    // Hard shape limits, against whole usable capacity (unresolvable) and free capacity.
    let by_domain = |cap: &dyn Fn(usize) -> u32, level: Locality| -> (u32, String) {
        let mut sums: BTreeMap<String, u32> = BTreeMap::new();
        for &n in &eligible {
            let key = match level {
                Locality::Node => inst.nodes[n].name.clone(),
                Locality::Rack => inst.racks[inst.nodes[n].rack].clone(),
                Locality::Pod => inst.pods[inst.nodes[n].pod].clone(),
            };
            *sums.entry(key).or_default() += cap(n);
        }
        sums.into_iter()
            .map(|(k, v)| (v, k))
            .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)))
            .unwrap_or((0, String::new()))
    };
    if let Some(level) = job.within.or(if job.node_limit() == 1 && g > 0 {
        Some(Locality::Node)
    } else {
        None
    }) {
        let (best_usable, _) = by_domain(&|n| usable(n), level);
        if g > best_usable {
            return fixed(format!(
                "needs {g} {tw}GPUs within one {}; the largest {} has {best_usable} usable",
                level.as_str(),
                level.as_str()
            ));
        }
        let (best_free, name) = by_domain(&|n| free[n], level);
        if g > best_free {
            let at = if name.is_empty() {
                String::new()
            } else {
                format!(" ({name})")
            };
            return waiting(format!(
                "needs {g} {tw}GPUs within one {}; the most free in any {} is {best_free}{at}",
                level.as_str(),
                level.as_str()
            ));
        }
    }
    if let Some(per) = job.gpus_per_node {
        let need = g / per.max(1);
        let fit_usable = eligible.iter().filter(|&&n| usable(n) >= per).count() as u32;
        if fit_usable < need {
            return fixed(format!("needs {need} nodes with {per} {tw}GPUs each; only {fit_usable} nodes have {per} usable"));
        }
        let fit_free = eligible.iter().filter(|&&n| free[n] >= per).count() as u32;
        if fit_free < need {
            return waiting(format!(
                "needs {need} nodes with {per} free {tw}GPUs each; {fit_free} have that many free"
            ));
        }
    }
    if let Some(m) = job.max_nodes {
        let mut caps: Vec<u32> = eligible.iter().map(|&n| usable(n)).collect();
        caps.sort_unstable_by(|a, b| b.cmp(a));
        let best: u32 = caps.iter().take(m as usize).sum();
        if best < g {
            return fixed(format!(
                "max_nodes {m}, but no {m} nodes hold {g} usable {tw}GPUs (at most {best})"
            ));
        }
        let mut frees: Vec<u32> = eligible.iter().map(|&n| free[n]).collect();
        frees.sort_unstable_by(|a, b| b.cmp(a));
        let best: u32 = frees.iter().take(m as usize).sum();
        if best < g {
            return waiting(format!(
                "max_nodes {m}, but no {m} nodes have {g} free {tw}GPUs (at most {best})"
            ));
        }
    }
    if let Some(q) = inst.tenants[job.tenant].quota {
        if held[job.tenant] + job.gpu_equivalent() > q as f64 + 1e-9 {
            return waiting(format!(
                "tenant {} holds {} GPUs of its quota {q}; this job needs {} more",
                inst.tenants[job.tenant].name,
                held[job.tenant],
                job.gpu_equivalent()
            ));
        }
    }
    let free_total: u32 = eligible.iter().map(|&n| free[n]).sum();
    if g > 0 && !job.is_sharer() && free_total < g {
        let blockers = inst
            .running
            .iter()
            .filter(|r| !r.preemptible || r.priority >= job.priority)
            .count();
        let hint = if blockers == inst.running.len() && !inst.running.is_empty() {
            " and no running job it could preempt (lower priority and preemptible)"
        } else {
            ""
        };
        return waiting(format!(
            "needs {g} {tw}GPUs; {free_total} are free after this round{hint}"
        ));
    }
    if (job.cpu_milli > 0 || job.memory_mib > 0)
        && eligible.iter().all(|&n| {
            inst.nodes[n]
                .cpu_milli
                .is_some_and(|c| c < job.cpu_milli / job.gpus.max(1) as u64)
                || inst.nodes[n]
                    .memory_mib
                    .is_some_and(|m| m < job.memory_mib / job.gpus.max(1) as u64)
        })
    {
        return fixed(format!(
            "needs {} cpu_milli and {} memory_mib; no eligible node has that much per GPU",
            job.cpu_milli, job.memory_mib
        ));
    }
    waiting(format!(
        "{free_total} {tw}GPUs are free after this round, but no placement fits its shape, CPU or memory, or starting it would lower the round's objective (higher-value jobs, spread or fairness costs)"
    ))
}
