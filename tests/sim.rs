//! The research harness on small committed trace cuts (tests/fixtures/traces): importers, their
//! located errors, a tiny fill run, a tiny replay run, and determinism.

use gangplan::hardware::ModelLibrary;
use gangplan::sim::engine::{simulate, trace_dist, Protocol, SimConfig};
use gangplan::sim::planners::{PlannerName, RoundPlanner};
use gangplan::sim::trace;
use gangplan::sim::{Report, Trace};
use std::path::{Path, PathBuf};
use std::process::Command;

fn fx(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/traces")
        .join(name)
}

fn openb() -> Trace {
    Trace {
        name: "openb-fixture".into(),
        nodes: trace::openb_nodes(&fx("openb_nodes.csv")).unwrap(),
        jobs: trace::openb_pods(&fx("openb_pods.csv")).unwrap(),
    }
}

fn tiresias() -> Trace {
    Trace {
        name: "tiresias-fixture".into(),
        nodes: trace::uniform_cluster(16, 4, 2).unwrap(),
        jobs: trace::tiresias_jobs(&fx("tiresias_jobs.csv")).unwrap(),
    }
}

fn run(t: &Trace, p: PlannerName, cfg: &SimConfig) -> Report {
    let lib = ModelLibrary::builtin();
    let planner = RoundPlanner::new(p, &trace_dist(t), cfg.seed, cfg.round_time_limit);
    simulate(t, &planner, cfg, &lib, &mut |_, _| {}).unwrap()
}

fn fill_cfg(seed: u64) -> SimConfig {
    fill_batch(seed, 4)
}

fn fill_batch(seed: u64, batch: usize) -> SimConfig {
    SimConfig {
        protocol: Protocol::Fill { load: 1.3, batch },
        seed,
        round_time_limit: 1.0,
        ..SimConfig::default()
    }
}

#[test]
fn openb_importer_reads_nodes_pods_sharing_and_types() {
    let t = openb();
    assert_eq!(t.nodes.len(), 12);
    assert_eq!(t.gpus(), 6 * 2 + 4 * 8 + 2 * 4);
    assert_eq!(t.nodes[0].gpu_type.as_deref(), Some("P100"));
    assert_eq!(t.nodes[0].cpu_milli, Some(64000));
    assert_eq!(t.jobs.len(), 44);
    let sharer = t.jobs.iter().find(|j| j.id == "openb-pod-0001").unwrap();
    assert_eq!((sharer.gpus, sharer.gpu_milli), (1, Some(460)));
    let typed = t.jobs.iter().find(|j| j.id == "openb-pod-0009").unwrap();
    assert_eq!(
        typed.gpu_types,
        Some(vec!["V100M16".to_string(), "V100M32".to_string()])
    );
    assert_eq!(typed.gpu_milli, None, "gpu_milli 1000 is a whole GPU");
    assert!(t.jobs.iter().any(|j| j.gpus == 0 && j.gpu_types.is_none()));
    assert!(t.jobs.iter().any(|j| j.gpus == 8));
    assert!(t.jobs.windows(2).all(|w| w[0].submit <= w[1].submit));
    let d = t.jobs.iter().find(|j| j.id == "openb-pod-0000").unwrap();
    assert_eq!(d.duration, Some(12537496.0));
}

#[test]
fn philly_pollux_tiresias_importers() {
    let p = trace::philly_jobs(&fx("philly_jobs.csv"), Some(10)).unwrap();
    assert_eq!(p.len(), 10);
    assert_eq!(p[0].submit, 0.0, "submit times start at 0");
    assert!(p.windows(2).all(|w| w[0].submit <= w[1].submit));
    assert_eq!((p[1].gpus, p[1].duration), (8, Some(147.0)));
    assert_eq!(p[0].tenant.as_deref(), Some("vc-b"));
    let all = trace::philly_jobs(&fx("philly_jobs.csv"), None).unwrap();
    assert_eq!(all.len(), 40);

    let w = trace::pollux_jobs(&fx("pollux_workload.csv")).unwrap();
    assert_eq!(w.len(), 40);
    let c = w.iter().find(|j| j.id == "cifar10-0").unwrap();
    assert_eq!((c.gpus, c.submit), (6, 107.0));
    assert_eq!(c.duration, trace::pollux_duration("cifar10"));

    let t = trace::tiresias_jobs(&fx("tiresias_jobs.csv")).unwrap();
    assert_eq!(t.len(), 30);
    assert_eq!(
        (t[1].gpus, t[1].submit, t[1].duration),
        (8, 30.0, Some(147.0))
    );

    let cl = trace::uniform_cluster(512, 8, 16).unwrap();
    assert_eq!(cl.len(), 64);
    assert!(trace::uniform_cluster(10, 4, 16).is_err());
}

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_gangplan"))
}

fn expect_located(args: &[&str], needle: &str) {
    let out = bin().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert!(err.contains(needle), "expected {needle:?} in: {err}");
}

