//! Checks of a solve's plan that several test files make.

#![allow(dead_code)]

use gangplan::instance::Instance;
use gangplan::plan::{render_plan, validate_plan};
use gangplan::solve::SolveOutcome;

/// The plan of `out` passes the validator and its objective is not below the greedy's.
pub fn check_plan(inst: &Instance, out: &SolveOutcome, what: &str) {
    validate_plan(
        inst,
        &render_plan(inst, &out.assignment, out.status, out.solver_info(0.0)),
    )
    .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.objective + 1e-7 >= out.greedy_objective,
        "{what}: plan {} below greedy {}",
        out.objective,
        out.greedy_objective
    );
}

/// Every plan of `outs` (name, outcome) passes [`check_plan`], and no outcome's bound is below
/// the best plan among them.
pub fn check_plans_and_bounds(inst: &Instance, outs: &[(&str, SolveOutcome)], what: &str) {
    let best = outs
        .iter()
        .map(|(_, o)| o.objective)
        .fold(f64::MIN, f64::max);
    for (name, out) in outs {
        check_plan(inst, out, &format!("{what} {name}"));
        if let Some(b) = out.bound {
            assert!(
                b + 1e-6 >= best,
                "{what}: {name} bound {b} below the best plan found, {best}"
            );
        }
    }
}
