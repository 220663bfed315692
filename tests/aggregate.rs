//! The aggregated model against the exact per-node model (the oracle) on small rounds: its
//! bound is never below the exact optimum, its plans are valid and never worse than greedy, and
//! on most small rounds it reaches and proves the exact optimum.

use gangplan::gen::{generate, GenParams};
use gangplan::hardware::ModelLibrary;
use gangplan::instance::validate::validate;
use gangplan::plan::{render_plan, validate_plan};
use gangplan::solve::{solve, Formulation, PlannerKind, SolveOptions};
use gangplan::topology::Topology;
use std::sync::Arc;

fn opts(inst: &gangplan::instance::Instance, formulation: Formulation) -> SolveOptions {
    SolveOptions {
        formulation,
        mip_gap: 1e-4,
        ..SolveOptions::from_policy(inst, PlannerKind::Ilp)
    }
}

#[test]
fn aggregated_bound_covers_the_exact_optimum() {
    let lib = ModelLibrary::builtin();
    let mut compared = 0;
    let mut same_optimum = 0;
    for (seed, busy) in (1..=8).flat_map(|s| [(s, 0.65), (s, 0.85)]) {
        let p = GenParams {
            nodes: 8,
            pending: 16,
            seed,
            busy,
            nodes_per_rack: 4,
            racks_per_pod: 2,
            time_limit: 20.0,
            ..Default::default()
        };
        let inst = Arc::new(validate(&generate(&p), &lib).unwrap());
        let topo = Arc::new(Topology::new(&inst));
        let exact = solve(&inst, &topo, &opts(&inst, Formulation::PerNode));
        let agg = solve(&inst, &topo, &opts(&inst, Formulation::Aggregated));
        assert!(
            agg.objective + 1e-7 >= agg.greedy_objective,
            "seed {seed} busy {busy}: aggregated plan below greedy"
        );
        validate_plan(
            &inst,
            &render_plan(&inst, &agg.assignment, agg.status, agg.solver_info(0.0)),
        )
        .unwrap_or_else(|e| panic!("seed {seed} busy {busy}: {e}"));
        // The exact model's proven optimum (solved to a 0.01% gap) never exceeds the aggregated bound.
        if let (Some(b), false) = (agg.bound, exact.time_limit_hit) {
            assert!(
                b + 1e-6 >= exact.objective,
                "seed {seed} busy {busy}: aggregated bound {b} below the exact optimum {}",
                exact.objective
            );
            assert!(
                exact.objective + 1e-6 >= agg.objective,
                "seed {seed} busy {busy}: aggregated plan {} above the exact optimum {}",
                agg.objective,
                exact.objective
            );
            compared += 1;
            // Both reach the same optimum, and the aggregated bound proves it.
            if (agg.objective - exact.objective).abs() <= 1e-6 && b - exact.objective <= 1e-6 {
                same_optimum += 1;
            }
        }
    }
    assert!(
        compared >= 8,
        "too few rounds solved exactly to compare ({compared})"
    );
    println!("aggregated model proved the exact optimum on {same_optimum} of {compared} rounds");
    // On most small rounds the aggregated model is exact: same plan value, bound = optimum.
    assert!(
        same_optimum * 2 >= compared,
        "the aggregated model proved the exact optimum on only {same_optimum} of {compared} rounds"
    );
}

/// A gang whose every placement costs more spread than it is worth: the aggregated model's
/// spread floor keeps it out of the bound, so the bound proves the plan that leaves it
/// waiting optimal.
#[test]
fn spread_floor_proves_a_wide_gang_not_worth_starting() {
    let lib = ModelLibrary::builtin();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("instances/golden/spread-not-worth.yaml");
    let inst = Arc::new(gangplan::instance::load_instance_file(&path, &lib).unwrap());
    let topo = Arc::new(Topology::new(&inst));
    let agg = solve(&inst, &topo, &opts(&inst, Formulation::Aggregated));
    let bound = agg.bound.expect("the aggregated model reports a bound");
    assert!(
        bound <= agg.objective + 1e-6,
        "bound {bound} above the plan's {}: the wide gang's spread floor is missing",
        agg.objective
    );
    let wide = inst.pending.iter().position(|j| j.id == "wide").unwrap();
    assert!(!agg.assignment.placed.contains_key(&wide));
}
