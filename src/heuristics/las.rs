//! Tiresias-style 2D least-attained-service (preemptive). The caller (the simulator) encodes a
//! job's attained-service queue in its priority: queue 0 (least GPU-time received) has the
//! highest priority. Jobs go by priority, then by time waited (longest first), then id; each
//! takes the first node that holds it. A job that does not fit preempts preemptible running
//! jobs of strictly lower priority, the lowest priority (most service) first, until it fits;
//! unneeded victims are released again.

use super::best_fit::{place_with, NodeOption};
use super::Planner;
use crate::assignment::Assignment;
use crate::round_state::RoundState;
use crate::state::ClusterState;

/// Most victims tried for one job.
const MAX_VICTIMS: usize = 256;

/// The LAS planner.
#[derive(Debug, Clone, Copy, Default)]
pub struct Las;

fn first(_: &RoundState, _: &[NodeOption]) -> Option<usize> {
    Some(0)
}

impl Planner for Las {
    fn name(&self) -> &'static str {
        "las"
    }

    fn plan(&self, &super::RoundContext { inst, topo, .. }: &super::RoundContext) -> Assignment {
        let mut order: Vec<usize> = (0..inst.pending.len()).collect();
        let p = &inst.pending;
        order.sort_by(|&a, &b| {
            p[b].priority
                .cmp(&p[a].priority)
                .then(p[b].wait.total_cmp(&p[a].wait))
                .then(a.cmp(&b))
        });
        let before = ClusterState::new(inst);
        let mut state = RoundState::new(inst, &before);
        for j in order {
            if place_with(&mut state, topo, j, &mut first) {
                continue;
            }
            let job = &inst.pending[j];
            if !inst.policy.preemption || job.gpus == 0 {
                continue;
            }
            let mut victims: Vec<usize> = (0..inst.running.len())
                .filter(|&k| {
                    let r = &inst.running[k];
                    r.preemptible && !state.preempted[k] && r.priority < job.priority
                })
                .collect();
            victims.sort_by(|&a, &b| {
                let (ra, rb) = (&inst.running[a], &inst.running[b]);
                ra.priority.cmp(&rb.priority).then(b.cmp(&a))
            });
            victims.truncate(MAX_VICTIMS);
            let mut trial = state.clone();
            let mut used = Vec::new();
            let mut ok = false;
            for k in victims {
                trial.preempt(k);
                used.push(k);
                let mut probe = trial.clone();
                if place_with(&mut probe, topo, j, &mut first) {
                    ok = true;
                    break;
                }
            }
            if !ok {
                continue;
            }
            // Release victims the job does not need, the last added first.
            for k in used.clone().into_iter().rev() {
                let mut without = state.clone();
                for &v in used.iter().filter(|&&v| v != k) {
                    without.preempt(v);
                }
                if place_with(&mut without.clone(), topo, j, &mut first) {
                    used.retain(|&v| v != k);
                }
            }
            for &k in &used {
                state.preempt(k);
            }
            place_with(&mut state, topo, j, &mut first);
        }
        state.assignment
    }
}
