//! SPEC rule 8: the same instance and policy give the same plan. Ten runs of the binary on one
//! generated round, for each planner and with RAYON_NUM_THREADS=1 and 2, must print the same
//! plan once the wall-clock field `solver.seconds` is taken out; the plans of the two thread
//! counts must agree too.

use std::path::Path;
use std::process::Command;

const RUNS: usize = 10;

fn plan_without_seconds(instance: &Path, planner: &str, threads: &str) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_gangplan"))
        .args([
            "solve",
            instance.to_str().unwrap(),
            "--planner",
            planner,
            // Generous: a solve cut by the clock may legitimately differ.
            "--time-limit",
            "60",
        ])
        .env("RAYON_NUM_THREADS", threads)
        .output()
        .expect("the binary runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut plan: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(
        plan["solver"]["time_limit_hit"], false,
        "the solve finished inside its limit, so the clock cannot change the plan"
    );
    plan["solver"]
        .as_object_mut()
        .unwrap()
        .remove("seconds")
        .expect("the plan reports its seconds");
    plan
}

fn round(dir: &Path, args: &[&str]) -> std::path::PathBuf {
    let path = dir.join("round.yaml");
    let mut all = vec!["gen", "--out", path.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = Command::new(env!("CARGO_BIN_EXE_gangplan"))
        .args(&all)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    path
}

fn same_plan_every_run(planner: &str) {
    let dir = tempfile::tempdir().unwrap();
    // Busy enough that preemption, sharing and fairness all play a part.
    let inst = round(
        dir.path(),
        &[
            "--nodes",
            "8",
            "--pending",
            "24",
            "--seed",
            "5",
            "--busy",
            "0.7",
            "--sharers",
            "0.15",
            "--nodes-per-rack",
            "4",
            "--racks-per-pod",
            "2",
        ],
    );
    let mut reference: Option<serde_json::Value> = None;
    for threads in ["1", "2"] {
        for run in 0..RUNS {
            let plan = plan_without_seconds(&inst, planner, threads);
            match &reference {
                None => reference = Some(plan),
                Some(r) => assert_eq!(
                    &plan, r,
                    "{planner}, RAYON_NUM_THREADS={threads}, run {run}: the plan differs"
                ),
            }
        }
    }
    let r = reference.unwrap();
    if planner == "ilp" {
        assert_ne!(
            r["status"], "fallback",
            "the MIP's own answer is compared: {}",
            r["solver"]
        );
    }
    assert!(
        !r["placements"].as_array().unwrap().is_empty(),
        "the round places something, so the comparison is not trivial"
    );
}

#[test]
fn greedy_gives_the_same_plan_every_run() {
    same_plan_every_run("greedy");
}

#[test]
fn ilp_gives_the_same_plan_every_run() {
    same_plan_every_run("ilp");
}
