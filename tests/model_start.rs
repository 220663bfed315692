//! The greedy plan is a feasible MIP start, and the MIP prices it exactly like the shared
//! objective function (up to island splits, which the MIP may only under-count).

use gangplan::gen::{generate, GenParams};
use gangplan::hardware::ModelLibrary;
use gangplan::heuristics::RoundContext;
use gangplan::heuristics::{Greedy, Planner};
use gangplan::instance::validate::validate;
use gangplan::model;
use gangplan::objective::evaluate;
use gangplan::topology::Topology;

#[test]
fn greedy_start_is_feasible_and_priced_alike() {
    let lib = ModelLibrary::builtin();
    for seed in 1..=12 {
        let raw = generate(&GenParams {
            nodes: 24,
            pending: 50,
            seed,
            ..Default::default()
        });
        let inst = validate(&raw, &lib).expect("generated instances are valid");
        let topo = Topology::new(&inst);
        let a = Greedy.plan(&RoundContext::untimed(&inst, &topo));
        let m = model::build(&inst, &topo);
        let start = model::start::start_values(&inst, &topo, &m, &a);
        let (bad, mip_obj) = m.check(&start);
        assert!(
            bad.is_empty(),
            "seed {seed}: greedy start violates {} rows, e.g. {:?}",
            bad.len(),
            &bad[..bad.len().min(5)]
        );
        let eval = evaluate(&inst, &topo, &a).total();
        assert!(
            mip_obj + 1e-6 >= eval,
            "seed {seed}: MIP prices the start at {mip_obj}, below the objective {eval}"
        );
        assert!(
            (mip_obj - eval).abs() < 1e-6,
            "seed {seed}: MIP {mip_obj} vs objective {eval}"
        );
    }
}

/// The same on the families whose gangs split over nodes with CPU and memory tight (their
/// shares are exact multiples per GPU, so the MIP must not charge a split piece a unit more
/// than the plan does): the greedy plan stays a feasible start.
#[test]
fn greedy_start_is_feasible_where_cpu_and_memory_bind() {
    use gangplan::gen::Family;
    let lib = ModelLibrary::builtin();
    for family in [Family::TightCpu, Family::Mixed] {
        for seed in 1..=6 {
            let raw = generate(&GenParams {
                nodes: 32,
                pending: 80,
                seed,
                nodes_per_rack: 8,
                family,
                ..Default::default()
            });
            let inst = validate(&raw, &lib).expect("generated instances are valid");
            let topo = Topology::new(&inst);
            let a = Greedy.plan(&RoundContext::untimed(&inst, &topo));
            let m = model::build(&inst, &topo);
            let (bad, _) = m.check(&model::start::start_values(&inst, &topo, &m, &a));
            assert!(
                bad.is_empty(),
                "{family:?} seed {seed}: greedy start violates {} rows, e.g. {:?}",
                bad.len(),
                &bad[..bad.len().min(3)]
            );
        }
    }
}
