//! Gangs inside one NVLink unit of several nodes (a rack-scale domain of GB200 trays),
//! against the free GPUs of each unit.
//!
//! A gang of g GPUs that sits inside one unit d of type t takes g of d's GPUs, so for every
//! size level L = 2, 4, ... <= g it takes floor(g / L) blocks of L GPUs of that unit; jobs
//! inside one unit take at most floor(F_d / L) blocks there (F_d: the unit's free GPUs;
//! floor(a) + floor(b) <= floor(a + b)). Over the units of type t:
//!
//! ```text
//! w_ct <= x_ct                           (w_ct: gangs of c on type t inside one unit,
//!                                         integer where x_ct is)
//! sum_c floor(g_c / L) w_ct + sum_{c one-node} floor(g_c / L) x_ct <= S^unit_t,L(p)
//! objective -= delta_c (x_ct - w_ct)
//! ```
//!
//! S^unit_t,L(p): the blocks of L the units' free GPUs hold and those the preempted victims
//! add, counted as [`super::slots`] counts a node's slots, with each unit taken as one node
//! (its free GPUs and its victims' GPUs summed over its nodes of type t). One-node jobs sit
//! inside a unit, so they take its blocks too. A gang off one unit spans at least two units:
//! delta_c is the least, over the class, of the floor over placements of at least two units
//! minus the job's floor ([`super::compact`]'s `least_extra`), one side of the class's largest
//! charge beyond its floors. Rows only for types whose units hold several nodes, and only for
//! gangs that one unit of the type holds. Without them every gang that one unit could hold
//! was placed inside one at no spread, however few units have room for it.

use super::slots::node_slots;
use super::supply::NodeOffer;
use crate::instance::Instance;
use crate::model::MipModel;
use crate::topology::Topology;
use good_lp::{variable, Expression, Variable};
use std::collections::BTreeMap;

/// The rows' left sides, built up by the classes: per (type, level L), sum floor(g_c / L)
/// times the class's jobs inside one unit.
pub type UnitRows = BTreeMap<(usize, u32), Expression>;

/// Per type: whether its node units hold several nodes (the types these rows are for).
pub fn multi_node_types(topo: &Topology) -> Vec<bool> {
    let ntypes = topo.type_names.len();
    if topo.units_mix_types {
        // A unit's room is not one type's: no rows (a relaxation).
        return vec![false; ntypes];
    }
    (0..ntypes)
        .map(|t| !topo.units_are_nodes_on(&(0..ntypes).map(|s| s == t).collect::<Vec<_>>()))
        .collect()
}

/// Enter `inside` (jobs of `gpus` GPUs on type t inside one unit) into the rows.
fn add_user(rows: &mut UnitRows, t: usize, gpus: u32, inside: Expression) {
    let mut level = 2;
    while level <= gpus {
        rows.entry((t, level))
            .or_insert_with(|| Expression::from(0.0))
            .add_mul((gpus / level) as f64, inside.clone());
        level *= 2;
    }
}

/// A class's jobs on one type, as these rows see them.
pub struct OnType {
    pub t: usize,
    pub gpus: u32,
    /// Whether the jobs sit on one node (then inside one unit).
    pub one_node: bool,
    /// x_ct.
    pub x: Variable,
    /// Whether w_ct is integer.
    pub integer: bool,
}

/// Enter a class's jobs on one type into the rows: one-node jobs as they are, gangs through
/// w_ct <= x_ct; returns the charge of the gangs off one unit, `delta` (x_ct - w_ct) (0 for
/// one-node jobs).
pub fn add_on_type(on: OnType, delta: f64, rows: &mut UnitRows, m: &mut MipModel) -> Expression {
    if on.one_node {
        add_user(rows, on.t, on.gpus, Expression::from(on.x));
        return Expression::from(0.0);
    }
    let def = variable().min(0);
    let w = m.problem.add(if on.integer { def.integer() } else { def });
    m.constraints.push((w - on.x).leq(0.0));
    add_user(rows, on.t, on.gpus, Expression::from(w));
    delta * (on.x - w)
}

/// Add the rows (`node_offers`: each type's nodes).
pub fn add(topo: &Topology, node_offers: &[Vec<NodeOffer>], rows: UnitRows, m: &mut MipModel) {
    let mut units_of: BTreeMap<usize, Vec<NodeOffer>> = BTreeMap::new();
    for ((t, level), lhs) in rows {
        let units = units_of
            .entry(t)
            .or_insert_with(|| unit_offers(topo, &node_offers[t], m));
        let (mut free, mut freed) = (0u32, Expression::from(0.0));
        for unit in units.iter() {
            let (now, gained) = node_slots(unit, level, false, &mut m.problem, &mut m.constraints);
            free += now;
            freed += gained;
        }
        m.constraints.push((lhs - freed).leq(free as f64));
    }
}

/// Each unit of a type as one offer: its nodes' free GPUs and victims summed (a victim on
/// several of its nodes counted once with all its GPUs there), `any_victim` where it has
/// several victims.
fn unit_offers(topo: &Topology, nodes: &[NodeOffer], m: &mut MipModel) -> Vec<NodeOffer> {
    let mut by_unit: BTreeMap<usize, NodeOffer> = BTreeMap::new();
    for node in nodes {
        let unit = by_unit
            .entry(topo.unit_of[node.node])
            .or_insert_with(|| NodeOffer {
                node: node.node,
                free: 0,
                any_victim: None,
                victims: Vec::new(),
            });
        unit.free += node.free;
        for &(g, p) in &node.victims {
            match unit.victims.iter_mut().find(|(_, q)| *q == p) {
                Some(v) => v.0 += g,
                None => unit.victims.push((g, p)),
            }
        }
    }
    let mut units: Vec<NodeOffer> = by_unit.into_values().collect();
    for unit in units.iter_mut().filter(|u| u.victims.len() > 1) {
        unit.any_victim = Some(any_victim(&unit.victims, m));
    }
    units
}

/// u_d <= sum_k p_k, 0 <= u_d <= 1: whether any of a unit's victims is preempted.
fn any_victim(victims: &[(u32, Variable)], m: &mut MipModel) -> Variable {
    let u = m.problem.add(variable().min(0).max(1));
    let mut sum_p = Expression::from(0.0);
    for &(_, p) in victims {
        sum_p += p;
    }
    m.constraints.push((u - sum_p).leq(0.0));
    u
}

/// Whether a class of `gpus`-GPU jobs (`per_node`: its fixed shape, if any) on type t enters
/// these rows: t's units hold several nodes and one of them holds the job.
pub fn holds(
    inst: &Instance,
    topo: &Topology,
    multi_node: &[bool],
    t: usize,
    gpus: u32,
    per_node: Option<u32>,
) -> bool {
    if !multi_node[t] || gpus < 2 || per_node.is_some() {
        return false;
    }
    let mask = (0..topo.type_names.len()).map(|s| s == t).collect();
    gpus <= topo.unit_capacity_on(inst, mask, None)
}
