//! Spread floors that count on preemption: a gang whose tightest span needs victims' GPUs
//! pays the floor of the free GPUs unless the preempted victims free enough GPUs for it.
//!
//! A job's spread floor f_j ([`super::spread`]) is the penalty of the tightest span over every
//! GPU it could ever take, the GPUs of preemptible work below it included. A placement whose
//! spread lies below f^free_j, the floor over the free GPUs alone, takes at least N_j GPUs of
//! preempted victims ([`SpreadFloor::victim_gpus_below`]: what its span leaves short of the
//! free GPUs it could hold). With w_c the jobs of class c placed so (GPUs are not shared, so
//! every such job takes GPUs of its own):
//!
//! ```text
//! w_c <= n_c
//! e_c >= D_c (n_c - w_c)
//! e_c >= sum_t delta_c (x_ct - y_ct)           (gangs split by [`super::compact`])
//! objective -= e_c                             (in place of compact's delta term)
//! for every priority pi of a victim and pi = infinity:
//!   sum_{c: prio_c <= pi} N_c w_c <= sum_{k: prio_k < pi} G_k p_k
//! ```
//!
//! with G_k the GPUs of victim k (a victim sharer counts its whole GPU: its share rounded up),
//! N_c the least N_j of the class and D_c the least f^free_j - f_j. Each job pays beyond f_j
//! at least delta_c off its fewest nodes and at least D_c below N_j victims' GPUs, so the
//! class pays at least the larger of the two sums, e_c. The victim rows are over all types (a
//! gang that mixes types may take its victims' GPUs on either), one per victim priority as
//! the capacity rows ([`super::capacity`]): a round whose model preempts nothing charges
//! every gang its free-GPU floor.

use super::spread::SpreadFloor;
use crate::instance::Instance;
use crate::model::MipModel;
use good_lp::{Expression, Variable};
use std::collections::BTreeSet;

/// Below this a class's D_c adds nothing worth a column.
const LEAST_DISCOUNT: f64 = 1e-9;

/// (priority of the class, N_c, w_c) of every class whose floor counts on victims.
pub type VictimUsers = Vec<(i64, f64, Variable)>;

/// What a class's floor counts on victims for: D_c and N_c.
pub struct Discount {
    /// D_c: what its jobs pay beyond the model's charge when below N_c victims' GPUs.
    pub spread: f64,
    /// N_c: the victims' GPUs each of its jobs takes to do better.
    pub victim_gpus: f64,
}

/// D_c and N_c of a class (`members`, their floors f_j in `floors`); `None` where D_c is
/// nothing.
pub fn discount(
    inst: &Instance,
    spread_floor: &mut SpreadFloor,
    members: &[usize],
    floors: &[f64],
) -> Option<Discount> {
    if !spread_floor.counts_victims() {
        return None;
    }
    let mut least = Discount {
        spread: f64::INFINITY,
        victim_gpus: f64::INFINITY,
    };
    for &j in members {
        let job = &inst.pending[j];
        let free_floor = spread_floor.of_free_only(job);
        least.spread = least.spread.min(free_floor - floors[j]);
        if least.spread <= LEAST_DISCOUNT {
            return None;
        }
        let needed = spread_floor.victim_gpus_below(job, free_floor) as f64;
        least.victim_gpus = least.victim_gpus.min(needed);
    }
    least.spread.is_finite().then_some(least)
}

/// w_c for class c (its count n_c, priority `prio`) with its bound on n_c, and the class's
/// charge below N_c victims' GPUs, D_c (n_c - w_c): one side of e_c, the largest of the class's
/// charges beyond its floors (the caller charges it); the victim rows come from [`add`].
pub fn add_user(
    m: &mut MipModel,
    users: &mut VictimUsers,
    prio: i64,
    d: &Discount,
    n_c: Variable,
) -> Expression {
    let w = m.problem.add(good_lp::variable().min(0));
    m.constraints.push((w - n_c).leq(0.0));
    users.push((prio, d.victim_gpus, w));
    d.spread * (n_c - w)
}

/// The victim rows (`victims`: (priority, GPUs, p_k) of the victims on each type). A row whose
/// classes are the row's at the next lower pi is implied by it.
pub fn add(victims: &[Vec<(i64, f64, Variable)>], users: &VictimUsers, m: &mut MipModel) {
    if users.is_empty() {
        return;
    }
    let victims: Vec<&(i64, f64, Variable)> = victims.iter().flatten().collect();
    let mut levels: BTreeSet<i64> = victims.iter().map(|v| v.0).collect();
    levels.insert(i64::MAX);
    let mut last_count = 0;
    for &pi in &levels {
        let count = users.iter().filter(|u| u.0 <= pi).count();
        if count == last_count {
            continue;
        }
        last_count = count;
        let mut lhs = Expression::from(0.0);
        for &(_, needed, w) in users.iter().filter(|u| u.0 <= pi) {
            lhs.add_mul(needed, w);
        }
        for &&(_, g, p) in victims.iter().filter(|v| v.0 < pi) {
            lhs.add_mul(-g.ceil(), p);
        }
        m.constraints.push(lhs.leq(0.0));
    }
}
