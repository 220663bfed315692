//! Best fit: jobs in arrival (pending) order, each to the single-node option it fills most
//! tightly; gangs no node holds go to the placement search ([`super::baseline`]).

use super::baseline::{place_with, Baseline, Cutoff, NodeOption};
use super::placement::free::{gpu_free_milli, node_free_milli};
use crate::assignment::Assignment;
use crate::round_state::RoundState;
use crate::state::ClusterState;
use crate::units::MILLI_PER_GPU;

/// The best-fit choice: the option leaving the least GPU capacity free on its node (then on its
/// GPU, for a sharer; then the least CPU left), lowest node index on ties.
pub fn best_fit_choice(state: &RoundState, j: usize, options: &[NodeOption]) -> Option<usize> {
    let job = &state.inst.pending[j];
    let ask = match job.gpu_milli {
        Some(m) => m,
        None => job.gpus * MILLI_PER_GPU,
    };
    options
        .iter()
        .enumerate()
        .min_by_key(|(_, o)| {
            let node_left = node_free_milli(state, o.node, job.priority).saturating_sub(ask);
            let gpu_left = o.shared_gpu.map_or(0, |g| {
                gpu_free_milli(state, o.node, g, job.priority).saturating_sub(ask)
            });
            let cpu_left = state.cpu_free[o.node].unwrap_or(i64::MAX);
            (node_left, gpu_left, cpu_left, o.node)
        })
        .map(|(k, _)| k)
}

/// Best fit: jobs in arrival (pending) order; each to the node it fills most tightly.
#[derive(Debug, Clone, Copy, Default)]
pub struct BestFit;

impl Baseline for BestFit {
    const NAME: &'static str = "best-fit";

    fn plan_cut(
        &self,
        &super::RoundContext { inst, topo, .. }: &super::RoundContext,
        cut: &mut Cutoff,
    ) -> Assignment {
        let before = ClusterState::new(inst);
        let mut state = RoundState::new(inst, &before);
        for j in 0..inst.pending.len() {
            if !cut.next_job() {
                break;
            }
            place_with(&mut state, topo, j, &mut |s, o| best_fit_choice(s, j, o));
        }
        state.assignment
    }
}
