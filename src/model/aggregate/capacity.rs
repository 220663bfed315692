//! GPUs of each type, for every priority pi of a victim on the type and pi = infinity: the
//! classes at or below pi fit in the free GPUs, room on shared GPUs and the GPUs of the
//! preempted victims they outrank.
//!
//! ```text
//! sum_{c: prio_c <= pi} eq_c x_ct <= free_t + shared_t + sum_{k on t: prio_k < pi} g_kt p_k
//! ```

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
        for &pi in &levels {
            let mut lhs = Expression::from(0.0);
            let mut any = false;
            for &(pr, g, x) in &demand.type_users[t] {
                if pr <= pi {
                    lhs.add_mul(g, x);
                    any = true;
                }
            }
            if !any {
                continue;
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
