//! Solving explain's linear programs with HiGHS, past its presolve's misjudgments.

use crate::error::{Error, Result};
use highs::{HighsModelStatus, Model, SolvedModel};

/// Solve `model`; where HiGHS calls it unbounded (or unbounded or infeasible), solve it again
/// without presolve. Explain's programs are bounded (the round's relaxation is, and the
/// cheapest change that starts a job costs at least nothing), so such a status is presolve
/// misjudging a program whose coefficients lie many orders of magnitude apart (a round with
/// weights from 1e-9 to 1e6 and checkpoint costs of 1e6 had its relaxation called unbounded;
/// without presolve it solves), or, for "unbounded or infeasible", an infeasible program,
/// which the second solve then says plainly.
pub fn solve(model: Model) -> Result<SolvedModel> {
    let run_failed = |e| Error::Solver(format!("HiGHS run failed: {e:?}"));
    let solved = model.try_solve().map_err(run_failed)?;
    if !matches!(
        solved.status(),
        HighsModelStatus::Unbounded | HighsModelStatus::UnboundedOrInfeasible
    ) {
        return Ok(solved);
    }
    let mut again = Model::from(solved);
    let _ = again.try_set_option("presolve", "off");
    again.try_solve().map_err(run_failed)
}
