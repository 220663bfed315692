//! FIFO first fit: jobs in arrival order (the order of `pending`), each on the first node (by
//! index) that holds it. A job that does not fit is skipped; later jobs may still start
//! (no head-of-line blocking).

use super::baseline::{run_pass, Baseline, Cutoff};
use crate::assignment::Assignment;

/// The FIFO first-fit planner.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fifo;

impl Baseline for Fifo {
    const NAME: &'static str = "fifo";

    fn plan_cut(
        &self,
        &super::RoundContext { inst, topo, .. }: &super::RoundContext,
        cut: &mut Cutoff,
    ) -> Assignment {
        let order: Vec<usize> = (0..inst.pending.len()).collect();
        run_pass(inst, topo, &order, &mut |_, _| Some(0), cut)
    }
}
