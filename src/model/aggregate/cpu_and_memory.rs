//! CPU and memory together, per type and pair of levels. The rows of [`super::resources`]
//! bound each resource alone, so the relaxation may take CPU from nodes whose memory is gone
//! and memory from nodes whose CPU is gone, for jobs that need both on one node. A job of at
//! least a CPU and b memory per GPU that puts P of its GPUs on node n takes at least a P of
//! its CPU and b P of its memory there, so node n holds at most
//! h_n(a, b) = min(f_n, floor(c_n / a), floor(m_n / b)) GPUs of such jobs (f_n its free GPUs,
//! c_n and m_n its CPU and memory left). For every pair (a, b) of the type's class levels:
//!
//! ```text
//! sum_{c on t: cpu_c >= a, mem_c >= b} g_c x_ct
//!     <= sum_{n of t} h_n(a, b)
//!        + sum_{k victim on n of t} min(max(g_kn, ceil(cpu_kn / a), ceil(mem_kn / b)), e_n) p_k
//! ```
//!
//! e_n = min(G_n, floor(C_n / a), floor(M_n / b)) - h_n(a, b): what n holds at most beyond its
//! present room (G_n, C_n, M_n its usable GPUs, CPU and memory); the victims' term holds as
//! in [`super::resources`] (min(x + y) over the three <= min x + max y). A node without a CPU
//! (memory) size is not limited by it. A pair's row is added only where it is tighter than
//! both rows of one resource at the same levels (its right side, victims aside, below each).
//! Each row holds alone, so where a type's classes have more than [`MOST_LEVELS`] levels of a
//! resource, the pairs use that many of them, evenly spaced from the lowest: the rows stay at
//! most [`MOST_LEVELS`]^2 per type.

use super::resources::{NodeRoom, ResourceUse, Rooms};
use crate::model::MipModel;
use good_lp::Expression;
use std::collections::BTreeSet;

/// The most levels of each resource the pairs of one type (and the rows of
/// [`super::resource_sums`]) are drawn from.
pub const MOST_LEVELS: usize = 8;

/// At most [`MOST_LEVELS`] of `levels` (ascending), evenly spaced from the lowest to the
/// highest.
pub fn spaced(levels: &BTreeSet<u64>) -> Vec<u64> {
    let all: Vec<u64> = levels.iter().copied().collect();
    if all.len() <= MOST_LEVELS {
        return all;
    }
    (0..MOST_LEVELS)
        .map(|i| all[i * (all.len() - 1) / (MOST_LEVELS - 1)])
        .collect()
}

/// Add the rows of every type (`resource_users`: per type, the classes' uses).
pub fn add(resource_users: &[Vec<ResourceUse>], rooms: &Rooms, m: &mut MipModel) {
    for (t, users) in resource_users.iter().enumerate() {
        let (cpu, mem) = rooms.of_type(t);
        type_rows(users, &cpu, &mem, m);
    }
}

/// The rows of one type (`cpu` and `mem`: the type's nodes' rooms, in the same order).
fn type_rows(users: &[ResourceUse], cpu: &[&NodeRoom], mem: &[&NodeRoom], m: &mut MipModel) {
    let cpu_levels: BTreeSet<u64> = users.iter().map(|u| u.cpu).filter(|&a| a > 0).collect();
    let mem_levels: BTreeSet<u64> = users.iter().map(|u| u.mem).filter(|&b| b > 0).collect();
    let mem_levels = spaced(&mem_levels);
    for a in spaced(&cpu_levels) {
        for &b in &mem_levels {
            let dominating = users.iter().filter(|u| u.cpu >= a && u.mem >= b);
            if dominating.clone().next().is_none() {
                continue;
            }
            let Some(rhs) = pair_rhs(cpu, mem, a, b) else {
                continue;
            };
            let mut lhs = Expression::from(0.0);
            for u in dominating {
                lhs.add_mul(u.gpus as f64, u.x);
            }
            for (coef, p) in rhs.victims {
                lhs.add_mul(-coef, p);
            }
            m.constraints.push(lhs.leq(rhs.room));
        }
    }
}

/// The right side of the pair (a, b)'s row.
struct PairRhs {
    room: f64,
    victims: Vec<(f64, good_lp::Variable)>,
}

/// The right side of the row of the pair (a, b) over the type's nodes; `None` when it is not
/// tighter than both rows of one resource.
fn pair_rhs(cpu: &[&NodeRoom], mem: &[&NodeRoom], a: u64, b: u64) -> Option<PairRhs> {
    let (mut room, mut by_cpu, mut by_mem) = (0u64, 0u64, 0u64);
    let mut victims = Vec::new();
    for (rc, rm) in cpu.iter().zip(mem) {
        let (free, usable) = (rc.free as u64, rc.usable as u64);
        // GPUs of such jobs the node holds by each resource, now and at most (none: unlimited).
        let unlimited = (u64::MAX, u64::MAX);
        let (c_now, c_most) = rc.blocks(a).unwrap_or(unlimited);
        let (m_now, m_most) = rm.blocks(b).unwrap_or(unlimited);
        let now = free.min(c_now).min(m_now);
        let most = usable.min(c_most).min(m_most);
        room += now;
        by_cpu += free.min(c_now);
        by_mem += free.min(m_now);
        if now >= most {
            continue;
        }
        for (&(g, cpu_k, p), &(_, mem_k, _)) in rc.victims.iter().zip(&rm.victims) {
            let frees = (g as u64).max(cpu_k.div_ceil(a)).max(mem_k.div_ceil(b));
            victims.push((frees.min(most - now) as f64, p));
        }
    }
    (room < by_cpu && room < by_mem).then_some(PairRhs {
        room: room as f64,
        victims,
    })
}
