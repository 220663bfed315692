//! Golden cases for the reasons of pending jobs, the relaxation solve of `explain`, the LP
//! prices, and the CLI's exit codes. Expected outcomes are hand-checked in the comments of each
//! instance under instances/explain/.

use gangplan::explain::prices::prices;
use gangplan::explain::relax::Change;
use gangplan::explain::{explain_job, Verification};
use gangplan::hardware::ModelLibrary;
use gangplan::instance::load::{parse_document, read_document};
use gangplan::instance::raw::RawInstance;
use gangplan::instance::validate::validate;
use gangplan::round::plan_round;
use gangplan::solve::PlannerKind;
use gangplan::topology::Topology;
use std::path::PathBuf;
use std::process::Command;

fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("instances/explain")
        .join(format!("{name}.yaml"))
}

fn raw(name: &str) -> RawInstance {
    let p = path(name);
    parse_document(&read_document(&p).unwrap(), &p.display().to_string()).unwrap()
}

/// (instance, job, kind, binding, fragments the reason must contain)
const REASONS: &[(&str, &str, &str, &str, &[&str])] = &[
    (
        "reason-type",
        "old-gen",
        "unresolvable",
        "gpu_type",
        &["needs V100; no node has V100", "GPU types here: H100"],
    ),
    (
        "reason-capacity",
        "huge",
        "unresolvable",
        "capacity",
        &["needs 24 GPUs; the cluster has only 15 usable"],
    ),
    (
        "reason-locality-usable",
        "wide",
        "unresolvable",
        "locality",
        &["needs 24 GPUs within one rack; the most usable in any rack is 16 (rA)"],
    ),
    (
        "reason-locality-blocked",
        "train",
        "unschedulable",
        "preemption",
        &[
            "needs 16 GPUs within one rack; the most free in any rack is 12 (rA)",
            "would need to preempt n1 (4 GPUs on a2; not preemptible)",
        ],
    ),
    (
        "reason-max-nodes",
        "pair",
        "unschedulable",
        "preemption",
        &[
            "max_nodes 2, but no 2 nodes have 16 free GPUs (at most 12)",
            "s1 (2 GPUs on a1; not preemptible)",
            "s2 (2 GPUs on a2; not preemptible)",
        ],
    ),
    (
        "reason-gpus-per-node",
        "ddp",
        "unschedulable",
        "preemption",
        &[
            "needs 2 nodes with 8 free GPUs each; 1 has that many",
            "would need to preempt tiny (1 GPU on a2; not preemptible)",
        ],
    ),
    (
        "reason-quota",
        "a-job",
        "unschedulable",
        "quota",
        &["tenant A holds 12 GPUs of its quota 16 after this round; this job needs 8 more"],
    ),
    (
        "reason-quota",
        "b-job",
        "unresolvable",
        "quota",
        &["tenant B's quota is 24 GPUs; this job alone needs 32"],
    ),
    (
        "reason-quota-sharer",
        "a-share",
        "unschedulable",
        "quota",
        &["tenant A holds 2 GPUs of its quota 2 after this round; this job needs 0.250 more"],
    ),
    (
        "reason-resources",
        "cpu-heavy",
        "unschedulable",
        "resources",
        &[
            "2 GPUs are free after this round and its shape fits them, but not the CPU and memory left beside them",
            "(it asks 4000 cpu_milli and 0 memory_mib; what is left there holds 0 of its 1 GPU)",
        ],
    ),
    (
        "reason-competition",
        "low",
        "unschedulable",
        "competition",
        &["needs 8 GPUs; 0 are free after this round", "went to high"],
    ),
    (
        "explain-preempt",
        "urgent",
        "unschedulable",
        "capacity",
        &[
            "needs 8 GPUs; 4 are free after this round",
            "preempting r1 (4 GPUs on a2) would make room",
            "not worth the cost",
        ],
    ),
];

