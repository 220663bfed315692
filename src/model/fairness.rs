//! Fairness: weighted shortfall against the fair share of tenants that have demand.
//!
//! ```text
//! F_t = weighted max-min (water-filling) share of the usable GPUs among tenants with demand
//! sigma_t >= F_t - H_t,  sigma_t >= 0,
//!   H_t = held_t - sum_{k of t} eq_k p_k + sum_{starts s of t} eq_s v_s  (see [`super::holdings`])
//! objective: - fairness * sum_t sigma_t
//! ```
//! The per-node model counts the shortfall of a tenant whose holdings no variable moves as a
//! constant; the aggregated model gives every tenant with a share its sigma_t.

use super::holdings::{self, TenantTerms};
use super::{Ctx, MipModel};
use crate::instance::Instance;
use crate::objective::fair_shares;
use good_lp::{variable, Constraint, ProblemVariables, Variable};

/// How a tenant whose holdings no variable moves is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FixedTenants {
    /// Its shortfall is a constant of the objective (per-node model).
    Constant,
    /// It gets sigma_t like every other tenant (aggregated model).
    Variable,
}

/// One tenant's shortfall term.
pub enum Shortfall {
    /// No share, or a fairness weight of 0: no term.
    None,
    /// The cost `fairness * max(0, F_t - held_t)` of a tenant nothing can move.
    Constant(f64),
    /// sigma_t and its row; the objective takes `- fairness * sigma_t`.
    Variable(Variable, Constraint),
}

/// The shortfall term of every tenant; sigma_t variables are added to `p` in tenant order.
pub fn shortfalls(
    inst: &Instance,
    terms: &[TenantTerms],
    p: &mut ProblemVariables,
    fixed: FixedTenants,
) -> Vec<Shortfall> {
    let fair = fair_shares(inst);
    let w = inst.policy.weights.fairness;
    let held_before_round = crate::objective::held_before(inst);
    let mut out = Vec::with_capacity(fair.len());
    for (t, &f) in fair.iter().enumerate() {
        let held = held_before_round[t];
        if f <= 0.0 || w == 0.0 {
            out.push(Shortfall::None);
        } else if fixed == FixedTenants::Constant && terms[t].is_fixed() {
            out.push(Shortfall::Constant(w * (f - held).max(0.0)));
        } else {
            let sigma = p.add(variable().min(0.0));
            out.push(Shortfall::Variable(
                sigma,
                (sigma + terms[t].change()).geq(f - held),
            ));
        }
    }
    out
}

/// Add the shortfall variables, rows and cost.
pub fn add(ctx: &Ctx, m: &mut MipModel) {
    let terms = holdings::per_node(ctx.inst, &m.vars);
    let w = ctx.inst.policy.weights.fairness;
    for s in shortfalls(ctx.inst, &terms, &mut m.problem, FixedTenants::Constant) {
        match s {
            Shortfall::None => m.vars.shortfall.push(None),
            Shortfall::Constant(c) => {
                m.constant -= c;
                m.vars.shortfall.push(None);
            }
            Shortfall::Variable(sigma, row) => {
                m.constraints.push(row);
                m.objective -= w * sigma;
                m.vars.shortfall.push(Some(sigma));
            }
        }
    }
}
