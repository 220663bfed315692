//! Every baseline planner returns plans that pass the independent validator, deterministically,
//! on generated instances (types, locality, shapes, sharers, CPU/memory, quotas, running fill).

use gangplan::gen::{generate, GenParams};
use gangplan::hardware::ModelLibrary;
use gangplan::heuristics::best_fit::BestFit;
use gangplan::heuristics::drf::Drf;
use gangplan::heuristics::fgd::Fgd;
use gangplan::heuristics::fifo::Fifo;
use gangplan::heuristics::las::Las;
use gangplan::heuristics::random::RandomFit;
use gangplan::heuristics::Planner;
use gangplan::heuristics::RoundContext;
use gangplan::instance::validate::validate;
use gangplan::instance::Instance;
use gangplan::plan::{render_plan, validate_plan, SolverInfo, Status};
use gangplan::topology::Topology;
use std::time::{Duration, Instant};

fn planners() -> Vec<Box<dyn Planner>> {
    vec![
        Box::new(Fifo),
        Box::new(BestFit),
        Box::new(Las),
        Box::new(Drf),
        Box::new(Fgd::default()),
        Box::new(RandomFit { seed: 7 }),
    ]
}

fn instance(seed: u64, nodes: usize, pending: usize, busy: f64) -> Instance {
    let raw = generate(&GenParams {
        nodes,
        pending,
        seed,
        nodes_per_rack: 4,
        racks_per_pod: 2,
        busy,
        sharers: 0.2,
        max_gang: 32,
        ..GenParams::default()
    });
    validate(&raw, &ModelLibrary::builtin()).expect("generated instances are valid")
}

fn info() -> SolverInfo {
    SolverInfo::blank("baseline")
}

#[test]
fn every_baseline_gives_valid_deterministic_plans() {
    for seed in 1..=6 {
        let inst = instance(seed, 12 + seed as usize * 3, 30, 0.5);
        let topo = Topology::new(&inst);
        for p in planners() {
            let a = p.plan(&RoundContext::untimed(&inst, &topo));
            let plan = render_plan(&inst, &a, Status::Fallback, info());
            if let Err(e) = validate_plan(&inst, &plan) {
                panic!("{} on seed {seed}: {e}", p.name());
            }
            assert_eq!(
                a,
                p.plan(&RoundContext::untimed(&inst, &topo)),
                "{} is not deterministic",
                p.name()
            );
        }
    }
}

#[test]
fn under_a_time_limit_baselines_consider_no_job_past_the_work_deadline_and_say_so() {
    let inst = std::sync::Arc::new(instance(2, 24, 40, 0.3));
    let topo = std::sync::Arc::new(Topology::new(&inst));
    for p in planners() {
        // A deadline already past: the cutoff comes before the first job.
        let late = p.solve(&RoundContext::new(&inst, &topo, Instant::now()));
        assert!(
            late.assignment.placed.is_empty(),
            "{} placed work",
            p.name()
        );
        assert!(late.time_limit_hit, "{}", p.name());
        let note = late.note.expect("a note");
        assert!(
            note.contains(&format!("stopped {} after 0 of 40 pending jobs", p.name())),
            "{note}"
        );
        // Time to spare: the pure plan, and nothing said.
        let far = Instant::now() + Duration::from_secs(600);
        let timed = p.solve(&RoundContext::new(&inst, &topo, far));
        assert!(
            !timed.time_limit_hit && timed.note.is_none(),
            "{}",
            p.name()
        );
        assert_eq!(
            timed.assignment,
            p.plan(&RoundContext::untimed(&inst, &topo)),
            "{}",
            p.name()
        );
    }
}

#[test]
fn baselines_place_work_on_an_idle_cluster() {
    let inst = instance(3, 16, 20, 0.0);
    let topo = Topology::new(&inst);
    for p in planners() {
        let a = p.plan(&RoundContext::untimed(&inst, &topo));
        assert!(
            !a.placed.is_empty(),
            "{} placed nothing on an idle cluster",
            p.name()
        );
        assert!(
            a.preempted.is_empty(),
            "{} preempted on an idle cluster",
            p.name()
        );
    }
}

#[test]
fn las_preempts_only_lower_priority_work_and_the_validator_agrees() {
    // A full cluster: queue-1 work (priority -1, preemptible), one queue-0 job held by a
    // non-preemptible owner; a queue-0 arrival needs 4 GPUs.
    let yaml = "
nodes:
  - {name: a, gpus: 4}
  - {name: b, gpus: 4}
running:
  - {id: old1, priority: -1, preemptible: true, gpus: {a: [0, 1]}}
  - {id: old2, priority: -1, preemptible: true, gpus: {a: [2, 3]}}
  - {id: pinned, priority: -1, gpus: {b: [0, 1, 2, 3]}}
pending:
  - {id: new, gpus: 4}
";
    let inst = gangplan::instance::parse_instance(yaml, "t", &ModelLibrary::builtin()).unwrap();
    let topo = Topology::new(&inst);
    let a = Las.plan(&RoundContext::untimed(&inst, &topo));
    assert_eq!(a.preempted, vec![0, 1]);
    assert_eq!(a.placed[&0].keys().copied().collect::<Vec<_>>(), vec![0]);
    let plan = render_plan(&inst, &a, Status::Fallback, info());
    validate_plan(&inst, &plan).expect("valid LAS plan");
    // Equal priority: no preemption.
    let same = yaml.replace("priority: -1, preemptible", "priority: 0, preemptible");
    let inst = gangplan::instance::parse_instance(&same, "t", &ModelLibrary::builtin()).unwrap();
    let a = Las.plan(&RoundContext::untimed(&inst, &topo));
    assert!(a.preempted.is_empty() && a.placed.is_empty());
}

#[test]
fn best_fit_fills_the_fuller_node() {
    let yaml = "
nodes:
  - {name: a, gpus: 8}
  - {name: b, gpus: 8}
running:
  - {id: r, gpus: {b: [0, 1, 2, 3, 4]}}
pending:
  - {id: j, gpus: 2}
";
    let inst = gangplan::instance::parse_instance(yaml, "t", &ModelLibrary::builtin()).unwrap();
    let topo = Topology::new(&inst);
    let bf = BestFit.plan(&RoundContext::untimed(&inst, &topo));
    assert_eq!(bf.placed[&0].keys().copied().collect::<Vec<_>>(), vec![1]);
    let ff = Fifo.plan(&RoundContext::untimed(&inst, &topo));
    assert_eq!(ff.placed[&0].keys().copied().collect::<Vec<_>>(), vec![0]);
}

#[test]
fn fgd_keeps_whole_gpus_for_whole_gpu_tasks() {
    // Node a has one GPU half used; node b is empty. A half-GPU task should share a's GPU
    // (no new fragment) rather than break a whole GPU on b.
    let yaml = "
nodes:
  - {name: a, gpus: 2}
  - {name: b, gpus: 2}
running:
  - {id: r, gpus: {a: [0]}, gpu_milli: 500}
pending:
  - {id: s, gpus: 1, gpu_milli: 500}
  - {id: w, gpus: 2}
";
    let inst = gangplan::instance::parse_instance(yaml, "t", &ModelLibrary::builtin()).unwrap();
    let topo = Topology::new(&inst);
    let a = Fgd::default().plan(&RoundContext::untimed(&inst, &topo));
    assert_eq!(a.placed[&0], [(0usize, vec![0u32])].into_iter().collect());
    assert_eq!(a.placed[&1].keys().copied().collect::<Vec<_>>(), vec![1]);
}
