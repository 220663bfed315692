//! Topology cost: nodes, racks and pods a gang spans beyond the minimum, and NVLink-island
//! splits inside a node, priced by the job's workload slowdown.
//!
//! ```text
//! b_jU >= u_jn            for n in a rack-scale NVLink unit U of several nodes
//! v_jr >= u_jn            for n in rack r          w_jp >= v_jr   for r in pod p
//! units_j = sum_{single-node units} u_jn + sum_U b_jU
//! cost_j  = spread * g_j * [ (s_node - 1) (units_j - minunits_j y_j)
//!                          + (s_rack - 1) (sum_r v_jr - y_j) + (s_pod - 1) (sum_p w_jp - y_j) ]
//! island split on node n (only where the count could fit one island, cap_jn <= I_n, and the
//! largest island that could be free, L_n, is smaller):
//!   fixed cells:  cost spread * g_j * (s_island - 1) * u_jn
//!   free cells:   x_jn - (cap_jn - L_n) t_jn <= L_n,   cost spread * g_j * (s_island - 1) * t_jn
//! ```
//!
//! The island term never exceeds the true split count of the chosen indices (L_n counts GPUs
//! preemption could free), so the model's bound stays an upper bound of the plan objective.
//! Rack and pod variables exist only where a job's cells span several racks or pods.

use super::{CellCount, Ctx, MipModel};
use crate::state::GpuUse;
use good_lp::{variable, Expression, Variable};
use std::collections::BTreeMap;

/// Locality-domain binaries of one job.
#[derive(Debug, Clone, Default)]
pub struct DomainVars {
    /// b_jU for rack-scale NVLink units of several nodes.
    pub units: Vec<(usize, Variable)>,
    /// v_jr (empty when the job's cells all sit in one rack).
    pub racks: Vec<(usize, Variable)>,
    /// w_jp (empty when the job's cells all sit in one pod).
    pub pods: Vec<(usize, Variable)>,
}

/// Largest NVLink island of node n that could be free (free or preemptible GPUs).
fn largest_free_island(ctx: &Ctx, n: usize) -> u32 {
    let node = &ctx.inst.nodes[n];
    node.islands
        .iter()
        .map(|isl| {
            isl.iter()
                .filter(|&&g| match &ctx.before.gpus[n][g as usize] {
                    GpuUse::Free => true,
                    GpuUse::Whole(k) => {
                        ctx.inst.policy.preemption && ctx.inst.running[*k].preemptible
                    }
                    _ => false,
                })
                .count() as u32
        })
        .max()
        .unwrap_or(1)
}

/// Create the domain variables, the linking rows and the spread cost.
pub fn add(ctx: &Ctx, m: &mut MipModel) {
    let inst = ctx.inst;
    let topo = ctx.topo;
    let w = inst.policy.weights.spread;
    let free_island: Vec<u32> = (0..inst.nodes.len())
        .map(|n| largest_free_island(ctx, n))
        .collect();
    let mut unit_size = vec![0usize; topo.units];
    for n in 0..inst.nodes.len() {
        unit_size[topo.unit_of[n]] += 1;
    }
    for (j, job) in inst.pending.iter().enumerate() {
        let y = m.vars.start[j];
        let cells = m.vars.cells[j].clone();
        if y.is_none() || cells.is_empty() || job.gpus <= 1 {
            m.vars.domains.push(None);
            continue;
        }
        let y = y.unwrap();
        let c = w * job.gpus as f64;
        let s = job.slowdown;
        // Island splits.
        for (ci, cell) in cells.iter().enumerate() {
            let n = cell.node;
            let island = topo.largest_island[n];
            match cell.count {
                CellCount::Fixed(k) if k <= island && free_island[n] < k => {
                    m.objective -= c * (s.split_island - 1.0) * cell.used;
                }
                CellCount::Free(x, cap) if cap <= island && free_island[n] < cap => {
                    let t = m.problem.add(variable().binary());
                    m.constraints
                        .push((x - (cap - free_island[n]) as f64 * t).leq(free_island[n] as f64));
                    m.objective -= c * (s.split_island - 1.0) * t;
                    m.vars.island_splits.push((j, ci, t, free_island[n]));
                }
                _ => {}
            }
        }
        if cells.len() < 2 {
            m.vars.domains.push(None);
            continue;
        }
        let mut d = DomainVars::default();
        // Units.
        let mut units_expr = Expression::from(0.0);
        let mut unit_vars: BTreeMap<usize, Variable> = BTreeMap::new();
        for cell in &cells {
            let u = topo.unit_of[cell.node];
            if unit_size[u] > 1 {
                let b = *unit_vars
                    .entry(u)
                    .or_insert_with(|| m.problem.add(variable().binary()));
                m.constraints.push((cell.used - b).leq(0.0));
            } else {
                units_expr += cell.used;
            }
        }
        for (&u, &b) in &unit_vars {
            units_expr += b;
            d.units.push((u, b));
        }
        let min_units = topo.min_units(inst, job);
        m.objective -= c * (s.span_nodes - 1.0) * (units_expr - min_units as f64 * y);
        // Racks and pods.
        let mut racks: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (i, cell) in cells.iter().enumerate() {
            racks.entry(inst.nodes[cell.node].rack).or_default().push(i);
        }
        if racks.len() > 1 {
            for (&r, members) in &racks {
                let v = m.problem.add(variable().binary());
                for &i in members {
                    m.constraints.push((cells[i].used - v).leq(0.0));
                }
                d.racks.push((r, v));
            }
            let sum: Expression = d.racks.iter().map(|(_, v)| *v).sum();
            m.objective -= c * (s.span_racks - 1.0) * (sum - y);
            let mut pods: BTreeMap<usize, Vec<Variable>> = BTreeMap::new();
            for &(r, v) in &d.racks {
                pods.entry(inst.rack_pod[r]).or_default().push(v);
            }
            if pods.len() > 1 {
                for (&p, vs) in &pods {
                    let wv = m.problem.add(variable().binary());
                    for &v in vs {
                        m.constraints.push((v - wv).leq(0.0));
                    }
                    d.pods.push((p, wv));
                }
                let sum: Expression = d.pods.iter().map(|(_, v)| *v).sum();
                m.objective -= c * (s.span_pods - 1.0) * (sum - y);
            }
        }
        m.vars.domains.push(Some(d));
    }
}
