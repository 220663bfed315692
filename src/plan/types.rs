//! Plan types, serialised exactly as SPEC.md describes (extra fields are optional additions).

use serde::de::{Deserializer, Error as _, Unexpected};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Format tag written in every plan.
pub const PLAN_FORMAT: &str = "gangplan-plan/1";

/// The words a waiting job's `kind` may be.
pub const PENDING_KINDS: [&str; 3] = ["unschedulable", "unresolvable", "unexplained"];

/// A pending entry's `kind`: one of [`PENDING_KINDS`].
fn known_kind<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let kind = Option::<String>::deserialize(d)?;
    match &kind {
        Some(k) if !PENDING_KINDS.contains(&k.as_str()) => Err(D::Error::unknown_variant(
            &crate::instance::text::shorten(k, crate::instance::text::ECHO_CHARS),
            &PENDING_KINDS,
        )),
        _ => Ok(kind),
    }
}

/// A reservation's `starts_in`: seconds from now, finite and not negative.
fn seconds_from_now<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let s = f64::deserialize(d)?;
    if s.is_finite() && s >= 0.0 {
        Ok(s)
    } else {
        Err(D::Error::invalid_value(
            Unexpected::Float(s),
            &"seconds from the round, a finite number >= 0",
        ))
    }
}

/// How the plan was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// The solver proved the objective within `mip_gap`.
    Optimal,
    /// The time limit hit with a solver incumbent (gap reported).
    Feasible,
    /// The greedy bin-packer's plan was used.
    Fallback,
}

/// Solver report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SolverInfo {
    /// `ilp` or `greedy`: the planner that ran.
    pub path: String,
    /// Wall seconds of the whole command up to writing.
    pub seconds: f64,
    /// Objective of the returned plan (higher is better).
    pub objective: f64,
    /// Proven upper bound on the objective, where one exists.
    pub bound: Option<f64>,
    /// (bound - objective) / max(1, |objective|), where a bound exists.
    pub gap: Option<f64>,
    /// Whether the time limit cut the solve short.
    pub time_limit_hit: bool,
    /// Objective of the greedy plan, for comparison (optional addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub greedy_objective: Option<f64>,
    /// Why the plan fell back to greedy, when it did (optional addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl SolverInfo {
    /// The report of a plan with no solve behind it (a baseline's plan, an assignment checked
    /// before rendering): `path` only, everything else zero or absent.
    pub fn blank(path: &str) -> Self {
        SolverInfo {
            path: path.to_string(),
            seconds: 0.0,
            objective: 0.0,
            bound: None,
            gap: None,
            time_limit_hit: false,
            greedy_objective: None,
            note: None,
        }
    }
}

/// One started job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Placement {
    /// Job id.
    pub job: String,
    /// GPUs per node name (a CPU-only job lists its node with no GPUs). A node given twice is
    /// refused when a plan is read.
    #[serde(deserialize_with = "crate::instance::raw::unique_keys")]
    pub gpus: BTreeMap<String, Vec<u32>>,
    /// For a sharer: its share of the GPU (optional addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_milli: Option<u32>,
}

/// One preempted running job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Preemption {
    /// Job id.
    pub job: String,
    /// Why, in one sentence.
    pub reason: String,
}

/// One job left pending.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PendingEntry {
    /// Job id.
    pub job: String,
    /// What blocks it, in one sentence.
    pub reason: String,
    /// `unschedulable` (would start if something finished or were preempted),
    /// `unresolvable` (no state of this cluster could place it) or `unexplained` (the time
    /// limit left no time to work the reason out) (optional addition); any other word is
    /// refused when a plan is read.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "known_kind"
    )]
    pub kind: Option<String>,
}

/// Nodes held for a waiting gang (optional addition): one of the round's reservations, shown
/// while its job waits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanReservation {
    /// The waiting job the nodes are held for.
    pub job: String,
    /// Seconds from the round until the nodes' GPUs are free for it (finite, >= 0; anything
    /// else is refused when a plan is read).
    #[serde(deserialize_with = "seconds_from_now")]
    pub starts_in: f64,
    /// The reserved nodes.
    pub nodes: Vec<String>,
}

/// Round metrics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metrics {
    /// GPUs in the cluster.
    pub gpus_total: u32,
    /// GPUs held before the round.
    pub gpus_busy_before: u32,
    /// GPUs held after the round.
    pub gpus_busy_after: u32,
    /// GPUs out of service (optional addition).
    #[serde(default)]
    pub gpus_down: u32,
    /// Jobs started (optional addition).
    #[serde(default)]
    pub jobs_placed: u32,
    /// Jobs left pending (optional addition).
    #[serde(default)]
    pub jobs_pending: u32,
    /// Jobs preempted (optional addition).
    #[serde(default)]
    pub jobs_preempted: u32,
}

/// A plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// Always [`PLAN_FORMAT`].
    pub format: String,
    /// How the plan was obtained.
    pub status: Status,
    /// Solver report.
    pub solver: SolverInfo,
    /// Jobs to start.
    pub placements: Vec<Placement>,
    /// Jobs to preempt.
    pub preemptions: Vec<Preemption>,
    /// Jobs left pending.
    pub pending: Vec<PendingEntry>,
    /// Metrics.
    pub metrics: Metrics,
    /// The round's first reservation whose job waits (optional addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservation: Option<PlanReservation>,
    /// Every reservation of the round whose job waits, in the round's order (optional
    /// addition); empty (and not written) when it would hold at most the one in
    /// `reservation`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reservations: Vec<PlanReservation>,
}
