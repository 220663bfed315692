//! `policy.task_distribution`: the task types the greedy places one-node jobs against, each
//! checked, their shares normalised.

use super::issues::Issues;
use super::limits;
use super::pending::gpu_type_list;
use crate::instance::raw::{RawPolicy, RawTaskType};
use crate::instance::task_dist::{TaskDist, TaskType};
use crate::units::MILLI_PER_GPU;
use std::sync::Arc;

/// Field path of the section.
const BASE: &str = "policy.task_distribution";

/// The distribution, or `None` on any issue.
pub fn check(is: &mut Issues, types: &[RawTaskType]) -> Option<Arc<TaskDist>> {
    if types.is_empty() {
        is.push(
            BASE,
            "is an empty list; list at least one task type, or omit it to place by best fit",
        );
        return None;
    }
    if types.len() > limits::MAX_TASK_TYPES {
        is.push(
            BASE,
            format!(
                "has {} task types; the limit is {}: keep the most frequent ones",
                types.len(),
                limits::MAX_TASK_TYPES
            ),
        );
        return None;
    }
    let before = is.count();
    let out: Vec<(TaskType, f64)> = types
        .iter()
        .enumerate()
        .map(|(i, t)| (task_type(is, &format!("{BASE}[{i}]"), t), t.share))
        .collect();
    if is.count() != before {
        return None;
    }
    Some(Arc::new(TaskDist::from_shares(out)))
}

/// The distribution with `policy.artifact_score`'s tie seed set; the field without a
/// distribution is an issue (it would silently do nothing).
pub fn with_artifact_score(
    is: &mut Issues,
    raw: Option<&RawPolicy>,
    dist: Option<Arc<TaskDist>>,
) -> Option<Arc<TaskDist>> {
    let seed = raw.and_then(|rp| rp.artifact_score);
    let has_types = raw.is_some_and(|rp| rp.task_distribution.is_some());
    match (seed, dist) {
        (Some(_), None) if !has_types => {
            is.push(
                "policy.artifact_score",
                "is set without policy.task_distribution; the artifact's score ranks nodes by \
                 fragmentation against a distribution: add one, or leave the field out",
            );
            None
        }
        (Some(seed), Some(mut d)) => {
            Arc::make_mut(&mut d).artifact_ties = Some(seed);
            Some(d)
        }
        (_, d) => d,
    }
}

/// One task type at path `p`.
fn task_type(is: &mut Issues, p: &str, t: &RawTaskType) -> TaskType {
    if t.gpus == 0 {
        is.push(
            format!("{p}.gpus"),
            "is 0; expected at least 1 GPU (CPU-only tasks do not fragment GPUs: leave them out)",
        );
    } else if t.gpus > limits::MAX_GPUS_PER_NODE {
        is.push(
            format!("{p}.gpus"),
            format!(
                "is {}; expected at most {} GPUs (a task type is what one task asks of one node)",
                t.gpus,
                limits::MAX_GPUS_PER_NODE
            ),
        );
    }
    let milli = is.milli(&format!("{p}.gpu_milli"), t.gpu_milli);
    if milli.is_some() && t.gpus != 1 {
        is.push(
            format!("{p}.gpu_milli"),
            format!(
                "is set but gpus is {}; a sharing task type asks for 1 GPU",
                t.gpus
            ),
        );
    }
    let gpu_types = t.gpu_type.as_ref().map(|g| g.to_vec());
    if let Some(ts) = &gpu_types {
        gpu_type_list(is, p, ts);
    }
    if !(t.share.is_finite() && t.share > 0.0 && t.share <= limits::MAX_TASK_SHARE) {
        is.push(
            format!("{p}.share"),
            format!(
                "is {}; expected a number in (0, {:e}] (shares are normalised to sum to 1)",
                t.share,
                limits::MAX_TASK_SHARE
            ),
        );
    }
    let cpu_milli = is.resource(&format!("{p}.cpu_milli"), t.cpu_milli);
    let memory_mib = is.resource(&format!("{p}.memory_mib"), t.memory_mib);
    TaskType {
        cpu_milli: cpu_milli.unwrap_or(0),
        memory_mib: memory_mib.unwrap_or(0),
        gpus: t.gpus.min(limits::MAX_GPUS_PER_NODE) as u32,
        milli_per_gpu: milli.unwrap_or(MILLI_PER_GPU),
        gpu_types,
    }
}
