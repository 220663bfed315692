//! Victims need work that outranks them: a running job is preempted only when a job of
//! strictly higher priority starts (SPEC rule 5: what a victim frees, whether its GPUs, its
//! CPU and memory or its tenant's quota, goes to strictly higher-priority work).
//!
//! ```text
//! for every priority pi of a candidate victim (N_pi victims of priority pi):
//!   sum_{k: prio_k = pi} p_k  <=  N_pi sum_{s: prio_s > pi} v_s
//! ```
//! v_s is y_j per job in the per-node model and n_c per class in the aggregated model, where a
//! class counts as the highest priority among its jobs (a relaxation). Every valid plan meets
//! the row, so both models' bounds stay bounds; without it a model could preempt a job only
//! to free its tenant's quota for that tenant's lower-priority work.

use super::MipModel;
use crate::instance::Instance;
use good_lp::{Expression, Variable};
use std::collections::BTreeMap;

/// Add one row per victim priority. `starts`: (priority, start or count variable) of what
/// may start; `preempt`: p_k per running job, `None` where it may not be preempted.
pub fn add(
    inst: &Instance,
    starts: &[(i64, Variable)],
    preempt: &[Option<Variable>],
    m: &mut MipModel,
) {
    let mut levels: BTreeMap<i64, Vec<Variable>> = BTreeMap::new();
    for (r, p) in inst.running.iter().zip(preempt) {
        if let Some(p) = *p {
            levels.entry(r.priority).or_default().push(p);
        }
    }
    for (pi, ps) in levels {
        let mut lhs = Expression::from(0.0);
        for &p in &ps {
            lhs.add_mul(1.0, p);
        }
        let n = ps.len() as f64;
        for &(prio, v) in starts {
            if prio > pi {
                lhs.add_mul(-n, v);
            }
        }
        m.constraints.push(lhs.leq(0.0));
    }
}
