//! Value and aging: what starting a job is worth.
//!
//! ```text
//! objective: + sum_j value_j y_j,
//!   value_j = eq_j * (gpu * max(0.01, 1 + priority * prio_j) + aging * min(wait_j / 3600, aging_cap_hours))
//! ```
//! Aging grows with the wait per GPU, so a long-waiting big gang outbids the same GPUs of fresh
//! small jobs of equal priority: no job, small or large, starves forever.

use super::{Ctx, MipModel};
use crate::objective::job_value;

/// Add the value terms.
pub fn add(ctx: &Ctx, m: &mut MipModel) {
    for (j, job) in ctx.inst.pending.iter().enumerate() {
        if let Some(y) = m.vars.start[j] {
            m.objective += job_value(ctx.inst, job) * y;
        }
    }
}
