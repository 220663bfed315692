//! Deadlines, fault injection, limits, atomic output and the no-execution rule.
//!
//! - The time limit holds for the whole command, parse and write included.
//! - A MIP backend that fails, overruns, panics or answers nonsense still gives a valid plan
//!   (the greedy one, status `fallback`), the fault is named in the outcome's note, and the
//!   call returns within its deadline.
//! - An instance beyond a documented limit is refused with a message naming the limit, and
//!   docs/reliability.md states every limit's value.
//! - Output is written whole or not at all.
//! - Nothing from an input is ever executed: the library never spawns a process.

use gangplan::gen::{generate, GenParams};
use gangplan::hardware::ModelLibrary;
use gangplan::heuristics::RoundContext;
use gangplan::heuristics::{Greedy, Planner};
use gangplan::instance::validate::{limits, validate};
use gangplan::instance::{parse_instance, Instance};
use gangplan::model::MipModel;
use gangplan::plan::{render_plan, validate_plan, Plan, Status};
use gangplan::solve::{
    solve_with, BackendResult, BackendSettings, BackendStatus, Formulation, MipBackend,
    PlannerKind, SolveOptions, SolveOutcome,
};
use gangplan::topology::Topology;
use gangplan::Error;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod binary;
mod faulty_solvers;

use binary::{run, text};
use faulty_solvers::{Overruns, Panics};

