//! The bad-input catalogue: every broken instance, plan and flag goes through the real binary
//! and must end with exit code 2, a message that names the field path, the bad value and the
//! fix, no panic text, nothing on stdout and no output file.
//!
//! Static cases live in `tests/fixtures/bad/` (one file each, listed in [`CASES`]); cases that
//! cannot be checked in (binary bytes, a file over the size limit, a directory, a missing file,
//! deep nesting, oversized documents) are made in a temporary directory at test time.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// Exit code for bad input (see `gangplan --help`).
const BAD_INPUT: i32 = 2;

/// Fixture file and the substrings its error must contain: the field path first, then the
/// value, then the words of the fix.
const CASES: &[(&str, &[&str])] = &[
    // Syntax.
    (
        "malformed_yaml.yaml",
        &["nodes (line 3)", "expected ',' or ']'", "fix the syntax"],
    ),
    (
        "malformed_json.json",
        &["pending (line 2)", "expected ',' or ']'", "fix the syntax"],
    ),
    (
        "bad_indentation.yaml",
        &["nodes (line 4)", "'-' indicator", "fix the syntax"],
    ),
    (
        "two_documents.yaml",
        &["document", "more than one document", "keep one document"],
    ),
    (
        "empty.yaml",
        &["document", "is empty", "expected a YAML or JSON document"],
    ),
    (
        "comment_only.yaml",
        &["document", "missing field `nodes`", "add it"],
    ),
    (
        "scalar_document.yaml",
        &[
            "document",
            "integer `42`",
            "expected a mapping with `nodes:`",
        ],
    ),
    // Field names.
    (
        "typo_field.yaml",
        &[
            "pending[0].priorty",
            "`priorty`",
            "did you mean `priority`?",
        ],
    ),
    (
        "typo_top_level.yaml",
        &["node (line 1)", "`node`", "did you mean `nodes`?"],
    ),
    (
        "missing_nodes.yaml",
        &["document", "missing field `nodes`", "add it"],
    ),
    (
        "duplicate_field.yaml",
        &["nodes[0]", "duplicate field `gpus`", "give each key once"],
    ),
    (
        "duplicate_map_key.yaml",
        &["running[0].gpus", "key \"a\"", "give each key once"],
    ),
    (
        "running_cpu_only_two_nodes.yaml",
        &[
            "running[0].gpus",
            "job \"r\": lists 2 nodes (a, b), each with no GPU",
            "a CPU-only job lists exactly one node, with an empty list: {a: []}",
        ],
    ),
    (
        "running_empty_list_beside_gpus.yaml",
        &[
            "running[0].gpus",
            "job \"r\": lists node(s) b with no GPU",
            "lists only the nodes where it holds GPUs: remove b",
        ],
    ),
    // Types.
    (
        "wrong_type_gpus.yaml",
        &["nodes[0].gpus", "\"eight\"", "expected a whole number >= 0"],
    ),
    (
        "wrong_type_nodes.yaml",
        &["nodes (line 1)", "invalid type: map", "expected a list"],
    ),
    (
        "wrong_type_gpu_type.yaml",
        &[
            "pending[0].gpu_type",
            "neither a GPU type nor a list",
            "expected e.g. H100",
        ],
    ),
    // Numbers.
    (
        "negative_gpus.yaml",
        &["pending[0].gpus", "`-4`", "expected a whole number >= 0"],
    ),
    (
        "absurd_gpus_float.yaml",
        &[
            "nodes[0].gpus",
            "100000000000000000000",
            "expected a whole number >= 0",
        ],
    ),
    (
        "absurd_gpus_int.yaml",
        &[
            "pending[0].gpus",
            "100000000000",
            "expected at most 1000000 GPUs",
        ],
    ),
    (
        "node_gpus_over_limit.yaml",
        &[
            "nodes[0].gpus",
            "5000",
            "expected at most 1024 GPUs per node",
        ],
    ),
    (
        "gpus_over_limit_with_shape.yaml",
        &[
            "pending[0].gpus",
            "is 1000002",
            "expected at most 1000000 GPUs",
        ],
    ),
    (
        "priority_over_limit.yaml",
        &[
            "pending[0].priority",
            "99999999999999999",
            "within +-1000000000000",
        ],
    ),
    (
        "quota_over_limit.yaml",
        &["tenants[0].quota", "50000000", "expected at most 1000000"],
    ),
    (
        "cpu_over_limit.yaml",
        &[
            "nodes[0].cpu_milli",
            "5000000000000",
            "expected at most 1000000000000",
        ],
    ),
    (
        "negative_weight.yaml",
        &["tenants[0].weight", "is -1", "expected a number > 0"],
    ),
    (
        "nan_wait.yaml",
        &["pending[0].wait", "NaN", "expected seconds in 0..=1e10"],
    ),
    (
        "time_limit_negative.yaml",
        &[
            "policy.time_limit",
            "is -1",
            "expected seconds in (0, 86400]",
        ],
    ),
    (
        "reservations_too_many.yaml",
        &[
            "policy.reservations",
            "is 65",
            "expected a whole number of blocked jobs to reserve nodes for, in 0..=64",
        ],
    ),
    (
        "reservations_negative.yaml",
        &["policy.reservations", "is -1", "in 0..=64"],
    ),
    (
        "mip_gap_too_large.yaml",
        &["policy.mip_gap", "is 2", "expected a fraction in 0..=1"],
    ),
    (
        "task_dist_zero_share.yaml",
        &[
            "policy.task_distribution[1].share",
            "is 0",
            "expected a number in (0, 1e12]",
        ],
    ),
    (
        "task_dist_milli_multi_gpu.yaml",
        &[
            "policy.task_distribution[0].gpu_milli",
            "gpus is 2",
            "asks for 1 GPU",
        ],
    ),
    (
        "task_dist_empty.yaml",
        &[
            "policy.task_distribution",
            "is an empty list",
            "omit it to place by best fit",
        ],
    ),
    (
        "task_dist_typo.yaml",
        &[
            "policy.task_distribution[0].shar",
            "`shar`",
            "did you mean `share`?",
        ],
    ),
    (
        "artifact_score_without_dist.yaml",
        &[
            "policy.artifact_score",
            "is set without policy.task_distribution",
            "leave the field out",
        ],
    ),
    (
        "task_dist_zero_gpus.yaml",
        &[
            "policy.task_distribution[0].gpus",
            "is 0",
            "expected at least 1 GPU",
        ],
    ),
    (
        "max_nodes_zero.yaml",
        &["pending[0].max_nodes", "is 0", "expected at least 1"],
    ),
    // Names and references.
    (
        "duplicate_node.yaml",
        &["nodes[1].name", "\"a\"", "node names must be unique"],
    ),
    (
        "duplicate_job_id.yaml",
        &["pending[0].id", "\"train\"", "job ids must be unique"],
    ),
    (
        "duplicate_pending_id.yaml",
        &["pending[1].id", "\"j1\"", "job ids must be unique"],
    ),
    (
        "unknown_node.yaml",
        &[
            "running[0].gpus.b",
            "\"b\"",
            "use one of the listed node names",
        ],
    ),
    (
        "unknown_tenant.yaml",
        &[
            "pending[0].tenant",
            "\"nobody\"",
            "expected one of research",
        ],
    ),
    (
        "unknown_model.yaml",
        &[
            "nodes[0].model",
            "\"dgx-h900\"",
            "expected one of a100-pcie-8x",
        ],
    ),
    (
        "unknown_workload.yaml",
        &[
            "pending[0].workload",
            "\"nope\"",
            "expected one of data-parallel",
        ],
    ),
    (
        "unknown_weight.yaml",
        &[
            "policy.weights.gpuu",
            "unknown weight",
            "expected one of gpu",
        ],
    ),
    (
        "name_too_long.yaml",
        &["nodes[0].name", "300 characters", "the limit is 256"],
    ),
    (
        "control_chars_in_name.yaml",
        &["nodes[0].name", "\"a\\tb\"", "use printable characters"],
    ),
    (
        "model_gpus_conflict.yaml",
        &["nodes[0].gpus", "is 4", "drop gpus or make them equal"],
    ),
    (
        "rack_in_two_pods.yaml",
        &["nodes[1].pod", "\"p2\"", "a rack belongs to one pod"],
    ),
    (
        "pod_of_the_unnamed_rack.yaml",
        &[
            "nodes[1].pod",
            "is not given but the unnamed rack (of the nodes that give none) is in pod \"p0\"",
            "give its nodes the same pod",
        ],
    ),
    // GPUs.
    (
        "gpu_index_out_of_range.yaml",
        &[
            "running[0].gpus.a[1]",
            "GPU index 8",
            "node a has GPUs 0..7",
        ],
    ),
    (
        "down_index_out_of_range.yaml",
        &["nodes[0].down[0]", "GPU index 9", "node a has GPUs 0..7"],
    ),
    (
        "gpu_held_twice.yaml",
        &[
            "running[1].gpus.a[0]",
            "job \"r2\": GPU a:1",
            "already held by running job \"r1\"",
        ],
    ),
    (
        "shared_gpu_over_1000.yaml",
        &["running[1].gpus.a[0]", "GPU a:3", "at most 1000 milli"],
    ),
    (
        "running_without_gpus.yaml",
        &["running[0].gpus", "is empty", "map each node the job holds"],
    ),
    (
        "gpus_per_node_not_divisor.yaml",
        &[
            "pending[0].gpus_per_node",
            "is 3",
            "multiple of gpus_per_node",
        ],
    ),
    (
        "empty_gpu_type_list.yaml",
        &[
            "pending[0].gpu_type",
            "empty list",
            "omit it to accept any type",
        ],
    ),
    (
        "empty_nodes.yaml",
        &["nodes", "is empty", "list at least one node"],
    ),
    // Enums and sharing.
    (
        "bad_within.yaml",
        &[
            "pending[0].within",
            "\"galaxy\"",
            "expected one of node, rack, pod",
        ],
    ),
    (
        "gpu_milli_too_large.yaml",
        &["pending[0].gpu_milli", "is 1000", "expected 1..=999"],
    ),
    (
        "gpu_milli_zero.yaml",
        &["running[0].gpu_milli", "is 0", "expected 1..=999"],
    ),
    (
        "gpu_milli_multi_gpu.yaml",
        &["pending[0].gpu_milli", "gpus is 2", "asks for gpus: 1"],
    ),
    // Alias bombs: what aliases expand to is bounded, not only the file size.
    (
        "alias_bomb.yaml",
        &[
            "YAML aliases expand",
            "the limit is 1000000",
            "write the values out",
        ],
    ),
    (
        "alias_bomb_in_field.yaml",
        &[
            "pending[0].gpu_type",
            "YAML aliases expand",
            "write the values out",
        ],
    ),
    // Null where a name is required, in YAML and JSON.
    (
        "null_name.yaml",
        &["nodes[0].name", "is null", "expected a name"],
    ),
    (
        "null_id.yaml",
        &["pending[0].id", "is null", "expected a name"],
    ),
    (
        "null_id.json",
        &["pending[0].id", "is null", "expected a name"],
    ),
    // Tags are refused, not silently dropped.
    (
        "tag_binary.yaml",
        &["nodes[0].name", "tag !!binary", "remove the tag"],
    ),
    (
        "tag_str.yaml",
        &["nodes[0].gpus", "tag !!str", "remove the tag"],
    ),
    // Shapes no cluster can give, with the arithmetic.
    (
        "shape_max_nodes.yaml",
        &[
            "pending[0].gpus_per_node",
            "4 / 2 = 2 nodes",
            "max_nodes allows 1; set gpus_per_node to 4",
        ],
    ),
    (
        "shape_max_nodes_above_any_cluster.yaml",
        &[
            "pending[0].gpus_per_node",
            "400000 / 2 = 200000 nodes",
            "max_nodes allows 150000; set gpus_per_node to 4",
        ],
    ),
    (
        "shape_within_node.yaml",
        &[
            "pending[0].gpus_per_node",
            "4 / 2 = 2 nodes",
            "within: node allows 1; set gpus_per_node to 4",
        ],
    ),
    // The objective's scale.
    (
        "priority_scale.yaml",
        &[
            "pending[0].priority",
            "1000000000000",
            "keep |priority x weights.priority| <= 1e6",
        ],
    ),
    (
        "weights_scale.yaml",
        &[
            "pending[0].priority",
            "worth 1.000049e12",
            "lower the weights",
        ],
    ),
    (
        "weights_aging_scale.yaml",
        &[
            "policy.weights.aging",
            "is 1000000; with aging_cap_hours 1000000",
            "lower aging or aging_cap_hours",
        ],
    ),
    (
        "checkpoint_scale.yaml",
        &[
            "running[0].checkpoint_cost",
            "1000000000000000",
            "lower weights.checkpoint",
        ],
    ),
    (
        "checkpoint_scale_cpu_only.yaml",
        &[
            "running[0].checkpoint_cost",
            "1000000000000000",
            "lower weights.checkpoint",
        ],
    ),
];

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_gangplan")
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bad")
}

