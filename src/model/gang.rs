//! Gang: a job's GPUs all start together or the job waits. Never a partial gang.
//!
//! ```text
//! whole-GPU job j:  sum_n x_jn = g_j * y_j
//!                   u_jn <= x_jn <= cap_jn * u_jn        (x_jn free integer cells)
//!                   x_jn = k * u_jn                      (fixed cells: k = g_j or gpus_per_node)
//! sharer j:         sum_g s_jg = y_j                     (exactly one GPU)
//! CPU-only job j:   sum_n c_jn = y_j                     (exactly one node)
//! ```
//! A gang that one node could hold has whole cells (x = g u) and split cells, with a split
//! binary q_j that makes the LP charge a split for at least two nodes:
//! ```text
//! sum_{whole} u_jn + q_j = y_j,   sum_{split} x_jn = g_j q_j,   sum_{split} u_jn >= 2 q_j,
//! split pieces x_jn <= g_j - 1
//! ```

use super::{CellCount, Ctx, MipModel};
use good_lp::Expression;

/// Add the gang rows.
pub fn add(ctx: &Ctx, m: &mut MipModel) {
    for (j, job) in ctx.inst.pending.iter().enumerate() {
        let Some(y) = m.vars.start[j] else { continue };
        if job.gpus == 0 {
            let sum: Expression = m.vars.cpu_only[j].iter().map(|(_, c)| *c).sum();
            m.constraints.push(sum.eq(y));
        } else if job.is_sharer() {
            let sum: Expression = m.vars.share[j].iter().map(|(_, s)| *s).sum();
            m.constraints.push(sum.eq(y));
        } else {
            let mut sum = Expression::from(0.0);
            for cell in &m.vars.cells[j] {
                sum += cell.count_expr();
                if let CellCount::Free(x, cap) = cell.count {
                    m.constraints.push((x - cap as f64 * cell.used).leq(0.0));
                    m.constraints.push((cell.used - x).leq(0.0));
                }
            }
            m.constraints.push(sum.eq(job.gpus as f64 * y));
            if let Some(q) = m.vars.split[j] {
                let mut whole = Expression::from(0.0);
                let mut pieces = Expression::from(0.0);
                let mut nodes = Expression::from(0.0);
                for cell in &m.vars.cells[j] {
                    if cell.split {
                        pieces += cell.count_expr();
                        nodes += cell.used;
                    } else {
                        whole += cell.used;
                    }
                }
                m.constraints.push((whole + q).eq(y));
                m.constraints.push(pieces.eq(job.gpus as f64 * q));
                m.constraints.push(nodes.geq(2.0 * q));
            }
        }
    }
}
