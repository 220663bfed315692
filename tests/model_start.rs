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