#[test]
fn malformed_rows_name_file_line_and_column_and_exit_2() {
    let nodes = fx("bad_openb_nodes.csv");
    let pods = fx("openb_pods.csv");
    expect_located(
        &[
            "simulate",
            "--trace",
            "openb",
            "--nodes",
            nodes.to_str().unwrap(),
            "--jobs",
            pods.to_str().unwrap(),
            "--planner",
            "fifo",
        ],
        "bad_openb_nodes.csv:3:3",
    );
    let p = fx("bad_philly.csv");
    expect_located(
        &[
            "simulate",
            "--trace",
            "philly",
            "--jobs",
            p.to_str().unwrap(),
            "--planner",
            "fifo",
        ],
        "bad_philly.csv:3:3",
    );
    let p = fx("bad_pollux.csv");
    expect_located(
        &[
            "simulate",
            "--trace",
            "pollux",
            "--jobs",
            p.to_str().unwrap(),
            "--planner",
            "fifo",
        ],
        "bad_pollux.csv:3:4",
    );
    let p = fx("bad_tiresias.csv");
    expect_located(
        &[
            "simulate",
            "--trace",
            "tiresias",
            "--jobs",
            p.to_str().unwrap(),
            "--planner",
            "fifo",
        ],
        "bad_tiresias.csv:3:6",
    );
    expect_located(
        &[
            "simulate",
            "--trace",
            "tiresias",
            "--jobs",
            fx("tiresias_jobs.csv").to_str().unwrap(),
            "--planner",
            "nope",
        ],
        "--planner",
    );
}

fn check_ranges(r: &Report, fill: bool) {
    let m = &r.metrics;
    for (k, v) in [
        ("gpu_allocation_ratio", m.gpu_allocation_ratio),
        ("utilization", m.utilization),
        ("fragmentation_rate", m.fragmentation_rate),
        ("jain_fairness", m.jain_fairness),
    ] {
        assert!((0.0..=1.0).contains(&v), "{k} = {v} out of 0..1");
    }
    assert!(m.rounds > 0);
    assert!(m.solve_s_p50 >= 0.0 && m.solve_s_max >= m.solve_s_p50);
    let json = serde_json::to_value(r).unwrap();
    for k in [
        "gpu_allocation_ratio",
        "avg_jct_s",
        "p50_jct_s",
        "p99_jct_s",
        "makespan_s",
        "utilization",
        "fragmentation_rate",
        "jain_fairness",
        "preemptions",
        "rounds",
        "solve_s_p50",
        "solve_s_max",
    ] {
        assert!(json["metrics"].get(k).is_some(), "metrics.{k} missing");
    }
    for k in ["planner", "trace", "seed"] {
        assert!(json.get(k).is_some(), "{k} missing");
    }
    if fill {
        assert!(m.avg_jct_s.is_none() && m.makespan_s.is_none());
        let b = m
            .offline_upper_bound
            .expect("fill reports offline_upper_bound");
        assert!(
            b + 1e-9 >= m.gpu_allocation_ratio && b <= 1.0,
            "bound {b} below the allocation {}",
            m.gpu_allocation_ratio
        );
    } else {
        assert!(m.offline_upper_bound.is_none());
        let (a, p50, p99, mk) = (
            m.avg_jct_s.unwrap(),
            m.p50_jct_s.unwrap(),
            m.p99_jct_s.unwrap(),
            m.makespan_s.unwrap(),
        );
        assert!(a > 0.0 && p50 > 0.0 && p99 >= p50 && mk >= p99 * 0.0 && mk > 0.0);
    }
}

#[test]
fn tiny_fill_run_reports_every_metric_in_range() {
    let t = openb();
    for p in [PlannerName::Fifo, PlannerName::Fgd, PlannerName::Ilp] {
        // Batch 1 (FGD's exact protocol): the curve's point k is the allocation when the
        // requests reached k% of capacity, so it cannot exceed k + the last job's size.
        let r = run(&t, p, &fill_batch(42, 1));
        check_ranges(&r, true);
        assert!(
            r.metrics.gpu_allocation_ratio > 0.3,
            "{p:?}: {}",
            r.metrics.gpu_allocation_ratio
        );
        // Allocation never exceeds what was asked for, and the curve is monotone.
        let c = &r.series.alloc_curve;
        assert!(c.len() >= 100, "the curve reaches the load");
        assert!(c.windows(2).all(|w| w[1].1 >= w[0].1 - 1e-9));
        assert!(c
            .iter()
            .all(|&(k, v)| v <= k as f64 + 100.0 * 8.0 / 52.0 + 1e-9));
        assert_eq!(r.info.jobs_done + r.info.jobs_failed, r.info.jobs_submitted);
    }
}