#[test]
fn every_reason_kind_is_named_with_its_numbers() {
    let lib = ModelLibrary::builtin();
    for &(name, job, kind, binding, fragments) in REASONS {
        let inst = validate(&raw(name), &lib).unwrap();
        let plan = plan_round(inst, PlannerKind::Ilp, None).unwrap();
        let entry = plan
            .pending
            .iter()
            .find(|p| p.job == job)
            .unwrap_or_else(|| panic!("{name}: {job} should be pending"));
        assert_eq!(
            entry.kind.as_deref(),
            Some(kind),
            "{name}/{job}: {}",
            entry.reason
        );
        for f in fragments {
            assert!(
                entry.reason.contains(f),
                "{name}/{job}: reason {:?} lacks {f:?}",
                entry.reason
            );
        }
        let e = explain_job(&raw(name), &lib, name, job, 3, false).unwrap();
        assert_eq!(e.binding.as_deref(), Some(binding), "{name}/{job}");
        assert_eq!(
            e.reason.as_deref(),
            Some(entry.reason.as_str()),
            "{name}/{job}"
        );
    }
}

#[test]
fn explain_says_when_the_cpu_beside_the_free_gpus_binds() {
    let lib = ModelLibrary::builtin();
    let name = "reason-resources";
    let e = explain_job(&raw(name), &lib, name, "cpu-heavy", 3, false).unwrap();
    assert!(
        e.notes
            .iter()
            .any(|n| n.contains("but the CPU and memory left beside them do not")),
        "{:?}",
        e.notes
    );
    assert!(
        !e.notes.iter().any(|n| n.contains("preferred other work")),
        "the objective did not decide: {:?}",
        e.notes
    );
}

#[test]
fn explain_finds_the_preemption_that_lets_the_job_start() {
    let lib = ModelLibrary::builtin();
    let e = explain_job(&raw("explain-preempt"), &lib, "t", "urgent", 3, true).unwrap();
    let first = &e.options[0];
    assert_eq!(
        first.relaxation.summary,
        "starts if r1 (4 GPUs on a2) is preempted"
    );
    assert!(matches!(
        &first.relaxation.changes[..],
        [Change::Stop { job, allowed: true, .. }] if job == "r1"
    ));
    assert_eq!(first.verification, Verification::Starts);
}

#[test]
fn explain_lists_alternatives_cheapest_first_and_checks_them() {
    let lib = ModelLibrary::builtin();
    let e = explain_job(&raw("reason-locality-blocked"), &lib, "t", "train", 3, true).unwrap();
    let summaries: Vec<&str> = e
        .options
        .iter()
        .map(|o| o.relaxation.summary.as_str())
        .collect();
    assert_eq!(
        summaries,
        [
            "starts if n1 (4 GPUs on a2) finishes or is stopped (not preemptible)",
            "starts if the job may span 2 racks (within: rack relaxed)",
            "starts with 1 more a100-pcie-8x node (8 A100 GPUs) in rack rA (new hardware)",
        ]
    );
    let costs: Vec<f64> = e.options.iter().map(|o| o.relaxation.cost).collect();
    assert!((costs[0] - 16.0).abs() < 0.01, "{costs:?}");
    assert!(
        (costs[1] - 30.0).abs() < 1e-6 && (costs[2] - 40.0).abs() < 1e-6,
        "{costs:?}"
    );
    assert_eq!(e.options[0].verification, Verification::Starts);
    assert_eq!(e.options[1].verification, Verification::Starts);
    // The relaxation adds 4 GPUs to a1; in real units that is one node of the largest shipped
    // model (the rack's nodes name no model or GPU type), re-planned: the job starts.
    assert_eq!(e.options[2].verification, Verification::Starts);
}

