//! Capacity: whole GPUs, shared milli, CPU and memory of every node.
//!
//! ```text
//! whole GPUs of node n:   sum_j x_jn + sum_i z_ni <= free_n + sum_k g_kn p_k
//! shared GPU g:           sum_j m_j s_jg <= 1000 - milli_g + sum_{k sharer on g} m_k p_k
//! fresh sharing slot i:   sum_j m_j s_j(n,i) <= 1000 z_ni,      z_ni >= z_n(i+1)
//! CPU of node n:          sum_j cpu_jn + sum_sharers cpu_j s + sum_cpu-only cpu_j c_jn
//!                           - sum_k cpu_kn p_k <= cpu_free_n               (memory alike)
//!   on a node over capacity before the round (cpu_free_n = -D < 0), for every binary u of a
//!   placement there that takes CPU: (the same left side) + D u <= 0: what is placed must fit
//!   in what the victims free beyond the deficit, and with nothing placed no victim is forced
//!   cpu_jn = ceil(cpu_j k / g_j) u_jn for fixed cells; for free ones cpu_j / g_j x_jn when
//!   g_j divides cpu_j (the share is then exact), else cpu_j / g_j x_jn + u_jn (the +u_jn
//!   covers the rounding up of SPEC's ceil share, one unit more than it can be).
//! ```
//! Down GPUs are never free, so they never count as capacity. Whether freed GPUs may go to a
//! given job is the preemption family's rule.

use super::{CellCount, Ctx, MipModel, ShareSlot};
use crate::state::{resource_share, GpuUse};
use crate::units::MILLI_PER_GPU;
use good_lp::{Expression, Variable};

/// Whole-GPU demand placed on node n: (priority, expression) per job with a cell there.
pub fn whole_users(ctx: &Ctx, m: &MipModel, n: usize) -> Vec<(i64, Expression)> {
    m.vars.on_node[n]
        .cells
        .iter()
        .map(|&(j, i)| {
            (
                ctx.inst.pending[j].priority,
                m.vars.cells[j][i].count_expr(),
            )
        })
        .collect()
}

/// The sharing slots on node n that `slot` names, as (job, variable), in job order.
fn shares_at(m: &MipModel, n: usize, slot: ShareSlot) -> Vec<(usize, Variable)> {
    m.vars.on_node[n]
        .shares
        .iter()
        .map(|&(j, i)| (j, m.vars.share[j][i]))
        .filter(|(_, (s, _))| *s == slot)
        .map(|(j, (_, v))| (j, v))
        .collect()
}

/// Fresh sharing slots of node n as one expression.
pub fn fresh_slots(m: &MipModel, n: usize) -> Expression {
    m.vars.fresh[n].iter().copied().sum()
}

/// Add the capacity rows, node by node.
pub fn add(ctx: &Ctx, m: &mut MipModel) {
    for n in 0..ctx.inst.nodes.len() {
        whole_gpus(ctx, m, n);
        fresh_sharing_slots(ctx, m, n);
        shared_gpus(ctx, m, n);
        cpu_and_memory(ctx, m, n);
    }
}

/// The whole-GPU row of node n.
fn whole_gpus(ctx: &Ctx, m: &mut MipModel, n: usize) {
    let inst = ctx.inst;
    let users = whole_users(ctx, m, n);
    let slots = fresh_slots(m, n);
    if !users.is_empty() || !m.vars.fresh[n].is_empty() {
        let mut lhs: Expression = users.into_iter().map(|(_, e)| e).sum::<Expression>() + slots;
        for (k, r) in inst.running.iter().enumerate() {
            if let (Some(p), None) = (m.vars.preempt[k], r.gpu_milli) {
                let on: usize = r
                    .gpus
                    .iter()
                    .filter(|(rn, _)| *rn == n)
                    .map(|(_, g)| {
                        g.iter()
                            .filter(|&&g| ctx.before.gpus[n][g as usize] == GpuUse::Whole(k))
                            .count()
                    })
                    .sum();
                if on > 0 {
                    lhs -= on as f64 * p;
                }
            }
        }
        m.constraints.push(lhs.leq(ctx.before.free_count(n) as f64));
    }
}