#[test]
fn tiny_replay_run_reports_every_metric_in_range() {
    let t = tiresias();
    let cfg = SimConfig {
        round_s: 30.0,
        ..SimConfig::default()
    };
    for p in [
        PlannerName::Fifo,
        PlannerName::Las,
        PlannerName::Greedy,
        PlannerName::Drf,
    ] {
        let r = run(&t, p, &cfg);
        check_ranges(&r, false);
        assert_eq!(r.info.jobs_done, 30, "{p:?} finished every job");
        // A job never completes faster than its trace duration.
        let min_dur = t
            .jobs
            .iter()
            .filter_map(|j| j.duration)
            .fold(f64::INFINITY, f64::min);
        assert!(r.series.jct_s.iter().all(|&c| c >= min_dur - 1e-9));
    }
    // An 8-GPU job on 4-GPU nodes spans nodes: slower than its duration.
    let r = run(&t, PlannerName::Fifo, &cfg);
    assert!(r.metrics.avg_jct_s.unwrap() > 0.0);
}

#[test]
fn simulate_is_deterministic_for_a_fixed_seed() {
    let t = openb();
    let strip = |mut r: Report| {
        r.info.wall_s = 0.0;
        r.metrics.solve_s_p50 = 0.0;
        r.metrics.solve_s_max = 0.0;
        r.series.solve_s.clear();
        r
    };
    for p in [
        PlannerName::Random,
        PlannerName::BestFit,
        PlannerName::Greedy,
    ] {
        let a = strip(run(&t, p, &fill_cfg(7)));
        let b = strip(run(&t, p, &fill_cfg(7)));
        assert_eq!(a, b, "{p:?}");
    }
    // A different seed changes the submission order.
    let s1 = gangplan::sim::engine::fill_sequence(&t, 1.3, 1);
    let s2 = gangplan::sim::engine::fill_sequence(&t, 1.3, 2);
    assert_ne!(s1, s2);
    let asked: u64 = s1.iter().map(|(k, _)| t.jobs[*k].gpu_milli_total()).sum();
    assert!(asked as f64 <= 1.3 * t.gpus() as f64 * 1000.0);
}

