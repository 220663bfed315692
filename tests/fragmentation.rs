//! Fragmentation-aware placement: with a task distribution on the instance
//! (`policy.task_distribution`, or set by the simulator) the greedy places one-node jobs where
//! FGD's fragmentation grows least; without one it places them by best fit, as before.

use gangplan::gen::{generate, GenParams};
use gangplan::hardware::ModelLibrary;
use gangplan::heuristics::RoundContext;
use gangplan::heuristics::{Greedy, Planner};
use gangplan::instance::task_dist::{TaskDist, TaskType};
use gangplan::instance::validate::validate;
use gangplan::instance::{parse_instance, Instance};
use gangplan::plan::{render_plan, validate_plan, SolverInfo, Status};
use gangplan::sim::engine::{simulate, trace_dist, Protocol, SimConfig};
use gangplan::sim::planners::{PlannerName, RoundPlanner};
use gangplan::sim::{trace, Trace};
use gangplan::topology::Topology;

/// The price per milli GPU of fragment at the default `policy.weights.fragmentation` (0.02 a
/// GPU).
const FRAG_COST_AT_DEFAULT: f64 = 2e-5;
use std::path::Path;
use std::sync::Arc;

fn parse(yaml: &str) -> Instance {
    parse_instance(yaml, "t", &ModelLibrary::builtin()).expect("a valid instance")
}

/// The nodes the greedy puts pending job 0 on, and its GPUs there.
fn greedy_place(inst: &Instance) -> Vec<(usize, Vec<u32>)> {
    let topo = Topology::new(inst);
    let a = Greedy.plan(&RoundContext::untimed(inst, &topo));
    a.placed[&0].iter().map(|(&n, g)| (n, g.clone())).collect()
}

/// Node a has 4 free GPUs, node b 3. A 1-GPU job: best fit takes b (2 left, against 3 on a).
/// Against a workload of 3-GPU tasks, b would be left with 2 free GPUs no task can use
/// (fragmentation 0 -> 2000 milli), while a keeps room for one (0 -> 0): the
/// fragmentation-aware greedy takes a.
const WHOLE: &str = "
nodes:
  - {name: a, gpus: 8}
  - {name: b, gpus: 8}
running:
  - {id: ra, gpus: {a: [0, 1, 2, 3]}}
  - {id: rb, gpus: {b: [0, 1, 2, 3, 4]}}
pending:
  - {id: j, gpus: 1}
";

#[test]
fn without_a_distribution_the_greedy_fits_best() {
    let inst = parse(WHOLE);
    assert!(inst.task_dist.is_none());
    assert_eq!(greedy_place(&inst)[0].0, 1, "best fit: node b");
}

#[test]
fn with_a_distribution_the_greedy_keeps_room_for_the_typical_task() {
    let yaml = format!("{WHOLE}policy:\n  task_distribution:\n    - {{gpus: 3, share: 1}}\n");
    let inst = parse(&yaml);
    let d = inst.task_dist.as_ref().expect("the distribution is read");
    assert_eq!(d.types.len(), 1);
    assert_eq!(d.types[0].0.gpus, 3);
    assert_eq!(greedy_place(&inst)[0].0, 0, "least fragmentation: node a");
}

#[test]
fn ties_in_fragmentation_go_to_best_fit() {
    // Against 1-GPU tasks no whole-GPU placement fragments anything: best fit decides (b).
    let yaml = format!("{WHOLE}policy:\n  task_distribution:\n    - {{gpus: 1, share: 1}}\n");
    assert_eq!(greedy_place(&parse(&yaml))[0].0, 1);
}

/// GPU a/0 has 500 milli free (a running sharer holds half), b/0 is free. A 300-milli sharer:
/// best fit goes to the shared GPU (200 left). Against half-GPU tasks that would leave 200
/// milli no task can use (0 -> 200), while b/0 keeps 700 (0 -> 0): the fragmentation-aware
/// greedy opens b/0.
const SHARERS: &str = "
nodes:
  - {name: a, gpus: 1}
  - {name: b, gpus: 1}
running:
  - {id: r, gpus: {a: [0]}, gpu_milli: 500}
pending:
  - {id: s, gpus: 1, gpu_milli: 300}
";

