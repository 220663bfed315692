//! The neighbourhood search of the aggregated path: a neighbourhood cut out of a round prices
//! plans like the round (up to a constant), putting a cut's plan back gives a plan of the round,
//! and the search returns valid plans never worse than where it started.

use gangplan::assignment::Assignment;
use gangplan::gen::{generate, Family, GenParams};
use gangplan::hardware::ModelLibrary;
use gangplan::heuristics::greedy::{greedy_order, Order};
use gangplan::heuristics::{Greedy, Planner, RoundContext};
use gangplan::instance::validate::validate;
use gangplan::instance::Instance;
use gangplan::objective::evaluate;
use gangplan::plan::{render_plan, validate_plan, Status};
use gangplan::solve::neighbourhood::{choose, cut, improve};
use gangplan::solve::{Budget, Highs};
use gangplan::topology::Topology;
use std::time::{Duration, Instant};

const FAMILIES: [Family; 6] = [
    Family::Default,
    Family::Mixed,
    Family::Quotas,
    Family::Sharers,
    Family::PartialNodes,
    Family::TightCpu,
];

/// A round of `family`: 24 nodes in racks of 4, 60 pending jobs, and its greedy plan.
fn round(family: Family, seed: u64) -> (Instance, Topology, Assignment) {
    let p = GenParams {
        nodes: 24,
        pending: 60,
        seed,
        nodes_per_rack: 4,
        racks_per_pod: 2,
        family,
        ..Default::default()
    };
    let inst = validate(&generate(&p), &ModelLibrary::builtin()).unwrap();
    let topo = Topology::new(&inst);
    let plan = Greedy.plan(&RoundContext::untimed(&inst, &topo));
    (inst, topo, plan)
}

fn assert_valid(inst: &Instance, a: &Assignment, what: &str) {
    let info = gangplan::plan::SolverInfo::blank("");
    validate_plan(inst, &render_plan(inst, a, Status::Fallback, info))
        .unwrap_or_else(|e| panic!("{what}: {e}"));
}

#[test]
fn a_cut_of_every_node_is_the_round() {
    for family in FAMILIES {
        let (inst, topo, plan) = round(family, 1);
        let all: Vec<usize> = (0..inst.nodes.len()).collect();
        let c = cut::cut(&inst, &plan, &all, &[]).expect("nothing reaches outside");
        let sub_topo = Topology::new(&c.inst);
        let here = evaluate(&c.inst, &sub_topo, &c.start).total();
        let there = evaluate(&inst, &topo, &plan).total();
        assert!(
            (here - there).abs() < 1e-6,
            "{family:?}: the cut prices the plan at {here}, the round at {there}"
        );
        assert_eq!(c.put_back(&plan, &c.start), plan, "{family:?}");
    }
}

/// Every neighbourhood of every family: two plans of the cut (its current plan, and the same
/// with its first placed job waiting) differ by as much in the cut as in the round.
#[test]
fn a_cut_prices_plans_like_the_round_up_to_a_constant() {
    let mut compared = 0;
    for family in FAMILIES {
        for seed in 1..=3 {
            let (inst, topo, plan) = round(family, seed);
            let order = greedy_order(&inst, Order::ValuePerGpu);
            for nodes in choose::neighbourhoods(&inst) {
                let candidates = choose::candidates(&inst, &plan, &nodes, &order);
                let Some(c) = cut::cut(&inst, &plan, &nodes, &candidates) else {
                    continue;
                };
                let Some(&first) = c.start.placed.keys().next() else {
                    continue;
                };
                let mut fewer = c.start.clone();
                fewer.placed.remove(&first);
                let sub_topo = Topology::new(&c.inst);
                let in_cut = |a: &Assignment| evaluate(&c.inst, &sub_topo, a).total();
                let in_round =
                    |a: &Assignment| evaluate(&inst, &topo, &c.put_back(&plan, a)).total();
                let d_cut = in_cut(&c.start) - in_cut(&fewer);
                let d_round = in_round(&c.start) - in_round(&fewer);
                assert!(
                    (d_cut - d_round).abs() < 1e-6,
                    "{family:?} seed {seed} nodes {nodes:?}: one job is worth {d_cut} in the \
                     cut and {d_round} in the round"
                );
                compared += 1;
            }
        }
    }
    assert!(compared >= 45, "only {compared} neighbourhoods compared");
}

#[test]
fn the_search_returns_valid_plans_never_worse_than_its_start() {
    let mut gained = 0;
    for family in FAMILIES {
        for seed in 1..=2 {
            let (inst, topo, plan) = round(family, seed);
            let start = evaluate(&inst, &topo, &plan).total();
            let budget = Budget::new(&inst, Instant::now() + Duration::from_secs(20));
            let out = improve(&inst, &topo, &Highs, &budget, (start, plan.clone()));
            let what = format!("{family:?} seed {seed}");
            assert_valid(&inst, &out.plan, &what);
            let objective = evaluate(&inst, &topo, &out.plan).total();
            assert!((objective - out.objective).abs() < 1e-6, "{what}");
            assert!(
                objective + 1e-9 >= start,
                "{what}: {objective} below {start}"
            );
            assert!(out.solved > 0, "{what}: no neighbourhood solved");
            gained += usize::from(objective > start + 1e-6);
        }
    }
    // The greedy plan is not locally optimal everywhere: exact re-solves improve some rounds.
    assert!(
        gained >= 3,
        "the search improved only {gained} of 12 greedy plans"
    );
}