fn quickstart() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("instances/quickstart.yaml")
}

fn run(args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("the binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).to_string()
}

/// The checks every refusal must pass.
fn assert_refused(what: &str, out: &Output, expect: &[&str]) {
    let err = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(BAD_INPUT),
        "{what}: exit code\nstderr: {err}"
    );
    assert!(
        out.stdout.is_empty(),
        "{what}: stdout must be empty, got {}",
        text(&out.stdout)
    );
    for bad in ["panicked", "RUST_BACKTRACE", "internal error", "thread '"] {
        assert!(!err.contains(bad), "{what}: panic text {bad:?} in {err}");
    }
    assert!(
        err.starts_with("gangplan: error: "),
        "{what}: the message starts with the program's error prefix: {err}"
    );
    assert!(
        err.len() < 4000,
        "{what}: the message is {} bytes long; it must stay short",
        err.len()
    );
    for e in expect {
        assert!(err.contains(e), "{what}: expected {e:?} in\n{err}");
    }
}

/// Run `solve --out` on an instance: refused, nothing written, an existing output untouched,
/// no temporary file left beside it.
fn assert_solve_refuses(what: &str, instance: &Path, expect: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let fresh = dir.path().join("plan.json");
    let out = run(&[
        "solve",
        instance.to_str().unwrap(),
        "--out",
        fresh.to_str().unwrap(),
        "--time-limit",
        "5",
    ]);
    assert_refused(what, &out, expect);
    assert!(!fresh.exists(), "{what}: no output file may be written");
    // A plan from an earlier round stays as it was.
    let kept = dir.path().join("kept.json");
    std::fs::write(&kept, "earlier plan\n").unwrap();
    let out = run(&[
        "solve",
        instance.to_str().unwrap(),
        "--out",
        kept.to_str().unwrap(),
        "--planner",
        "greedy",
    ]);
    assert_refused(what, &out, expect);
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), "earlier plan\n");
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    assert_eq!(
        names,
        vec!["kept.json".to_string()],
        "{what}: no temporary file left"
    );
}

