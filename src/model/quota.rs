//! Quotas: no tenant holds more than its quota after the round.
//!
//! ```text
//! H_t = held_t - sum_{k of t} eq_k p_k + sum_{j of t} eq_j y_j       (eq: GPUs, or milli/1000)
//! tenant within its quota before the round (held_t <= q_t):
//!   H_t <= q_t
//! tenant above its quota before the round (held_t > q_t): it may start a job only once its
//! own preemptions bring it under, and it is never forced down:
//!   H_t <= q_t + (held_t - q_t) (1 - y_j)        for every job j of t
//! ```
//! A job larger than its tenant's quota gets no variables at all.

use super::{Ctx, MipModel};
use good_lp::Expression;

/// Add the quota rows.
pub fn add(ctx: &Ctx, m: &mut MipModel) {
    let inst = ctx.inst;
    let held_before_round = crate::objective::held_before(inst);
    for (t, tenant) in inst.tenants.iter().enumerate() {
        let Some(q) = tenant.quota else { continue };
        let q = q as f64;
        let held = held_before_round[t];
        let mut change = Expression::from(0.0);
        let mut starts = Vec::new();
        for (j, job) in inst.pending.iter().enumerate() {
            if let (true, Some(y)) = (job.tenant == t, m.vars.start[j]) {
                change.add_mul(job.gpu_equivalent(), y);
                starts.push(y);
            }
        }
        if starts.is_empty() {
            continue;
        }
        for (k, r) in inst.running.iter().enumerate() {
            if let (true, Some(p)) = (r.tenant == t, m.vars.preempt[k]) {
                change.add_mul(-r.gpu_equivalent(), p);
            }
        }
        if held <= q + 1e-9 {
            m.constraints.push(change.leq(q - held));
        } else {
            for y in starts {
                m.constraints
                    .push((change.clone() + (held - q) * y).leq(0.0));
            }
        }
    }
}
