//! Plans as people and programs read them: the table (a snapshot of the example round, checked
//! by hand), JSON with GPU lists on one line and no floating-point noise, YAML, and the round
//! line.

use gangplan::hardware::ModelLibrary;
use gangplan::instance::{load_instance_file, Instance};
use gangplan::plan::output::{round_line, to_json, to_table, to_yaml};
use gangplan::plan::Plan;
use gangplan::round::plan_round;
use gangplan::solve::PlannerKind;
use std::path::Path;

fn quickstart() -> Instance {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("instances/quickstart.yaml");
    load_instance_file(&path, &ModelLibrary::builtin()).unwrap()
}

/// The example round planned by the MIP, with the wall seconds zeroed (they vary by run).
fn planned() -> (Instance, Plan) {
    let inst = quickstart();
    let mut plan = plan_round(inst.clone(), PlannerKind::Ilp, None).unwrap();
    plan.solver.seconds = 0.0;
    (inst, plan)
}

#[test]
fn the_example_round_as_a_table() {
    let (inst, plan) = planned();
    insta::assert_snapshot!(to_table(&inst, &plan));
}

#[test]
fn table_rows_name_nodes_ranges_and_states() {
    let (inst, plan) = planned();
    let table = to_table(&inst, &plan);
    let row = |job: &str| {
        table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(job))
            .unwrap_or_else(|| panic!("no row for {job}:\n{table}"))
            .split_whitespace()
            .collect::<Vec<_>>()
    };
    assert_eq!(
        row("llm-sft")[..5],
        ["llm-sft", "prod", "16", "h2:0-7", "h4:0-7"]
    );
    assert_eq!(row("llm-sft")[5], "start");
    assert_eq!(
        row("finetune-2")[..5],
        ["finetune-2", "research", "4", "h2:0-3", "preempt"]
    );
    assert_eq!(
        row("giant")[..5],
        ["giant", "research", "64", "-", "pending"]
    );
    assert_eq!(row("notebook-5")[2], "1x250m");
    assert_eq!(row("etl")[3], "h1", "a CPU-only job names its node alone");
    let last = table.lines().last().unwrap();
    assert!(
        last.starts_with(
            "round: 8 placed, 1 pending, 1 preempted; GPUs busy 15 -> 45 of 56 (1 down)"
        ),
        "{last}"
    );
}

#[test]
fn json_lists_gpus_on_one_line_and_rounds_noise() {
    let (_, mut plan) = planned();
    plan.solver.bound = Some(42.78000000000001);
    plan.solver.gap = Some(-0.0);
    let json = to_json(&plan);
    assert!(json.contains("\"h2\": [0, 1, 2, 3, 4, 5, 6, 7]"), "{json}");
    assert!(json.contains("\"bound\": 42.78,"), "{json}");
    assert!(!json.contains("-0.0"), "{json}");
    let back: Plan = serde_json::from_str(&json).expect("the JSON reads back as a plan");
    assert_eq!(back.placements, plan.placements);
    let first_keys: Vec<&str> = json.lines().skip(1).take(3).map(|l| l.trim()).collect();
    assert!(
        first_keys[0].starts_with("\"format\""),
        "SPEC order kept: {first_keys:?}"
    );
    let yaml = to_yaml(&plan);
    let back: Plan = serde_yaml::from_str(&yaml).unwrap();
    assert_eq!(back.solver.bound, Some(42.78));
}

#[test]
fn a_bound_never_rounds_below_the_objective_and_a_gap_is_never_negative() {
    let (_, mut plan) = planned();
    plan.solver.objective = 12.54;
    plan.solver.bound = Some(12.539999999999997);
    plan.solver.gap = Some(-2.4e-16);
    let line = round_line(&plan);
    assert!(
        line.contains("objective 12.54, bound 12.54, gap 0.00%"),
        "{line}"
    );
    let back: Plan = serde_json::from_str(&to_json(&plan)).unwrap();
    assert!(back.solver.bound.unwrap() >= back.solver.objective);
    assert_eq!(back.solver.gap, Some(0.0));
}

/// A preempted CPU-only job frees no GPU: its reason names its CPU and memory and the job that
/// takes them, not "0 GPUs".
#[test]
fn a_cpu_only_victim_frees_its_cpu_and_memory_for_the_job_on_its_node() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("instances/golden/cpu-only-victim.yaml");
    let inst = load_instance_file(&path, &ModelLibrary::builtin()).unwrap();
    assert_ilp_preemptions(
        inst,
        &[("cpu-hog", "frees its CPU and memory on n1 for train")],
    );
}

/// Assert the ILP plan of `inst` preempts exactly `expected`: (job, reason).
fn assert_ilp_preemptions(inst: Instance, expected: &[(&str, &str)]) {
    let plan = plan_round(inst, PlannerKind::Ilp, None).unwrap();
    let reasons: Vec<(&str, &str)> = plan
        .preemptions
        .iter()
        .map(|p| (p.job.as_str(), p.reason.as_str()))
        .collect();
    assert_eq!(reasons, expected);
}

/// A GPU whose only sharer is preempted (for the CPU a CPU-only job needs) and that nothing
/// takes is idle after the round: it is not counted busy, and the sharer's reason names its
/// share.
#[test]
fn a_gpu_whose_sharers_are_all_preempted_is_not_busy_after_the_round() {
    let text = "{nodes: [{name: a, gpus: 2, cpu_milli: 1000}],
        running: [{id: s1, gpus: {a: [0]}, gpu_milli: 500, preemptible: true, cpu_milli: 1000}],
        pending: [{id: c, gpus: 0, priority: 5, cpu_milli: 1000}],
        policy: {weights: {cpu_job: 100}}}";
    let inst = gangplan::instance::parse_instance(text, "round", &ModelLibrary::builtin()).unwrap();
    let plan = plan_round(inst, PlannerKind::Ilp, None).unwrap();
    assert_eq!(plan.preemptions.len(), 1);
    // A sharer frees its share, not a GPU; what took it here is its CPU.
    assert_eq!(
        plan.preemptions[0].reason,
        "frees 500 milli of GPU a:0; its CPU and memory there go to c"
    );
    assert_eq!(plan.metrics.gpus_busy_before, 1);
    assert_eq!(plan.metrics.gpus_busy_after, 0);
}

/// A job preempted so that its tenant, at its quota, can start a higher-priority job elsewhere
/// says so: nobody takes its GPUs, and the reason names the quota and the job, not "higher-
/// priority work".
#[test]
fn a_victim_preempted_for_its_tenants_quota_names_the_quota_and_the_job() {
    let text =
        "{nodes: [{name: old, gpus: 2, gpu_type: A100}, {name: new, gpus: 2, gpu_type: H100}],
        tenants: [{name: t, quota: 2}],
        running: [{id: r, tenant: t, gpus: {old: [0, 1]}, preemptible: true, priority: 0}],
        pending: [{id: j, tenant: t, gpus: 2, gpu_type: H100, priority: 5}]}";
    let inst = gangplan::instance::parse_instance(text, "round", &ModelLibrary::builtin()).unwrap();
    // (The greedy preempts only where it places, so only the ILP starts j here.)
    assert_ilp_preemptions(
        inst,
        &[("r", "frees 2 GPUs on old of tenant t's quota for j")],
    );
}
