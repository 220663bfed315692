//! GPUs of each type, for every priority pi of a victim on the type and pi = infinity: the
//! classes at or below pi fit in the free GPUs, room on shared GPUs and the GPUs of the
//! preempted victims they outrank.
//!
//! ```text
//! sum_{c: prio_c <= pi} eq_c x_ct <= free_t + shared_t + sum_{k on t: prio_k < pi} g_kt p_k
//! ```
//!
//! A row whose classes are those of the row at the next lower pi is left out: it has as many
//! victims or more on its right side, so that row implies it.

use super::classes::Demand;
use super::supply::Supply;
use crate::model::MipModel;
use good_lp::Expression;
use std::collections::BTreeSet;

/// Add the GPU rows of every type.
pub fn add(supply: &Supply, demand: &Demand, m: &mut MipModel) {
    for (t, victims) in supply.victims.iter().enumerate() {
        let mut levels: BTreeSet<i64> = victims.iter().map(|v| v.0).collect();
        levels.insert(i64::MAX);
        let mut last_count = 0;
        for &pi in &levels {
            let users = demand.type_users[t].iter().filter(|u| u.0 <= pi);
            // The same classes as the last row's, with as many victims or more: implied.
            let count = users.clone().count();
            if count == last_count {
                continue;
            }
            last_count = count;
            let mut lhs = Expression::from(0.0);
            for &(_, g, x) in users {
                lhs.add_mul(g, x);
            }
            for &(pk, g, v) in victims {
                if pk < pi {
                    lhs.add_mul(-g, v);
                }
            }
            m.constraints.push(lhs.leq(supply.free[t]));
        }
    }
}