#[test]
fn catalogue_covers_every_fixture_and_has_30_cases() {
    let mut files: Vec<String> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    files.sort();
    let mut listed: Vec<String> = CASES.iter().map(|(f, _)| f.to_string()).collect();
    listed.sort();
    assert_eq!(
        files, listed,
        "every fixture has an expectation and vice versa"
    );
    assert!(CASES.len() >= 30, "{} cases", CASES.len());
}

#[test]
fn every_fixture_is_refused_by_solve_with_path_value_and_fix() {
    for (file, expect) in CASES {
        let path = fixtures().join(file);
        let started = Instant::now();
        assert_solve_refuses(file, &path, expect);
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{file}: refused in {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn every_fixture_is_refused_by_validate() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.json");
    let out = run(&[
        "solve",
        quickstart().to_str().unwrap(),
        "--planner",
        "greedy",
        "--out",
        plan.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for (file, expect) in CASES {
        let path = fixtures().join(file);
        let out = run(&["validate", path.to_str().unwrap(), plan.to_str().unwrap()]);
        assert_refused(file, &out, expect);
    }
}

#[test]
fn a_value_refused_at_its_field_is_not_blamed_elsewhere() {
    // The gang size over its limit is not capped into a false gpus_per_node error; weights too
    // large for every job are reported at the weights, not at each job's priority.
    for (file, field, not) in [
        (
            "gpus_over_limit_with_shape.yaml",
            "pending[0].gpus:",
            "gpus_per_node",
        ),
        (
            "weights_aging_scale.yaml",
            "policy.weights.aging:",
            "pending[0].priority",
        ),
    ] {
        let out = run(&["solve", fixtures().join(file).to_str().unwrap()]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(BAD_INPUT), "{file}: {err}");
        assert!(err.contains(field), "{file}: {err}");
        assert!(!err.contains(not), "{file}: {not} is not at fault: {err}");
        assert_eq!(err.matches("\n  - ").count(), 1, "{file}: one issue: {err}");
    }
}

#[test]
fn binary_and_nul_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("binary.yaml");
    let mut bytes: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    bytes[0] = 0xff;
    std::fs::write(&binary, &bytes).unwrap();
    assert_solve_refuses(
        "binary",
        &binary,
        &[
            "document",
            "invalid byte at offset 0",
            "pass a YAML or JSON file",
        ],
    );
    let nul = dir.path().join("nul.yaml");
    std::fs::write(&nul, b"nodes: [{name: a, gpus: 8}]\n\0\0\0").unwrap();
    assert_solve_refuses(
        "nul",
        &nul,
        &["document", "NUL bytes", "pass a YAML or JSON text file"],
    );
}

#[test]
fn a_file_over_the_size_limit_is_refused_without_reading_it() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.yaml");
    // 300 MiB, sparse: no disk is used, and the loader must not read it.
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(300 * 1024 * 1024).unwrap();
    drop(f);
    let started = Instant::now();
    assert_solve_refuses(
        "300 MiB file",
        &big,
        &[
            "document",
            "314572800 bytes",
            "the limit is 268435456 bytes",
        ],
    );
    // Two solve runs: each refused in well under a second (reading 300 MiB would not be).
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "refused in {:?}",
        started.elapsed()
    );
}

#[cfg(unix)]
#[test]
fn an_endless_stream_is_cut_at_the_size_limit() {
    // A device has no size: the loader reads up to the limit and stops.
    let started = Instant::now();
    let out = run(&["solve", "/dev/zero"]);
    assert_refused(
        "/dev/zero",
        &out,
        &["document", "more than 268435456", "the limit is"],
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_directory_and_a_missing_file_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    assert_solve_refuses(
        "directory",
        dir.path(),
        &["document", "is a directory", "pass an instance file"],
    );
    let missing = dir.path().join("no-such-round.yaml");
    assert_solve_refuses(
        "missing",
        &missing,
        &["no-such-round.yaml", "does not exist", "check the path"],
    );
}

#[test]
fn deep_nesting_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    let nested = "nests brackets more than 256 levels deep; the limit is 256: flatten the document";
    let cases = [
        // The YAML parser slows down with the square of the depth (100,000 levels took 40 s):
        // the loader refuses deep nesting before parsing.
        ("deep.yaml", format!("nodes: {}\n", deep(100_000)), nested),
        // JSON is parsed by its own parser first, which stops at the first wrong type.
        ("deep.json", format!("{{\"nodes\": {}}}", deep(100_000)), "nodes[0]"),
        // gpu_type is buffered whole before it is matched: the depth check still holds.
        (
            "deep_field.yaml",
            format!(
                "nodes: [{{name: a, gpus: 8}}]\npending: [{{id: j, gpus: 1, gpu_type: {}}}]\n",
                deep(100_000)
            ),
            nested,
        ),
        (
            "deep_field.json",
            format!(
                "{{\"nodes\": [{{\"name\": \"a\", \"gpus\": 8}}], \"pending\": [{{\"id\": \"j\", \"gpus\": 1, \"gpu_type\": {}}}]}}",
                deep(100_000)
            ),
            nested,
        ),
        // Nesting within the limit but beyond the parser's recursion limit (128).
        ("deep_200.yaml", format!("nodes: [{{name: a, gpus: 8}}]\npending: [{{id: j, gpus: 1, gpu_type: {}}}]\n", deep(200)), "recursion limit exceeded"),
    ];
    for (name, doc, expect) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, doc).unwrap();
        let started = Instant::now();
        assert_solve_refuses(name, &path, &[expect]);
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{name}: {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn huge_echoed_values_are_shortened() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.yaml");
    let long = "x".repeat(1_000_000);
    std::fs::write(
        &path,
        format!("nodes: [{{name: a, gpus: 8}}]\npending: [{{id: j, gpus: 1, within: {long}}}]\n"),
    )
    .unwrap();
    // assert_refused also checks that the whole message stays under 4000 bytes.
    assert_solve_refuses(
        "long value",
        &path,
        &[
            "pending[0].within",
            "1000000 characters in all",
            "expected one of node, rack, pod",
        ],
    );
}

#[test]
fn an_oversized_node_does_not_shift_the_nodes_after_it() {
    // Node a is refused; b and c keep their own GPU counts in the messages of running jobs.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shift.yaml");
    std::fs::write(
        &path,
        "nodes:\n  - {name: a, gpus: 5000}\n  - {name: b, gpus: 8}\n  - {name: c, gpus: 4}\n\
         running:\n  - {id: r1, gpus: {b: [7]}}\n  - {id: r2, gpus: {c: [5]}}\n",
    )
    .unwrap();
    let out = run(&["solve", path.to_str().unwrap()]);
    let err = text(&out.stderr);
    assert_refused(
        "oversized node",
        &out,
        &[
            "nodes[0].gpus",
            "expected at most 1024 GPUs per node",
            "running[1].gpus.c[0]: job \"r2\": GPU index 5 does not exist; node c has GPUs 0..3",
        ],
    );
    assert!(!err.contains("running[0]"), "b has GPU 7: {err}");
}

#[test]
fn many_issues_are_listed_up_to_a_cap() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.yaml");
    let mut doc = String::from("nodes:\n");
    for i in 0..1000 {
        doc.push_str(&format!("  - {{name: n{i}, gpus: 8, down: [99]}}\n"));
    }
    std::fs::write(&path, doc).unwrap();
    let out = run(&["solve", path.to_str().unwrap()]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(BAD_INPUT));
    assert!(
        err.contains("nodes[0].down[0]: GPU index 99 does not exist"),
        "{err}"
    );
    assert!(err.contains("900 more issue(s) not listed"), "{err}");
    assert_eq!(err.matches("GPU index 99").count(), 100);
}

