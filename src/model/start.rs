//! The MIP start: column values of a planner's assignment (the greedy plan), so HiGHS begins
//! from a feasible incumbent, and the reverse, a solution's columns read back into counts.

use super::{CellCount, MipModel, ShareSlot};
use crate::assignment::Assignment;
use crate::instance::Instance;
use crate::objective::{fair_shares, held_after};
use crate::state::{ClusterState, GpuUse};
use crate::topology::Topology;
use std::collections::{BTreeMap, BTreeSet};

/// Column values describing `a`, indexed by variable index.
pub fn start_values(inst: &Instance, topo: &Topology, m: &MipModel, a: &Assignment) -> Vec<f64> {
    let before = ClusterState::new(inst);
    let mut col = vec![0.0; m.columns()];
    let vars = &m.vars;
    let mut set = |v: good_lp::Variable, x: f64| col[vars.col(v)] = x;
    for &k in &a.preempted {
        if let Some(p) = m.vars.preempt[k] {
            set(p, 1.0);
        }
    }
    // Fresh sharing slots: number the fresh GPUs each node's new sharers use.
    let mut fresh_ix: BTreeMap<(usize, u32), usize> = BTreeMap::new();
    for (&j, gpus) in &a.placed {
        if inst.pending[j].is_sharer() {
            for (&n, idx) in gpus {
                for &g in idx {
                    if before.gpus[n][g as usize] == GpuUse::Free {
                        let next = fresh_ix.keys().filter(|(fnode, _)| *fnode == n).count();
                        fresh_ix.entry((n, g)).or_insert(next);
                    }
                }
            }
        }
    }
    for (&(n, _), &i) in &fresh_ix {
        if let Some(&z) = m.vars.fresh[n].get(i) {
            set(z, 1.0);
        }
    }
    let mut used_nodes: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); inst.nodes.len()];
    for (&j, gpus) in &a.placed {
        let Some(y) = m.vars.start[j] else { continue };
        set(y, 1.0);
        let job = &inst.pending[j];
        if job.gpus == 0 {
            for (n, c) in &m.vars.cpu_only[j] {
                if gpus.contains_key(n) {
                    set(*c, 1.0);
                }
            }
        } else if job.is_sharer() {
            let (&n, idx) = gpus.iter().next().expect("a sharer holds one GPU");
            let g = idx[0];
            let slot = match before.gpus[n][g as usize] {
                GpuUse::Shared { .. } => ShareSlot::Existing(n, g),
                _ => ShareSlot::Fresh(n, fresh_ix[&(n, g)]),
            };
            for (s_slot, s) in &m.vars.share[j] {
                if *s_slot == slot {
                    set(*s, 1.0);
                }
            }
        } else {
            let is_split = m.vars.split[j].is_some() && gpus.len() > 1;
            if let (true, Some(q)) = (is_split, m.vars.split[j]) {
                set(q, 1.0);
            }
            for (ci, cell) in m.vars.cells[j].iter().enumerate() {
                if cell.split != is_split {
                    continue;
                }
                if let Some(idx) = gpus.get(&cell.node) {
                    set(cell.used, 1.0);
                    used_nodes[cell.node].insert(j);
                    if let CellCount::Free(x, _) = cell.count {
                        set(x, idx.len() as f64);
                    }
                    for &(tj, tci, t, l) in &m.vars.island_splits {
                        if tj == j && tci == ci && idx.len() as u32 > l {
                            set(t, 1.0);
                        }
                    }
                }
            }
            if let Some(d) = &m.vars.domains[j] {
                let units: BTreeSet<usize> = gpus.keys().map(|&n| topo.unit_of[n]).collect();
                let racks: BTreeSet<usize> = gpus.keys().map(|&n| inst.nodes[n].rack).collect();
                let pods: BTreeSet<usize> = gpus.keys().map(|&n| inst.nodes[n].pod).collect();
                for &(u, b) in &d.units {
                    if units.contains(&u) {
                        set(b, 1.0);
                    }
                }
                for &(r, v) in &d.racks {
                    if racks.contains(&r) {
                        set(v, 1.0);
                    }
                }
                for &(p, w) in &d.pods {
                    if pods.contains(&p) {
                        set(w, 1.0);
                    }
                }
            }
        }
    }
    for (n, o) in m.vars.open.iter().enumerate() {
        if let Some(o) = o {
            if !used_nodes[n].is_empty() || fresh_ix.keys().any(|(fnode, _)| *fnode == n) {
                set(*o, 1.0);
            }
        }
    }
    let fair = fair_shares(inst);
    let held = held_after(inst, a);
    for (t, s) in m.vars.shortfall.iter().enumerate() {
        if let Some(s) = s {
            set(*s, (fair[t] - held[t]).max(0.0));
        }
    }
    col
}

/// What a solution decided, before GPU indices are chosen.
#[derive(Debug, Clone, Default)]
pub struct Decision {
    /// Preempted running jobs.
    pub preempted: Vec<usize>,
    /// Whole-GPU jobs: per-node GPU counts.
    pub whole: BTreeMap<usize, Vec<(usize, u32)>>,
    /// Sharers: their slot.
    pub sharers: BTreeMap<usize, ShareSlot>,
    /// CPU-only jobs: their node.
    pub cpu_only: BTreeMap<usize, usize>,
}

/// Read a solution's columns back.
pub fn decode(vars: &super::Vars, col: &[f64]) -> Decision {
    let m = vars;
    let on = |v: good_lp::Variable| col.get(m.col(v)).copied().unwrap_or(0.0) > 0.5;
    let mut d = Decision::default();
    for (k, p) in m.preempt.iter().enumerate() {
        if p.is_some_and(on) {
            d.preempted.push(k);
        }
    }
    for (j, y) in m.start.iter().enumerate() {
        if !y.is_some_and(on) {
            continue;
        }
        if let Some((n, _)) = m.cpu_only[j].iter().find(|(_, c)| on(*c)) {
            d.cpu_only.insert(j, *n);
        } else if let Some((slot, _)) = m.share[j].iter().find(|(_, s)| on(*s)) {
            d.sharers.insert(j, *slot);
        } else {
            let counts: Vec<(usize, u32)> = m.cells[j]
                .iter()
                .filter_map(|c| match c.count {
                    CellCount::Fixed(k) => on(c.used).then_some((c.node, k)),
                    CellCount::Free(x, _) => {
                        let v = col[m.col(x)].round() as u32;
                        (v > 0).then_some((c.node, v))
                    }
                })
                .collect();
            let mut merged: BTreeMap<usize, u32> = BTreeMap::new();
            for (n, c) in counts {
                *merged.entry(n).or_default() += c;
            }
            d.whole.insert(j, merged.into_iter().collect());
        }
    }
    d
}
