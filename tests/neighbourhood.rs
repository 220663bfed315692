//! The neighbourhood search of the aggregated path: a neighbourhood cut out of a round prices
//! plans like the round (up to a constant), putting a cut's plan back gives a plan of the round,
//! and the search returns valid plans never worse than where it started.

mod faulty_solvers;

use faulty_solvers::{Overruns, Panics};
use gangplan::assignment::Assignment;
use gangplan::gen::{generate, Family, GenParams};
use gangplan::hardware::ModelLibrary;
use gangplan::heuristics::greedy::{greedy_order, Order};
use gangplan::heuristics::{Greedy, Planner, RoundContext};
use gangplan::instance::validate::validate;
use gangplan::instance::Instance;
use gangplan::objective::{evaluate, held_after};
use gangplan::plan::{render_plan, validate_plan, Status};
use gangplan::solve::neighbourhood::{choose, cut, improve};
use gangplan::solve::{Budget, Highs, MipBackend};
use gangplan::topology::Topology;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The HiGHS backend as the search takes it.
fn highs() -> Arc<dyn MipBackend> {
    Arc::new(Highs)
}

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
fn a_cut_leaves_each_tenant_exactly_the_quota_the_round_leaves_it() {
    // What a tenant holds outside the cut may be a fraction (sharers); the cut's quota is the
    // round's less that, not rounded: rounded up, a cut's plan could pass the round's quota by
    // a share, and the search then refused every plan that used it.
    let (mut checked, mut fractional) = (0, 0);
    for family in [Family::Quotas, Family::Mixed] {
        for seed in 1..=4 {
            let (inst, _, plan) = round(family, seed);
            let order = greedy_order(&inst, Order::ValuePerGpu);
            let total = held_after(&inst, &plan);
            for nodes in choose::neighbourhoods(&inst) {
                let candidates = choose::candidates(&inst, &plan, &nodes, &order);
                let Some(c) = cut::cut(&inst, &plan, &nodes, &candidates) else {
                    continue;
                };
                let inside = held_after(&c.inst, &c.start);
                for (t, tenant) in inst.tenants.iter().enumerate() {
                    let Some(q) = tenant.quota else { continue };
                    let outside = total[t] - inside[t];
                    let left = c.inst.tenants[t].quota.expect("the cut keeps the quota");
                    assert!(
                        (left - (q - outside).max(0.0)).abs() < 1e-9,
                        "{family:?} seed {seed} nodes {nodes:?}: tenant {} has {left} in the cut, \
                         the round leaves it {q} - {outside}",
                        tenant.name
                    );
                    checked += 1;
                    fractional += usize::from(outside.fract().abs() > 1e-9);
                }
            }
        }
    }
    assert!(checked >= 20, "only {checked} quotas checked");
    assert!(
        fractional > 0,
        "no cut had a tenant holding a fraction outside it"
    );
}

#[test]
fn the_search_returns_valid_plans_never_worse_than_its_start() {
    let mut gained = 0;
    for family in FAMILIES {
        for seed in 1..=2 {
            let (inst, topo, plan) = round(family, seed);
            let start = evaluate(&inst, &topo, &plan).total();
            let budget = Budget::new(&inst, Instant::now() + Duration::from_secs(20));
            let out = improve(&inst, &topo, &highs(), &budget, (start, plan.clone()));
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

/// A victim on two racks (4 GPUs on each of a1 and b1), preempted so that a gang of 8 takes
/// all of a1: the neighbourhood of rack r1 is still cut, with the victim's part on a1 as a
/// running job the cut's plan must preempt; the plan puts back as it was, a plan keeping the
/// part is refused, and the search keeps the plan valid.
#[test]
fn a_preempted_job_reaching_outside_is_cut_as_a_part_to_preempt() {
    let yaml = "
nodes:
  - {name: a1, gpus: 8, rack: r1}
  - {name: b1, gpus: 8, rack: r2}
running:
  - {id: v, priority: 0, preemptible: true, gpus: {a1: [0, 1, 2, 3], b1: [0, 1, 2, 3]}}
  - {id: fixed, priority: 9, gpus: {b1: [4, 5, 6, 7]}}
pending:
  - {id: hi, gpus: 8, priority: 5, within: node}
";
    let inst = gangplan::instance::parse_instance(yaml, "t", &ModelLibrary::builtin()).unwrap();
    let topo = Topology::new(&inst);
    let mut plan = Assignment::default();
    plan.placed
        .insert(0, [(0, (0..8).collect())].into_iter().collect());
    plan.preempted = vec![0];
    assert_valid(&inst, &plan, "the hand-made plan");
    let c = cut::cut(&inst, &plan, &[0], &[]).expect("the victim is cut as a part");
    assert_eq!(c.inst.running.len(), 1);
    assert_eq!(c.inst.running[0].gpu_count(), 4);
    assert_eq!(c.put_back(&plan, &c.start), plan);
    assert!(!c.keeps_a_part(&c.start));
    let kept = Assignment {
        placed: Default::default(),
        preempted: Vec::new(),
    };
    assert!(c.keeps_a_part(&kept));
    let start = evaluate(&inst, &topo, &plan).total();
    let budget = Budget::new(&inst, Instant::now() + Duration::from_secs(5));
    let out = improve(&inst, &topo, &highs(), &budget, (start, plan.clone()));
    assert_valid(&inst, &out.plan, "after the search");
    assert!(out.solved >= 1, "the neighbourhood of r1 was not solved");
    assert!(out.objective + 1e-9 >= start);
}

/// A re-solve still running at the search's end is not waited for: the search returns by its
/// deadline with the plan it had, and says time cut it short.
#[test]
fn the_search_does_not_wait_for_a_re_solve_past_its_deadline() {
    let (inst, topo, plan) = round(Family::Default, 1);
    let start = evaluate(&inst, &topo, &plan).total();
    let started = Instant::now();
    let budget = Budget::new(&inst, started + Duration::from_millis(600));
    let slow: Arc<dyn MipBackend> = Arc::new(Overruns(Duration::from_secs(5)));
    let out = improve(&inst, &topo, &slow, &budget, (start, plan.clone()));
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(3),
        "the search waited {took:?} for a solver that runs 5 s"
    );
    assert!(out.cut_short, "time cut the search short");
    assert_eq!(out.solved, 0);
    assert_eq!(out.plan, plan);
}

/// A re-solve whose solver panics leaves its neighbourhood as it was; the search goes on and
/// returns the plan it started from.
#[test]
fn a_panicking_re_solve_leaves_the_plan_as_it_was() {
    let (inst, topo, plan) = round(Family::Default, 1);
    let start = evaluate(&inst, &topo, &plan).total();
    let budget = Budget::new(&inst, Instant::now() + Duration::from_secs(5));
    let panics: Arc<dyn MipBackend> = Arc::new(Panics);
    let out = improve(&inst, &topo, &panics, &budget, (start, plan.clone()));
    assert_eq!(out.solved, 0);
    assert_eq!(out.plan, plan);
    assert!((out.objective - start).abs() < 1e-9);
}
