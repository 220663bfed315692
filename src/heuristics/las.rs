//! Tiresias-style 2D least-attained-service (preemptive). The caller (the simulator) encodes a
//! job's attained-service queue in its priority: queue 0 (least GPU-time received) has the
//! highest priority. Jobs go by priority, then by time waited (longest first), then id; each
//! takes the first node that holds it. A job that does not fit preempts preemptible running
//! jobs of strictly lower priority, the lowest priority (most service) first, until it fits;
//! unneeded victims are released again.

use super::baseline::{
    multi_node, place_with, placement_for, single_node_options, single_node_options_on, Baseline,
    Cutoff, NodeOption,
};
use crate::assignment::Assignment;
use crate::instance::NodeIx;
use crate::round_state::RoundState;
use crate::state::ClusterState;
use crate::topology::Topology;
use std::collections::BTreeSet;

/// Most victims tried for one job.
const MAX_VICTIMS: usize = 256;

/// The LAS planner.
#[derive(Debug, Clone, Copy, Default)]
pub struct Las;

fn first(_: &RoundState, _: &[NodeOption]) -> Option<usize> {
    Some(0)
}

impl Baseline for Las {
    const NAME: &'static str = "las";

    fn plan_cut(
        &self,
        &super::RoundContext { inst, topo, .. }: &super::RoundContext,
        cut: &mut Cutoff,
    ) -> Assignment {
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
            if !cut.next_job() {
                break;
            }
            if place_with(&mut state, topo, j, &mut first) {
                continue;
            }
            let job = &inst.pending[j];
            if inst.policy.preemption && job.gpus > 0 {
                place_by_preemption(&mut state, topo, j);
            }
        }
        state.assignment
    }
}

/// Preempt the victims of job j, the lowest priority first, until it fits; release those it
/// does not need, the last added first, and place it. Nothing changes when no number of
/// victims makes room.
fn place_by_preemption(state: &mut RoundState, topo: &Topology, j: usize) {
    let inst = state.inst;
    let job = &inst.pending[j];
    let mut victims: Vec<usize> = (0..inst.running.len())
        .filter(|&k| {
            let r = &inst.running[k];
            r.preemptible
                && !state.preempted[k]
                && r.priority < job.priority
                && state.may_preempt(k)
        })
        .collect();
    victims.sort_by(|&a, &b| {
        let (ra, rb) = (&inst.running[a], &inst.running[b]);
        ra.priority.cmp(&rb.priority).then(b.cmp(&a))
    });
    victims.truncate(MAX_VICTIMS);
    // The job fit on no node before: with its quota allowing it, only the nodes of the
    // victims tried can hold it alone (the others are as they were).
    let anywhere = !state.quota_allows(job);
    let mut touched: BTreeSet<NodeIx> = BTreeSet::new();
    let fits = |s: &RoundState, touched: &BTreeSet<NodeIx>| {
        let on_one = if anywhere {
            !single_node_options(s, topo, j).is_empty()
        } else {
            !single_node_options_on(s, topo, j, touched.iter().copied()).is_empty()
        };
        on_one || multi_node(s, topo, j).is_some()
    };
    let mut trial = state.transaction();
    let mut used = Vec::new();
    let mut ok = false;
    for k in victims {
        trial.preempt(k);
        used.push(k);
        touched.extend(inst.running[k].gpus.iter().map(|&(n, _)| n));
        if fits(&trial, &touched) {
            ok = true;
            break;
        }
    }
    if !ok {
        return;
    }
    for k in used.into_iter().rev() {
        trial.unpreempt(k);
        if !fits(&trial, &touched) {
            trial.preempt(k);
        }
    }
    if let Some(set) = placement_for(&trial, topo, j, &mut first) {
        trial.commit(j, set);
    }
    trial.keep();
}