#[test]
fn sharers_go_where_fragmentation_grows_least() {
    assert_eq!(greedy_place(&parse(SHARERS)), vec![(0, vec![0])]);
    let yaml = format!(
        "{SHARERS}policy:\n  task_distribution:\n    - {{gpus: 1, gpu_milli: 500, share: 2}}\n    - {{gpus: 1, gpu_milli: 500, share: 2, gpu_type: [other]}}\n"
    );
    let inst = parse(&yaml);
    let d = inst.task_dist.as_ref().expect("the distribution is read");
    let shares: Vec<f64> = d.types.iter().map(|t| t.1).collect();
    assert_eq!(shares, vec![0.5, 0.5], "shares are normalised");
    assert_eq!(greedy_place(&inst), vec![(1, vec![0])]);
}

#[test]
fn cpu_only_jobs_keep_cpu_where_gpu_tasks_need_it() {
    // Both nodes have 2 free GPUs; b has less CPU left. Best fit (least CPU left) takes b for a
    // CPU-only job, which would leave b too little CPU for the 2-GPU, 8-CPU task type.
    let base = "
nodes:
  - {name: a, gpus: 2, cpu_milli: 64000}
  - {name: b, gpus: 2, cpu_milli: 16000}
pending:
  - {id: c, gpus: 0, cpu_milli: 10000}
";
    assert_eq!(greedy_place(&parse(base))[0].0, 1);
    let yaml = format!(
        "{base}policy:\n  task_distribution:\n    - {{gpus: 2, cpu_milli: 8000, share: 1}}\n"
    );
    assert_eq!(greedy_place(&parse(&yaml))[0].0, 0);
}

fn generated(seed: u64) -> Instance {
    let raw = generate(&GenParams {
        nodes: 24,
        pending: 40,
        seed,
        nodes_per_rack: 4,
        racks_per_pod: 2,
        busy: 0.5,
        sharers: 0.3,
        max_gang: 16,
        ..GenParams::default()
    });
    validate(&raw, &ModelLibrary::builtin()).expect("generated instances are valid")
}

fn info() -> SolverInfo {
    SolverInfo::blank("greedy")
}

#[test]
fn fragmentation_aware_plans_are_valid_and_deterministic() {
    let mut changed = 0;
    for seed in 1..=8 {
        let mut inst = generated(seed);
        let topo = Topology::new(&inst);
        let plain = Greedy.plan(&RoundContext::untimed(&inst, &topo));
        let dist = Arc::new(TaskDist::from_types(inst.pending.iter().map(TaskType::of)));
        inst.task_dist = Some(Arc::clone(&dist));
        let a = Greedy.plan(&RoundContext::untimed(&inst, &topo));
        // The second plan reads every fragmentation value from the distribution's memo.
        let b = Greedy.plan(&RoundContext::untimed(&inst, &topo));
        assert_eq!(a, b, "seed {seed}: the memo changes nothing");
        let mut fresh = inst.clone();
        fresh.task_dist = Some(Arc::new((*dist).clone()));
        assert_eq!(
            a,
            Greedy.plan(&RoundContext::untimed(&fresh, &topo)),
            "seed {seed}: same with an empty memo"
        );
        let plan = render_plan(&inst, &a, Status::Fallback, info());
        if let Err(e) = validate_plan(&inst, &plan) {
            panic!("seed {seed}: {e}");
        }
        if a != plain {
            changed += 1;
        }
    }
    assert!(
        changed > 0,
        "the distribution changed no plan on 8 generated rounds"
    );
}

#[test]
fn the_planners_read_the_distribution_from_the_instance_file() {
    let yaml = format!("{WHOLE}policy:\n  task_distribution:\n    - {{gpus: 3, share: 1}}\n");
    for kind in [
        gangplan::solve::PlannerKind::Greedy,
        gangplan::solve::PlannerKind::Ilp,
    ] {
        let plan = gangplan::round::plan_round(parse(&yaml), kind, None).expect("a plan");
        assert_eq!(plan.placements.len(), 1);
        let nodes: Vec<&str> = plan.placements[0].gpus.keys().map(|s| s.as_str()).collect();
        // The MIP does not see fragmentation, but both nodes are equal for its objective, so
        // the greedy start (node a) is kept.
        assert_eq!(nodes, vec!["a"], "{kind:?}");
    }
}

fn openb_fixture() -> Trace {
    let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/traces");
    Trace {
        name: "openb-fixture".into(),
        nodes: trace::openb_nodes(&fx.join("openb_nodes.csv")).expect("fixture nodes"),
        jobs: trace::openb_pods(&fx.join("openb_pods.csv")).expect("fixture pods"),
    }
}