#[test]
fn simulate_cli_writes_the_report_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.json");
    let s = bin()
        .args([
            "simulate",
            "--trace",
            "philly",
            "--jobs",
            fx("philly_jobs.csv").to_str().unwrap(),
            "--limit-jobs",
            "20",
            "--gpus",
            "32",
            "--gpus-per-node",
            "8",
            "--planner",
            "fifo",
            "--report",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(
        s.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&s.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(v["planner"], "fifo");
    assert_eq!(v["info"]["jobs_submitted"], 20);
    let r = v["metrics"]["gpu_allocation_ratio"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&r));
}

/// The progress a replay reports is jobs finished: it only grows, and ends at every job.
#[test]
fn replay_progress_only_grows() {
    let t = tiresias();
    let cfg = SimConfig {
        round_s: 30.0,
        ..SimConfig::default()
    };
    let lib = ModelLibrary::builtin();
    let planner = RoundPlanner::new(
        PlannerName::Fifo,
        &trace_dist(&t),
        cfg.seed,
        cfg.round_time_limit,
    );
    let mut seen: Vec<(u64, u64)> = Vec::new();
    simulate(&t, &planner, &cfg, &lib, &mut |done, total| {
        seen.push((done, total))
    })
    .unwrap();
    assert!(!seen.is_empty());
    for w in seen.windows(2) {
        assert!(
            w[1].0 >= w[0].0,
            "progress went back: {:?} then {:?}",
            w[0],
            w[1]
        );
    }
    assert_eq!(seen.last().unwrap().0, t.jobs.len() as u64, "{seen:?}");
}

fn shipped(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("instances/traces")
        .join(name)
}

fn temp_csv(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gangplan-sim-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn philly_reads_datetime_timestamps_as_in_the_pollux_artifact() {
    let dt = trace::philly_jobs(
        &shipped("philly_layout_datetime_from_tiresias_60_job.csv"),
        None,
    )
    .unwrap();
    let num = trace::philly_jobs(&shipped("philly_layout_from_tiresias_60_job.csv"), None).unwrap();
    assert_eq!(dt.len(), 60);
    // The same jobs, submit times written as dates or as seconds: the same relative times.
    let submits = |v: &[trace::TraceJob]| v.iter().map(|j| j.submit).collect::<Vec<_>>();
    assert_eq!(submits(&dt), submits(&num));
    assert_eq!(dt[1].submit, 30.0);
    assert_eq!((dt[1].gpus, dt[1].duration), (8, Some(147.0)));
    // Absolute value: 2017-10-09 07:01:55 UTC is 1507532515 s after the epoch, and a date
    // across a month end and a leap day counts the right days.
    let p = temp_csv(
        "philly_dates.csv",
        "timestamp,duration,num_gpus,gpu_time,cluster\n\
         2017-10-09 07:01:55,10,1,10,a\n2020-03-01T00:00:00,10,1,10,a\n1507532515,5,2,10,b\n",
    );
    let j = trace::philly_jobs(&p, None).unwrap();
    assert_eq!(
        j.iter().map(|j| j.submit).collect::<Vec<_>>(),
        [0.0, 0.0, 75_488_285.0]
    );
}

#[test]
fn philly_refuses_absurd_timestamps_and_long_rows_with_their_cell() {
    let cases = [
        ("ts_huge.csv", "1e308", "ts_huge.csv:3:1"),
        ("ts_inf.csv", "inf", "ts_inf.csv:3:1"),
        ("ts_neg.csv", "-5", "ts_neg.csv:3:1"),
        ("ts_month.csv", "2017-13-01 00:00:00", "ts_month.csv:3:1"),
        ("ts_feb.csv", "2017-02-29 00:00:00", "ts_feb.csv:3:1"),
        ("ts_word.csv", "yesterday", "ts_word.csv:3:1"),
    ];
    for (file, ts, needle) in cases {
        let p = temp_csv(
            file,
            &format!("timestamp,duration,num_gpus,gpu_time,cluster\n0,10,1,10,a\n{ts},10,1,10,a\n"),
        );
        let e = trace::philly_jobs(&p, None).unwrap_err().to_string();
        assert!(e.contains(needle), "{ts}: expected {needle} in {e}");
        assert!(e.contains("1e10"), "the bound is named: {e}");
    }
    let p = temp_csv(
        "long_row.csv",
        "timestamp,duration,num_gpus,gpu_time,cluster\n0,10,1,10,a\n5,10,1,10,a,x,y\n",
    );
    let e = trace::philly_jobs(&p, None).unwrap_err().to_string();
    assert!(e.contains("long_row.csv:3:6"), "{e}");
    assert!(e.contains("7 cells") && e.contains("5 columns"), "{e}");
    let p = temp_csv(
        "dur_huge.csv",
        "timestamp,duration,num_gpus,gpu_time,cluster\n0,1e308,1,10,a\n",
    );
    let e = trace::philly_jobs(&p, None).unwrap_err().to_string();
    assert!(e.contains("dur_huge.csv:2:2"), "{e}");
    // The CLI: exit 2 with the location.
    let p = temp_csv(
        "cli_huge.csv",
        "timestamp,duration,num_gpus,gpu_time,cluster\n0,10,1,10,a\n1e308,10,1,10,a\n",
    );
    expect_located(
        &[
            "simulate",
            "--trace",
            "philly",
            "--jobs",
            p.to_str().unwrap(),
            "--planner",
            "fifo",
        ],
        "cli_huge.csv:3:1",
    );
    let p = temp_csv(
        "cli_long.csv",
        "timestamp,duration,num_gpus,gpu_time,cluster\n0,10,1,10,a,b,c\n",
    );
    expect_located(
        &[
            "simulate",
            "--trace",
            "philly",
            "--jobs",
            p.to_str().unwrap(),
            "--planner",
            "fifo",
        ],
        "cli_long.csv:2:6",
    );
}

fn node(name: &str, gpus: u64, ty: &str, cpu: u64) -> gangplan::instance::raw::RawNode {
    gangplan::instance::raw::RawNode {
        name: name.into(),
        gpus: Some(gpus),
        gpu_type: Some(ty.into()),
        cpu_milli: Some(cpu),
        memory_mib: Some(1 << 20),
        ..Default::default()
    }
}

fn pod(id: &str, gpus: u32, milli: Option<u32>, cpu: u64) -> trace::TraceJob {
    trace::TraceJob {
        gpu_milli: milli,
        cpu_milli: cpu,
        ..trace::TraceJob::whole_gpus(id.into(), 0.0, None, gpus)
    }
}

#[test]
fn offline_bound_counts_per_node_fit_and_gpu_exclusive_sharers() {
    use gangplan::sim::bound::offline_upper_bound;
    // Two 1-GPU nodes (2000 milli). Pods: an 8-GPU pod (fits no node), three sharers of 600
    // milli (each needs a GPU of its own: at most two), a whole GPU that needs more CPU than a
    // node has.
    let t = Trace {
        name: "bound".into(),
        nodes: vec![node("a", 1, "T4", 8000), node("b", 1, "T4", 8000)],
        jobs: vec![
            pod("big", 8, None, 0),
            pod("s1", 1, Some(600), 0),
            pod("s2", 1, Some(600), 0),
            pod("s3", 1, Some(600), 0),
            pod("cpu-heavy", 1, None, 9000),
        ],
    };
    let b = offline_upper_bound(&t, &[0, 1, 2, 3, 4]).unwrap();
    assert!(
        (b - 0.6).abs() < 1e-9,
        "two 600-milli sharers of 2000 milli: {b}"
    );
    // Sharers of 400 pack two per GPU: 4 x 400 = 1600 of 2000.
    let t2 = Trace {
        jobs: (0..5)
            .map(|i| pod(&format!("q{i}"), 1, Some(400), 0))
            .collect(),
        ..t.clone()
    };
    let b2 = offline_upper_bound(&t2, &[0, 1, 2, 3, 4]).unwrap();
    assert!((b2 - 0.8).abs() < 1e-9, "{b2}");
    // A GPU-type constraint no node meets: nothing can be placed.
    let mut j = pod("typed", 1, None, 0);
    j.gpu_types = Some(vec!["A100".into()]);
    let t3 = Trace {
        jobs: vec![j],
        ..t.clone()
    };
    assert_eq!(offline_upper_bound(&t3, &[0]).unwrap(), 0.0);
}

#[test]
fn fgd_scores_like_the_artifact_and_measures_against_its_typical_pods() {
    use gangplan::heuristics::fgd::artifact_score;
    use gangplan::sim::engine::typical_pods;
    // floor(100 sigmoid(-growth / 1000)): no change 50, a whole GPU less fragment 73.
    assert_eq!(artifact_score(0.0), 50);
    assert_eq!(artifact_score(-1000.0), 73);
    assert_eq!(artifact_score(1000.0), 26);
    assert_eq!(artifact_score(-1e9), 100);
    // Typical pods keep CPU-only types and stop at 95% of the pods, most frequent first.
    let mut jobs: Vec<trace::TraceJob> = (0..60)
        .map(|i| pod(&format!("a{i}"), 1, None, 1000))
        .collect();
    jobs.extend((0..36).map(|i| pod(&format!("c{i}"), 0, None, 2000)));
    jobs.extend((0..4).map(|i| pod(&format!("r{i}"), 2, None, 4000)));
    let t = Trace {
        name: "typ".into(),
        nodes: vec![node("a", 8, "T4", 96000)],
        jobs,
    };
    let d = typical_pods(&t);
    assert_eq!(d.types.len(), 2, "60 + 36 of 100 reach 95%: {:?}", d.types);
    assert_eq!(d.types[0].0.gpus, 1);
    assert_eq!(d.types[1].0.gpus, 0, "CPU-only pods are typical pods");
    assert!((d.types[0].1 - 0.625).abs() < 1e-12 && (d.types[1].1 - 0.375).abs() < 1e-12);
}

/// `simulate --dump-rounds`: every round's instance is written, and each one reads back as a
/// valid instance that `solve` plans the way the replay's planner saw it: with the run's task
/// distribution and the artifact's tie seed (`--artifact-score`).
#[test]
fn dumped_rounds_are_valid_instances() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = SimConfig {
        dump_rounds: Some(dir.path().to_path_buf()),
        planner_artifact_score: true,
        ..fill_cfg(42)
    };
    let report = run(&openb(), PlannerName::Greedy, &cfg);
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty());
    assert_eq!(
        files.len() as u64,
        report.metrics.rounds,
        "one file per round"
    );
    let lib = ModelLibrary::builtin();
    for f in &files {
        let inst = gangplan::instance::load_instance_file(f, &lib)
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert!(!inst.nodes.is_empty());
        let dist = inst
            .task_dist
            .as_ref()
            .unwrap_or_else(|| panic!("{}: the run's task distribution is missing", f.display()));
        assert!(!dist.types.is_empty());
        assert_eq!(dist.artifact_ties, Some(42), "{}", f.display());
        assert_eq!(
            inst.policy.weights.fragmentation,
            gangplan::sim::engine::FILL_FRAGMENTATION_PRICE,
            "{}: the fill's fragmentation price",
            f.display()
        );
    }
}

