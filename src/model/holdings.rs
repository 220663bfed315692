//! How a model expresses the change in a tenant's GPUs over the round, the term the quota and
//! fairness rows of both models share:
//!
//! ```text
//! H_t - held_t = sum_{starts s of t} eq_s v_s - sum_{k of t} eq_k p_k
//! ```
//! where the per-node model has one start term per job (v_s = y_j, eq_s = the job's GPUs, or
//! gpu_milli / 1000 for a sharer) and the aggregated model one per class (v_s = n_c).

use super::Vars;
use crate::instance::Instance;
use good_lp::{Expression, Variable};

/// The start and victim terms of one tenant.
#[derive(Debug, Clone, Default)]
pub struct TenantTerms {
    /// (eq, variable) of every start that adds to the tenant's GPUs, in model order.
    pub starts: Vec<(f64, Variable)>,
    /// (eq, p_k) of every running job of the tenant that may be preempted.
    pub victims: Vec<(f64, Variable)>,
}

impl TenantTerms {
    /// H_t - held_t as an expression: the starts, then the victims.
    pub fn change(&self) -> Expression {
        let mut e = Expression::from(0.0);
        for &(eq, v) in &self.starts {
            e.add_mul(eq, v);
        }
        for &(eq, p) in &self.victims {
            e.add_mul(-eq, p);
        }
        e
    }

    /// Whether no variable moves the tenant's holdings.
    pub fn is_fixed(&self) -> bool {
        self.starts.is_empty() && self.victims.is_empty()
    }
}

/// Every tenant's victim terms: p_k of its preemptible running jobs, in running order.
pub fn with_victims(inst: &Instance, preempt: &[Option<Variable>]) -> Vec<TenantTerms> {
    let mut terms = vec![TenantTerms::default(); inst.tenants.len()];
    for (k, r) in inst.running.iter().enumerate() {
        if let Some(p) = preempt[k] {
            terms[r.tenant].victims.push((r.gpu_equivalent(), p));
        }
    }
    terms
}

/// The per-node model's terms: y_j of every job that can start, and the victims.
pub fn per_node(inst: &Instance, vars: &Vars) -> Vec<TenantTerms> {
    let mut terms = with_victims(inst, &vars.preempt);
    for (j, job) in inst.pending.iter().enumerate() {
        if let Some(y) = vars.start[j] {
            terms[job.tenant].starts.push((job.gpu_equivalent(), y));
        }
    }
    terms
}
