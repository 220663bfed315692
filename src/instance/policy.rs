//! The round's policy: time limit, gap, objective weights, reservations.

use crate::error::InputIssue;
use std::collections::BTreeMap;

/// Objective weights (`policy.weights` in the instance). The objective is maximised:
///
/// ```text
/// value(j)   = eq(j) * (gpu * max(0.01, 1 + priority * prio(j)) + aging * min(wait_h(j), aging_cap_hours))
///              (a CPU-only job counts eq = cpu_job; a sharer eq = gpu_milli / 1000)
/// spread(j)  = spread * gpus(j) * [ (s_node - 1) * extra_nodes + (s_rack - 1) * extra_racks
///                                 + (s_pod - 1) * extra_pods + (s_island - 1) * island_splits ]
/// victim(k)  = preemption * (gpus(k) * gpu * max(0.01, 1 + priority * prio(k)))
///              + checkpoint * checkpoint_cost(k) / 3600
/// objective  = sum value(placed) - sum spread(placed) - sum victim(preempted)
///              - fairness * sum_t shortfall_t - open_node * nodes_opened - strand * free_gpus_on_used_nodes
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weights {
    /// Value of one GPU started (base). Default 1.
    pub gpu: f64,
    /// Value added per GPU per unit of priority. Default 0.1.
    pub priority: f64,
    /// Value added per GPU per hour waited. Default 0.05.
    pub aging: f64,
    /// Hours after which aging stops growing. Default 48.
    pub aging_cap_hours: f64,
    /// GPU-equivalent value of starting a CPU-only job. Default 0.05.
    pub cpu_job: f64,
    /// Multiplier on the workload slowdown penalties. Default 1.
    pub spread: f64,
    /// Multiplier on the value a preempted job loses. Default 1.
    pub preemption: f64,
    /// Cost per GPU-hour of work lost since checkpoint. Default 1.
    pub checkpoint: f64,
    /// Cost per GPU a tenant with demand falls short of its weighted fair share. Default 0.3.
    pub fairness: f64,
    /// Cost of starting work on a node that was empty. Default 0.2.
    pub open_node: f64,
    /// Cost per free GPU left stranded on a node that is in use after the round. Default 0.02.
    pub strand: f64,
    /// Cost per GPU of fragmentation the round adds against the task distribution (rounds
    /// that carry one only; [`crate::objective::fragmentation_cost`]). Default 0.02.
    pub fragmentation: f64,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            gpu: 1.0,
            priority: 0.1,
            aging: 0.05,
            aging_cap_hours: 48.0,
            cpu_job: 0.05,
            spread: 1.0,
            preemption: 1.0,
            checkpoint: 1.0,
            fairness: 0.3,
            open_node: 0.2,
            strand: 0.02,
            fragmentation: 0.02,
        }
    }
}

impl Weights {
    /// Names accepted in `policy.weights`.
    pub const NAMES: &'static [&'static str] = &[
        "gpu",
        "priority",
        "aging",
        "aging_cap_hours",
        "cpu_job",
        "spread",
        "preemption",
        "checkpoint",
        "fairness",
        "open_node",
        "strand",
        "fragmentation",
    ];

    /// Defaults overridden by the map; unknown names and bad values are issues.
    pub fn from_map(map: &BTreeMap<String, f64>) -> Result<Self, Vec<InputIssue>> {
        let mut w = Weights::default();
        let mut issues = Vec::new();
        for (k, &v) in map {
            let path = format!("policy.weights.{k}");
            if !v.is_finite() || !(0.0..=1e6).contains(&v) {
                issues.push(InputIssue {
                    path,
                    message: format!("is {v}; expected a number in 0..=1e6"),
                    line: None,
                });
                continue;
            }
            let slot = match k.as_str() {
                "gpu" => &mut w.gpu,
                "priority" => &mut w.priority,
                "aging" => &mut w.aging,
                "aging_cap_hours" => &mut w.aging_cap_hours,
                "cpu_job" => &mut w.cpu_job,
                "spread" => &mut w.spread,
                "preemption" => &mut w.preemption,
                "checkpoint" => &mut w.checkpoint,
                "fairness" => &mut w.fairness,
                "open_node" => &mut w.open_node,
                "strand" => &mut w.strand,
                "fragmentation" => &mut w.fragmentation,
                _ => {
                    issues.push(InputIssue {
                        path,
                        message: format!(
                            "unknown weight; expected one of {}",
                            Self::NAMES.join(", ")
                        ),
                        line: None,
                    });
                    continue;
                }
            };
            *slot = v;
        }
        if issues.is_empty() {
            Ok(w)
        } else {
            Err(issues)
        }
    }
}

/// Policy with every default filled in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Policy {
    /// Seconds for the whole command, read to write. Default 10.
    pub time_limit: f64,
    /// Relative gap at which the MIP stops. Default 0.01.
    pub mip_gap: f64,
    /// Objective weights.
    pub weights: Weights,
    /// Whether running preemptible jobs may be preempted. Default true.
    pub preemption: bool,
    /// Solver random seed. Default 0.
    pub seed: u64,
    /// The most blocked jobs the round reserves nodes for ([`crate::instance::reservation`]),
    /// 0..=[`MAX_RESERVATIONS`]; 0: none. Default 1.
    pub reservations: u32,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            time_limit: 10.0,
            mip_gap: 0.01,
            weights: Weights::default(),
            preemption: true,
            seed: 0,
            reservations: 1,
        }
    }
}

/// Most reservations a round may make (`policy.reservations`).
pub const MAX_RESERVATIONS: u32 = 64;

/// A `policy.reservations` that is not a whole number in 0..=[`MAX_RESERVATIONS`]; it displays
/// as the rest of a message that starts with the field or flag's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "is {0}; expected a whole number of blocked jobs to reserve nodes for, in 0..={max} \
     (0: no reservation; default 1)",
    max = MAX_RESERVATIONS
)]
pub struct BadReservations(pub i64);

/// The number of reservations `n`, checked: 0..=[`MAX_RESERVATIONS`].
pub fn check_reservations(n: i64) -> Result<u32, BadReservations> {
    u32::try_from(n)
        .ok()
        .filter(|&r| r <= MAX_RESERVATIONS)
        .ok_or(BadReservations(n))
}

/// Longest time limit accepted, in seconds (one day).
pub const MAX_TIME_LIMIT_S: f64 = 86_400.0;

/// A time limit that is not a number of seconds in (0, [`MAX_TIME_LIMIT_S`]]; it displays as
/// the rest of a message that starts with the field or flag's name.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[error("is {0}; expected seconds in (0, {max}]", max = MAX_TIME_LIMIT_S)]
pub struct BadTimeLimit(pub f64);

/// The time limit `seconds`, checked: finite, above 0, at most [`MAX_TIME_LIMIT_S`].
/// `policy.time_limit` and every command's `--time-limit` are held to it.
pub fn check_time_limit(seconds: f64) -> Result<f64, BadTimeLimit> {
    if seconds.is_finite() && seconds > 0.0 && seconds <= MAX_TIME_LIMIT_S {
        Ok(seconds)
    } else {
        Err(BadTimeLimit(seconds))
    }
}
