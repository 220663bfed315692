//! The time limit at scale, through the binary in release mode: a valid plan within the limit
//! plus a stated reserve, or a clear refusal (exit code 8) within the same time. The reserve
//! (1 s) covers starting and ending the process, which no clock inside it can see, and the
//! error of the budget's estimates of validating and writing the plan.
//!
//! The two rounds run one after the other in one test so that they do not share the cores.

mod binary;

use binary::{run, text};
use std::path::Path;
use std::time::{Duration, Instant};

/// Exit code of a refusal for the time limit.
const TIME_LIMIT: i32 = 8;
/// Wall time allowed past the limit.
const RESERVE: Duration = Duration::from_secs(1);

/// Generate a round of `nodes` 8-GPU nodes (mixed types, `within`, `cpu_milli`) and `pending`
/// gangs, solve it with `limit` seconds (and `planner`), and check the outcome.
fn round_within_limit(dir: &Path, nodes: &str, pending: &str, limit: u64) {
    planner_within_limit(dir, nodes, pending, limit, "ilp");
}

/// [`round_within_limit`] with a planner named.
fn planner_within_limit(dir: &Path, nodes: &str, pending: &str, limit: u64, planner: &str) {
    let inst = dir.join(format!("{nodes}-{pending}.yaml"));
    let out = run(&[
        "gen",
        "--nodes",
        nodes,
        "--pending",
        pending,
        "--seed",
        "3",
        "--out",
        inst.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "gen: {}", text(&out.stderr));
    let plan = dir.join(format!("{nodes}-{pending}-{planner}.plan.json"));
    let started = Instant::now();
    let out = run(&[
        "solve",
        inst.to_str().unwrap(),
        "--time-limit",
        &limit.to_string(),
        "--planner",
        planner,
        "--out",
        plan.to_str().unwrap(),
    ]);
    let wall = started.elapsed();
    let err = text(&out.stderr);
    eprintln!(
        "{nodes} nodes / {pending} pending, --planner {planner} --time-limit {limit}: exit {:?} \
         after {wall:?}",
        out.status.code()
    );
    assert!(
        wall <= Duration::from_secs(limit) + RESERVE,
        "{nodes}/{pending}: {wall:?} for a {limit} s limit\n{err}"
    );
    match out.status.code() {
        Some(0) => {
            let v = run(&["validate", inst.to_str().unwrap(), plan.to_str().unwrap()]);
            assert_eq!(
                v.status.code(),
                Some(0),
                "the plan is valid: {}",
                text(&v.stdout)
            );
        }
        Some(TIME_LIMIT) => {
            assert!(err.contains("time limit"), "{err}");
            assert!(!plan.exists(), "a refusal writes nothing");
        }
        other => panic!("{nodes}/{pending}: exit {other:?}\n{err}"),
    }
}

#[test]
fn large_rounds_end_within_their_limit() {
    let dir = tempfile::tempdir().unwrap();
    round_within_limit(dir.path(), "5000", "15000", 2);
    round_within_limit(dir.path(), "20000", "60000", 3);
}

/// The baselines run every job to the end in replays, but under a round's time limit they stop
/// at its work deadline: on this round (5,000 nodes, 15,000 pending) the preemptive LAS took
/// 37.5 s and FGD (which scores every node for every job) 6.6 s for a 2 s limit before; to the
/// end they now take 4.2 s and 2.0 s.
#[test]
fn baselines_end_within_their_limit() {
    let dir = tempfile::tempdir().unwrap();
    for planner in ["las", "fgd"] {
        planner_within_limit(dir.path(), "5000", "15000", 2, planner);
    }
}