/// The example round's 64-GPU gang: the relaxation's added GPUs become whole nodes of the
/// rack's own model (dgx-h100, 8 GPUs each), and the count is the one a re-plan confirms.
/// Hand check: rack ra has 31 usable H100; with pretrain-1 stopped and llm-sft waiting all 31
/// are free, and 64 - 31 = 33 more GPUs need 5 nodes of 8.
#[test]
fn hardware_is_suggested_in_whole_nodes_of_a_shipped_model_and_re_planned() {
    let lib = ModelLibrary::builtin();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("instances/quickstart.yaml");
    let text = std::fs::read_to_string(path).unwrap();
    let raw: gangplan::instance::raw::RawInstance = serde_yaml::from_str(&text).unwrap();
    let e = explain_job(&raw, &lib, "quickstart", "giant", 3, true).unwrap();
    let hardware: Vec<&Change> = e
        .options
        .iter()
        .flat_map(|o| &o.relaxation.changes)
        .filter(|c| matches!(c, Change::AddNodes { .. } | Change::AddGpus { .. }))
        .collect();
    assert!(!hardware.is_empty(), "{e:?}");
    for c in hardware {
        match c {
            Change::AddNodes {
                model,
                gpus_each,
                count,
                rack,
                ..
            } => {
                assert_eq!(
                    (model.as_str(), *gpus_each, rack.as_str()),
                    ("dgx-h100", 8, "ra")
                );
                assert_eq!(*count, 5);
            }
            other => panic!("GPUs suggested outside whole nodes: {other:?}"),
        }
    }
    let with_nodes = e
        .options
        .iter()
        .find(|o| {
            o.relaxation
                .changes
                .iter()
                .any(|c| matches!(c, Change::AddNodes { .. }))
        })
        .unwrap();
    assert_eq!(with_nodes.verification, Verification::Starts);
    assert!(with_nodes
        .relaxation
        .summary
        .contains("5 more dgx-h100 nodes (8 H100 GPUs each) in rack ra"));
}

#[test]
fn a_job_that_starts_says_where() {
    let lib = ModelLibrary::builtin();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("instances/quickstart.yaml");
    let raw: gangplan::instance::raw::RawInstance =
        serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let e = explain_job(&raw, &lib, "quickstart", "render", 3, true).unwrap();
    assert!(e.started);
    let on = e.placed_on.expect("a started job names its GPUs");
    assert_eq!(on.values().map(Vec::len).sum::<usize>(), 4);
    assert!(
        on.keys().all(|n| n == "l1" || n == "l2"),
        "render needs L40S: {on:?}"
    );
}

#[test]
fn explain_names_the_quota_and_the_competitor() {
    let lib = ModelLibrary::builtin();
    let e = explain_job(&raw("reason-quota"), &lib, "t", "a-job", 1, true).unwrap();
    assert_eq!(
        e.options[0].relaxation.summary,
        "starts if tenant A's quota rises from 16 to 20"
    );
    assert_eq!(e.options[0].verification, Verification::Starts);
    let e = explain_job(&raw("reason-competition"), &lib, "t", "low", 1, true).unwrap();
    assert!(matches!(
        &e.options[0].relaxation.changes[..],
        [Change::HoldBack { job, .. }] if job == "high"
    ));
    assert_eq!(e.options[0].verification, Verification::Starts);
}

#[test]
fn explain_of_a_missing_type_offers_no_relaxation_and_says_why() {
    let lib = ModelLibrary::builtin();
    let e = explain_job(&raw("reason-type"), &lib, "t", "old-gen", 3, true).unwrap();
    assert!(e.options.is_empty());
    assert!(e
        .notes
        .iter()
        .any(|n| n.contains("no node has an accepted GPU type")));
}

#[test]
fn a_started_job_is_reported_as_started() {
    let lib = ModelLibrary::builtin();
    let e = explain_job(&raw("reason-competition"), &lib, "t", "high", 3, true).unwrap();
    assert!(e.started && e.reason.is_none() && e.options.is_empty());
}

