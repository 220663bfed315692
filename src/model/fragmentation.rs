//! Fragmentation after the round, a cost in the objective (only when the instance carries a
//! task distribution M, [`crate::instance::Instance::task_dist`]).
//!
//! F_n(M) is FGD's fragmentation of node n against M ([`crate::instance::task_dist::frag`]);
//! G(j, n) = F_n(M) after pending job j alone is placed on n - F_n(M) before the round (milli
//! GPUs; negative when j fills capacity M could not have used). The cost is a linear proxy of
//! the cluster's fragmentation after the round, sum_n F_n(M) after - before, exact when every
//! node receives at most one of the round's arrivals:
//!
//! ```text
//! cost: frag_cost * ( sum_{j one-node whole-GPU, n} G(j, n) u_jn
//!                   + sum_{j CPU-only, n}           G(j, n) c_jn
//!                   + sum_{j sharer, GPU g already shared on n} G(j, n, g) s_jg
//!                   + sum_{n, fresh sharing slot i} O_n z_ni )
//! O_n = growth of F_n(M) when one whole free GPU of n gives up the smallest share asked by a
//!       sharer of the round that accepts n (opening a GPU to sharing; further sharers on the
//!       opened GPU add nothing: they fill what the opening already fragmented)
//! frag_cost = policy.weights.fragmentation / 1000 per milli GPU (default 0.02 a whole GPU of
//!             fragment, the default price of a stranded GPU, `policy.weights.strand`)
//! ```
//! Split gangs (several nodes) carry no term. The proxy makes the MIP weigh the fragmentation
//! a round's arrivals leave together against what starting them is worth (at the default
//! price it chooses among plans of nearly equal value; at the fill protocol's, a GPU of
//! fragment costs as much as a GPU started), where the greedy decides job by job.

use super::{Ctx, MipModel, ShareSlot, Vars};
use crate::heuristics::placement::fragmentation::growth;
use crate::heuristics::placement::free::{gpu_free_milli, node_free};
use crate::instance::Instance;
use crate::objective::frag_cost_per_milli;
use crate::round_state::RoundState;
use crate::state::resource_share;
use crate::state::ClusterState;
use crate::units::MILLI_PER_GPU;
use good_lp::{Expression, Variable};
use std::collections::BTreeMap;

/// One term of the cost: its coefficient (growth in milli GPUs), its variable, and the pending
/// job it belongs to (`None` for a fresh sharing slot, which any sharer may open).
type Term = (f64, Variable, Option<usize>);

/// Add the fragmentation cost to the objective.
pub fn add(ctx: &Ctx, m: &mut MipModel) {
    let cost: Expression = terms(ctx.inst, &ctx.before, &m.vars)
        .into_iter()
        .map(|(g, v, _)| g * v)
        .sum();
    m.objective -= frag_cost_per_milli(ctx.inst) * cost;
}

/// What the plan objective ([`crate::objective::evaluate`], whose fragmentation term is the
/// exact growth) may exceed this model's objective by, on any plan: the proxy's largest
/// possible cost (each job's largest positive coefficient, each fresh slot's opening, at most
/// one per sharer) plus [`crate::objective::fragmentation_slack`]. Added to the model's dual
/// bound, it keeps the bound a bound of the plan objective. 0 without a task distribution.
pub fn bound_slack(inst: &Instance, vars: &Vars) -> f64 {
    if inst.task_dist.is_none() {
        return 0.0;
    }
    let before = ClusterState::new(inst);
    let mut per_job: BTreeMap<usize, f64> = BTreeMap::new();
    let mut fresh: Vec<f64> = Vec::new();
    for (g, _, j) in terms(inst, &before, vars) {
        match j {
            Some(j) => {
                let e = per_job.entry(j).or_insert(0.0);
                *e = e.max(g);
            }
            None => fresh.push(g.max(0.0)),
        }
    }
    let sharers = inst.pending.iter().filter(|j| j.is_sharer()).count();
    fresh.sort_by(|a, b| b.total_cmp(a));
    let opened: f64 = fresh.iter().take(sharers).sum();
    frag_cost_per_milli(inst) * (per_job.values().sum::<f64>() + opened)
        + crate::objective::fragmentation_slack(inst)
}

/// Every term of the cost (none without a task distribution).
fn terms(inst: &Instance, before: &ClusterState, vars: &Vars) -> Vec<Term> {
    let Some(dist) = inst.task_dist.as_deref() else {
        return Vec::new();
    };
    let state = RoundState::new(inst, before);
    let mut out: Vec<Term> = Vec::new();
    for (j, job) in inst.pending.iter().enumerate() {
        for c in &vars.cells[j] {
            if c.split || !matches!(c.count, super::CellCount::Fixed(k) if k == job.gpus) {
                continue;
            }
            let before = node_free(&state, c.node, job.priority);
            let g = job.gpus;
            let full = vec![MILLI_PER_GPU; g as usize];
            let (cpu, mem) = (
                resource_share(job.cpu_milli, g, g),
                resource_share(job.memory_mib, g, g),
            );
            let growth = growth(dist, &before, &full, MILLI_PER_GPU, cpu, mem);
            out.push((growth, c.used, Some(j)));
        }
        for &(n, v) in &vars.cpu_only[j] {
            let before = node_free(&state, n, job.priority);
            let growth = growth(dist, &before, &[], 0, job.cpu_milli, job.memory_mib);
            out.push((growth, v, Some(j)));
        }
        let take = job.gpu_milli.unwrap_or(MILLI_PER_GPU);
        for &(slot, v) in &vars.share[j] {
            if let ShareSlot::Existing(n, g) = slot {
                let before = node_free(&state, n, job.priority);
                let lvl = gpu_free_milli(&state, n, g, job.priority);
                let growth = growth(dist, &before, &[lvl], take, job.cpu_milli, job.memory_mib);
                out.push((growth, v, Some(j)));
            }
        }
    }
    for (n, slots) in vars.fresh.iter().enumerate() {
        let smallest = inst
            .pending
            .iter()
            .filter(|j| j.is_sharer() && j.accepts_type(&inst.nodes[n].gpu_type))
            .filter_map(|j| j.gpu_milli)
            .min();
        let (Some(take), false) = (smallest, slots.is_empty()) else {
            continue;
        };
        let before = node_free(&state, n, i64::MIN);
        let open = growth(dist, &before, &[MILLI_PER_GPU], take, 0, 0);
        out.extend(slots.iter().map(|&z| (open, z, None)));
    }
    out
}
