//! Bin packing: fill nodes before opening empty ones, so large contiguous blocks stay free.
//!
//! ```text
//! for every node n empty before the round (U_n usable GPUs):
//!   sum_j x_jn + sum_i z_ni <= U_n o_n
//!   cost: open_node o_n + strand (U_n o_n - sum_j x_jn - sum_i z_ni)
//! for every node n in use before the round (B_n busy usable GPUs, shared ones included):
//!   cost: strand (U_n - B_n + sum_k g_kn p_k - sum_j x_jn - sum_i z_ni)
//! ```
//! `strand` prices every free GPU left on a node in use before or after the round; the
//! constant part goes to [`MipModel::constant`]. Both weights are
//! [`crate::instance::Instance::packing_weights`]: none when the round carries a task
//! distribution, whose fragmentation term ([`super::fragmentation`]) prices wasted room instead.

use super::capacity::{fresh_slots, whole_users};
use super::{Ctx, MipModel};
use crate::state::GpuUse;
use good_lp::{variable, Expression, IntoAffineExpression};

/// Add the packing variables, rows and cost.
pub fn add(ctx: &Ctx, m: &mut MipModel) {
    let inst = ctx.inst;
    let w = inst.packing_weights();
    for (n, node) in inst.nodes.iter().enumerate() {
        let usable = node.usable() as f64;
        let placed: Expression = whole_users(ctx, m, n)
            .into_iter()
            .map(|(_, e)| e)
            .sum::<Expression>()
            + fresh_slots(m, n);
        let busy = ctx.before.gpus[n]
            .iter()
            .zip(&node.down)
            .filter(|(u, d)| !**d && matches!(u, GpuUse::Whole(_) | GpuUse::Shared { .. }))
            .count() as f64;
        if busy == 0.0 {
            if placed.clone().linear_coefficients().next().is_none() {
                m.vars.open.push(None);
                continue;
            }
            let o = m.problem.add(variable().binary());
            m.constraints.push((placed.clone() - usable * o).leq(0.0));
            m.objective -= w.open_node * o + w.strand * (usable * o - placed);
            m.vars.open.push(Some(o));
        } else {
            let mut freed = Expression::from(0.0);
            for (k, r) in inst.running.iter().enumerate() {
                if let (Some(p), None) = (m.vars.preempt[k], r.gpu_milli) {
                    let on = ctx.before.gpus[n]
                        .iter()
                        .zip(&node.down)
                        .filter(|(u, d)| !**d && **u == GpuUse::Whole(k))
                        .count();
                    if on > 0 {
                        freed.add_mul(on as f64, p);
                    }
                }
            }
            m.constant -= w.strand * (usable - busy);
            m.objective -= w.strand * (freed - placed);
            m.vars.open.push(None);
        }
    }
}