#[test]
fn bad_solve_flags_are_refused() {
    let q = quickstart();
    let q = q.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("plan.json");
    let o = out_path.to_str().unwrap();
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["--time-limit", "-1"],
            &["--time-limit", "-1", "expected seconds in (0, 86400]"],
        ),
        (
            &["--time-limit=0"],
            &["--time-limit", "is 0", "expected seconds in (0, 86400]"],
        ),
        (
            &["--time-limit", "1e9"],
            &[
                "--time-limit",
                "1000000000",
                "expected seconds in (0, 86400]",
            ],
        ),
        (
            &["--time-limit", "NaN"],
            &["--time-limit", "NaN", "expected seconds"],
        ),
        (
            &["--time-limit", "soon"],
            &["--time-limit", "'soon'", "invalid float literal"],
        ),
        (
            &["--gap", "2"],
            &["--gap", "is 2", "expected a fraction in 0..=1"],
        ),
        (
            &["--gap", "-0.1"],
            &["--gap", "-0.1", "expected a fraction in 0..=1"],
        ),
        (
            &["--planner", "magic"],
            &["--planner", "'magic'", "possible values: ilp, greedy"],
        ),
        (
            &["--format", "xml"],
            &["--format", "'xml'", "possible values: json, yaml"],
        ),
        (
            &["--write-model", "model.txt"],
            &["--write-model", "model.txt", "must end in .mps or .lp"],
        ),
        (&["--frobnicate"], &["--frobnicate", "unexpected argument"]),
    ];
    for (flags, expect) in cases {
        let mut args = vec!["solve", q, "--out", o];
        args.extend_from_slice(flags);
        let out = run(&args);
        assert_refused(&format!("{flags:?}"), &out, expect);
        assert!(!out_path.exists(), "{flags:?}: no output");
    }
    let out = run(&["solve", q, "--out", o, "--models", "/no/such/models-dir"]);
    assert_eq!(out.status.code(), Some(BAD_INPUT), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("/no/such/models-dir"));
    assert!(!out_path.exists());
}

