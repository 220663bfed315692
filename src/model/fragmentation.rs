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
//! frag_cost = FRAG_COST_PER_MILLI (2e-5 per milli GPU: a whole GPU of fragment costs 0.02,
//!             the default price of a stranded GPU, `policy.weights.strand`)
//! ```
//! Split gangs (several nodes) carry no term. The proxy makes the MIP prefer, among plans of
//! equal value, the one whose arrivals together leave the least fragmentation, where the greedy
//! decides job by job.

use super::{Ctx, MipModel, ShareSlot};
use crate::heuristics::placement::fragmentation::growth;
use crate::heuristics::placement::free::{gpu_free_milli, node_free};
use crate::round_state::RoundState;
use crate::state::resource_share;
use crate::units::MILLI_PER_GPU;
use good_lp::Expression;

/// Objective cost per milli GPU of fragmentation growth.
pub const FRAG_COST_PER_MILLI: f64 = 2e-5;

/// Add the fragmentation cost to the objective.
pub fn add(ctx: &Ctx, m: &mut MipModel) {
    let inst = ctx.inst;
    let Some(dist) = inst.task_dist.as_deref() else {
        return;
    };
    let state = RoundState::new(inst, &ctx.before);
    let mut cost = Expression::from(0.0);
    for (j, job) in inst.pending.iter().enumerate() {
        for c in &m.vars.cells[j] {
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
            cost += growth(dist, &before, &full, MILLI_PER_GPU, cpu, mem) * c.used;
        }
        for &(n, v) in &m.vars.cpu_only[j] {
            let before = node_free(&state, n, job.priority);
            cost += growth(dist, &before, &[], 0, job.cpu_milli, job.memory_mib) * v;
        }
        let take = job.gpu_milli.unwrap_or(MILLI_PER_GPU);
        for &(slot, v) in &m.vars.share[j] {
            if let ShareSlot::Existing(n, g) = slot {
                let before = node_free(&state, n, job.priority);
                let lvl = gpu_free_milli(&state, n, g, job.priority);
                cost += growth(dist, &before, &[lvl], take, job.cpu_milli, job.memory_mib) * v;
            }
        }
    }
    for (n, slots) in m.vars.fresh.iter().enumerate() {
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
        for &z in slots {
            cost += open * z;
        }
    }
    m.objective -= FRAG_COST_PER_MILLI * cost;
}
