//! One-node and fixed-shape gangs, for every size level L = 2, 4, 8, ...: S_t,L(p) are the
//! slots of L GPUs the free GPUs and the preempted victims leave on nodes of type t
//! ([`slots_at_level`]):
//!
//! ```text
//! slots:   sum_{c: size >= L} s_c x_ct          <= S_t,L(p)
//! digits:  sum_{c: L divides size} g_c x_ct     <= L S_t,L(p)
//! ```
//! (s_c = 1 for one-node jobs, g_c / gpus_per_node for fixed-shape gangs; a job of size >= L
//! takes at least L GPUs of a node, and jobs whose sizes are multiples of L fill a node in
//! multiples of L, so both rows hold for every real placement.)

use super::supply::NodeOffer;
use crate::model::MipModel;
use good_lp::{variable, Expression, ProblemVariables};
use std::collections::BTreeMap;

/// The slots and digits rows of each (type, size level), built up by the classes
/// ([`super::classes`]).
pub type LevelRows = BTreeMap<(usize, u32), (Expression, Expression)>;

/// Rounds with more nodes holding several candidate victims than this count the slots those
/// nodes gain continuously (integer counts made 85%-busy 100k-GPU rounds overrun HiGHS's time
/// limit twofold).
pub const INTEGER_SLOT_NODES_LIMIT: usize = 2000;

/// Add the slots and digits rows of every (type, level). Whole slots per node are integer at
/// each type's top level while few nodes need them (`integer` and at most
/// [`INTEGER_SLOT_NODES_LIMIT`] nodes with several victims).
pub fn add(node_offers: &[Vec<NodeOffer>], level_rows: LevelRows, integer: bool, m: &mut MipModel) {
    let shared_nodes = node_offers
        .iter()
        .flatten()
        .filter(|n| n.any_victim.is_some())
        .count();
    let integer_slots = integer && shared_nodes <= INTEGER_SLOT_NODES_LIMIT;
    let top_level: BTreeMap<usize, u32> = level_rows.keys().copied().collect();
    for ((t, level), (slots, digits)) in level_rows {
        let whole = integer_slots && top_level[&t] == level;
        let (free_slots, freed) = slots_at_level(
            &node_offers[t],
            level,
            whole,
            &mut m.problem,
            &mut m.constraints,
        );
        m.constraints
            .push((slots - freed.clone()).leq(free_slots as f64));
        m.constraints
            .push((digits - level as f64 * freed).leq((free_slots * level) as f64));
    }
}

/// Slots of `level` GPUs on a type's nodes: those free now, and an expression of the slots
/// the preempted victims add. A node with f = qL + r free GPUs holds floor((r + G) / L) extra
/// slots once victims freeing G GPUs in all are preempted, never more than
/// e = floor(pot / L) - floor(f / L) (pot: free plus every victim's GPUs):
///
/// ```text
/// one victim k:       e p_k                                          (exact)
/// several victims:    s_n <= sum_k (g_k / L) p_k + (r / L) u_n,  0 <= s_n <= e
///                     u_n <= sum_k p_k,  u_n <= 1                    (u_n: any victim gone)
///                     s_n <= e_k + (e - e_k) p_k   for each victim k with e_k < e
/// ```
///
/// (e_k = floor((pot - g_k) / L) - floor(f / L): the extra slots the node reaches with k kept.
/// The last rows matter where s_n is continuous: without them a node whose victims free half
/// a slot counts half a slot.)
///
/// s_n is integer (`integer`: the slots are whole, so a victim freeing part of a slot adds
/// none) or, on large rounds, continuous: a relaxation. Both hold for every real plan and tie
/// the slots to the victims paid for.
fn slots_at_level(
    nodes: &[NodeOffer],
    level: u32,
    integer: bool,
    p: &mut ProblemVariables,
    constraints: &mut Vec<good_lp::Constraint>,
) -> (u32, Expression) {
    let mut free_slots = 0;
    let mut freed = Expression::from(0.0);
    for node in nodes {
        let (free, gained) = node_slots(node, level, integer, p, constraints);
        free_slots += free;
        freed += gained;
    }
    (free_slots, freed)
}

/// The slots of `level` GPUs one node holds now, and the expression of those its preempted
/// victims add ([`slots_at_level`]).
pub fn node_slots(
    node: &NodeOffer,
    level: u32,
    integer: bool,
    p: &mut ProblemVariables,
    constraints: &mut Vec<good_lp::Constraint>,
) -> (u32, Expression) {
    let l = level as f64;
    let mut freed = Expression::from(0.0);
    let pot = node.free + node.victims.iter().map(|v| v.0).sum::<u32>();
    let extra = pot / level - node.free / level;
    if extra == 0 {
        return (node.free / level, freed);
    }
    match node.any_victim {
        Some(u) => {
            // s_n: whole slots, at most what the preempted GPUs and the rest complete.
            let def = variable().min(0).max(extra as f64);
            let s_n = p.add(if integer { def.integer() } else { def });
            let mut credit = Expression::from(0.0);
            for &(g, v) in &node.victims {
                credit.add_mul(g as f64 / l, v);
            }
            credit.add_mul((node.free % level) as f64 / l, u);
            constraints.push((s_n - credit).leq(0.0));
            // Without victim k the node reaches at most e_k extra slots.
            for &(g, v) in &node.victims {
                let e_k = (pot - g) / level - node.free / level;
                if e_k < extra {
                    constraints.push((s_n - (extra - e_k) as f64 * v).leq(e_k as f64));
                }
            }
            freed += s_n;
        }
        None => {
            // One victim: exactly the slots it completes.
            for &(_, v) in &node.victims {
                freed.add_mul(extra as f64, v);
            }
        }
    }
    (node.free / level, freed)
}