#[test]
fn bad_gen_flags_are_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("round.yaml");
    let o = out_path.to_str().unwrap();
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["--nodes", "0"],
            &["--nodes", "is 0", "expected 1..=100000"],
        ),
        (&["--nodes", "-3"], &["--nodes", "'-3'"]),
        (
            &["--busy", "2"],
            &["--busy", "is 2", "expected a fraction in 0..=1"],
        ),
        (
            &["--down", "-0.5"],
            &["--down", "-0.5", "expected a fraction in 0..=1"],
        ),
        (
            &["--sharers", "NaN"],
            &["--sharers", "NaN", "expected a fraction"],
        ),
        (
            &["--time-limit", "-5"],
            &["--time-limit", "-5", "expected seconds in (0, 86400]"],
        ),
        (
            &["--time-limit", "inf"],
            &["--time-limit", "inf", "expected seconds in (0, 86400]"],
        ),
        (&["--tenants", "0"], &["--tenants", "must be at least 1"]),
        (
            &["--tenants", "200000"],
            &["--tenants", "200000", "at most 100000 tenants"],
        ),
        (&["--max-gang", "0"], &["--max-gang", "must be at least 1"]),
    ];
    for (flags, expect) in cases {
        let mut args = vec!["gen", "--pending", "5", "--out", o];
        if !flags.contains(&"--nodes") {
            args.extend_from_slice(&["--nodes", "4"]);
        }
        args.extend_from_slice(flags);
        let out = run(&args);
        assert_refused(&format!("gen {flags:?}"), &out, expect);
        assert!(!out_path.exists(), "gen {flags:?}: no output");
    }
}