fn gen_file(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let path = dir.join(name);
    let mut all = vec!["gen", "--out", path.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = run(&all);
    assert_eq!(out.status.code(), Some(0), "gen: {}", text(&out.stderr));
    path
}

/// Run `solve` with a time limit; returns the wall time and the plan (checked by `validate`).
fn timed_solve(instance: &Path, planner: &str, limit: &str) -> (Duration, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.json");
    let started = Instant::now();
    let out = run(&[
        "solve",
        instance.to_str().unwrap(),
        "--planner",
        planner,
        "--time-limit",
        limit,
        "--out",
        plan.to_str().unwrap(),
    ]);
    let wall = started.elapsed();
    assert_eq!(out.status.code(), Some(0), "solve: {}", text(&out.stderr));
    let v = run(&[
        "validate",
        instance.to_str().unwrap(),
        plan.to_str().unwrap(),
    ]);
    assert_eq!(
        v.status.code(),
        Some(0),
        "the plan is valid: {}{}",
        text(&v.stdout),
        text(&v.stderr)
    );
    let json = serde_json::from_str(&std::fs::read_to_string(&plan).unwrap()).unwrap();
    (wall, json)
}

// ---------------------------------------------------------------------------------------------
// Deadlines through the binary.

/// A 0.5 s limit on a 512-GPU round (64 nodes, 200 pending): a valid plan within 2.5 s of wall
/// time, process start to exit, for both planners.
#[test]
fn half_a_second_limit_holds_on_a_512_gpu_round() {
    let dir = tempfile::tempdir().unwrap();
    let inst = gen_file(
        dir.path(),
        "round.json",
        &[
            "--nodes",
            "64",
            "--pending",
            "200",
            "--seed",
            "11",
            "--json",
        ],
    );
    for planner in ["ilp", "greedy"] {
        let (wall, plan) = timed_solve(&inst, planner, "0.5");
        eprintln!("512 GPUs, {planner}, --time-limit 0.5: {wall:?} wall");
        assert!(
            wall < Duration::from_millis(2500),
            "{planner}: {wall:?} for a 0.5 s limit"
        );
        let seconds = plan["solver"]["seconds"].as_f64().unwrap();
        assert!(seconds <= 1.0, "{planner}: the plan reports {seconds} s");
        assert_eq!(plan["solver"]["path"], planner);
    }
}

/// The 10k-GPU target: `gen --nodes 1250 --pending 4000` (10,000 GPUs), a 0.5 s limit, a
/// valid plan within 2.5 s of wall time (about 0.55 s measured), YAML and JSON.
#[test]
fn half_a_second_limit_holds_on_a_10k_gpu_round() {
    let dir = tempfile::tempdir().unwrap();
    for (name, json) in [("round.json", true), ("round.yaml", false)] {
        let mut args = vec!["--nodes", "1250", "--pending", "4000"];
        if json {
            args.push("--json");
        }
        let inst = gen_file(dir.path(), name, &args);
        for planner in ["ilp", "greedy"] {
            let (wall, plan) = timed_solve(&inst, planner, "0.5");
            eprintln!("10k GPUs, {name}, {planner}, --time-limit 0.5: {wall:?} wall");
            assert!(
                wall < Duration::from_millis(2500),
                "{name} {planner}: {wall:?}"
            );
            let seconds = plan["solver"]["seconds"].as_f64().unwrap();
            assert!(
                seconds <= 1.0,
                "{name} {planner}: the plan reports {seconds} s"
            );
        }
    }
}

/// The MIP is cut by the deadline and the greedy plan is returned when the limit is too short
/// for it; the reported seconds stay within the limit plus the write reserve.
#[test]
fn the_time_limit_bounds_the_mip() {
    let dir = tempfile::tempdir().unwrap();
    let inst = gen_file(
        dir.path(),
        "round.yaml",
        &["--nodes", "48", "--pending", "150", "--seed", "5"],
    );
    let (wall, plan) = timed_solve(&inst, "ilp", "1");
    eprintln!(
        "384 GPUs, ilp, --time-limit 1: {wall:?} wall, status {}",
        plan["status"]
    );
    assert!(wall < Duration::from_millis(3000), "{wall:?}");
    assert!(plan["solver"]["seconds"].as_f64().unwrap() <= 1.5);
}

// ---------------------------------------------------------------------------------------------
// Fault injection through `solve_with`.

fn small_round() -> (Arc<Instance>, Arc<Topology>) {
    let raw = generate(&GenParams {
        nodes: 8,
        pending: 24,
        seed: 3,
        nodes_per_rack: 4,
        racks_per_pod: 2,
        ..Default::default()
    });
    let inst = validate(&raw, &ModelLibrary::builtin()).expect("a valid round");
    let topo = Topology::new(&inst);
    (Arc::new(inst), Arc::new(topo))
}

fn options(limit: Duration) -> SolveOptions {
    SolveOptions {
        planner: PlannerKind::Ilp,
        deadline: Instant::now() + limit,
        mip_gap: 0.01,
        write_model: None,
        formulation: Formulation::PerNode,
    }
}

/// Solve with a backend; check the plan, the deadline and the fallback.
fn faulty(backend: Arc<dyn MipBackend>, limit: Duration) -> (SolveOutcome, Duration) {
    faulty_with(backend, limit, Formulation::PerNode)
}

fn faulty_with(
    backend: Arc<dyn MipBackend>,
    limit: Duration,
    formulation: Formulation,
) -> (SolveOutcome, Duration) {
    let (inst, topo) = small_round();
    let opts = SolveOptions {
        formulation,
        ..options(limit)
    };
    let started = Instant::now();
    let out = solve_with(&inst, &topo, &opts, backend);
    let took = started.elapsed();
    assert!(
        Instant::now() <= opts.deadline,
        "returned {took:?} after the start, past the {limit:?} deadline"
    );
    let plan = render(&inst, &out);
    validate_plan(&inst, &plan).expect("the plan is valid");
    (out, took)
}

fn render(inst: &Instance, out: &SolveOutcome) -> Plan {
    render_plan(inst, &out.assignment, out.status, out.solver_info(0.0))
}

fn assert_greedy_fallback(out: &SolveOutcome, note_has: &str) {
    let (inst, topo) = small_round();
    assert_eq!(
        out.assignment,
        Greedy.plan(&RoundContext::untimed(&inst, &topo)),
        "the greedy plan"
    );
    assert_some_greedy_fallback(out, note_has);
}

/// A fallback to a greedy plan (under a tight deadline the greedy runs fewer passes, so its
/// plan may differ from the full portfolio's).
fn assert_some_greedy_fallback(out: &SolveOutcome, note_has: &str) {
    assert_eq!(out.status, Status::Fallback);
    assert_eq!(out.objective, out.greedy_objective);
    let note = out.note.as_deref().expect("the fault is reported");
    assert!(note.contains(note_has), "note {note:?} lacks {note_has:?}");
    assert!(note.contains("greedy plan used"), "{note}");
}

/// Answers with the MIP start: the harness itself works (not every answer is a fallback).
struct EchoStart;
impl MipBackend for EchoStart {
    fn solve(
        &self,
        _: MipModel,
        start: &[f64],
        _: &BackendSettings,
    ) -> gangplan::Result<BackendResult> {
        Ok(BackendResult {
            columns: start.to_vec(),
            status: BackendStatus::Optimal,
            dual_bound: None,
        })
    }
}

struct Fails;
impl MipBackend for Fails {
    fn solve(
        &self,
        _: MipModel,
        _: &[f64],
        _: &BackendSettings,
    ) -> gangplan::Result<BackendResult> {
        Err(Error::Solver(
            "injected failure: license server unreachable".into(),
        ))
    }
}

/// Nonsense column values of the right length.
struct Nonsense(fn(usize) -> f64);
impl MipBackend for Nonsense {
    fn solve(
        &self,
        m: MipModel,
        _: &[f64],
        _: &BackendSettings,
    ) -> gangplan::Result<BackendResult> {
        Ok(BackendResult {
            columns: (0..m.columns()).map(self.0).collect(),
            status: BackendStatus::Optimal,
            dual_bound: Some(1e9),
        })
    }
}

/// A column vector of the wrong length.
struct WrongLength(usize);
impl MipBackend for WrongLength {
    fn solve(
        &self,
        m: MipModel,
        _: &[f64],
        _: &BackendSettings,
    ) -> gangplan::Result<BackendResult> {
        Ok(BackendResult {
            columns: vec![1.0; m.columns().saturating_sub(self.0)],
            status: BackendStatus::Optimal,
            dual_bound: None,
        })
    }
}

#[test]
fn a_working_backend_is_used() {
    let (out, _) = faulty(Arc::new(EchoStart), Duration::from_secs(5));
    assert_ne!(out.status, Status::Fallback, "note: {:?}", out.note);
    assert!(out.note.is_none());
    assert_eq!(out.path, "ilp");
}

#[test]
fn a_failing_solver_falls_back_to_greedy() {
    let (out, _) = faulty(Arc::new(Fails), Duration::from_secs(5));
    assert_greedy_fallback(&out, "injected failure: license server unreachable");
    assert!(!out.time_limit_hit);
}

#[test]
fn an_overrunning_solver_is_abandoned_at_the_deadline() {
    let limit = Duration::from_millis(800);
    let (out, took) = faulty(Arc::new(Overruns(Duration::from_secs(5))), limit);
    assert_greedy_fallback(&out, "did not return within the time limit");
    assert!(out.time_limit_hit);
    // It waits for the solver up to the deadline less the write reserve, not longer.
    assert!(took < limit, "{took:?}");
    assert!(took >= limit / 2, "{took:?}: gave the solver its time");
}

#[test]
fn a_panicking_solver_falls_back_to_greedy() {
    let (out, _) = faulty(Arc::new(Panics), Duration::from_secs(5));
    assert_greedy_fallback(&out, "solver panicked");
}

#[test]
fn nonsense_columns_fall_back_to_greedy() {
    type Case = (&'static str, fn(usize) -> f64);
    let cases: [Case; 4] = [
        ("all ones", |_| 1.0),
        ("alternating", |i| (i % 2) as f64),
        ("huge", |i| 1e12 * (i as f64 + 1.0)),
        ("negative", |_| -3.0),
    ];
    for (what, f) in cases {
        let (out, _) = faulty(Arc::new(Nonsense(f)), Duration::from_secs(5));
        let (inst, topo) = small_round();
        // A nonsense answer is either refused (fallback, with the reason) or happens to be a
        // valid plan no worse than greedy; it is never returned broken.
        if out.status == Status::Fallback {
            let note = out.note.as_deref().unwrap_or("");
            assert!(
                note.contains("unusable")
                    || note.contains("broke a rule")
                    || note.contains("below the greedy"),
                "{what}: {note}"
            );
            assert_eq!(
                out.assignment,
                Greedy.plan(&RoundContext::untimed(&inst, &topo)),
                "{what}"
            );
        } else {
            assert!(out.objective >= out.greedy_objective, "{what}");
        }
    }
}

#[test]
fn all_ones_is_refused_as_breaking_a_rule() {
    // Every job started, every running job preempted, every cell used: no cluster holds that.
    let (out, _) = faulty(Arc::new(Nonsense(|_| 1.0)), Duration::from_secs(5));
    assert_eq!(out.status, Status::Fallback);
}

#[test]
fn non_finite_or_missing_columns_are_solver_failures() {
    for (what, backend, note) in [
        (
            "NaN",
            Arc::new(Nonsense(|_| f64::NAN)) as Arc<dyn MipBackend>,
            "is NaN",
        ),
        ("inf", Arc::new(Nonsense(|_| f64::INFINITY)), "is inf"),
        (
            "short",
            Arc::new(WrongLength(1)),
            "column values for a model of",
        ),
        (
            "empty",
            Arc::new(WrongLength(usize::MAX)),
            "has 0 column values",
        ),
    ] {
        let (out, _) = faulty(backend, Duration::from_secs(5));
        eprintln!("{what}: {:?}", out.note);
        assert_greedy_fallback(&out, note);
    }
}

#[test]
fn a_deadline_already_past_gives_the_greedy_plan_at_once() {
    let (inst, topo) = small_round();
    let opts = options(Duration::ZERO);
    let started = Instant::now();
    let out = solve_with(
        &inst,
        &topo,
        &opts,
        Arc::new(Overruns(Duration::from_secs(5))),
    );
    let took = started.elapsed();
    validate_plan(&inst, &render(&inst, &out)).expect("the plan is valid");
    assert_some_greedy_fallback(&out, "time limit reached before the MIP could start");
    assert!(out.time_limit_hit);
    // Only the greedy ran: no wait for the solver.
    assert!(took < Duration::from_secs(1), "{took:?}");
}

/// The aggregated formulation (large rounds) meets the same faults the same way.
#[test]
fn the_aggregated_model_survives_the_same_faults() {
    let five = Duration::from_secs(5);
    let agg = Formulation::Aggregated;
    let (out, _) = faulty_with(Arc::new(Fails), five, agg);
    assert_greedy_fallback(&out, "injected failure");
    let (out, _) = faulty_with(Arc::new(Panics), five, agg);
    assert_greedy_fallback(&out, "panicked");
    let (out, _) = faulty_with(Arc::new(Nonsense(|_| f64::NAN)), five, agg);
    assert_greedy_fallback(&out, "is NaN");
    let (out, _) = faulty_with(Arc::new(WrongLength(3)), five, agg);
    assert_greedy_fallback(&out, "column values for a model of");
    let limit = Duration::from_millis(800);
    let (out, took) = faulty_with(Arc::new(Overruns(Duration::from_secs(5))), limit, agg);
    assert_greedy_fallback(&out, "did not return within the time limit");
    assert!(took < limit, "{took:?}");
    // Nonsense of the right shape only steers the best-fit second stage: the plan stays
    // valid (checked in faulty_with) and never below greedy.
    for f in [|_| 1.0, |i| (i % 2) as f64, |_| -3.0] as [fn(usize) -> f64; 3] {
        let (out, _) = faulty_with(Arc::new(Nonsense(f)), five, agg);
        assert!(out.objective >= out.greedy_objective);
    }
}

// ---------------------------------------------------------------------------------------------
// Limits.

fn json_nodes(n: usize, gpus: u64) -> String {
    let nodes: Vec<String> = (0..n)
        .map(|i| format!("{{\"name\":\"n{i}\",\"gpus\":{gpus}}}"))
        .collect();
    format!("{{\"nodes\":[{}]}}", nodes.join(","))
}

fn input_issues(r: gangplan::Result<Instance>) -> String {
    match r {
        Err(e @ Error::Input { .. }) => e.to_string(),
        Err(e) => panic!("expected an input error, got {e}"),
        Ok(_) => panic!("expected an input error, got a valid instance"),
    }
}

#[test]
fn an_instance_beyond_the_node_limit_is_refused() {
    let lib = ModelLibrary::builtin();
    let at = json_nodes(limits::MAX_NODES, 1);
    parse_instance(&at, "at-limit", &lib).expect("exactly at the limit is fine");
    let over = json_nodes(limits::MAX_NODES + 1, 1);
    let msg = input_issues(parse_instance(&over, "over", &lib));
    assert!(
        msg.contains("nodes: has 100001 nodes; the limit is 100000"),
        "{msg}"
    );
}

#[test]
fn values_beyond_the_limits_are_refused() {
    let lib = ModelLibrary::builtin();
    let cases = [
        (
            json_nodes(1, limits::MAX_GPUS_PER_NODE + 1),
            "nodes[0].gpus: node \"n0\": is 1025; expected at most 1024",
        ),
        (
            format!(
                "nodes: [{{name: a, gpus: 8}}]\npending: [{{id: j, gpus: {}}}]",
                limits::MAX_JOB_GPUS + 1
            ),
            "pending[0].gpus: job \"j\": is 1000001; expected at most 1000000",
        ),
        (
            format!(
                "nodes: [{{name: a, gpus: 8}}]\npending: [{{id: j, gpus: 1, priority: {}}}]",
                limits::MAX_PRIORITY + 1
            ),
            "pending[0].priority: job \"j\": is 1000000000001",
        ),
        (
            format!(
                "nodes: [{{name: a, gpus: 8, memory_mib: {}}}]",
                limits::MAX_RESOURCE + 1
            ),
            "nodes[0].memory_mib: node \"a\": is 1000000000001",
        ),
        (
            format!(
                "nodes: [{{name: {}, gpus: 8}}]",
                "n".repeat(limits::MAX_NAME_LEN + 1)
            ),
            "nodes[0].name: is 257 characters long; the limit is 256",
        ),
    ];
    for (doc, expect) in cases {
        let msg = input_issues(parse_instance(&doc, "limits", &lib));
        assert!(msg.contains(expect), "{expect:?} not in {msg}");
    }
}

#[test]
fn the_job_and_tenant_limits_are_refused_through_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tenants.json");
    let tenants: Vec<String> = (0..=limits::MAX_TENANTS)
        .map(|i| format!("{{\"name\":\"t{i}\"}}"))
        .collect();
    std::fs::write(
        &path,
        format!(
            "{{\"nodes\":[{{\"name\":\"a\",\"gpus\":8}}],\"tenants\":[{}]}}",
            tenants.join(",")
        ),
    )
    .unwrap();
    let out = run(&["solve", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("tenants: has 100001 tenants; the limit is 100000"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn docs_state_every_limit() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/reliability.md"))
            .expect("docs/reliability.md exists");
    let grouped = |v: u64| {
        // 100000 -> "100,000", as the docs write numbers.
        let s = v.to_string();
        let mut out = String::new();
        for (i, c) in s.chars().enumerate() {
            if i > 0 && (s.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        out
    };
    for (name, v) in [
        ("MAX_NODES", limits::MAX_NODES as u64),
        ("MAX_GPUS_PER_NODE", limits::MAX_GPUS_PER_NODE),
        ("MAX_JOBS", limits::MAX_JOBS as u64),
        ("MAX_JOB_GPUS", limits::MAX_JOB_GPUS),
        ("MAX_TENANTS", limits::MAX_TENANTS as u64),
        ("MAX_PRIORITY", limits::MAX_PRIORITY as u64),
        ("MAX_RESOURCE", limits::MAX_RESOURCE),
        ("MAX_NAME_LEN", limits::MAX_NAME_LEN as u64),
        (
            "MAX_INSTANCE_BYTES",
            gangplan::instance::load::MAX_INSTANCE_BYTES,
        ),
    ] {
        assert!(
            doc.contains(&grouped(v)),
            "docs/reliability.md does not state {name} = {}",
            grouped(v)
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Output is whole or absent.

#[test]
fn a_plan_replaces_an_earlier_one_whole() {
    let dir = tempfile::tempdir().unwrap();
    let inst = gen_file(
        dir.path(),
        "round.yaml",
        &["--nodes", "8", "--pending", "20"],
    );
    let plan = dir.path().join("plan.json");
    std::fs::write(&plan, "x".repeat(1 << 20)).unwrap();
    let out = run(&[
        "solve",
        inst.to_str().unwrap(),
        "--planner",
        "greedy",
        "--out",
        plan.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let written = std::fs::read_to_string(&plan).unwrap();
    let v: serde_json::Value = serde_json::from_str(&written).expect("a whole JSON plan");
    assert_eq!(v["format"], "gangplan-plan/1");
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(names.len(), 2, "round.yaml and plan.json only");
}

#[test]
fn an_unwritable_output_is_an_io_error_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let inst = gen_file(
        dir.path(),
        "round.yaml",
        &["--nodes", "4", "--pending", "6"],
    );
    let missing_dir = dir.path().join("no-such-dir").join("plan.json");
    let out = run(&[
        "solve",
        inst.to_str().unwrap(),
        "--planner",
        "greedy",
        "--out",
        missing_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(6), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("no-such-dir"));
    assert!(!missing_dir.exists());
    // The output is a directory: refused, the directory stays.
    let out = run(&["gen", "--out", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(6), "{}", text(&out.stderr));
    assert!(dir.path().is_dir());
}

/// Whatever valid flags `gen` gets, what it writes is a valid instance that `solve` plans.
#[test]
fn gen_emits_only_valid_instances() {
    let dir = tempfile::tempdir().unwrap();
    let flag_sets: &[&[&str]] = &[
        &["--nodes", "1", "--pending", "0"],
        &[
            "--nodes",
            "3",
            "--pending",
            "10",
            "--busy",
            "1",
            "--down",
            "1",
        ],
        &[
            "--nodes",
            "5",
            "--pending",
            "10",
            "--busy",
            "0",
            "--down",
            "0",
            "--sharers",
            "1",
        ],
        &[
            "--nodes",
            "6",
            "--pending",
            "30",
            "--max-gang",
            "1000000",
            "--tenants",
            "1",
        ],
        &[
            "--nodes",
            "9",
            "--pending",
            "12",
            "--tenants",
            "50",
            "--nodes-per-rack",
            "1",
        ],
        &["--nodes", "4", "--pending", "8", "--time-limit", "0.001"],
        &[
            "--nodes",
            "4",
            "--pending",
            "8",
            "--time-limit",
            "86400",
            "--json",
        ],
    ];
    for (i, flags) in flag_sets.iter().enumerate() {
        let inst = gen_file(dir.path(), &format!("r{i}.yaml"), flags);
        let out = run(&["solve", inst.to_str().unwrap(), "--planner", "greedy"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "gen {flags:?} -> solve: {}",
            text(&out.stderr)
        );
    }
}

// ---------------------------------------------------------------------------------------------
// A Slurm command refused for now is sent again.

/// A Slurm command refused with "try again" (a job's accounting index still being set after
/// a restart of slurmctld) is sent again until it is done; a lasting failure is sent once.
#[test]
fn a_slurm_command_refused_for_now_is_sent_again() {
    use gangplan::adapters::slurm::{RealSlurm, SlurmCli};
    let dir = tempfile::tempdir().unwrap();
    let tries = dir.path().join("tries");
    // Refused twice with Slurm's words, then done.
    let script = format!(
        "echo x >> {t}; if [ $(wc -l < {t}) -lt 3 ]; then \
         echo 'Job update not available right now, the DB index is being set, \
         try again in a bit' >&2; exit 1; fi; echo done",
        t = tries.display()
    );
    let out = RealSlurm::default()
        .run("sh", &["-c".into(), script])
        .unwrap();
    assert_eq!(out, "done\n");
    assert_eq!(std::fs::read_to_string(&tries).unwrap().lines().count(), 3);
    let once = dir.path().join("once");
    let script = format!(
        "echo x >> {}; echo 'Invalid job id specified' >&2; exit 1",
        once.display()
    );
    let e = RealSlurm::default()
        .run("sh", &["-c".into(), script])
        .unwrap_err();
    assert!(e.to_string().contains("Invalid job id"), "{e}");
    assert_eq!(std::fs::read_to_string(&once).unwrap().lines().count(), 1);
}

// ---------------------------------------------------------------------------------------------
// Nothing from an input is executed.

/// The library and the binary never start a shell, and start no process whose program name
/// comes from an input. The one place that starts processes is the Slurm runner
/// (`src/adapters/slurm/cli.rs`): it hands a program and an argument vector to
/// `std::process::Command` (no shell), and every program it is given is a string literal
/// (`squeue`, `sinfo`, `scontrol`): its callers pass literals or `&'static str` names.
#[test]
fn no_input_reaches_a_shell() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let runner = Path::new("src/adapters/slurm/cli.rs");
    let mut files = Vec::new();
    let mut stack = vec![root.join("src")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    files.sort();
    assert!(files.len() > 10, "found the sources");
    let mut spawn_sites = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(root).unwrap();
        let src = std::fs::read_to_string(f).unwrap();
        for (n, line) in src.lines().enumerate() {
            let at = &format!("{}:{}", rel.display(), n + 1);
            let code = line.split("//").next().unwrap_or("");
            for banned in [
                "libc::system",
                "libc::exec",
                "execvp",
                "posix_spawn",
                "\"sh\"",
                "\"bash\"",
                "\"-c\"",
                "/bin/sh",
                "cmd.exe",
                "CommandExt",
            ] {
                assert!(!code.contains(banned), "{at}: {banned} in {line}");
            }
            if let Some(i) = code.find("Command::new(") {
                let arg = code[i + "Command::new(".len()..].trim_start();
                if !arg.starts_with('"') {
                    assert_eq!(
                        rel, runner,
                        "{at}: a process is started with a program name that is not a literal"
                    );
                }
                spawn_sites.push(at.clone());
            }
            // Every program handed to a Slurm runner is a literal.
            if rel.starts_with("src/adapters") {
                for call in code.match_indices(".run(").map(|(i, _)| &code[i + 5..]) {
                    let arg = call.trim_start();
                    assert!(
                        arg.is_empty()
                            || arg.starts_with('"')
                            || arg.starts_with("program")
                            || arg.starts_with("cli")
                            || arg.starts_with(')'),
                        "{at}: a runner gets a program that is not a literal: {line}"
                    );
                }
            }
        }
    }
    if !spawn_sites.is_empty() {
        let apply = std::fs::read_to_string(root.join("src/adapters/slurm/apply.rs")).unwrap();
        assert!(
            apply.contains("Vec<(&'static str, Vec<String>)>"),
            "the Slurm actions name their programs as &'static str"
        );
    }
}

/// The Slurm runner wakes when a command's output closes; a command that exits while a
/// process it started still holds that output open is still answered (its output may be
/// lost), not taken for one that hangs past its deadline.
#[test]
fn a_slurm_command_that_exits_while_a_child_holds_its_output_is_not_a_timeout() {
    use gangplan::adapters::slurm::{RealSlurm, SlurmCli};
    // The shell exits at once; the backgrounded sleep keeps its stdout open for 4 s.
    let got = RealSlurm::new(Duration::from_secs(3))
        .run("sh", &["-c".into(), "sleep 4 & echo started".into()]);
    assert!(got.is_ok(), "{got:?}");
}