/// The fragmentation price the greedy and the ILP are given: the one asked for, else 1 under
/// fill (a fragment is room lost for good) and the policy's default in a replay.
#[test]
fn the_fragmentation_price_is_the_fills_or_the_policys_unless_given() {
    use gangplan::instance::Weights;
    use gangplan::sim::engine::FILL_FRAGMENTATION_PRICE;
    let fill = fill_cfg(42);
    assert_eq!(fill.fragmentation_price(), FILL_FRAGMENTATION_PRICE);
    let replay = SimConfig::default();
    assert_eq!(replay.protocol, Protocol::Replay);
    assert_eq!(
        replay.fragmentation_price(),
        Weights::default().fragmentation
    );
    for cfg in [fill, replay] {
        let given = SimConfig {
            planner_fragmentation_price: Some(0.3),
            ..cfg
        };
        assert_eq!(given.fragmentation_price(), 0.3);
    }
}

/// A trace on one 4-GPU node: (id, submit s, run time s, GPUs) of each job.
fn one_node_trace(name: &str, jobs: &[(&str, f64, f64, u32)]) -> Trace {
    Trace {
        name: name.into(),
        nodes: trace::uniform_cluster(4, 4, 1).unwrap(),
        jobs: jobs
            .iter()
            .map(|&(id, submit, d, gpus)| {
                trace::TraceJob::whole_gpus(id.into(), submit, Some(d), gpus)
            })
            .collect(),
    }
}

/// One 4-GPU node; a long 4-GPU job at t=0 and a short 4-GPU job at t=600 s.
fn long_then_short() -> Trace {
    one_node_trace(
        "long-then-short",
        &[("long", 0.0, 100_000.0, 4), ("short", 600.0, 600.0, 4)],
    )
}