#[test]
fn bad_plan_files_are_refused_by_validate() {
    let dir = tempfile::tempdir().unwrap();
    let q = quickstart();
    let q = q.to_str().unwrap();
    let cases: &[(&str, &[&str])] = &[
        (
            "{\"format\": \"gangplan-plan/1\"",
            &["plan.json", "fix the syntax"],
        ),
        (
            "format: gangplan-plan/1\nstatus: great\n",
            &["status", "unknown variant `great`", "expected one of"],
        ),
        ("[]", &["plan.json", "invalid type: sequence"]),
        (
            // A node given twice in a placement: the last one must not silently win.
            "{\"format\": \"gangplan-plan/1\", \"status\": \"fallback\",
 \"solver\": {\"path\": \"greedy\", \"seconds\": 0, \"objective\": 0, \"bound\": null,
            \"gap\": null, \"time_limit_hit\": false},
 \"placements\": [{\"job\": \"render\", \"gpus\": {\"l2\": [1], \"l2\": [0]}}],
 \"preemptions\": [], \"pending\": [],
 \"metrics\": {\"gpus_total\": 56, \"gpus_busy_before\": 15, \"gpus_busy_after\": 16}}",
            &[
                "placements[0].gpus",
                "duplicate entry with key \"l2\"",
                "give each key once",
            ],
        ),
        (
            "format: gangplan-plan/1\nstatus: fallback\nsolver: {path: greedy, seconds: 0, objective: 0, bound: null, gap: null, time_limit_hit: false}\nplacements: []\npreemptions: []\npending: [{job: giant, reason: x, kind: bogus}]\n",
            &[
                "pending[0].kind",
                "unknown variant `bogus`",
                "expected one of `unschedulable`, `unresolvable`, `unexplained`",
            ],
        ),
        (
            "format: gangplan-plan/1\nstatus: fallback\nsolver: {path: greedy, seconds: 0, objective: 0, bound: null, gap: null, time_limit_hit: false}\nplacements: []\npreemptions: []\npending: []\nreservation: {job: giant, starts_in: -5, nodes: [h1]}\n",
            &[
                "reservation.starts_in",
                "`-5.0`",
                "expected seconds from the round, a finite number >= 0",
            ],
        ),
        (
            "format: gangplan-plan/1\nstatus: fallback\nsolver: {path: greedy, seconds: 0, objective: 0, bound: null, gap: null, time_limit_hit: false}\nplacements: []\npreemptions: []\npending: []\nreservations: [{job: giant, starts_in: .nan, nodes: [h1]}]\n",
            &["reservations[0].starts_in", "NaN", "a finite number >= 0"],
        ),
        ("", &["plan.json", "is empty"]),
    ];
    for (doc, expect) in cases {
        let plan = dir.path().join("plan.json");
        std::fs::write(&plan, doc).unwrap();
        let out = run(&["validate", q, plan.to_str().unwrap()]);
        assert_refused(&format!("plan {doc:?}"), &out, expect);
    }
    let out = run(&[
        "validate",
        q,
        dir.path().join("none.json").to_str().unwrap(),
    ]);
    assert_refused("missing plan", &out, &["none.json", "does not exist"]);
}

