//! Quotas: no tenant holds more than its quota after the round.
//!
//! ```text
//! for every tenant t with a quota q_t and held_t <= q_t before the round:
//!   sum_{j of t} eq_j y_j - sum_{k of t} eq_k p_k <= q_t - held_t
//! ```
//! (eq = GPUs, or gpu_milli / 1000 for a sharer). A tenant already above its quota starts
//! nothing this round (its jobs get no variables), and is never forced down by preemption.

use super::{Ctx, MipModel};
use good_lp::Expression;

/// Add the quota rows.
pub fn add(ctx: &Ctx, m: &mut MipModel) {
    let inst = ctx.inst;
    for (t, tenant) in inst.tenants.iter().enumerate() {
        let Some(q) = tenant.quota else { continue };
        let held: f64 = inst
            .running
            .iter()
            .filter(|r| r.tenant == t)
            .map(|r| r.gpu_equivalent())
            .sum();
        let mut lhs = Expression::from(0.0);
        let mut any = false;
        for (j, job) in inst.pending.iter().enumerate() {
            if let (true, Some(y)) = (job.tenant == t, m.vars.start[j]) {
                lhs.add_mul(job.gpu_equivalent(), y);
                any = true;
            }
        }
        if !any {
            continue;
        }
        for (k, r) in inst.running.iter().enumerate() {
            if let (true, Some(p)) = (r.tenant == t, m.vars.preempt[k]) {
                lhs.add_mul(-r.gpu_equivalent(), p);
            }
        }
        m.constraints.push(lhs.leq(q as f64 - held));
    }
}