/// The attained-service replay of the small traces here: checkpoints every minute, 1 s
/// rounds, one queue threshold at 3600 GPU-seconds (a 4-GPU job drops a queue after 900 s).
fn one_queue_step_at_an_hour() -> SimConfig {
    let mut cfg = SimConfig {
        checkpoint_s: 60.0,
        round_time_limit: 1.0,
        ..SimConfig::default()
    };
    cfg.service.thresholds = vec![3600.0];
    cfg
}

/// The run's job completion times, in completion order.
fn finish_times(r: &Report) -> Vec<f64> {
    r.series.jct_s.clone()
}

#[test]
fn attained_service_lets_a_short_job_overtake_a_long_one_under_the_ilp() {
    use gangplan::sim::service::ReplayObjective;
    let t = long_then_short();
    let mut base = one_queue_step_at_an_hour();
    // Both jobs take the whole 4-GPU cluster: by default the short one is a big gang that
    // preempts nothing and waits for the long one to end.
    for p in [PlannerName::Ilp, PlannerName::Greedy] {
        let r = run(&t, p, &base);
        assert_eq!(r.metrics.preemptions, 0, "{p:?}: a big gang preempted");
        assert!(finish_times(&r)[1] > 99_000.0, "{p:?}");
    }
    base.service.big_gang = None;
    for p in [PlannerName::Ilp, PlannerName::Greedy] {
        // Attained service (the default; one queue threshold, here at 3600 GPU-seconds): the
        // long job passes it at t=900 s and drops to the second queue; the short one, still in
        // the first, preempts it.
        let r = run(&t, p, &base);
        assert_eq!(r.info.jobs_done, 2, "{p:?}");
        assert!(
            r.metrics.preemptions >= 1,
            "{p:?}: the long job was preempted"
        );
        let c = finish_times(&r);
        // Completion order: the short job (submitted at 600 s) first, within an hour.
        assert!(c[0] < 3600.0, "{p:?}: the short job's JCT {c:?}");
        // The job records say the same: the short one first, the long one preempted after
        // it started at 0, and as many preemptions as the run counts.
        let jobs = &r.series.jobs;
        assert_eq!(
            jobs.iter().map(|j| j.id.as_str()).collect::<Vec<_>>(),
            ["short", "long"]
        );
        for (j, jct) in jobs.iter().zip(&c) {
            assert!((j.finish_s - j.submit_s - jct).abs() < 1e-9, "{p:?}: {j:?}");
            assert!(j.submit_s <= j.first_start_s && j.first_start_s <= j.finish_s);
        }
        assert_eq!(jobs[1].first_start_s, 0.0, "{p:?}");
        let counted: u32 = jobs.iter().map(|j| j.preemptions).sum();
        assert_eq!(u64::from(counted), r.metrics.preemptions, "{p:?}");
        assert!(jobs[1].preemptions >= 1, "{p:?}");
        assert!(c[1] > 100_000.0, "{p:?}: the long job finishes last {c:?}");
        assert!(r
            .info
            .objective
            .as_deref()
            .unwrap()
            .starts_with("attained-service"));
        // The plan objective's defaults: nothing preemptible, the short job waits for the
        // long one to end.
        let cfg = SimConfig {
            objective: ReplayObjective::Default,
            ..base.clone()
        };
        let r = run(&t, p, &cfg);
        assert_eq!(r.metrics.preemptions, 0, "{p:?}");
        let c = finish_times(&r);
        assert!(
            (c[0] - 100_000.0).abs() < 120.0,
            "{p:?}: the long job first {c:?}"
        );
        assert!(c[1] > 99_000.0, "{p:?}: the short job waited for it {c:?}");
        assert_eq!(r.info.objective.as_deref(), Some("default"));
        // Attained service without preemption: the same as the defaults here (both wait).
        let mut cfg = base.clone();
        cfg.service.preempt = false;
        let r = run(&t, p, &cfg);
        assert_eq!(r.metrics.preemptions, 0, "{p:?}");
        assert!(finish_times(&r)[1] > 99_000.0, "{p:?}");
    }
}

/// One 4-GPU node; two long 4-GPU jobs and two short ones that preempt whichever long job runs:
/// "a" (t=0) runs 900 s, drops to the second queue and is preempted by "b" (t=1000), which runs
/// 900 s, drops too and is preempted by "s1" (t=2000); after s1, "a" runs again until "s2"
/// (t=6000) preempts it. At 6600 both long jobs wait in the second queue: "a" is older, "b" has
/// waited longer (it ran less).
fn two_long_jobs_and_two_short() -> Trace {
    one_node_trace(
        "two-long-two-short",
        &[
            ("a", 0.0, 10_000.0, 4),
            ("b", 1000.0, 10_000.0, 4),
            ("s1", 2000.0, 600.0, 4),
            ("s2", 6000.0, 600.0, 4),
        ],
    )
}