#[test]
fn the_simulator_passes_the_trace_distribution_only_when_asked() {
    let t = openb_fixture();
    let lib = ModelLibrary::builtin();
    let run = |with: bool, seed: u64| {
        let cfg = SimConfig {
            protocol: Protocol::Fill {
                load: 1.3,
                batch: 4,
            },
            seed,
            planner_task_dist: with,
            ..SimConfig::default()
        };
        let planner = RoundPlanner::new(PlannerName::Greedy, &trace_dist(&t), seed, 1.0);
        simulate(&t, &planner, &cfg, &lib, &mut |_, _| {}).expect("a run")
    };
    let mut differ = 0;
    for seed in 1..=6 {
        let (a, b) = (run(true, seed), run(false, seed));
        let again = run(true, seed);
        assert_eq!(
            a.series.alloc_curve, again.series.alloc_curve,
            "seed {seed}: deterministic"
        );
        if a.series.alloc_curve != b.series.alloc_curve {
            differ += 1;
        }
    }
    assert!(differ > 0, "the trace distribution changed no fill run");
}

#[test]
fn gpu_weighting_scales_shares_by_gpu_demand() {
    use gangplan::sim::engine::{weighted_dist, DistWeight};
    let t = |gpus: u32, milli: u32| TaskType {
        cpu_milli: 0,
        memory_mib: 0,
        gpus,
        milli_per_gpu: milli,
        gpu_types: None,
    };
    // Half the tasks ask for 8 GPUs, the other half for a quarter of one GPU.
    let d = TaskDist::new(vec![(t(8, 1000), 0.5), (t(1, 250), 0.5)]);
    assert_eq!(weighted_dist(&d, DistWeight::Tasks), d);
    let w = weighted_dist(&d, DistWeight::Gpus);
    let shares: Vec<f64> = w.types.iter().map(|x| x.1).collect();
    let expect = [8000.0 / 8250.0, 250.0 / 8250.0];
    for (a, b) in shares.iter().zip(expect) {
        assert!((a - b).abs() < 1e-12, "{shares:?}");
    }
}

/// The per-node MIP and the plan objective price the fragmentation a placement causes alike:
/// on WHOLE with a workload of 3-GPU tasks, job j on node b grows b's fragmentation by 2000
/// milli (3 free -> 2, which no task can use) and on a by 0 (4 -> 3). With one arrival the
/// MIP's term is exact: each placement's MIP objective equals its plan objective, with and
/// without the distribution; with it, the placement on b pays the price of 2000 milli, the one
/// on a nothing, and neither pays packing (the fragmentation term replaces it).
#[test]
fn the_mip_and_the_plan_objective_price_the_fragmentation_a_placement_causes() {
    use gangplan::assignment::Assignment;
    use gangplan::model;
    use gangplan::objective::{evaluate, ObjectiveTerms};
    // (MIP objective, plan objective's terms) of j on node a, then on node b.
    let priced = |yaml: &str| -> [(f64, ObjectiveTerms); 2] {
        let inst = parse(yaml);
        let topo = Topology::new(&inst);
        let m = model::build(&inst, &topo);
        let at = |node: usize, gpu: u32| {
            let a = Assignment {
                placed: [(0, [(node, vec![gpu])].into_iter().collect())].into(),
                preempted: Vec::new(),
            };
            let (bad, mip) = m.check(&model::start::start_values(&inst, &topo, &m, &a));
            assert!(bad.is_empty(), "{bad:?}");
            (mip, evaluate(&inst, &topo, &a))
        };
        [at(0, 4), at(1, 5)]
    };
    let plain = priced(WHOLE);
    let yaml = format!("{WHOLE}policy:\n  task_distribution:\n    - {{gpus: 3, share: 1}}\n");
    let with = priced(&yaml);
    for (mip, terms) in plain.iter().chain(&with) {
        let total = terms.total();
        assert!((mip - total).abs() < 1e-9, "MIP {mip} against plan {total}");
    }
    assert!(plain
        .iter()
        .all(|(_, t)| t.fragmentation == 0.0 && t.packing > 0.0));
    assert!(with.iter().all(|(_, t)| t.packing == 0.0), "{with:?}");
    assert!(with[0].1.fragmentation.abs() < 1e-9, "node a: no growth");
    let b = with[1].1.fragmentation;
    assert!(
        (b - FRAG_COST_AT_DEFAULT * 2000.0).abs() < 1e-9,
        "node b costs 2000 milli of fragment: {b}"
    );
    // policy.weights.fragmentation sets the price per GPU of fragment, in both objectives.
    let yaml = format!(
        "{WHOLE}policy:\n  weights: {{fragmentation: 1}}\n  task_distribution:\n    - {{gpus: 3, share: 1}}\n"
    );
    let at_one = priced(&yaml);
    for (mip, terms) in &at_one {
        assert!(
            (mip - terms.total()).abs() < 1e-9,
            "MIP {mip} against plan {terms:?}"
        );
    }
    let b = at_one[1].1.fragmentation;
    assert!((b - 2.0).abs() < 1e-9, "2 GPUs of fragment at 1 a GPU: {b}");
}