#[test]
fn prices_value_scarce_gpus_and_binding_quotas() {
    let lib = ModelLibrary::builtin();
    // prices.yaml: 1.1 (value per GPU of `big`) + 0.02 (strand) + 0.3 (fairness) = 1.42.
    let inst = validate(&raw("prices"), &lib).unwrap();
    let p = prices(&inst, &Topology::new(&inst)).unwrap();
    let get = |v: &[gangplan::explain::prices::Price], n: &str| {
        v.iter().find(|x| x.name == n).map(|x| x.price).unwrap()
    };
    assert!((get(&p.gpu_types, "H100") - 1.42).abs() < 1e-6, "{p:?}");
    assert_eq!(get(&p.gpu_types, "A100"), 0.0);
    assert!((get(&p.racks, "rH") - 1.42).abs() < 1e-6);
    // The LP objective bounds the plan's.
    let plan = plan_round(inst.clone(), PlannerKind::Ilp, None).unwrap();
    assert!(p.lp_objective + 1e-6 >= plan.solver.objective);
    // reason-quota.yaml: A's quota binds (its job starts half-way in the LP), B's does not.
    let inst = validate(&raw("reason-quota"), &lib).unwrap();
    let p = prices(&inst, &Topology::new(&inst)).unwrap();
    assert!(get(&p.quotas, "A") > 1.0, "{p:?}");
    assert_eq!(get(&p.quotas, "B"), 0.0);
}

/// A round where no job can go anywhere (none waits; or every one asks a type nobody has)
/// has an empty LP: every price is 0, not a solver error.
#[test]
fn prices_of_a_round_nothing_can_use_are_zero() {
    for pending in ["[]", "[{id: x, gpus: 1, gpu_type: Z}]"] {
        let text = format!("{{nodes: [{{name: a, gpus: 2}}], pending: {pending}}}");
        let inst =
            gangplan::instance::parse_instance(&text, "round", &ModelLibrary::builtin()).unwrap();
        let p = prices(&inst, &Topology::new(&inst)).unwrap();
        assert!(p.lp_objective.is_finite(), "{pending}");
        let all = p.nodes.iter().chain(&p.gpu_types).chain(&p.racks);
        assert!(all.clone().all(|n| n.price == 0.0), "{pending}: {p:?}");
    }
}

fn gangplan(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gangplan"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A round whose objective weights lie 1e-9 to 1e6 apart (found by an independent fuzz
/// generator): HiGHS's presolve called its relaxation unbounded, and `explain --prices` failed
/// as an internal error. Its prices now come, and their LP objective bounds the plan's.
#[test]
fn prices_of_a_round_with_extreme_weights_bound_its_plan() {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/odd/extreme-weights.yaml");
    let lib = ModelLibrary::builtin();
    let text = read_document(&path).unwrap();
    let mut inst = gangplan::instance::parse_instance(&text, "extreme-weights", &lib).unwrap();
    // Without presolve its relaxation takes about 1.5 s: more than the round's own 0.2 s.
    inst.policy.time_limit = 30.0;
    let p = prices(&inst, &Topology::new(&inst)).expect("the relaxation solves");
    let opts = gangplan::solve::SolveOptions {
        deadline: std::time::Instant::now() + std::time::Duration::from_secs(5),
        ..gangplan::solve::SolveOptions::from_policy(&inst, PlannerKind::Ilp)
    };
    let plan = plan_round(inst, PlannerKind::Ilp, Some(opts)).unwrap();
    let slack = 1e-6 * plan.solver.objective.abs().max(1.0);
    assert!(
        p.lp_objective + slack >= plan.solver.objective,
        "LP {} below the plan's {}",
        p.lp_objective,
        plan.solver.objective
    );
}

/// Prices whose LP relaxation outlasts the time limit end with the time limit's exit code (8)
/// and say what to change, not as an internal failure. The round (100 nodes, 1,500 pending
/// jobs) takes its LP about 12 s on the development machine.
#[test]
fn prices_past_the_time_limit_say_so_with_exit_8() {
    let dir = tempfile::tempdir().unwrap();
    let round = dir.path().join("round.yaml");
    let round = round.to_str().unwrap();
    let args = ["gen", "--nodes", "100", "--pending", "1500", "--seed", "2"];
    let (code, _, err) = gangplan(&[&args[..], &["--out", round]].concat());
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = gangplan(&["explain", round, "--prices", "--time-limit", "1"]);
    assert_eq!(code, 8, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains("did not finish within 1.0 s; give explain --prices a longer --time-limit"),
        "{err}"
    );
}

/// A round whose per-node model is past the prices' size limit (1,250 nodes, 4,000 pending:
/// about 5.7 million (job, node) columns, which took 77 s and 6.4 GiB before its LP could
/// start) is refused at once with exit 8, saying what answers on such rounds.
#[test]
fn prices_of_a_round_too_large_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let round = dir.path().join("round.json");
    let round = round.to_str().unwrap();
    let args = ["gen", "--nodes", "1250", "--pending", "4000", "--seed", "1"];
    let (code, _, err) = gangplan(&[&args[..], &["--out", round]].concat());
    assert_eq!(code, 0, "{err}");
    let started = std::time::Instant::now();
    let (code, out, err) = gangplan(&["explain", round, "--prices", "--time-limit", "600"]);
    assert_eq!(code, 8, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("(job, node) columns; past 1000000"), "{err}");
    assert!(err.contains("`explain JOB` and `whatif` answer"), "{err}");
    // Refused before any model is built (a build alone took over a minute).
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
}