/// One 4-GPU node held by a job until t=1000 s; at t=10 s a 4-GPU job and four 1-GPU jobs
/// arrive together, every one 1000 s long. Aging per job (the default), the four small ones
/// are worth more together than the big one and start first (mean JCT about 1990 s against
/// about 2490 s the other way round); both planners.
fn one_big_and_four_small() -> Trace {
    one_node_trace(
        "one-big-four-small",
        &[
            ("first", 0.0, 1000.0, 4),
            ("big", 10.0, 1000.0, 4),
            ("s1", 10.0, 1000.0, 1),
            ("s2", 10.0, 1000.0, 1),
            ("s3", 10.0, 1000.0, 1),
            ("s4", 10.0, 1000.0, 1),
        ],
    )
}

#[test]
fn aging_per_job_starts_the_smaller_jobs_of_equal_age_first() {
    use gangplan::sim::service::AgingUnit;
    let t = one_big_and_four_small();
    let base = SimConfig {
        round_time_limit: 1.0,
        ..SimConfig::default()
    };
    assert_eq!(base.service.aging_unit, AgingUnit::Job);
    for p in [PlannerName::Ilp, PlannerName::Greedy] {
        let r = run(&t, p, &base);
        assert_eq!(r.info.jobs_done, 6, "{p:?}");
        let c = finish_times(&r);
        assert_eq!(c.iter().filter(|&&x| x < 2200.0).count(), 5, "{p:?}: {c:?}");
        assert!(c[5] > 2800.0, "{p:?}: the big job last {c:?}");
        assert!(r.info.objective.as_deref().unwrap().contains("per job"));
    }
}

#[test]
fn the_age_clock_decides_which_demoted_long_job_resumes_first() {
    use gangplan::sim::service::AgeClock;
    let t = two_long_jobs_and_two_short();
    let mut base = one_queue_step_at_an_hour();
    // Every job takes the whole cluster: let them preempt (no big-gang rule) to see the ages.
    base.service.big_gang = None;
    assert_eq!(base.service.age_clock, AgeClock::Submission);
    for p in [PlannerName::Ilp, PlannerName::Greedy] {
        // Since submission (the default): "a" resumes at 6600 and finishes first, ~12,200 s
        // after its submission; "b" follows.
        let r = run(&t, p, &base);
        assert_eq!(r.info.jobs_done, 4, "{p:?}");
        assert!(
            r.metrics.preemptions >= 3,
            "{p:?}: {}",
            r.metrics.preemptions
        );
        let c = finish_times(&r);
        assert!(
            c[0] < 1300.0 && c[1] < 1300.0,
            "{p:?}: the short jobs first {c:?}"
        );
        assert!((11_000.0..13_500.0).contains(&c[2]), "{p:?}: a third {c:?}");
        assert!(r
            .info
            .objective
            .as_deref()
            .unwrap()
            .contains("submission clock"));
        // Time waited: "b" has waited longer at 6600, resumes and finishes third, ~14,600 s
        // after its submission; "a" waits for it to end.
        let mut cfg = base.clone();
        cfg.service.age_clock = AgeClock::Waiting;
        let r = run(&t, p, &cfg);
        assert_eq!(r.info.jobs_done, 4, "{p:?}");
        let c = finish_times(&r);
        assert!((14_000.0..16_000.0).contains(&c[2]), "{p:?}: b third {c:?}");
        assert!(c[3] > 20_000.0, "{p:?}: a last {c:?}");
    }
}

#[test]
fn a_job_preempted_as_often_as_allowed_runs_to_its_end() {
    let t = two_long_jobs_and_two_short();
    let mut cfg = one_queue_step_at_an_hour();
    cfg.service.big_gang = None;
    cfg.service.max_preemptions = Some(1);
    for p in [PlannerName::Ilp, PlannerName::Greedy] {
        // "b" preempts "a" at 1000 and "s1" preempts "b" at 2000, once each; "a" resumes after
        // s1 and, preempted once already, runs to its end (about 11,700 s) while "s2" (6000)
        // waits for it, where without the limit s2 preempts it (the test above).
        let r = run(&t, p, &cfg);
        assert_eq!(r.info.jobs_done, 4, "{p:?}");
        assert_eq!(r.metrics.preemptions, 2, "{p:?}");
        let by_id = |id: &str| r.series.jobs.iter().find(|j| j.id == id).unwrap().clone();
        for j in &r.series.jobs {
            assert!(j.preemptions <= 1, "{p:?}: {j:?}");
        }
        let (a, s2) = (by_id("a"), by_id("s2"));
        assert!(s2.first_start_s >= a.finish_s - 1e-6, "{p:?}: {a:?} {s2:?}");
        assert!((11_000.0..13_500.0).contains(&a.finish_s), "{p:?}: {a:?}");
        assert!(r
            .info
            .objective
            .as_deref()
            .unwrap()
            .contains("preemption on, at most 1 per job"));
    }
}