/// The ILP's solve of a round with one formulation, under the round's policy.
fn ilp_solve(
    inst: &Arc<Instance>,
    formulation: gangplan::solve::Formulation,
) -> (Arc<Topology>, gangplan::solve::SolveOutcome) {
    use gangplan::solve::{solve, PlannerKind, SolveOptions};
    let topo = Arc::new(Topology::new(inst));
    let opts = SolveOptions {
        formulation,
        ..SolveOptions::from_policy(inst, PlannerKind::Ilp)
    };
    let out = solve(inst, &topo, &opts);
    (topo, out)
}

/// A plan may remove fragmentation: node b's 2 free GPUs are a fragment for 3-GPU tasks (2000
/// milli); a 2-GPU job there leaves none, so the plan objective's fragmentation term is a gain
/// (-2000 milli, priced). Every formulation takes that plan, and its bound stays at or above
/// the plan's objective (the aggregated model has no fragmentation term; its bound adds the
/// most the term can give back).
#[test]
fn a_plan_that_removes_fragmentation_gains_and_every_bound_stays_above_it() {
    use gangplan::objective::evaluate;
    use gangplan::solve::Formulation;
    let yaml = "
nodes:
  - {name: a, gpus: 8}
  - {name: b, gpus: 8}
running:
  - {id: ra, gpus: {a: [0, 1, 2, 3]}}
  - {id: rb, gpus: {b: [0, 1, 2, 3, 4, 5]}}
pending:
  - {id: j, gpus: 2}
policy:
  task_distribution:
    - {gpus: 3, share: 1}
";
    let inst = Arc::new(parse(yaml));
    for formulation in [Formulation::PerNode, Formulation::Aggregated] {
        let (topo, out) = ilp_solve(&inst, formulation);
        let nodes: Vec<usize> = out.assignment.placed[&0].keys().copied().collect();
        assert_eq!(nodes, [1], "{formulation:?}: j fills node b");
        let terms = evaluate(&inst, &topo, &out.assignment);
        assert!(
            (terms.fragmentation + FRAG_COST_AT_DEFAULT * 2000.0).abs() < 1e-9,
            "{formulation:?}: {terms:?}"
        );
        if let Some(bound) = out.bound {
            assert!(
                bound >= out.objective - 1e-9,
                "{formulation:?}: bound {bound} below the plan's {}",
                out.objective
            );
        }
    }
}

/// Three nodes with 2 free GPUs each, a fragment for 3-GPU tasks (2000 milli apiece), and one
/// 1-GPU job waiting: a plan can remove at most the 1000 milli the job takes, except on a node
/// whose running work may be preempted (all of its fragment). The slack says so, and every
/// formulation's bound, which adds it, stays at or above its plan.
#[test]
fn the_fragmentation_a_round_may_remove_is_at_most_what_its_jobs_take() {
    let round = |preemptible: bool| {
        format!(
            "
nodes:
  - {{name: a, gpus: 8}}
  - {{name: b, gpus: 8}}
  - {{name: c, gpus: 8}}
running:
  - {{id: ra, gpus: {{a: [0, 1, 2, 3, 4, 5]}}}}
  - {{id: rb, gpus: {{b: [0, 1, 2, 3, 4, 5]}}}}
  - {{id: rc, gpus: {{c: [0, 1, 2, 3, 4, 5]}}, preemptible: {preemptible}}}
pending:
  - {{id: j, gpus: 1, priority: 5}}
policy:
  task_distribution:
    - {{gpus: 3, share: 1}}
"
        )
    };
    for (preemptible, removable) in [(false, 1000.0), (true, 2000.0 + 1000.0)] {
        let inst = parse(&round(preemptible));
        slack_is_and_bounds_hold(inst, removable, &format!("preemptible {preemptible}"));
    }
}

