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
use good_lp::{Constraint, Expression, Variable};

/// The quota rows of every tenant (empty for tenants without a quota or without a job that
/// can start), each with the start variable that relaxes it for an over-quota tenant, or
/// `None` for the single row of a tenant within its quota.
pub fn rows(ctx: &Ctx, m: &MipModel) -> Vec<Vec<(Constraint, Option<Variable>)>> {
    let inst = ctx.inst;
    let held_before_round = crate::objective::held_before(inst);
    let mut out = Vec::with_capacity(inst.tenants.len());
    for (t, tenant) in inst.tenants.iter().enumerate() {
        let Some(q) = tenant.quota else {
            out.push(Vec::new());
            continue;
        };
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
            out.push(Vec::new());
            continue;
        }
        for (k, r) in inst.running.iter().enumerate() {
            if let (true, Some(p)) = (r.tenant == t, m.vars.preempt[k]) {
                change.add_mul(-r.gpu_equivalent(), p);
            }
        }
        if held <= q + 1e-9 {
            out.push(vec![(change.leq(q - held), None)]);
        } else {
            out.push(
                starts
                    .into_iter()
                    .map(|y| ((change.clone() + (held - q) * y).leq(0.0), Some(y)))
                    .collect(),
            );
        }
    }
    out
}

/// Add the quota rows.
pub fn add(ctx: &Ctx, m: &mut MipModel) {
    let all = rows(ctx, m);
    m.constraints
        .extend(all.into_iter().flatten().map(|(row, _)| row));
}
