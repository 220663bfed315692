//! Preemption: a binary per preemptible running job that some pending job outranks, priced
//! by the value it loses and the work lost since its checkpoint; the GPUs it frees go only to
//! strictly higher-priority work.
//!
//! ```text
//! objective:  - sum_k cost_k p_k,   cost_k = preemption * gpus_k * gpu * prio_factor(k)
//!                                          + checkpoint * checkpoint_cost_k / 3600
//! for every node n and every priority pi of a preemptible whole-GPU job on n:
//!   sum_{j: prio_j <= pi} x_jn + sum_i z_ni <= free_n + sum_{k on n: prio_k < pi} g_kn p_k
//! for every shared GPU g and every priority pi of a preemptible sharer on g:
//!   sum_{j: prio_j <= pi} m_j s_jg <= 1000 - milli_g + sum_{k on g: prio_k < pi} m_k p_k
//! ```
//! Together with the capacity row (pi = infinity) these are exactly the condition that GPUs
//! can be handed out so that no job takes a GPU freed from a job of its own or higher priority
//! (the freed sets are nested by priority). Fresh sharing slots draw only on free GPUs.

use super::capacity::{fresh_slots, whole_users};
use super::{Ctx, MipModel, ShareSlot};
use crate::objective::victim_cost;
use crate::state::GpuUse;
use crate::units::MILLI_PER_GPU;
use good_lp::Expression;
use std::collections::BTreeSet;

/// Add the preemption cost and the priority rows.
pub fn add(ctx: &Ctx, m: &mut MipModel) {
    let inst = ctx.inst;
    for (k, r) in inst.running.iter().enumerate() {
        if let Some(p) = m.vars.preempt[k] {
            m.objective -= victim_cost(inst, r) * p;
        }
    }
    for n in 0..inst.nodes.len() {
        // Whole GPUs.
        let victims: Vec<(i64, f64, good_lp::Variable)> = inst
            .running
            .iter()
            .enumerate()
            .filter_map(|(k, r)| {
                let p = m.vars.preempt[k]?;
                if r.gpu_milli.is_some() {
                    return None;
                }
                let on = ctx.before.gpus[n]
                    .iter()
                    .filter(|u| **u == GpuUse::Whole(k))
                    .count();
                (on > 0).then_some((r.priority, on as f64, p))
            })
            .collect();
        let users = whole_users(ctx, m, n);
        if !victims.is_empty() && !users.is_empty() {
            let levels: BTreeSet<i64> = victims.iter().map(|v| v.0).collect();
            for &pi in &levels {
                let mut lhs: Expression = users
                    .iter()
                    .filter(|(pr, _)| *pr <= pi)
                    .map(|(_, e)| e.clone())
                    .sum::<Expression>()
                    + fresh_slots(m, n);
                for &(pk, g, p) in &victims {
                    if pk < pi {
                        lhs.add_mul(-g, p);
                    }
                }
                m.constraints.push(lhs.leq(ctx.before.free_count(n) as f64));
            }
        }
        // Shared GPUs.
        for (g, u) in ctx.before.gpus[n].iter().enumerate() {
            let GpuUse::Shared { jobs, milli } = u else {
                continue;
            };
            let victims: Vec<(i64, f64, good_lp::Variable)> = jobs
                .iter()
                .filter_map(|&k| {
                    m.vars.preempt[k].map(|p| {
                        (
                            inst.running[k].priority,
                            inst.running[k].gpu_milli.unwrap_or(0) as f64,
                            p,
                        )
                    })
                })
                .collect();
            if victims.is_empty() {
                continue;
            }
            let sharers: Vec<(i64, f64, good_lp::Variable)> = m
                .vars
                .share
                .iter()
                .enumerate()
                .flat_map(|(j, share)| {
                    share
                        .iter()
                        .filter(|(slot, _)| *slot == ShareSlot::Existing(n, g as u32))
                        .map(move |(_, s)| {
                            (
                                inst.pending[j].priority,
                                inst.pending[j].gpu_milli.unwrap_or(0) as f64,
                                *s,
                            )
                        })
                })
                .collect();
            let levels: BTreeSet<i64> = victims.iter().map(|v| v.0).collect();
            for &pi in &levels {
                let mut lhs = Expression::from(0.0);
                for &(pr, mj, s) in &sharers {
                    if pr <= pi {
                        lhs.add_mul(mj, s);
                    }
                }
                for &(pk, mk, p) in &victims {
                    if pk < pi {
                        lhs.add_mul(-mk, p);
                    }
                }
                m.constraints
                    .push(lhs.leq(f64::from(MILLI_PER_GPU) - *milli as f64));
            }
        }
    }
}
