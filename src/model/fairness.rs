//! Fairness: weighted shortfall against the fair share of tenants that have demand.
//!
//! ```text
//! F_t = weighted max-min (water-filling) share of the usable GPUs among tenants with demand
//! sigma_t >= F_t - H_t,  sigma_t >= 0,
//!   H_t = held_t - sum_{k of t} eq_k p_k + sum_{j of t} eq_j y_j
//! objective: - fairness * sum_t sigma_t
//! ```

use super::{Ctx, MipModel};
use crate::objective::fair_shares;
use good_lp::{variable, Expression};

/// Add the shortfall variables, rows and cost.
pub fn add(ctx: &Ctx, m: &mut MipModel) {
    let inst = ctx.inst;
    let fair = fair_shares(inst);
    let w = inst.policy.weights.fairness;
    let held_before_round = crate::objective::held_before(inst);
    for (t, &f) in fair.iter().enumerate() {
        let held = held_before_round[t];
        let mut h = Expression::from(0.0);
        let mut can_move = false;
        for (j, job) in inst.pending.iter().enumerate() {
            if let (true, Some(y)) = (job.tenant == t, m.vars.start[j]) {
                h.add_mul(job.gpu_equivalent(), y);
                can_move = true;
            }
        }
        for (k, r) in inst.running.iter().enumerate() {
            if let (true, Some(p)) = (r.tenant == t, m.vars.preempt[k]) {
                h.add_mul(-r.gpu_equivalent(), p);
                can_move = true;
            }
        }
        if f <= 0.0 || w == 0.0 {
            m.vars.shortfall.push(None);
            continue;
        }
        if !can_move {
            m.constant -= w * (f - held).max(0.0);
            m.vars.shortfall.push(None);
            continue;
        }
        let sigma = m.problem.add(variable().min(0.0));
        m.constraints.push((sigma + h).geq(f - held));
        m.objective -= w * sigma;
        m.vars.shortfall.push(Some(sigma));
    }
}
