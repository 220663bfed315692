//! CPU and memory as amounts, per type and level. The rows of [`super::resources`] and
//! [`super::cpu_and_memory`] count GPUs of jobs at or above one level, so the relaxation may
//! fill a node's room at several levels at once: on a node with 20 CPU left, one job of 16 CPU
//! per GPU (the 16-level row allows one) and two of 8 (the 8-level row allows two). Summing
//! the amounts closes that. A job of class c on type t asks at least r_c of resource r per GPU
//! (its level), so its P GPUs on node n take at least r_c P of the node's room R_n there, and
//! the jobs at or above level a hold at most H_n(a) = min(f_n, floor(R_n / a),
//! floor(O_n / o_a)) of its GPUs (f_n its free GPUs, O_n the other resource left, o_a the
//! lowest level of the other resource among those jobs). So their amounts on n sum to at most
//! min(R_n, r_a H_n(a)), r_a the highest level among them. For every level a of the type's
//! classes (at most [`super::cpu_and_memory::MOST_LEVELS`] of them, evenly spaced from the lowest):
//!
//! ```text
//! sum_{c on t: r_c >= a} r_c g_c x_ct
//!     <= sum_{n of t} min(R_n, r_a H_n(a))
//!        + sum_{k victim on n of t} min(max(r_kn, r_a e_kn), most_n - now_n) p_k
//! ```
//!
//! e_kn = max(g_kn, ceil(r_kn / a), ceil(o_kn / o_a)): what victim k adds to H_n(a) at most;
//! now_n and most_n: the node's term with its present room and with its whole size. The
//! victims' term holds as in [`super::resources`] (min(A + B, C + D) <= min(A, C) + max(B, D)).
//! Multi-node gangs count all their GPUs (each piece takes its level on its node); sharers and
//! nodes without a size for the resource are left out of both sides (the node: of the right
//! side only where the resource is unlimited there, where it adds r_a H_n(a)). Each row is a
//! relaxation of every real placement, so the bound stays valid; a row is added only where it
//! is tighter than the trivial one (its right side below r_a times the GPUs the type's nodes
//! hold for such jobs) and differs from the row of the level below.

use super::cpu_and_memory::spaced;
use super::resources::{NodeRoom, ResourceUse, Rooms};
use crate::model::MipModel;
use good_lp::Expression;
use std::collections::BTreeSet;

/// Add the rows of every type (`resource_users`: per type, the classes' uses).
pub fn add(resource_users: &[Vec<ResourceUse>], rooms: &Rooms, m: &mut MipModel) {
    for (t, users) in resource_users.iter().enumerate() {
        let (cpu, mem) = rooms.of_type(t);
        let cpu_of = |u: &ResourceUse| (u.cpu, u.mem);
        let mem_of = |u: &ResourceUse| (u.mem, u.cpu);
        type_rows(users, &cpu, &mem, cpu_of, m);
        type_rows(users, &mem, &cpu, mem_of, m);
    }
}

/// The rows of one type and resource: `rooms` of the resource, `others` of the other one
/// (same node order), `levels` a class's (resource, other resource) levels per GPU.
fn type_rows(
    users: &[ResourceUse],
    rooms: &[&NodeRoom],
    others: &[&NodeRoom],
    levels: impl Fn(&ResourceUse) -> (u64, u64),
    m: &mut MipModel,
) {
    let all: BTreeSet<u64> = users
        .iter()
        .map(|u| levels(u).0)
        .filter(|&a| a > 0)
        .collect();
    let mut previous: Option<SumRhs> = None;
    for a in spaced(&all) {
        let above: Vec<&ResourceUse> = users.iter().filter(|u| levels(u).0 >= a).collect();
        let highest = above.iter().map(|u| levels(u).0).max().unwrap_or(a);
        let other_least = above.iter().map(|u| levels(u).1).min().unwrap_or(0);
        let Some(rhs) = sum_rhs(rooms, others, a, highest, other_least) else {
            continue;
        };
        if previous.as_ref().is_some_and(|p| p.same_as(&rhs)) {
            continue;
        }
        let mut lhs = Expression::from(0.0);
        for u in &above {
            lhs.add_mul((levels(u).0 * u.gpus as u64) as f64, u.x);
        }
        for &(coef, p) in &rhs.victims {
            lhs.add_mul(-coef, p);
        }
        m.constraints.push(lhs.leq(rhs.room));
        previous = Some(rhs);
    }
}

/// The right side of one row: the room now and the victims' coefficients.
struct SumRhs {
    room: f64,
    victims: Vec<(f64, good_lp::Variable)>,
}

impl SumRhs {
    /// Whether both rows have the same right side (then the lower level's row dominates).
    fn same_as(&self, other: &SumRhs) -> bool {
        self.room == other.room
            && self.victims.len() == other.victims.len()
            && self
                .victims
                .iter()
                .zip(&other.victims)
                .all(|(x, y)| x.0 == y.0 && x.1 == y.1)
    }
}

/// GPUs a node holds of jobs at or above level `a` (other resource at or above `b`), by its
/// room in `r` and `o`: now and at most; `None` for a resource the node does not limit.
fn held_gpus(r: &NodeRoom, o: &NodeRoom, a: u64, b: u64) -> (u64, u64) {
    let unlimited = (u64::MAX, u64::MAX);
    let (r_now, r_most) = r.blocks(a).unwrap_or(unlimited);
    let (o_now, o_most) = if b > 0 {
        o.blocks(b).unwrap_or(unlimited)
    } else {
        unlimited
    };
    (
        (r.free as u64).min(r_now).min(o_now),
        (r.usable as u64).min(r_most).min(o_most),
    )
}

/// The right side of the row of level `a` (`highest`: the highest level at or above it,
/// `other_least`: the lowest level of the other resource among those classes); `None` when it
/// is no tighter than `highest` times the GPUs the nodes hold for such jobs.
fn sum_rhs(
    rooms: &[&NodeRoom],
    others: &[&NodeRoom],
    a: u64,
    highest: u64,
    other_least: u64,
) -> Option<SumRhs> {
    let (mut room, mut trivial) = (0u64, 0u64);
    let mut victims = Vec::new();
    for (r, o) in rooms.iter().zip(others) {
        let (h_now, h_most) = held_gpus(r, o, a, other_least);
        let by_gpus = highest.saturating_mul(h_now);
        trivial = trivial.saturating_add(by_gpus);
        let (now, most) = match (r.left, r.size) {
            (Some(left), Some(size)) => (
                by_gpus.min(left.max(0) as u64),
                highest.saturating_mul(h_most).min(size),
            ),
            _ => (by_gpus, highest.saturating_mul(h_most)),
        };
        room = room.saturating_add(now);
        if now >= most {
            continue;
        }
        for (&(g, amount, p), &(_, other, _)) in r.victims.iter().zip(&o.victims) {
            let mut adds = (g as u64).max(amount.div_ceil(a));
            if other_least > 0 {
                adds = adds.max(other.div_ceil(other_least));
            }
            let coef = amount.max(highest.saturating_mul(adds)).min(most - now);
            victims.push((coef as f64, p));
        }
    }
    (room < trivial).then_some(SumRhs {
        room: room as f64,
        victims,
    })
}
