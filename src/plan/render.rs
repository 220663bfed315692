//! Assignment -> plan: names instead of indices, a reason for every pending job and every
//! preemption, metrics.

use super::reasons::{free_after, reason};
use super::types::*;
use crate::assignment::Assignment;
use crate::instance::Instance;
use crate::objective::held_after;
use crate::state::ClusterState;

/// Render an assignment. `solver` is filled by the caller.
pub fn render_plan(inst: &Instance, a: &Assignment, status: Status, solver: SolverInfo) -> Plan {
    let before = ClusterState::new(inst);
    let placements: Vec<Placement> = a
        .placed
        .iter()
        .map(|(&j, set)| Placement {
            job: inst.pending[j].id.clone(),
            gpus: set
                .iter()
                .map(|(&n, idx)| (inst.nodes[n].name.clone(), idx.clone()))
                .collect(),
            gpu_milli: inst.pending[j].gpu_milli,
        })
        .collect();
    let preemptions = a
        .preempted
        .iter()
        .map(|&k| {
            let r = &inst.running[k];
            let takers: Vec<&str> = a
                .placed
                .iter()
                .filter(|(_, set)| {
                    r.gpus.iter().any(|(n, idx)| {
                        set.get(n)
                            .is_some_and(|s| s.iter().any(|g| idx.contains(g)))
                    })
                })
                .map(|(&j, _)| inst.pending[j].id.as_str())
                .collect();
            let where_: Vec<String> = r
                .gpus
                .iter()
                .map(|(n, idx)| format!("{} GPUs on {}", idx.len(), inst.nodes[*n].name))
                .collect();
            let reason = if takers.is_empty() {
                format!("frees {} for higher-priority work", where_.join(", "))
            } else {
                format!("frees {} for {}", where_.join(", "), takers.join(", "))
            };
            Preemption {
                job: r.id.clone(),
                reason,
            }
        })
        .collect();
    let free = free_after(inst, &before, a);
    let held = held_after(inst, a);
    // Jobs of one shape and tenant wait for the same reason: compute it once per shape.
    let mut seen: std::collections::BTreeMap<_, super::reasons::Reason> =
        std::collections::BTreeMap::new();
    let pending: Vec<PendingEntry> = (0..inst.pending.len())
        .filter(|j| !a.placed.contains_key(j))
        .map(|j| {
            let p = &inst.pending[j];
            let key = (
                p.gpu_types.clone(),
                p.gpus,
                p.within,
                p.max_nodes,
                p.gpus_per_node,
                p.gpu_milli,
                p.cpu_milli,
                p.memory_mib,
                p.tenant,
                p.priority,
            );
            let r = seen
                .entry(key)
                .or_insert_with(|| reason(inst, j, &free, &held))
                .clone();
            PendingEntry {
                job: inst.pending[j].id.clone(),
                reason: r.text,
                kind: Some(
                    if r.resolvable {
                        "unschedulable"
                    } else {
                        "unresolvable"
                    }
                    .to_string(),
                ),
            }
        })
        .collect();
    let usable = inst.gpus_usable();
    let free_after_total: u32 = free.iter().sum();
    let down = inst.gpus_total() - usable;
    let busy_after = {
        // Busy = usable GPUs not free whole after the round (shared GPUs count busy).
        usable - free_after_total.min(usable)
    };
    Plan {
        format: PLAN_FORMAT.to_string(),
        status,
        solver,
        metrics: Metrics {
            gpus_total: inst.gpus_total(),
            gpus_busy_before: before.busy_count(),
            gpus_busy_after: busy_after,
            gpus_down: down,
            jobs_placed: placements.len() as u32,
            jobs_pending: pending.len() as u32,
            jobs_preempted: a.preempted.len() as u32,
        },
        placements,
        preemptions,
        pending,
    }
}