#[test]
fn bad_explain_and_whatif_values_name_their_flag() {
    let q = quickstart();
    let q = q.to_str().unwrap();
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["explain", q, "nosuch"],
            &[
                "JOB argument",
                "\"nosuch\"",
                "no pending job \"nosuch\"",
                "pass one of: llm-sft",
            ],
        ),
        (
            &["explain", q, "pretrain-1"],
            &["JOB argument", "running job", "pass one of: llm-sft"],
        ),
        (
            &["whatif", q, "--quota", "=5"],
            &["--quota", "\"=5\"", "empty tenant name", "e.g. prod=40"],
        ),
        (
            &["whatif", q, "--quota", "nobody=5"],
            &[
                "--quota nobody=5",
                "no tenant \"nobody\"",
                "use one of: research",
            ],
        ),
        (
            &["whatif", q, "--weight", "nobody=2"],
            &[
                "--weight nobody=2",
                "no tenant \"nobody\"",
                "use one of: research",
            ],
        ),
        (
            &["whatif", q, "--drain", "nosuch"],
            &[
                "--drain nosuch",
                "no node or rack",
                "pass a node (h1",
                "a rack (ra, rb)",
            ],
        ),
        (
            &["whatif", q, "--add-nodes", "nosuch:2"],
            &[
                "--add-nodes nosuch:2",
                "no hardware model",
                "use one of:",
                "dgx-h100",
            ],
        ),
    ];
    for (args, expect) in cases {
        let out = run(args);
        assert_refused(&format!("{args:?}"), &out, expect);
        let err = text(&out.stderr);
        assert!(
            !err.contains("invalid input"),
            "{args:?}: the flag is at fault, not the instance: {err}"
        );
    }
}