#[test]
fn attained_service_queues_wait_and_weights() {
    use gangplan::sim::service::ServiceObjective;
    let s = ServiceObjective {
        thresholds: vec![3600.0, 36_000.0],
        ..ServiceObjective::default()
    };
    assert_eq!(ServiceObjective::default().thresholds, vec![57_600.0]);
    assert_eq!(s.queue(0.0), 0);
    assert_eq!(s.queue(3599.0), 0);
    assert_eq!(s.queue(3600.0), 1);
    assert_eq!(s.priority(40_000.0), -2);
    // 4 GPUs, 1000 GPU-seconds: ran 250 s of the 1000 s since submission.
    assert_eq!(ServiceObjective::waited(1100.0, 100.0, 1000.0, 4.0), 750.0);
    // The aging term's wait: the time since submission by default, else the time waited;
    // per job by default (over the job's 4 GPUs), else per GPU.
    assert_eq!(s.age(1100.0, 100.0, 1000.0, 4.0), 250.0);
    let per_gpu = ServiceObjective {
        aging_unit: gangplan::sim::service::AgingUnit::Gpu,
        ..s.clone()
    };
    assert_eq!(per_gpu.age(1100.0, 100.0, 1000.0, 4.0), 1000.0);
    // A sharer (under one GPU) ages as a job of one GPU.
    assert_eq!(s.age(1100.0, 100.0, 0.0, 0.5), 1000.0);
    let waiting = ServiceObjective {
        age_clock: gangplan::sim::service::AgeClock::Waiting,
        ..per_gpu.clone()
    };
    assert_eq!(waiting.age(1100.0, 100.0, 1000.0, 4.0), 750.0);
    // The lowest queue keeps a positive value per GPU however large the step.
    let steep = ServiceObjective {
        step: 0.8,
        ..s.clone()
    };
    assert!(1.0 - 2.0 * steep.weights()["priority"] >= 0.1 - 1e-12);
    assert_eq!(s.weights()["aging"], 48.0);
    assert_eq!(s.weights()["preemption"], 0.5);
    // Size classes: a waiting 8-GPU gang ranks three levels below a 1-GPU job of its queue;
    // running jobs sit on their queue's first level.
    let sized = ServiceObjective {
        size_classes: true,
        ..s.clone()
    };
    assert_eq!(sized.waiting_rank(0.0, 0.0, 1.0, 64.0), 0);
    assert_eq!(sized.waiting_rank(0.0, 0.0, 8.0, 64.0), -3);
    // A big gang (at least 40% of the cluster's GPUs by default) waits at the second queue's
    // first level at best: 32 of 64 GPUs, fresh, is a big gang; 16 of 64 is not.
    assert_eq!(s.waiting_rank(0.0, 0.0, 32.0, 64.0), -1);
    assert_eq!(s.waiting_rank(0.0, 0.0, 16.0, 64.0), 0);
    assert_eq!(sized.waiting_rank(0.0, 0.0, 32.0, 64.0), -7);
    let every_gang = ServiceObjective {
        big_gang: None,
        ..s.clone()
    };
    assert_eq!(every_gang.waiting_rank(0.0, 0.0, 32.0, 64.0), 0);
    assert_eq!(sized.priority(4000.0), -7);
    // Starvation limit: waited at least K x ran promotes to the first queue.
    let starving = ServiceObjective {
        starve: Some(1.0),
        ..s.clone()
    };
    assert_eq!(starving.rank(40_000.0, 10_000.0, 1.0), -2);
    assert_eq!(starving.rank(40_000.0, 40_000.0, 1.0), 0);
}

/// `simulate` on the Tiresias fixture with `extra` flags exits 2 naming `needle`.
fn expect_tiresias_refused(extra: &[&str], needle: &str) {
    let jobs = fx("tiresias_jobs.csv");
    let mut args = vec![
        "simulate",
        "--trace",
        "tiresias",
        "--jobs",
        jobs.to_str().unwrap(),
    ];
    args.extend(extra);
    expect_located(&args, needle);
}

#[test]
fn bad_queue_thresholds_and_service_weights_exit_2() {
    for (flag, value, needle) in [
        ("--queue-thresholds", "3600,100", "above the previous one"),
        ("--queue-thresholds", "x", "is not a number of GPU-seconds"),
        ("--queue-thresholds", "inf", "must be finite"),
        ("--service-aging", "1e9", "--service-aging is 1000000000"),
        (
            "--fragmentation-price",
            "1e9",
            "--fragmentation-price is 1000000000",
        ),
        (
            "--fragmentation-price",
            "NaN",
            "--fragmentation-price is NaN",
        ),
    ] {
        expect_tiresias_refused(&["--planner", "ilp", flag, value], needle);
    }
}

/// The flags that work on the task distribution are refused next to `--no-task-dist`, which
/// takes it away (they would do nothing).
#[test]
fn task_distribution_flags_without_the_distribution_exit_2() {
    for extra in [
        &["--artifact-score"][..],
        &["--fragmentation-price", "0.5"][..],
    ] {
        let needle = format!("{} works on the task distribution", extra[0]);
        expect_tiresias_refused(&[&["--no-task-dist"][..], extra].concat(), &needle);
    }
}