/// The round's fragmentation slack is `removable` milli at the default price, and every
/// formulation's bound, which adds it, stays at or above its plan.
fn slack_is_and_bounds_hold(inst: Instance, removable: f64, case: &str) {
    use gangplan::objective::fragmentation_slack;
    use gangplan::solve::Formulation;
    let inst = Arc::new(inst);
    let slack = fragmentation_slack(&inst);
    assert!(
        (slack - FRAG_COST_AT_DEFAULT * removable).abs() < 1e-12,
        "{case}: slack {slack}"
    );
    for formulation in [Formulation::PerNode, Formulation::Aggregated] {
        let (_, out) = ilp_solve(&inst, formulation);
        let bound = out.bound.expect("a bound");
        assert!(
            bound >= out.objective - 1e-9,
            "{case}, {formulation:?}: {bound} < {}",
            out.objective
        );
    }
}

/// Three nodes with 2 free GPUs each (a 2000-milli fragment for 3-GPU tasks) and three 2-GPU
/// jobs waiting (6000 milli asked): where node c's CPU is all taken, no job can take a GPU
/// there, so its fragment stays whatever the plan, and the slack counts a and b alone.
#[test]
fn a_node_no_waiting_job_can_take_from_keeps_its_fragmentation() {
    let round = |c_cpu_taken: u64| {
        format!(
            "
nodes:
  - {{name: a, gpus: 8, cpu_milli: 16000}}
  - {{name: b, gpus: 8, cpu_milli: 16000}}
  - {{name: c, gpus: 8, cpu_milli: 16000}}
running:
  - {{id: ra, gpus: {{a: [0, 1, 2, 3, 4, 5]}}}}
  - {{id: rb, gpus: {{b: [0, 1, 2, 3, 4, 5]}}}}
  - {{id: rc, gpus: {{c: [0, 1, 2, 3, 4, 5]}}, cpu_milli: {c_cpu_taken}}}
pending:
  - {{id: j1, gpus: 2, cpu_milli: 1000}}
  - {{id: j2, gpus: 2, cpu_milli: 1000}}
  - {{id: j3, gpus: 2, cpu_milli: 1000}}
policy:
  task_distribution:
    - {{gpus: 3, share: 1}}
"
        )
    };
    for (c_cpu_taken, removable) in [(16000, 4000.0), (0, 6000.0)] {
        let inst = parse(&round(c_cpu_taken));
        slack_is_and_bounds_hold(inst, removable, &format!("c's CPU taken {c_cpu_taken}"));
    }
}

/// On generated rounds with a task distribution (24 nodes, 40 pending, a third sharers),
/// every formulation's plan is valid, never below the greedy's objective, and under its bound.
#[test]
fn with_a_distribution_every_formulation_is_valid_and_bounded() {
    use gangplan::solve::{solve, Formulation, PlannerKind, SolveOptions};
    for seed in 1..=4 {
        let mut inst = generated(seed);
        inst.task_dist = Some(Arc::new(TaskDist::from_types(
            inst.pending.iter().map(TaskType::of),
        )));
        let topo = Arc::new(Topology::new(&inst));
        let inst = Arc::new(inst);
        let greedy = solve(
            &inst,
            &topo,
            &SolveOptions::from_policy(&inst, PlannerKind::Greedy),
        );
        for formulation in [
            Formulation::PerNode,
            Formulation::Aggregated,
            Formulation::Auto,
        ] {
            let opts = SolveOptions {
                formulation,
                deadline: std::time::Instant::now() + std::time::Duration::from_secs(2),
                ..SolveOptions::from_policy(&inst, PlannerKind::Ilp)
            };
            let out = solve(&inst, &topo, &opts);
            let what = format!("seed {seed}, {formulation:?}");
            let plan = render_plan(&inst, &out.assignment, Status::Feasible, info());
            if let Err(e) = validate_plan(&inst, &plan) {
                panic!("{what}: {e}");
            }
            assert!(
                out.objective >= greedy.objective - 1e-9,
                "{what}: below greedy"
            );
            if let Some(bound) = out.bound {
                assert!(
                    bound >= out.objective - 1e-9,
                    "{what}: bound {bound} < {}",
                    out.objective
                );
            }
        }
    }
}
