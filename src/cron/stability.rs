//! Stable placements: a pending job planned last round that is still pending keeps last
//! round's nodes when that placement is still good, so a dry-run cron (or a round after a
//! failed apply) does not flip a job between equivalent placements.
//!
//! After the planner returns, for every placed job whose nodes differ from the remembered ones
//! (same GPU count per node): take the job off its new GPUs and try the remembered nodes on
//! GPUs that are free in the plan (not held by a running job, preempted ones included, not
//! down, not given to another placed job; lowest indices). The old placement is kept when the
//! plan stays valid (every SPEC rule, checked by the validator) and the objective drops by at
//! most [`STAY_TOLERANCE`] times that job's value. Running jobs never move: the plan never
//! moves them in the first place. Done on the plan, outside the planner, so the planner's
//! objective and its MIP stay exactly what `solve` computes.

use crate::assignment::{Assignment, GpuSet};
use crate::error::Result;
use crate::instance::Instance;
use crate::objective::{evaluate, job_value};
use crate::plan::{assignment_of, render_plan, validate_plan, Plan};
use crate::topology::Topology;
use crate::units::TOLERANCE;
use std::collections::{BTreeMap, BTreeSet};

/// Largest objective loss accepted to keep a placement, as a fraction of the job's value.
pub const STAY_TOLERANCE: f64 = 0.05;

/// Keep remembered placements where still good. Returns the (possibly re-rendered) plan and
/// the jobs whose placement was kept from the previous round.
pub fn stabilize(
    inst: &Instance,
    plan: Plan,
    previous: &BTreeMap<String, BTreeMap<String, u32>>,
) -> Result<(Plan, Vec<String>)> {
    let Some(mut a) = assignment_of(inst, &plan) else {
        return Ok((plan, Vec::new()));
    };
    let topo = Topology::new(inst);
    let mut objective = evaluate(inst, &topo, &a).total();
    let mut kept = Vec::new();
    let jobs: Vec<usize> = a.placed.keys().copied().collect();
    for j in jobs {
        let job = &inst.pending[j];
        let Some(prev) = previous.get(&job.id) else {
            continue;
        };
        let now: BTreeMap<String, u32> = a.placed[&j]
            .iter()
            .map(|(&n, g)| (inst.nodes[n].name.clone(), g.len() as u32))
            .collect();
        if &now == prev {
            continue;
        }
        let mut trial = a.clone();
        trial.placed.remove(&j);
        let Some(set) = free_set(inst, &trial, prev) else {
            continue;
        };
        trial.placed.insert(j, set);
        let obj = evaluate(inst, &topo, &trial).total();
        if obj + STAY_TOLERANCE * job_value(inst, job) + TOLERANCE < objective {
            continue;
        }
        let candidate = render_plan(inst, &trial, plan.status, plan.solver.clone());
        if validate_plan(inst, &candidate).is_err() {
            continue;
        }
        a = trial;
        objective = obj;
        kept.push(job.id.clone());
    }
    if kept.is_empty() {
        return Ok((plan, kept));
    }
    let mut info = plan.solver.clone();
    info.objective = objective;
    info.gap = info
        .bound
        .map(|b| ((b - objective) / objective.abs().max(1.0)).max(0.0));
    let note = format!(
        "kept the previous round's placement of {} job(s) ({})",
        kept.len(),
        kept.join(", ")
    );
    info.note = Some(match info.note.take() {
        Some(n) => format!("{n}; {note}"),
        None => note,
    });
    let out = render_plan(inst, &a, plan.status, info);
    validate_plan(inst, &out)?;
    Ok((out, kept))
}

/// Lowest free GPUs on the remembered nodes, or `None` when a node is gone or lacks them.
fn free_set(inst: &Instance, a: &Assignment, want: &BTreeMap<String, u32>) -> Option<GpuSet> {
    let mut busy: Vec<BTreeSet<u32>> = inst.nodes.iter().map(|_| BTreeSet::new()).collect();
    for r in &inst.running {
        for (n, idx) in &r.gpus {
            busy[*n].extend(idx);
        }
    }
    for set in a.placed.values() {
        for (n, idx) in set {
            busy[*n].extend(idx);
        }
    }
    let mut out = GpuSet::new();
    for (name, &count) in want {
        let n = *inst.node_by_name.get(name)?;
        let node = &inst.nodes[n];
        let free: Vec<u32> = (0..node.gpus)
            .filter(|&g| !node.down[g as usize] && !busy[n].contains(&g))
            .take(count as usize)
            .collect();
        if free.len() < count as usize {
            return None;
        }
        out.insert(n, free);
    }
    Some(out)
}
