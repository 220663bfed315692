//! Run metrics and the report file.

use serde::{Deserialize, Serialize};

/// The metrics of one run. Fractions are 0..1. Metrics a protocol cannot define are `None`
/// (written as `null`): the fill protocol has no completions, hence no JCT or makespan.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Fill: share of GPU capacity allocated at the end. Replay: time-average share allocated.
    pub gpu_allocation_ratio: f64,
    /// Mean job completion time (submit to finish), seconds, over completed jobs.
    pub avg_jct_s: Option<f64>,
    /// Median JCT.
    pub p50_jct_s: Option<f64>,
    /// 99th percentile JCT (nearest rank).
    pub p99_jct_s: Option<f64>,
    /// First submit to last completion, seconds.
    pub makespan_s: Option<f64>,
    /// Useful work: replay, ideal GPU-seconds of completed jobs over capacity x makespan
    /// (slowdown and lost work do not count); fill, the allocated share at the end.
    pub utilization: f64,
    /// Fragmented idle GPU capacity over idle GPU capacity, fragmentation measured as FGD
    /// defines it against the trace's task distribution. Fill: at the end; replay: mean over
    /// planning rounds (at round start).
    pub fragmentation_rate: f64,
    /// Jain's index over jobs. Replay: of ideal duration / JCT of completed jobs. Fill: of 1
    /// (placed) or 0 (failed) per GPU job, which equals the placed share.
    pub jain_fairness: f64,
    /// Running jobs preempted.
    pub preemptions: u64,
    /// Planning rounds run.
    pub rounds: u64,
    /// Median planner wall time per round, seconds.
    pub solve_s_p50: f64,
    /// Longest planner wall time of a round, seconds.
    pub solve_s_max: f64,
    /// Fill: a proven upper bound on the share of GPU capacity that any placement of the
    /// submitted pods could allocate ([`super::bound`]); `None` (null) under replay.
    #[serde(default)]
    pub offline_upper_bound: Option<f64>,
}

/// Extra facts of a run (not metrics of the schedule).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// Protocol: `replay` or `fill`.
    pub protocol: String,
    /// Jobs submitted.
    pub jobs_submitted: u64,
    /// Jobs completed (replay) or placed (fill).
    pub jobs_done: u64,
    /// Jobs never started or never finished (replay: unplaceable or cut off), or failed (fill).
    pub jobs_failed: u64,
    /// GPUs in the cluster.
    pub cluster_gpus: u64,
    /// Rounds in which the ILP returned the greedy plan.
    pub ilp_fallback_rounds: u64,
    /// Rounds in which the ILP hit its time limit.
    pub ilp_time_limit_rounds: u64,
    /// Why the ILP fell back, with counts (the solver's note with digits removed).
    pub ilp_fallback_reasons: std::collections::BTreeMap<String, u64>,
    /// Wall time of the whole run, seconds.
    pub wall_s: f64,
    /// ILP runs: rounds whose plan differs from the greedy's plan of the same round.
    #[serde(default)]
    pub ilp_changed_rounds: u64,
    /// ILP runs: pending jobs placed otherwise than by the greedy (elsewhere, or placed by
    /// one and not the other), summed over rounds.
    #[serde(default)]
    pub ilp_changed_jobs: u64,
    /// Replays under `ilp` or `greedy`: the objective the planner was given
    /// (`attained-service` with its settings, or `default`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<String>,
}

/// Series for plots.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Fill: (requested load in % of capacity, allocated % of capacity), one point per whole
    /// percent reached.
    pub alloc_curve: Vec<(u32, f64)>,
    /// Completion times of completed jobs, seconds, in completion order.
    pub jct_s: Vec<f64>,
    /// Planner wall time per round, seconds.
    pub solve_s: Vec<f64>,
    /// ILP runs: per round, the pending jobs placed otherwise than by the greedy.
    #[serde(default)]
    pub ilp_changed: Vec<u64>,
    /// Replays: every completed job, in completion order (what sets a tail).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<JobRecord>,
}

/// One completed job of a replay.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    /// The trace's job id.
    pub id: String,
    /// GPUs it asked (a sharer: 1).
    pub gpus: u32,
    /// Submission, seconds on the trace's clock.
    pub submit_s: f64,
    /// Its first start.
    pub first_start_s: f64,
    /// Its completion.
    pub finish_s: f64,
    /// Its ideal run time (the trace's duration).
    pub duration_s: f64,
    /// Times it was preempted.
    pub preemptions: u32,
}

/// The report file (`--report`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Planner name.
    pub planner: String,
    /// Trace description.
    pub trace: String,
    /// Seed.
    pub seed: u64,
    /// Metrics.
    pub metrics: Metrics,
    /// Run facts.
    pub info: RunInfo,
    /// Series for plots.
    pub series: Series,
}

/// Nearest-rank percentile (q in 0..=1) of unsorted values; `None` when empty.
pub fn percentile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    Some(v[rank - 1])
}

/// Jain's fairness index of non-negative values; 1 when empty or all zero.
pub fn jain(values: &[f64]) -> f64 {
    let s: f64 = values.iter().sum();
    let s2: f64 = values.iter().map(|x| x * x).sum();
    if values.is_empty() || s2 <= 0.0 {
        return 1.0;
    }
    (s * s / (values.len() as f64 * s2)).clamp(0.0, 1.0)
}
