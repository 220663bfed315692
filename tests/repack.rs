//! Repacking (ruin and recreate) on finished plans: it reaches arrangements that need several
//! jobs moved at once, and raises the traded plans of resource-bound rounds (that it never
//! lowers the objective nor breaks a plan, and gives the same plan twice, is checked in
//! `tests/local_moves.rs`).

mod common;

use common::hand::{instance, job, node};
use common::{family_round, later, small_round};
use gangplan::assignment::{Assignment, GpuSet};
use gangplan::gen::Family;
use gangplan::heuristics::greedy::portfolio;
use gangplan::heuristics::repack::repack;
use gangplan::heuristics::trade::trade;
use gangplan::objective::evaluate;
use gangplan::topology::Topology;

/// Two nodes of 2 GPUs and 10 CPUs. The plan: a and b (3 CPUs each) on n1, c (7 CPUs) on n2,
/// whose second GPU is left with 3 CPUs; d (7 CPUs) waits. All four fit only as {a, c} and
/// {b, d}: two jobs must move at once. A trade on n2 can only swap c for d (equal worth), so
/// it keeps nothing; repacking both nodes starts d.
#[test]
fn repacking_moves_two_jobs_at_once_to_start_a_third() {
    let inst = instance(
        "nodes:
  - {name: n1, gpus: 2, cpu_milli: 10000, rack: r1}
  - {name: n2, gpus: 2, cpu_milli: 10000, rack: r1}
pending:
  - {id: a, gpus: 1, cpu_milli: 3000}
  - {id: b, gpus: 1, cpu_milli: 3000}
  - {id: c, gpus: 1, cpu_milli: 7000}
  - {id: d, gpus: 1, cpu_milli: 7000}
",
    );
    let topo = Topology::new(&inst);
    let (n1, n2) = (node(&inst, "n1"), node(&inst, "n2"));
    let mut plan = Assignment::default();
    plan.placed
        .insert(job(&inst, "a"), GpuSet::from([(n1, vec![0])]));
    plan.placed
        .insert(job(&inst, "b"), GpuSet::from([(n1, vec![1])]));
    plan.placed
        .insert(job(&inst, "c"), GpuSet::from([(n2, vec![0])]));
    let (traded, kept) = trade(&inst, &topo, &plan, later());
    assert_eq!(kept, 0, "a trade reached it: {traded:?}");
    let (after, done) = repack(&inst, &topo, &plan, later());
    assert!(done.kept >= 1, "{done:?}");
    assert_eq!(after.placed.len(), 4, "{after:?}");
    let before = evaluate(&inst, &topo, &plan).total();
    assert!(evaluate(&inst, &topo, &after).total() > before + 1.0 - 1e-9);
}

/// On generated tight-cpu and skewed-resources rounds (24 nodes, 60 pending, 65% busy, seeds
/// 0-9 each), repacking raises the plan that the greedy and then trades left on most of them
/// (all 20 when this test was written).
#[test]
fn repacking_raises_traded_plans_of_generated_resource_bound_rounds() {
    let (mut raised, mut rounds) = (0, 0);
    for family in [Family::TightCpu, Family::SkewedResources] {
        for seed in 0..10 {
            let inst = family_round(small_round(24, 60, seed, 0.65, 0.0), family);
            let topo = Topology::new(&inst);
            let (plan, _) = trade(&inst, &topo, &portfolio(&inst, &topo, None), later());
            let (after, _) = repack(&inst, &topo, &plan, later());
            let gain =
                evaluate(&inst, &topo, &after).total() - evaluate(&inst, &topo, &plan).total();
            raised += (gain > 1e-9) as usize;
            rounds += 1;
        }
    }
    eprintln!("repacking raised {raised} of {rounds} traded plans");
    assert!(
        raised >= 3 * rounds / 4,
        "repacking raised {raised} of {rounds}"
    );
}
