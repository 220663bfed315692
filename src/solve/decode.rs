//! A MIP decision -> an assignment with concrete GPU indices.
//!
//! Preemptions first; then fresh sharing slots take free GPUs (highest indices, so low ones
//! stay together for gangs); then whole-GPU jobs in ascending priority, so each job takes free
//! GPUs before ones freed by preemption and higher-priority jobs find the freed ones (the
//! freed sets are nested by priority, which the preemption rows guarantee suffices); indices
//! inside a node keep a gang in one NVLink island where possible.

use crate::assignment::{Assignment, GpuSet};
use crate::error::{Error, Result};
use crate::instance::Instance;
use crate::model::start::Decision;
use crate::model::ShareSlot;
use crate::round_state::RoundState;
use crate::state::{ClusterState, GpuUse};
use std::collections::BTreeMap;

/// Choose indices for a decision.
pub fn to_assignment(inst: &Instance, d: &Decision) -> Result<Assignment> {
    let before = ClusterState::new(inst);
    let mut state = RoundState::new(inst, &before);
    for &k in &d.preempted {
        state.preempt(k);
    }
    // Fresh sharing slots -> concrete free GPUs.
    let mut slot_gpu: BTreeMap<(usize, usize), u32> = BTreeMap::new();
    let mut sharers: Vec<(&usize, &ShareSlot)> = d.sharers.iter().collect();
    sharers.sort_by_key(|(j, s)| (**s, **j));
    for (&j, slot) in sharers {
        let (n, g) = match *slot {
            ShareSlot::Existing(n, g) => (n, g),
            ShareSlot::Fresh(n, i) => {
                let g = match slot_gpu.get(&(n, i)) {
                    Some(&g) => g,
                    None => {
                        let g = (0..inst.nodes[n].gpus)
                            .rev()
                            .find(|&g| {
                                before.gpus[n][g as usize] == GpuUse::Free
                                    && state.taken[n][g as usize].is_none()
                                    && !slot_gpu.values().any(|&x| {
                                        x == g
                                            && slot_gpu.keys().any(|k| k.0 == n && slot_gpu[k] == g)
                                    })
                            })
                            .ok_or_else(|| {
                                Error::Solver(format!(
                                    "no free GPU left on {} for a sharing slot",
                                    inst.nodes[n].name
                                ))
                            })?;
                        slot_gpu.insert((n, i), g);
                        g
                    }
                };
                (n, g)
            }
        };
        state.commit(j, GpuSet::from([(n, vec![g])]));
    }
    for (&j, &n) in &d.cpu_only {
        state.commit(j, GpuSet::from([(n, Vec::new())]));
    }
    let mut whole: Vec<(&usize, &Vec<(usize, u32)>)> = d.whole.iter().collect();
    whole.sort_by_key(|(j, _)| (inst.pending[**j].priority, **j));
    for (&j, counts) in whole {
        let set = state.pick_indices(j, counts).ok_or_else(|| {
            Error::Solver(format!(
                "the solution gives job {} more GPUs than its nodes have",
                inst.pending[j].id
            ))
        })?;
        state.commit(j, set);
    }
    Ok(state.assignment)
}
