//! The round's metrics in Prometheus text format (exposition format 0.0.4), written atomically
//! to `STATE_DIR/metrics.prom` for node_exporter's textfile collector or any scraper.

use crate::plan::Plan;

/// What one round measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RoundMetrics {
    /// When the round ended (Unix seconds).
    pub timestamp: i64,
    /// Wall seconds of the round, read to last write.
    pub round_seconds: f64,
    /// Seconds in the planner.
    pub solve_seconds: f64,
    /// Relative gap of the plan (NaN when no bound).
    pub gap: Option<f64>,
    /// Objective of the plan.
    pub objective: f64,
    /// Jobs placed.
    pub jobs_placed: u32,
    /// Jobs left pending.
    pub jobs_pending: u32,
    /// Running jobs preempted.
    pub preemptions: u32,
    /// GPUs in the cluster.
    pub gpus_total: u32,
    /// GPUs busy before the round.
    pub gpus_busy: u32,
    /// GPUs busy once the plan is carried out.
    pub gpus_busy_after: u32,
    /// Whether the plan was applied (1) or only printed (0).
    pub applied: bool,
    /// Changes to the cluster that failed this round.
    pub apply_failures: u32,
    /// Placements kept from the previous round.
    pub kept: u32,
}

impl RoundMetrics {
    /// The plan's share of the metrics.
    pub fn from_plan(plan: &Plan) -> Self {
        RoundMetrics {
            solve_seconds: plan.solver.seconds,
            gap: plan.solver.gap,
            objective: plan.solver.objective,
            jobs_placed: plan.placements.len() as u32,
            jobs_pending: plan.pending.len() as u32,
            preemptions: plan.preemptions.len() as u32,
            gpus_total: plan.metrics.gpus_total,
            gpus_busy: plan.metrics.gpus_busy_before,
            gpus_busy_after: plan.metrics.gpus_busy_after,
            ..Default::default()
        }
    }

    /// The Prometheus text.
    pub fn render(&self) -> String {
        let gap = self.gap.map_or("NaN".to_string(), fmt);
        let rows: [(&str, &str, String); 14] = [
            (
                "gangplan_round_timestamp_seconds",
                "Unix time the last round ended.",
                self.timestamp.to_string(),
            ),
            (
                "gangplan_round_seconds",
                "Wall seconds of the last round.",
                fmt(self.round_seconds),
            ),
            (
                "gangplan_solve_seconds",
                "Seconds the planner took in the last round.",
                fmt(self.solve_seconds),
            ),
            (
                "gangplan_round_gap",
                "Relative optimality gap of the last plan (NaN: no bound).",
                gap,
            ),
            (
                "gangplan_round_objective",
                "Objective of the last plan (higher is better).",
                fmt(self.objective),
            ),
            (
                "gangplan_jobs_placed",
                "Pending jobs the last plan starts.",
                self.jobs_placed.to_string(),
            ),
            (
                "gangplan_jobs_pending",
                "Pending jobs the last plan leaves waiting.",
                self.jobs_pending.to_string(),
            ),
            (
                "gangplan_preemptions",
                "Running jobs the last plan preempts.",
                self.preemptions.to_string(),
            ),
            (
                "gangplan_gpus_total",
                "GPUs in the planned cluster.",
                self.gpus_total.to_string(),
            ),
            (
                "gangplan_gpus_busy",
                "GPUs busy before the last round.",
                self.gpus_busy.to_string(),
            ),
            (
                "gangplan_gpus_busy_after",
                "GPUs busy once the last plan is carried out.",
                self.gpus_busy_after.to_string(),
            ),
            (
                "gangplan_round_applied",
                "1 when the last plan was applied, 0 for a dry run.",
                (self.applied as u8).to_string(),
            ),
            (
                "gangplan_apply_failures",
                "Changes to the cluster that failed in the last round.",
                self.apply_failures.to_string(),
            ),
            (
                "gangplan_placements_kept",
                "Placements kept from the round before (stability).",
                self.kept.to_string(),
            ),
        ];
        let mut out = String::new();
        for (name, help, value) in rows {
            out.push_str(&format!(
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}\n"
            ));
        }
        out
    }
}

fn fmt(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else if v.is_nan() {
        "NaN".into()
    } else if v > 0.0 {
        "+Inf".into()
    } else {
        "-Inf".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sample_has_help_and_type() {
        let m = RoundMetrics {
            jobs_placed: 3,
            gap: None,
            ..Default::default()
        };
        let text = m.render();
        let samples: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(samples.len(), 14);
        for s in samples {
            let (name, value) = s.split_once(' ').unwrap();
            assert!(text.contains(&format!("# TYPE {name} gauge")));
            assert!(value == "NaN" || value.parse::<f64>().is_ok(), "{s}");
        }
        assert!(text.contains("gangplan_jobs_placed 3\n"));
        assert!(text.contains("gangplan_round_gap NaN\n"));
    }
}