/// The rows of node n's fresh sharing slots.
fn fresh_sharing_slots(ctx: &Ctx, m: &mut MipModel, n: usize) {
    let inst = ctx.inst;
    for (i, &z) in m.vars.fresh[n].iter().enumerate() {
        let mut lhs = Expression::from(0.0);
        for (j, s) in shares_at(m, n, ShareSlot::Fresh(n, i)) {
            lhs.add_mul(inst.pending[j].gpu_milli.unwrap_or(0) as f64, s);
        }
        m.constraints
            .push((lhs - f64::from(MILLI_PER_GPU) * z).leq(0.0));
        if let Some(&next) = m.vars.fresh[n].get(i + 1) {
            m.constraints.push((next - z).leq(0.0));
        }
    }
}

/// The rows of node n's already shared GPUs.
fn shared_gpus(ctx: &Ctx, m: &mut MipModel, n: usize) {
    let inst = ctx.inst;
    for (g, u) in ctx.before.gpus[n].iter().enumerate() {
        let GpuUse::Shared { jobs, milli } = u else {
            continue;
        };
        let mut lhs = Expression::from(0.0);
        let mut any = false;
        for (j, s) in shares_at(m, n, ShareSlot::Existing(n, g as u32)) {
            lhs.add_mul(inst.pending[j].gpu_milli.unwrap_or(0) as f64, s);
            any = true;
        }
        if !any {
            continue;
        }
        for &k in jobs {
            if let Some(p) = m.vars.preempt[k] {
                lhs.add_mul(-(inst.running[k].gpu_milli.unwrap_or(0) as f64), p);
            }
        }
        m.constraints
            .push(lhs.leq(f64::from(MILLI_PER_GPU) - *milli as f64));
    }
}

/// The CPU and memory rows of node n.
fn cpu_and_memory(ctx: &Ctx, m: &mut MipModel, n: usize) {
    let inst = ctx.inst;
    let on_node = m.vars.on_node[n].by_job();
    for (cap, job_total, run_total) in [
        (
            ctx.before.cpu_free[n],
            &(|j: &crate::instance::PendingJob| j.cpu_milli)
                as &dyn Fn(&crate::instance::PendingJob) -> u64,
            &(|r: &crate::instance::RunningJob| r.cpu_milli)
                as &dyn Fn(&crate::instance::RunningJob) -> u64,
        ),
        (
            ctx.before.mem_free[n],
            &|j: &crate::instance::PendingJob| j.memory_mib,
            &|r: &crate::instance::RunningJob| r.memory_mib,
        ),
    ] {
        let Some(free) = cap else { continue };
        let mut lhs = Expression::from(0.0);
        // The binaries of the placements on n that take some of the resource.
        let mut users = Vec::new();
        for (&j, on) in &on_node {
            let job = &inst.pending[j];
            let total = job_total(job);
            if total == 0 {
                continue;
            }
            for &i in &on.cells {
                let cell = &m.vars.cells[j][i];
                users.push(cell.used);
                match cell.count {
                    CellCount::Fixed(k) => {
                        lhs.add_mul(resource_share(total, k, job.gpus) as f64, cell.used)
                    }
                    CellCount::Free(x, _) => {
                        lhs.add_mul(total as f64 / job.gpus as f64, x);
                        if total % job.gpus as u64 != 0 {
                            lhs.add_mul(1.0, cell.used);
                        }
                    }
                }
            }
            for s in on.shares.iter().map(|&i| m.vars.share[j][i].1) {
                users.push(s);
                lhs.add_mul(total as f64, s);
            }
            for c in on.cpu_only.iter().map(|&i| m.vars.cpu_only[j][i].1) {
                users.push(c);
                lhs.add_mul(total as f64, c);
            }
        }
        if users.is_empty() {
            continue;
        }
        for (k, r) in inst.running.iter().enumerate() {
            let Some(p) = m.vars.preempt[k] else { continue };
            for (rn, idx) in &r.gpus {
                if *rn == n {
                    lhs.add_mul(
                        -(resource_share(run_total(r), idx.len() as u32, r.gpu_count()) as f64),
                        p,
                    );
                }
            }
        }
        if free >= 0 {
            m.constraints.push(lhs.leq(free as f64));
            continue;
        }
        // Over capacity before the round (by D): a placement there needs victims freeing D
        // more than it takes; with none, nothing forces a preemption.
        let deficit = -free as f64;
        for u in users {
            m.constraints.push((lhs.clone() + deficit * u).leq(0.0));
        }
    }
}
