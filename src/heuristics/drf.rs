//! Dominant Resource Fairness across tenants (Ghodsi et al., NSDI'11). Repeatedly, the tenant
//! with the lowest weighted dominant share (the largest of its GPU, CPU and memory shares of
//! the cluster, divided by its weight) that still has an untried job offers its oldest one; the
//! job goes to its best-fit node or is skipped. Ties go to the lower tenant index.

use super::baseline::{place_with, Baseline, Cutoff};
use super::best_fit::best_fit_choice;
use crate::assignment::Assignment;
use crate::round_state::RoundState;
use crate::state::ClusterState;
use std::collections::VecDeque;

/// The DRF planner.
#[derive(Debug, Clone, Copy, Default)]
pub struct Drf;

impl Baseline for Drf {
    const NAME: &'static str = "drf";

    fn plan_cut(
        &self,
        &super::RoundContext { inst, topo, .. }: &super::RoundContext,
        cut: &mut Cutoff,
    ) -> Assignment {
        let nt = inst.tenants.len();
        let gpu_total = (inst.gpus_usable() as f64).max(1.0);
        let cpu_total = inst.nodes.iter().filter_map(|n| n.cpu_milli).sum::<u64>() as f64;
        let mem_total = inst.nodes.iter().filter_map(|n| n.memory_mib).sum::<u64>() as f64;
        let mut used = vec![[0.0f64; 3]; nt];
        for r in &inst.running {
            used[r.tenant][0] += r.gpu_equivalent();
            used[r.tenant][1] += r.cpu_milli as f64;
            used[r.tenant][2] += r.memory_mib as f64;
        }
        let share = |u: &[f64; 3], t: usize| {
            let mut s = u[0] / gpu_total;
            if cpu_total > 0.0 {
                s = s.max(u[1] / cpu_total);
            }
            if mem_total > 0.0 {
                s = s.max(u[2] / mem_total);
            }
            s / inst.tenants[t].weight
        };
        let mut queues: Vec<VecDeque<usize>> = vec![VecDeque::new(); nt];
        for (j, job) in inst.pending.iter().enumerate() {
            queues[job.tenant].push_back(j);
        }
        let before = ClusterState::new(inst);
        let mut state = RoundState::new(inst, &before);
        loop {
            let next = (0..nt).filter(|&t| !queues[t].is_empty()).min_by(|&a, &b| {
                share(&used[a], a)
                    .total_cmp(&share(&used[b], b))
                    .then(a.cmp(&b))
            });
            let Some(t) = next else { break };
            let Some(j) = queues[t].pop_front() else {
                break;
            };
            if !cut.next_job() {
                break;
            }
            let placed = place_with(&mut state, topo, j, &mut |s: &RoundState, o| {
                best_fit_choice(s, j, o)
            });
            if placed {
                let job = &inst.pending[j];
                used[t][0] += job.gpu_equivalent();
                used[t][1] += job.cpu_milli as f64;
                used[t][2] += job.memory_mib as f64;
            }
        }
        state.assignment
    }
}
