//! Where output goes: every command that writes uses one helper, which replaces regular files
//! atomically, follows symbolic links to their target, and writes through to devices and
//! FIFOs; a round's several files are written all or none; a model file's folder is checked
//! before the solve; YAML output reads alike in YAML 1.1 and 1.2; `validate` checks every
//! placement field and caps what it prints.

mod binary;

use binary::{run, text};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn quickstart() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("instances/quickstart.yaml")
}

fn solve_to(out: &Path) -> Output {
    run(&[
        "solve",
        quickstart().to_str().unwrap(),
        "--planner",
        "greedy",
        "--out",
        out.to_str().unwrap(),
    ])
}

#[cfg(unix)]
#[test]
fn dev_null_stays_a_device() {
    use std::os::unix::fs::FileTypeExt;
    let out = solve_to(Path::new("/dev/null"));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let kind = std::fs::metadata("/dev/null").unwrap().file_type();
    assert!(kind.is_char_device(), "/dev/null is no longer a device");
}

#[cfg(unix)]
#[test]
fn a_fifo_receives_the_plan_and_stays_a_fifo() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("plans");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let out = solve_to(&fifo);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let got = reader.join().unwrap();
    let plan: serde_json::Value = serde_json::from_str(&got).expect("the plan came through");
    assert!(plan["placements"].is_array());
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
}

#[cfg(unix)]
#[test]
fn a_symlink_is_followed_and_stays_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real-plan.json");
    std::fs::write(&real, "old").unwrap();
    let link = dir.path().join("plan.json");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let out = solve_to(&link);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&real).unwrap()).unwrap();
    assert!(plan["placements"].is_array());
}

/// `plan --emit k8s` refusing a node name writes neither bindings.yaml nor plan.json.
#[test]
fn a_refused_k8s_binding_leaves_nothing_written() {
    let dir = tempfile::tempdir().unwrap();
    let inst = dir.path().join("inst.yaml");
    std::fs::write(
        &inst,
        "nodes: [{name: Node_One, gpus: 8}]\npending: [{id: j, gpus: 2}]\n",
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let state = dir.path().join("state");
    let out = run(&[
        "plan",
        inst.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "--state-dir",
        state.to_str().unwrap(),
        "--emit",
        "k8s",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let left: Vec<_> = std::fs::read_dir(&out_dir)
        .map(|d| d.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// `--write-model` into a missing folder fails with code 6 before the solve, writing no plan.
#[test]
fn write_model_into_a_missing_folder_fails_first() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.json");
    let model = dir.path().join("no-such-folder").join("round.mps");
    let out = run(&[
        "solve",
        quickstart().to_str().unwrap(),
        "--write-model",
        model.to_str().unwrap(),
        "--out",
        plan.to_str().unwrap(),
    ]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(6), "{err}");
    assert!(err.contains("does not exist"), "{err}");
    assert!(!plan.exists());
}

/// Job ids a YAML 1.1 reader takes for booleans, numbers or dates are quoted in YAML output.
#[test]
fn yaml_output_quotes_what_yaml_1_1_would_misread() {
    let dir = tempfile::tempdir().unwrap();
    let inst = dir.path().join("inst.yaml");
    std::fs::write(
        &inst,
        "nodes: [{name: n1, gpus: 8}]\npending:\n  - {id: \"yes\", gpus: 2}\n  - {id: \"NO\", gpus: 2}\n  - {id: \"0755\", gpus: 1}\n  - {id: \"2024-01-01\", gpus: 1}\n  - {id: \"on\", gpus: 64}\n",
    )
    .unwrap();
    let out = run(&["solve", inst.to_str().unwrap(), "--format", "yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let yaml = text(&out.stdout);
    for id in ["yes", "NO", "0755", "2024-01-01", "on"] {
        assert!(
            yaml.contains(&format!("job: \"{id}\"")),
            "{id} must be quoted:\n{yaml}"
        );
    }
    let back: serde_json::Value = serde_yaml::from_str(&yaml).unwrap();
    assert_eq!(back["placements"].as_array().unwrap().len(), 4, "{yaml}");
}

/// The plan `solve` writes for `inst`, as JSON to edit.
fn plan_of(inst: &Path) -> serde_json::Value {
    let out = run(&["solve", inst.to_str().unwrap(), "--planner", "greedy"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn validate(inst: &Path, plan: &serde_json::Value) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plan.json");
    std::fs::write(&file, plan.to_string()).unwrap();
    let out = run(&["validate", inst.to_str().unwrap(), file.to_str().unwrap()]);
    (out.status.code(), text(&out.stdout))
}

/// `validate` checks a placement's `gpu_milli` against the job's.
#[test]
fn validate_checks_gpu_milli() {
    let dir = tempfile::tempdir().unwrap();
    let inst = dir.path().join("inst.yaml");
    std::fs::write(
        &inst,
        "nodes: [{name: n1, gpus: 8}]\npending: [{id: s, gpus: 1, gpu_milli: 250}]\n",
    )
    .unwrap();
    let mut plan = plan_of(&inst);
    assert_eq!(validate(&inst, &plan).0, Some(0));
    plan["placements"][0]["gpu_milli"] = serde_json::json!(999);
    let (code, said) = validate(&inst, &plan);
    assert_eq!(code, Some(3), "{said}");
    assert!(said.contains("gpu_milli 999 but asks for 250"), "{said}");
}

/// A plan naming 5,000 unknown jobs: the first 100 violations, then a count.
#[test]
fn validate_caps_the_violations_it_prints() {
    let mut plan = plan_of(&quickstart());
    let pending = plan["pending"].as_array_mut().unwrap();
    for i in 0..5000 {
        pending.push(serde_json::json!({"job": format!("ghost-{i}"), "reason": "x"}));
    }
    let (code, said) = validate(&quickstart(), &plan);
    assert_eq!(code, Some(3));
    let lines = said.lines().count();
    assert!(lines <= 101, "{lines} lines printed");
    assert!(said.contains("and 4900 more"), "{said}");
}
