//! Hard constraints a job asks for.
//!
//! ```text
//! gpu_type:        cells exist only on nodes of an accepted type         (by construction)
//! down GPUs:       never counted as capacity                             (see capacity)
//! gpus_per_node k: x_jn = k u_jn                                         (fixed cells)
//! max_nodes M:     sum_n u_jn <= M * y_j        (also within: node => M = 1)
//! within rack:     sum_r v_jr <= y_j
//! within pod:      sum_p w_jp <= y_j
//! ```

use super::{Ctx, MipModel};
use crate::instance::Locality;
use good_lp::Expression;

/// Add the hard-constraint rows.
pub fn add(ctx: &Ctx, m: &mut MipModel) {
    for (j, job) in ctx.inst.pending.iter().enumerate() {
        let Some(y) = m.vars.start[j] else { continue };
        let cells = &m.vars.cells[j];
        if cells.is_empty() {
            continue;
        }
        let limit = job.node_limit();
        if (limit as usize) < cells.len()
            && !cells
                .iter()
                .all(|c| matches!(c.count, super::CellCount::Fixed(k) if k == job.gpus))
        {
            let used: Expression = cells.iter().map(|c| c.used).sum();
            m.constraints.push(used.leq(limit as f64 * y));
        }
        if let Some(d) = &m.vars.domains[j] {
            let one = match job.within {
                Some(Locality::Rack) => Some(&d.racks),
                Some(Locality::Pod) => Some(&d.pods),
                _ => None,
            };
            if let Some(list) = one {
                let sum: Expression = list.iter().map(|(_, v)| *v).sum();
                m.constraints.push(sum.leq(y));
            }
        }
    }
}