#[test]
fn cli_explain_exit_codes() {
    let p = path("reason-quota");
    let p = p.to_str().unwrap();
    let (code, _, err) = gangplan(&["explain", p, "no-such-job"]);
    assert_eq!(code, 2);
    assert!(err.contains("no pending job \"no-such-job\""), "{err}");
    assert!(err.contains("a-job, b-job"), "{err}");
    let (code, _, err) = gangplan(&["explain", p, "a-old"]);
    assert_eq!(code, 2);
    assert!(err.contains("is a running job"), "{err}");
    let (code, _, err) = gangplan(&["explain", p]);
    assert_eq!(code, 2);
    assert!(err.contains("--prices"), "{err}");
    let (code, _, _) = gangplan(&["explain", p, "a-job", "--prices"]);
    assert_eq!(code, 2);
    let (code, _, _) = gangplan(&["explain", "/nonexistent.yaml", "a-job"]);
    assert_eq!(code, 2);
    let (code, out, _) = gangplan(&["explain", p, "a-job"]);
    assert_eq!(code, 0);
    assert!(out.contains("a-job: pending (unschedulable)"), "{out}");
    assert!(
        out.contains("starts if tenant A's quota rises from 16 to 20"),
        "{out}"
    );
    let (code, out, _) = gangplan(&["explain", p, "b-job", "--format", "json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["kind"], "unresolvable");
    assert_eq!(v["binding"], "quota");
    let (code, out, _) = gangplan(&["explain", "--prices", p, "--format", "json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["quotas"].as_array().unwrap().len() == 2);
}

/// The kind is checked against an independent oracle on generated rounds: the job alone in
/// the empty cluster (no running jobs, no other pending jobs), planned by the MIP. An
/// `unresolvable` job must not start there; an `unschedulable` one must.
#[test]
fn kinds_agree_with_the_job_alone_in_an_empty_cluster() {
    use gangplan::gen::{generate, GenParams};
    let lib = ModelLibrary::builtin();
    let mut checked = (0, 0);
    for seed in 1..=4 {
        let mut raw = generate(&GenParams {
            nodes: 12,
            pending: 40,
            seed,
            ..Default::default()
        });
        // CPU and memory are left out: the reasons treat them approximately.
        for n in &mut raw.nodes {
            n.cpu_milli = None;
            n.memory_mib = None;
        }
        for r in &mut raw.running {
            r.cpu_milli = None;
            r.memory_mib = None;
        }
        raw.pending.retain(|p| p.gpus > 0);
        for p in &mut raw.pending {
            p.cpu_milli = None;
            p.memory_mib = None;
        }
        let inst = validate(&raw, &lib).unwrap();
        let plan = plan_round(inst.clone(), PlannerKind::Ilp, None).unwrap();
        for entry in &plan.pending {
            let mut alone = raw.clone();
            alone.running.clear();
            alone.pending.retain(|p| p.id == entry.job);
            let alone_inst = validate(&alone, &lib).unwrap();
            let starts = plan_round(alone_inst, PlannerKind::Ilp, None)
                .unwrap()
                .placements
                .len()
                == 1;
            match entry.kind.as_deref() {
                Some("unresolvable") => {
                    assert!(
                        !starts,
                        "seed {seed}: {} is called unresolvable ({}) but starts alone",
                        entry.job, entry.reason
                    );
                    checked.0 += 1;
                }
                Some("unschedulable") => {
                    assert!(
                        starts,
                        "seed {seed}: {} is called unschedulable ({}) but cannot start alone",
                        entry.job, entry.reason
                    );
                    checked.1 += 1;
                }
                _ => {}
            }
        }
    }
    assert!(
        checked.0 > 0 && checked.1 > 0,
        "the oracle checked too few jobs: {checked:?}"
    );
}

/// More than three job changes of one kind read as one clause with a count, their GPUs and
/// the first three names; `explain -v` lists each.
#[test]
fn many_victims_are_grouped_into_one_clause() {
    let yaml = "
nodes:
  - {name: a, gpus: 8}
running:
  - {id: r0, gpus: {a: [0]}}
  - {id: r1, gpus: {a: [1]}}
  - {id: r2, gpus: {a: [2]}}
  - {id: r3, gpus: {a: [3]}}
  - {id: r4, gpus: {a: [4]}}
  - {id: r5, gpus: {a: [5]}}
pending:
  - {id: big, gpus: 8}
";
    let raw: RawInstance = serde_yaml::from_str(yaml).unwrap();
    let lib = ModelLibrary::builtin();
    let e = explain_job(&raw, &lib, "t", "big", 1, true).unwrap();
    let first = &e.options[0];
    assert_eq!(first.relaxation.changes.len(), 6, "{:?}", first.relaxation);
    assert_eq!(
        first.relaxation.summary,
        "starts if 6 running jobs (6 GPUs) that may not be preempted finish or are stopped: r0, r1, r2 and 3 more"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.yaml");
    std::fs::write(&path, yaml).unwrap();
    let run = |verbose: bool| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_gangplan"));
        cmd.arg("explain").arg(&path).arg("big");
        if verbose {
            cmd.arg("-v");
        }
        String::from_utf8(cmd.output().unwrap().stdout).unwrap()
    };
    let plain = run(false);
    let option = plain
        .lines()
        .find(|l| l.trim_start().starts_with("1."))
        .unwrap_or_else(|| panic!("{plain}"));
    assert!(
        option.contains("and 3 more") && !option.contains("r5"),
        "{option}"
    );
    assert!(
        run(true).contains("- r5 (1 GPU on a) finishes or is stopped"),
        "{}",
        run(true)
    );
}

/// A gang of a million GPUs on one node: the nodes the explanation would add pass the
/// instance's node limit. That is a verdict on the suggestion (not re-planned, and why), not
/// an error in the user's file.
#[test]
fn a_suggestion_past_the_node_limit_is_not_re_planned_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("huge.yaml");
    std::fs::write(
        &file,
        "nodes: [{name: a, gpus: 8}]\npending: [{id: big, gpus: 1000000}]\n",
    )
    .unwrap();
    let (code, out, err) = gangplan(&["explain", file.to_str().unwrap(), "big"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("not re-planned"), "{out}");
    assert!(out.contains("the limit is 100000"), "{out}");
}

/// A round of `racks` racks of `per_rack` nodes (8 GPUs each), every GPU held by 8-GPU jobs
/// that may not be preempted, but for the listed nodes, which keep `free` GPUs and one job
/// on the rest; and one pending job (`pending`, YAML flow mapping).
fn crowded_round(racks: usize, per_rack: usize, odd: &[(usize, u32)], pending: &str) -> String {
    let mut yaml = String::from("nodes:\n");
    for n in 0..racks * per_rack {
        yaml += &format!(
            "  - {{name: n{n:04}, gpus: 8, rack: r{:02}}}\n",
            n / per_rack
        );
    }
    yaml += "running:\n";
    for n in 0..racks * per_rack {
        let held = odd.iter().find(|o| o.0 == n).map_or(8, |o| 8 - o.1);
        let gpus: Vec<String> = (0..held).map(|g| g.to_string()).collect();
        yaml += &format!(
            "  - {{id: j{n:04}, gpus: {{n{n:04}: [{}]}}}}\n",
            gpus.join(", ")
        );
    }
    yaml + &format!("pending:\n  - {pending}\n")
}

/// On a round of more nodes than the relaxation models (2,100 here), it looks at the nodes
/// where its GPUs are cheapest and says so. Hand check: only n1337 has free GPUs (4); the
/// job of 8 starts there once the 4-GPU job j1337 stops (4 GPUs at 4 each: 16), where any
/// other node needs an 8-GPU job stopped (32) and added hardware costs 10 a GPU (40).
#[test]
fn a_large_round_is_explained_on_its_cheapest_nodes() {
    let yaml = crowded_round(42, 50, &[(1337, 4)], "{id: urgent, gpus: 8, priority: 5}");
    let raw: RawInstance = serde_yaml::from_str(&yaml).unwrap();
    let lib = ModelLibrary::builtin();
    let e = explain_job(&raw, &lib, "t", "urgent", 1, true).unwrap();
    let first = &e.options[0];
    assert_eq!(
        first.relaxation.summary,
        "starts if j1337 (4 GPUs on n1337) finishes or is stopped (not preemptible)"
    );
    assert!((first.relaxation.cost - 16.0).abs() < 0.01, "{first:?}");
    assert_eq!(first.verification, Verification::Starts);
    assert!(
        e.notes
            .iter()
            .any(|n| n.contains("of the 2100 nodes the job may use, the relaxation looked at the")),
        "{:?}",
        e.notes
    );
}

/// The same for a job that must sit in one rack: the racks are ranked by their cheapest
/// room. Hand check: rack r29 (n1450-n1499) has 6 free GPUs on n1471 and on n1475 beside a
/// 2-GPU job each; 16 GPUs in r29 need both stopped (2 x 2 GPUs at 4: 16), where one 8-GPU
/// job stopped (32) or any other rack (two 8-GPU jobs, 64) costs more.
#[test]
fn a_large_round_is_explained_in_its_cheapest_rack() {
    let pending = "{id: wide, gpus: 16, within: rack}";
    let yaml = crowded_round(42, 50, &[(1471, 6), (1475, 6)], pending);
    let raw: RawInstance = serde_yaml::from_str(&yaml).unwrap();
    let lib = ModelLibrary::builtin();
    let e = explain_job(&raw, &lib, "t", "wide", 1, false).unwrap();
    let first = &e.options[0];
    assert_eq!(
        first.relaxation.summary,
        "starts if j1471 (2 GPUs on n1471) finishes or is stopped (not preemptible); and j1475 (2 GPUs on n1475) finishes or is stopped (not preemptible)"
    );
    assert!((first.relaxation.cost - 16.0).abs() < 0.01, "{first:?}");
    assert!(
        e.notes.iter().any(|n| n.contains("of the 2100 nodes")),
        "{:?}",
        e.notes
    );
}

/// Where the tenant's quota lacks room, a job of the tenant frees quota as well as GPUs, and
/// its node ranks as such. Hand check: every node is full; j0777 (8 GPUs, tenant `mine`, at
/// its quota of 8) stopped lets the tenant's 8-GPU job start for 32; any other job stopped
/// (32) needs the quota raised by 8 as well (16): 48.
#[test]
fn a_large_round_counts_a_job_of_the_tenant_as_freeing_quota() {
    let yaml = crowded_round(42, 50, &[], "{id: mine-job, tenant: mine, gpus: 8}")
        .replace("{id: j0777, ", "{id: j0777, tenant: mine, ")
        .replace(
            "running:\n",
            "tenants:\n  - {name: default}\n  - {name: mine, quota: 8}\nrunning:\n",
        );
    let raw: RawInstance = serde_yaml::from_str(&yaml).unwrap();
    let lib = ModelLibrary::builtin();
    let e = explain_job(&raw, &lib, "t", "mine-job", 1, false).unwrap();
    let first = &e.options[0];
    assert_eq!(
        first.relaxation.summary,
        "starts if j0777 (8 GPUs on n0777) finishes or is stopped (not preemptible)"
    );
    assert!((first.relaxation.cost - 32.0).abs() < 0.01, "{first:?}");
}