#[test]
fn clap_errors_carry_the_program_prefix() {
    for args in [
        &["frob"][..],
        &["solve"],
        &["solve", "x.yaml", "--frobnicate"],
    ] {
        let out = run(args);
        assert_refused(&format!("{args:?}"), &out, &[]);
        assert!(!text(&out.stderr).contains("\nerror:"));
    }
}

#[test]
fn plan_out_must_be_a_folder() {
    let dir = tempfile::tempdir().unwrap();
    let q = quickstart();
    let state = dir.path().join("state");
    let file = dir.path().join("existing");
    std::fs::write(&file, "kept\n").unwrap();
    let named = dir.path().join("myplan.json");
    for (out, expect) in [
        (&named, "names a file"),
        (&file, "is a file"),
        (&dir.path().join("plan.yaml"), "names a file"),
    ] {
        let o = run(&[
            "plan",
            "--instance",
            q.to_str().unwrap(),
            "--state-dir",
            state.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_refused(
            &format!("plan --out {}", out.display()),
            &o,
            &["--out", expect, "--out of plan is a folder", "plan.json"],
        );
    }
    assert!(!named.exists(), "no folder named like a file is made");
    assert!(
        !state.exists(),
        "nothing is done before the flags are checked"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "kept\n");
}

/// Run the binary, killing it (and failing) if it has not exited after `limit`.
fn run_with_watchdog(args: &[&str], limit: Duration) -> (Output, Duration) {
    let started = Instant::now();
    let mut child = Command::new(bin())
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            panic!("{args:?} still ran after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let wall = started.elapsed();
    (child.wait_with_output().unwrap(), wall)
}

/// 20,000 nodes sharing one 1,023-item `down` list through an alias: under 1 MB on disk, 20
/// million values once expanded. Refused at the alias that passes the bound, before expanding.
#[test]
fn aliases_that_expand_past_the_bound_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("aliases.yaml");
    let list: Vec<String> = (0..1023).map(|i| i.to_string()).collect();
    let mut text = format!(
        "nodes:\n  - name: n0\n    gpus: 1024\n    down: &d [{}]\n",
        list.join(", ")
    );
    for i in 1..20_000 {
        text.push_str(&format!("  - name: n{i}\n    gpus: 1024\n    down: *d\n"));
    }
    std::fs::write(&path, &text).unwrap();
    assert!(text.len() < 1_000_000);
    assert_solve_refuses(
        "alias expansion",
        &path,
        &["].down", "YAML aliases expand", "the limit is 1000000"],
    );
}

/// A UTF-8 byte-order mark before YAML or JSON is skipped, and CRLF line ends read alike.
#[test]
fn a_byte_order_mark_and_crlf_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = "nodes: [{name: a, gpus: 8}]\npending: [{id: j, gpus: 2}]\n";
    let json = r#"{"nodes": [{"name": "a", "gpus": 8}], "pending": [{"id": "j", "gpus": 2}]}"#;
    for (name, body) in [
        ("bom.yaml", format!("\u{feff}{yaml}")),
        ("bom.json", format!("\u{feff}{json}")),
        (
            "crlf.yaml",
            format!("\u{feff}{}", yaml.replace('\n', "\r\n")),
        ),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, body).unwrap();
        let out = run(&["solve", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out.stderr));
        let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(plan["placements"][0]["job"], "j", "{name}");
    }
}

/// A FIFO with no writer as the instance: `--time-limit 2` ends the command at the limit with
/// exit code 8 (time limit) and a message saying why, instead of blocking forever.
#[cfg(unix)]
#[test]
fn a_fifo_without_a_writer_ends_at_the_time_limit() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("instance.yaml");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let plan = dir.path().join("plan.json");
    let (out, wall) = run_with_watchdog(
        &[
            "solve",
            fifo.to_str().unwrap(),
            "--time-limit",
            "2",
            "--out",
            plan.to_str().unwrap(),
        ],
        Duration::from_secs(20),
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(8), "{err}");
    assert!(err.contains("not read within the time limit (2 s"), "{err}");
    assert!(err.contains("FIFO with no writer"), "{err}");
    assert!(wall < Duration::from_secs(6), "ended after {wall:?}");
    assert!(!plan.exists());
}
