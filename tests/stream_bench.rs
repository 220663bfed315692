//! The stream benchmark's measures (`scripts/stream-bench.py`), on Slurm records made up by
//! hand and measured with `remeasure`, which needs no Slurm: a gang counts as spanning racks
//! with room only where one rack had as many nodes free of every other job in the second of
//! its start, a job that ended in that second counting as still there.

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// One job of Slurm's record (`squeue --json`), with the fields the bench reads.
fn job(id: u32, index: u32, nodes: &str, submit: i64, start: i64, end: i64) -> Value {
    json!({
        "job_id": id,
        "name": format!("sb-slurm-1-1-{index}"),
        "nodes": nodes,
        "submit_time": submit,
        "start_time": start,
        "end_time": end,
        "job_state": "COMPLETED",
        "admin_comment": "",
    })
}

/// The lab's 32 nodes in 4 racks of 8: gang 0 starts at t = 100 on node8 (rack 1) and node9
/// (rack 2); nodes 1-7 and racks 3 and 4 are busy all along; nodes 10-16 (rack 2) run a job
/// that ends at `other_end`.
fn record(other_end: i64) -> Value {
    json!([
        job(1, 0, "node[8-9]", 90, 100, 150),
        job(2, 1, "node[10-16]", 0, 10, other_end),
        job(3, 2, "node[1-7]", 0, 10, 200),
        job(4, 3, "node[17-24]", 0, 10, 300),
        job(5, 4, "node[25-32]", 0, 10, 300),
    ])
}

/// `remeasure` of one kept run (`slurm-1-1.json`): its row of runs.csv, by column.
fn remeasured(record: &Value) -> BTreeMap<String, String> {
    let dir = tempfile::tempdir().unwrap();
    let records = dir.path().join("records");
    std::fs::create_dir(&records).unwrap();
    std::fs::write(records.join("slurm-1-1.json"), record.to_string()).unwrap();
    let out = dir.path().join("out");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/stream-bench.py");
    let run = Command::new("python3")
        .arg(script)
        .args(["remeasure", "--records"])
        .arg(&records)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("python3 runs scripts/stream-bench.py");
    assert!(run.status.success(), "remeasure failed: {run:?}");
    let csv = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let row: Vec<&str> = lines.next().expect("one run measured").split(',').collect();
    assert!(lines.next().is_none(), "one run only: {csv}");
    header
        .iter()
        .zip(row)
        .map(|(h, v)| (h.to_string(), v.to_string()))
        .collect()
}

#[test]
fn a_job_ending_in_the_gangs_start_second_leaves_its_rack_no_room() {
    let row = remeasured(&record(100));
    assert_eq!(row["gangs_spanning_racks"], "1");
    assert_eq!(row["spanning_with_rack_room"], "0");
    // Every job waited 10 s from its submission to its start.
    assert_eq!(row["mean_wait_s"], "10.0");
}

#[test]
fn a_job_ending_a_second_before_the_gangs_start_leaves_its_rack_room() {
    let row = remeasured(&record(99));
    assert_eq!(row["gangs_spanning_racks"], "1");
    assert_eq!(row["spanning_with_rack_room"], "1");
}
