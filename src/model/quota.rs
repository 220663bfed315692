//! Quotas: no tenant holds more than its quota after the round.
//!
//! ```text
//! H_t = held_t - sum_{k of t} eq_k p_k + sum_{starts s of t} eq_s v_s   (see [`super::holdings`])
//! tenant within its quota before the round (held_t <= q_t):
//!   H_t <= q_t
//! tenant above its quota before the round (held_t > q_t): it may start a job only once its
//! own preemptions bring it under, and it is never forced down:
//!   H_t <= q_t + (held_t - q_t) (1 - y_j)        for every job j of t       (per-node model)
//! ```
//! A job larger than its tenant's quota gets no variables at all. The aggregated model keeps
//! the first row for every tenant within its quota; for a tenant above it, with u_t in [0, 1]
//! (integer in the integer model) standing for "the tenant starts a job" and E_t the GPU
//! equivalents of all its pending jobs:
//!   sum_{starts s of t} eq_s n_s <= E_t u_t
//!   H_t - held_t <= (q_t - held_t) u_t
//! Starting nothing (u_t = 0) asks only that its preemptions do not raise it; starting
//! anything (u_t = 1) asks H_t <= q_t, as the per-node rows do ([`over_quota_rows`]).

use super::holdings::{self, TenantTerms};
use super::{Ctx, MipModel};
use crate::instance::Instance;
use crate::units::TOLERANCE;
use good_lp::{variable, Constraint, Expression, ProblemVariables, Variable};

/// Which quota rows a model writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaRows {
    /// The per-node model: rows for tenants with a job that can start; an over-quota tenant
    /// gets one row per start.
    Exact,
    /// The aggregated model: one row for every tenant within its quota, none above it (those
    /// get [`over_quota_rows`]).
    WithinQuota,
}

/// The quota rows of every tenant, each with the start variable that relaxes it for an
/// over-quota tenant, or `None` for the single row of a tenant within its quota.
pub fn rows_of(
    inst: &Instance,
    terms: &[TenantTerms],
    form: QuotaRows,
) -> Vec<Vec<(Constraint, Option<Variable>)>> {
    let held_before_round = crate::objective::held_before(inst);
    let mut out = Vec::with_capacity(inst.tenants.len());
    for (t, tenant) in inst.tenants.iter().enumerate() {
        let Some(q) = tenant.quota else {
            out.push(Vec::new());
            continue;
        };
        let held = held_before_round[t];
        let starts = &terms[t].starts;
        if form == QuotaRows::Exact && starts.is_empty() {
            out.push(Vec::new());
            continue;
        }
        let change = terms[t].change();
        if held <= q + TOLERANCE {
            out.push(vec![(change.leq(q - held), None)]);
        } else if form == QuotaRows::Exact {
            out.push(
                starts
                    .iter()
                    .map(|&(_, y)| ((change.clone() + (held - q) * y).leq(0.0), Some(y)))
                    .collect(),
            );
        } else {
            out.push(Vec::new());
        }
    }
    out
}

/// The aggregated model's rows of every tenant above its quota before the round that has
/// starts (see the module's math; `integer`: u_t integer).
pub fn over_quota_rows(
    inst: &Instance,
    terms: &[TenantTerms],
    problem: &mut ProblemVariables,
    integer: bool,
) -> Vec<Constraint> {
    let held_before_round = crate::objective::held_before(inst);
    let mut asked = vec![0.0; inst.tenants.len()];
    for job in &inst.pending {
        asked[job.tenant] += job.gpu_equivalent();
    }
    let mut rows = Vec::new();
    for (t, tenant) in inst.tenants.iter().enumerate() {
        let (Some(q), held) = (tenant.quota, held_before_round[t]) else {
            continue;
        };
        if held <= q + TOLERANCE || terms[t].starts.is_empty() {
            continue;
        }
        let u = variable().min(0).max(1);
        let u = problem.add(if integer { u.integer() } else { u });
        let mut starts = Expression::from(0.0);
        for &(eq, n) in &terms[t].starts {
            starts.add_mul(eq, n);
        }
        rows.push((starts - asked[t] * u).leq(0.0));
        rows.push((terms[t].change() - (q - held) * u).leq(0.0));
    }
    rows
}

/// The per-node model's quota rows of every tenant (see [`rows_of`]).
pub fn rows(ctx: &Ctx, m: &MipModel) -> Vec<Vec<(Constraint, Option<Variable>)>> {
    rows_of(
        ctx.inst,
        &holdings::per_node(ctx.inst, &m.vars),
        QuotaRows::Exact,
    )
}

/// Add the quota rows.
pub fn add(ctx: &Ctx, m: &mut MipModel) {
    let all = rows(ctx, m);
    m.constraints
        .extend(all.into_iter().flatten().map(|(row, _)| row));
}
