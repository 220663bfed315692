//! Gangs on their fewest nodes inside one rack, against the whole nodes of the racks.
//!
//! A gang of g GPUs on its fewest nodes u = ceil(g / C) (C: the most GPUs one node of its
//! types offers; [`super::compact`]) takes all C GPUs of at least k = g - u (C - 1) of those
//! nodes: the others hold at most C - 1 each. Where it also stays in one rack, those k
//! C-blocks lie in that rack. A rack whose nodes hold W_r blocks of C free GPUs (floor of
//! each node's free GPUs over C, summed) holds at most floor(W_r / K) such gangs of k >= K,
//! and gangs of k GPUs take floor(k / K) of its K-blocks (floor(a) + floor(b) <= floor(a + b)).
//! For every C and every K = 1, 2, 4, ... up to the largest k:
//!
//! ```text
//! y'_c <= sum_t y_ct                       (y'_c: jobs of c on their fewest nodes in one rack)
//! sum_{c: C_c = C} floor(k_c / K) y'_c <= sum_r B_r,K
//! B_r,K = floor(W_r / K)                              (where victims add no block of K)
//! K B_r,K <= K floor(W_r / K) + (W_r mod K) a_r + sum_{n in r} s_n,   B_r,K <= floor(W^pot_r / K)
//! a_r <= sum_{n in r} s_n,   0 <= a_r <= 1                (a_r: some victim in r frees a block)
//! objective -= extra_rack_c (sum_t y_ct - y'_c)
//! ```
//!
//! s_n: the blocks of C GPUs the preempted victims add on node n (the slots of
//! [`super::slots`] at level C, over the nodes of every type: a class's accepted types are a
//! part of them, so the row holds for it); W^pot_r the blocks with every victim preempted.
//! The rack's remainder W_r mod K counts only where some victim adds a block (a_r, as u_n in
//! [`super::slots`]): without it the relaxation would give every rack with a victim a share
//! of a block it does not have. extra_rack_c is the least, over the class, of the floor over
//! placements that leave one rack minus the job's floor. The gangs off their fewest nodes pay
//! compact's extra node instead, so the two charges add up over disjoint jobs. Without these
//! rows the model could put every gang of eight whole nodes in a rack of its own at no
//! spread, while only a few racks have eight whole nodes free.

use super::compact::CompactGang;
use super::slots::node_slots;
use super::supply::NodeOffer;
use crate::instance::Instance;
use crate::model::MipModel;
use good_lp::{variable, Expression, Variable};
use std::collections::BTreeMap;

/// The rows' left sides, built up by the classes: per (C, K), sum floor(k_c / K) y'_c.
pub type RackRows = BTreeMap<(u32, u32), Expression>;

/// y'_c of a class of compact gangs whose fewest nodes take whole ones (`on_fewest`: sum_t
/// y_ct), entered into the rows; returns the class's charge for those that leave one rack
/// (0 where none need whole nodes).
pub fn add_user(
    gang: &CompactGang,
    on_fewest: Expression,
    rows: &mut RackRows,
    m: &mut MipModel,
) -> Expression {
    let k = gang.whole_nodes;
    if k == 0 || gang.extra_rack <= 0.0 {
        return Expression::from(0.0);
    }
    let in_rack: Variable = m.problem.add(variable().min(0));
    m.constraints.push((in_rack - on_fewest.clone()).leq(0.0));
    let mut level = 1;
    while level <= k {
        rows.entry((gang.node_capacity, level))
            .or_insert_with(|| Expression::from(0.0))
            .add_mul((k / level) as f64, in_rack);
        level *= 2;
    }
    gang.extra_rack * (on_fewest - in_rack)
}

/// Add the rows (`node_offers`: every type's nodes).
pub fn add(inst: &Instance, node_offers: &[Vec<NodeOffer>], rows: RackRows, m: &mut MipModel) {
    let racks = inst.racks.len();
    let mut blocks: BTreeMap<u32, Vec<RackBlocks>> = BTreeMap::new();
    for ((c, level), lhs) in rows {
        let per_rack = blocks
            .entry(c)
            .or_insert_with(|| rack_blocks(inst, node_offers, c, racks, m));
        let mut rhs = Expression::from(0.0);
        for rack in per_rack.iter_mut() {
            rhs += rack.blocks_of(level, m);
        }
        m.constraints.push((lhs - rhs).leq(0.0));
    }
}

/// One rack's blocks of C free GPUs: free now, the most with every victim gone, those the
/// preempted victims add, and a_r once some level needs it (one per rack, for every K).
struct RackBlocks {
    free: u32,
    most: u32,
    freed: Expression,
    any: Option<Variable>,
}

impl RackBlocks {
    /// B_r,K as an expression: a constant where no victim frees a block, else a variable
    /// under its rows.
    fn blocks_of(&mut self, level: u32, m: &mut MipModel) -> Expression {
        let now = self.free / level;
        if self.most / level == now {
            return Expression::from(now as f64);
        }
        let b = m
            .problem
            .add(variable().min(0).max((self.most / level) as f64));
        let any = *self.any.get_or_insert_with(|| {
            let any = m.problem.add(variable().min(0).max(1));
            m.constraints.push((any - self.freed.clone()).leq(0.0));
            any
        });
        let rest = (self.free % level) as f64;
        m.constraints
            .push((level as f64 * b - self.freed.clone() - rest * any).leq((now * level) as f64));
        Expression::from(b)
    }
}

/// Every rack's blocks of `c` GPUs.
fn rack_blocks(
    inst: &Instance,
    node_offers: &[Vec<NodeOffer>],
    c: u32,
    racks: usize,
    m: &mut MipModel,
) -> Vec<RackBlocks> {
    let mut out: Vec<RackBlocks> = (0..racks)
        .map(|_| RackBlocks {
            free: 0,
            most: 0,
            freed: Expression::from(0.0),
            any: None,
        })
        .collect();
    for node in node_offers.iter().flatten() {
        let rack = &mut out[inst.nodes[node.node].rack];
        let (free, gained) = node_slots(node, c, false, &mut m.problem, &mut m.constraints);
        let pot = node.free + node.victims.iter().map(|v| v.0).sum::<u32>();
        rack.free += free;
        rack.most += pot / c;
        rack.freed += gained;
    }
    out
}
