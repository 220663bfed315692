//! The objective's scale: what one GPU of a job is worth, and what preempting one costs, stay
//! within ranges that the MIP solves exactly. With priority 1e12 and every weight 1e6 the
//! objective's coefficients spanned 18 orders of magnitude and the solver reported a bound
//! below its own plan's objective; these bounds keep them within nine.
//!
//! For every job, with `w` the policy's weights and `eq` its GPUs (a sharer's share):
//!
//! ```text
//! priority factor   |w.priority * priority|                              <= MAX_PRIORITY_FACTOR
//! value per GPU      w.gpu * (1 + w.priority * priority) + w.aging * w.aging_cap_hours
//!                                                                        <= MAX_VALUE_PER_GPU
//! checkpoint per GPU w.checkpoint * checkpoint_cost / 3600 / eq          <= MAX_VALUE_PER_GPU
//! ```
//!
//! (`eq` = 1 for a CPU-only running job: its whole checkpoint cost is held to the same bound.)
//! Where the value per GPU is out of range at priority 0 (`w.gpu + w.aging *
//! w.aging_cap_hours`), the weights alone are at fault: one issue at `policy.weights.aging`.

use super::issues::Issues;
use crate::instance::policy::Weights;
use crate::instance::raw::RawInstance;

/// Largest `|weights.priority * priority|`: a GPU of the most important job is worth at most
/// a million GPUs of a priority-0 job.
pub const MAX_PRIORITY_FACTOR: f64 = 1e6;

/// Largest objective value of one GPU of a job, and largest checkpoint cost per GPU.
pub const MAX_VALUE_PER_GPU: f64 = 1e9;

/// Check every job's priority and checkpoint cost against the weights.
pub fn check(is: &mut Issues, raw: &RawInstance, w: &Weights) {
    let running = raw.running.iter().enumerate().map(|(i, r)| {
        let eq = match r.gpu_milli {
            Some(m) => m as f64 / 1000.0,
            None => r.gpus.values().map(Vec::len).sum::<usize>() as f64,
        };
        (
            format!("running[{i}]"),
            r.priority,
            r.checkpoint_cost.map(|c| (c, eq)),
        )
    });
    let pending = raw
        .pending
        .iter()
        .enumerate()
        .map(|(i, p)| (format!("pending[{i}]"), p.priority, None));
    let weights_fit = aging_scale(is, w);
    for (path, priority, checkpoint) in running.chain(pending) {
        if weights_fit {
            priority_scale(is, &path, priority, w);
        }
        if let Some((cost, eq)) = checkpoint {
            checkpoint_scale(is, &path, cost, eq, w);
        }
    }
}

/// The value per GPU that no job's priority adds to (priority 0, aged to the cap): above the
/// bound, the weights alone are at fault, and the issue names them once rather than every
/// job's priority. Returns whether they fit.
fn aging_scale(is: &mut Issues, w: &Weights) -> bool {
    let base = w.gpu + w.aging * w.aging_cap_hours;
    if base <= MAX_VALUE_PER_GPU {
        return true;
    }
    is.push(
        "policy.weights.aging",
        format!(
            "is {}; with aging_cap_hours {} (and gpu {}) one GPU of a job that waited the cap \
             is worth {base:e} in the objective whatever its priority, and the solver stays \
             exact up to {MAX_VALUE_PER_GPU:e}: keep gpu + aging x aging_cap_hours <= \
             {MAX_VALUE_PER_GPU:e} (lower aging or aging_cap_hours; only the weights' ratios \
             matter)",
            w.aging, w.aging_cap_hours, w.gpu
        ),
    );
    false
}

fn priority_scale(is: &mut Issues, path: &str, priority: i64, w: &Weights) {
    let factor = (w.priority * priority as f64).abs();
    let per_gpu = w.gpu * (1.0 + factor) + w.aging * w.aging_cap_hours;
    if factor > MAX_PRIORITY_FACTOR {
        is.push(
            format!("{path}.priority"),
            format!(
                "is {priority}; with policy.weights.priority {} one GPU of this job outweighs \
                 {factor:e} GPUs of a priority-0 job, and the solver stays exact up to \
                 {MAX_PRIORITY_FACTOR:e}: keep |priority x weights.priority| <= {MAX_PRIORITY_FACTOR:e} \
                 (rank priorities, e.g. 0..1000)",
                w.priority
            ),
        );
    } else if per_gpu > MAX_VALUE_PER_GPU {
        is.push(
            format!("{path}.priority"),
            format!(
                "is {priority}; with policy.weights gpu {}, priority {} and aging {} one GPU of \
                 this job is worth {per_gpu:e} in the objective, and the solver stays exact up \
                 to {MAX_VALUE_PER_GPU:e}: lower the weights (only their ratios matter)",
                w.gpu, w.priority, w.aging
            ),
        );
    }
}

fn checkpoint_scale(is: &mut Issues, path: &str, cost: f64, eq: f64, w: &Weights) {
    if !cost.is_finite() {
        return;
    }
    // A CPU-only job (no GPU) is checked on its whole cost, as a job of one GPU.
    let per_gpu = w.checkpoint * cost / 3600.0 / if eq > 0.0 { eq } else { 1.0 };
    if per_gpu > MAX_VALUE_PER_GPU {
        is.push(
            format!("{path}.checkpoint_cost"),
            format!(
                "is {cost}; with policy.weights.checkpoint {} preempting it costs {per_gpu:e} \
                 per GPU in the objective, and the solver stays exact up to \
                 {MAX_VALUE_PER_GPU:e}: lower weights.checkpoint or give the cost in GPU-seconds",
                w.checkpoint
            ),
        );
    }
}
