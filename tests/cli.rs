//! The command line as users run it: solve, validate, gen, exit codes, atomic output.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn gangplan(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gangplan"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the binary runs")
}

fn quickstart() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("instances/quickstart.yaml")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).to_string()
}

#[test]
fn solve_prints_a_json_plan() {
    let out = gangplan(&["solve", quickstart().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert_eq!(plan["format"], "gangplan-plan/1");
    assert!(["optimal", "feasible", "fallback"].contains(&plan["status"].as_str().unwrap()));
    assert!(plan["metrics"]["gpus_total"].as_u64().unwrap() > 0);
}

#[test]
fn solve_writes_yaml_then_validate_accepts_it() {
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("plan.yaml");
    let out = gangplan(&[
        "solve",
        quickstart().to_str().unwrap(),
        "--out",
        out_path.to_str().unwrap(),
        "--format",
        "yaml",
        "--planner",
        "greedy",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty(), "nothing on stdout with --out");
    let plan: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(&out_path).unwrap()).unwrap();
    assert_eq!(plan["status"], "fallback");
    assert_eq!(plan["solver"]["path"], "greedy");
    // No temporary file is left beside the output.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    let v = gangplan(&[
        "validate",
        quickstart().to_str().unwrap(),
        out_path.to_str().unwrap(),
    ]);
    assert_eq!(
        v.status.code(),
        Some(0),
        "{}{}",
        text(&v.stdout),
        text(&v.stderr)
    );
    // The valid plan's objective, as the planner scored it, and its terms.
    let line = text(&v.stdout)
        .lines()
        .find(|l| l.starts_with("objective "))
        .map(str::to_string)
        .unwrap_or_else(|| panic!("no objective line: {}", text(&v.stdout)));
    let number = |after: &str| -> f64 {
        let rest = line
            .split(after)
            .nth(1)
            .unwrap_or_else(|| panic!("{after}: {line}"));
        rest.split_whitespace().next().unwrap().parse().unwrap()
    };
    let planned = plan["solver"]["objective"].as_f64().unwrap();
    assert!(
        (number("objective ") - planned).abs() < 1e-3,
        "{line} against {planned}"
    );
    let terms = number("value ")
        - [
            "spread",
            "preemption",
            "fairness",
            "packing",
            "fragmentation",
        ]
        .iter()
        .map(|t| number(&format!("- {t} ")))
        .sum::<f64>();
    assert!((terms - planned).abs() < 1e-3, "{line}");
}

#[test]
fn validate_rejects_a_tampered_plan_with_code_3() {
    let dir = tempfile::tempdir().unwrap();
    let plan_path = dir.path().join("plan.json");
    let out = gangplan(&[
        "solve",
        quickstart().to_str().unwrap(),
        "--out",
        plan_path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let mut plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&plan_path).unwrap()).unwrap();
    // Give the first placed job's GPUs to the second as well.
    let first = plan["placements"][0]["gpus"].clone();
    plan["placements"][1]["gpus"] = first;
    std::fs::write(&plan_path, serde_json::to_string(&plan).unwrap()).unwrap();
    let v = gangplan(&[
        "validate",
        quickstart().to_str().unwrap(),
        plan_path.to_str().unwrap(),
    ]);
    assert_eq!(v.status.code(), Some(3), "{}", text(&v.stdout));
    assert!(text(&v.stdout).contains("rule"), "{}", text(&v.stdout));
}

#[test]
fn validate_holds_a_reservation_to_a_waiting_job_and_the_instances_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let plan_path = dir.path().join("plan.json");
    let q = quickstart();
    let q = q.to_str().unwrap();
    let out = gangplan(&[
        "solve",
        q,
        "--planner",
        "greedy",
        "--out",
        plan_path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&plan_path).unwrap()).unwrap();
    let validate = |reservation: serde_json::Value| {
        let mut p = plan.clone();
        p["reservation"] = reservation;
        std::fs::write(&plan_path, serde_json::to_string(&p).unwrap()).unwrap();
        gangplan(&["validate", q, plan_path.to_str().unwrap()])
    };
    // giant waits in this plan: nodes of the instance may be held for it.
    let fine = validate(serde_json::json!({"job": "giant", "starts_in": 40, "nodes": ["h1"]}));
    assert_eq!(fine.status.code(), Some(0), "{}", text(&fine.stdout));
    let v = validate(serde_json::json!({"job": "ghost", "starts_in": 5, "nodes": ["zz"]}));
    let lines = text(&v.stdout);
    assert_eq!(v.status.code(), Some(3), "{lines}");
    assert!(
        lines.contains(
            "rule 9: reservation for job \"ghost\": the job is not listed in the plan's pending"
        ),
        "{lines}"
    );
    assert!(
        lines.contains("node \"zz\" is not a node of the instance"),
        "{lines}"
    );
    // A placed job waits for nothing.
    let placed = plan["placements"][0]["job"].as_str().unwrap().to_string();
    let v = validate(serde_json::json!({"job": placed, "starts_in": 5, "nodes": ["h1"]}));
    assert_eq!(v.status.code(), Some(3), "{}", text(&v.stdout));
}

#[test]
fn bad_instance_exits_2_names_the_field_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "nodes:\n  - {name: n1, gpus: 8}\npending:\n  - {id: a, gpus: 2, within: galaxy}\n",
    )
    .unwrap();
    let out_path = dir.path().join("plan.json");
    let out = gangplan(&[
        "solve",
        bad.to_str().unwrap(),
        "--out",
        out_path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("pending[0].within")
            && err.contains("galaxy")
            && err.contains("node, rack, pod"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(!out_path.exists());
}

#[test]
fn typo_in_a_field_name_is_an_error_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("typo.yaml");
    std::fs::write(
        &bad,
        "nodes:\n  - name: n1\n    gpus: 8\n    gpu_typ: H100\n",
    )
    .unwrap();
    let out = gangplan(&["solve", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("nodes[0]") && err.contains("gpu_typ") && err.contains("line"),
        "{err}"
    );
}

#[test]
fn bad_flags_exit_2() {
    assert_eq!(
        gangplan(&[
            "solve",
            quickstart().to_str().unwrap(),
            "--time-limit",
            "-1"
        ])
        .status
        .code(),
        Some(2)
    );
    assert_eq!(
        gangplan(&["solve", quickstart().to_str().unwrap(), "--gap", "2"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        gangplan(&[
            "solve",
            quickstart().to_str().unwrap(),
            "--planner",
            "magic"
        ])
        .status
        .code(),
        Some(2)
    );
    assert_eq!(
        gangplan(&["solve", "does-not-exist.yaml"]).status.code(),
        Some(2)
    );
}

#[test]
fn help_teaches_exit_codes() {
    let out = gangplan(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    let h = text(&out.stdout);
    assert!(
        h.contains("Exit codes")
            && h.contains("solve")
            && h.contains("validate")
            && h.contains("gen"),
        "{h}"
    );
}

#[test]
fn gen_is_deterministic_and_solvable() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.yaml");
    let b = dir.path().join("b.yaml");
    for p in [&a, &b] {
        let out = gangplan(&[
            "gen",
            "--nodes",
            "12",
            "--pending",
            "20",
            "--seed",
            "3",
            "--out",
            p.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    let out = gangplan(&["solve", a.to_str().unwrap(), "--time-limit", "5"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn write_model_writes_an_lp_file() {
    let dir = tempfile::tempdir().unwrap();
    let lp = dir.path().join("round.lp");
    let out = gangplan(&[
        "solve",
        quickstart().to_str().unwrap(),
        "--write-model",
        lp.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let model = std::fs::read_to_string(&lp).expect("the model file exists");
    assert!(
        model.to_lowercase().contains("max"),
        "an LP file of a maximisation"
    );
    let bad = gangplan(&[
        "solve",
        quickstart().to_str().unwrap(),
        "--write-model",
        dir.path().join("x.txt").to_str().unwrap(),
    ]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn mip_flags_with_a_planner_that_solves_no_mip_say_so() {
    let q = quickstart();
    let solve = |planner: &str, flags: &[&str]| {
        let mut args = vec!["solve", q.to_str().unwrap(), "--planner", planner];
        args.extend_from_slice(flags);
        let out = gangplan(&args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stderr)
    };
    let flags = ["--gap", "0.05", "--formulation", "per-node"];
    let err = solve("greedy", &flags);
    for flag in ["--gap 0.05", "--formulation per-node"] {
        assert!(
            err.contains(&format!("{flag}: the greedy planner solves no MIP")),
            "{err}"
        );
    }
    // The ILP uses them, and `auto` is the default: no note.
    assert!(!solve("ilp", &flags).contains("solves no MIP"));
    assert!(!solve("fifo", &["--formulation", "auto"]).contains("solves no MIP"));
}

#[test]
fn write_model_with_a_planner_that_builds_none_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let lp = dir.path().join("round.lp");
    let q = quickstart();
    for planner in ["greedy", "fifo"] {
        let args = [
            "solve",
            q.to_str().unwrap(),
            "--planner",
            planner,
            "--write-model",
            lp.to_str().unwrap(),
        ];
        let out = gangplan(&args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert!(!lp.exists(), "{planner}: no model is built");
        assert!(
            err.contains(&format!(
                "the {planner} planner builds no model, so nothing is written there"
            )),
            "{planner}: {err}"
        );
        // A note, like the others: -q keeps stderr empty.
        let mut quiet = vec!["-q"];
        quiet.extend_from_slice(&args);
        let out = gangplan(&quiet);
        assert_eq!(out.status.code(), Some(0));
        assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
    }
}

#[test]
fn an_os_error_is_printed_once() {
    let out = gangplan(&[
        "solve",
        quickstart().to_str().unwrap(),
        "--out",
        "/nonexistent-dir-of-gangplan/plan.json",
        "--planner",
        "greedy",
    ]);
    assert_eq!(out.status.code(), Some(6), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.starts_with("gangplan: error: "), "{err}");
    assert_eq!(err.matches("(os error 2)").count(), 1, "{err}");
}

#[test]
fn bench_refuses_more_copies_than_it_measures() {
    let out = gangplan(&["bench", "--sizes", "small", "--replicas", "100000"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("--replicas: 100000 copies asked; at most 400"));
}

#[test]
fn bench_checks_every_size_before_printing() {
    for sizes in ["2k", "1k,2k"] {
        let out = gangplan(&["bench", "--sizes", sizes]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
        assert!(out.stdout.is_empty(), "{sizes}: {}", text(&out.stdout));
        assert!(text(&out.stderr).contains("--sizes: unknown size \"2k\""));
    }
}

/// `bench --replicas K`: a row of K copies of a small round, compared with K copies of its
/// best plan; the copies' bound holds that known plan too.
#[test]
fn bench_replicas_compare_the_copies_with_copies_of_the_best_small_plan() {
    let dir = tempfile::tempdir().unwrap();
    let round = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("instances/bench/pollux-w1-replay-round197.json");
    std::fs::copy(&round, dir.path().join("saved.json")).unwrap();
    // A round whose best plan scores below zero: its copies' row gives the difference.
    let negative = Path::new(env!("CARGO_MANIFEST_DIR")).join("instances/explain/prices.yaml");
    std::fs::copy(&negative, dir.path().join("negative.yaml")).unwrap();
    let folder = dir.path().to_str().unwrap();
    let args = [
        "bench",
        "--instances",
        folder,
        "--time-limit",
        "1",
        "--exact-seconds",
        "2",
    ];
    let out = gangplan(&[&args[..], &["--replicas", "3"]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    let cells = |name: &str| -> Vec<String> {
        let row = table
            .lines()
            .find(|l| l.starts_with(&format!("| {name} |")));
        let row = row.unwrap_or_else(|| panic!("no {name} row: {table}"));
        row.split('|').map(|c| c.trim().to_string()).collect()
    };
    let (small, copies) = (cells("saved"), cells("saved x3"));
    let nodes: usize = small[2].parse().unwrap();
    assert_eq!(copies[2], (3 * nodes).to_string(), "{table}");
    // `0.99.. (against 3 copies of the best small plan: 57.0)`
    let column = &copies[11];
    let known: f64 = column
        .split("plan: ")
        .nth(1)
        .and_then(|x| x.trim_end_matches(')').parse().ok())
        .unwrap_or_else(|| panic!("{column}"));
    let (objective, bound): (f64, f64) = (copies[6].parse().unwrap(), copies[7].parse().unwrap());
    assert!(
        known > 0.0 && bound + 0.05 >= known,
        "bound {bound} below a known plan {known}"
    );
    assert!(objective > 0.0 && objective <= bound + 0.05, "{table}");
    let below_zero = cells("negative x3");
    assert!(
        below_zero[11].contains(" over (against 3 copies of the best small plan: -"),
        "{table}"
    );
    let without = gangplan(&args);
    assert!(
        !text(&without.stdout).contains(" x3 |"),
        "{}",
        text(&without.stdout)
    );
}

#[test]
fn status_words_are_lowercase_in_bench_and_logs() {
    let out = gangplan(&["bench", "--sizes", "1k", "--time-limit", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    let row = table
        .lines()
        .find(|l| l.starts_with("| 1k"))
        .expect("a 1k row");
    assert!(
        ["| optimal |", "| feasible |", "| fallback |"]
            .iter()
            .any(|w| row.contains(w)),
        "{row}"
    );
    // The waiting jobs left unexplained, of all waiting jobs: at most all of them.
    assert!(table.contains("| unexplained / waiting |"), "{table}");
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    let counts: Vec<u32> = cells[cells.len() - 3]
        .split(" / ")
        .map(|x| x.parse().unwrap())
        .collect();
    assert!(counts.len() == 2 && counts[0] <= counts[1], "{row}");
    let dir = tempfile::tempdir().unwrap();
    let out = gangplan(&[
        "plan",
        "--instance",
        quickstart().to_str().unwrap(),
        "--state-dir",
        dir.path().join("state").to_str().unwrap(),
        "--out",
        dir.path().join("out").to_str().unwrap(),
        "--planner",
        "greedy",
        "--log-format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("\"status\":\"fallback\""),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn the_lock_message_names_the_holder_not_the_last_round() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let out_dir = dir.path().join("out");
    let q = quickstart();
    let args = [
        "plan",
        "--instance",
        q.to_str().unwrap(),
        "--state-dir",
        state.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "--planner",
        "greedy",
    ];
    let first = Command::new(env!("CARGO_BIN_EXE_gangplan"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let first_pid = first.id();
    let first = first.wait_with_output().unwrap();
    assert_eq!(first.status.code(), Some(0));
    let held = gangplan::cron::RoundLock::acquire(&state.join("lock")).unwrap();
    let out = gangplan(&args);
    drop(held);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(
        err.starts_with("gangplan: error: another planning round holds the lock"),
        "{err}"
    );
    assert!(
        err.contains(&format!("(pid {})", std::process::id())),
        "{err}"
    );
    assert!(!err.contains(&format!("pid {first_pid})")), "{err}");
}

#[test]
fn whatif_says_when_added_nodes_create_a_rack() {
    let q = quickstart();
    let q = q.to_str().unwrap();
    let new_rack = gangplan(&[
        "whatif",
        q,
        "--add-nodes",
        "dgx-h100:1@newrack",
        "--time-limit",
        "2",
    ]);
    assert_eq!(
        new_rack.status.code(),
        Some(0),
        "{}",
        text(&new_rack.stderr)
    );
    let first = text(&new_rack.stdout)
        .lines()
        .next()
        .unwrap_or("")
        .to_string();
    assert!(first.contains("in rack newrack"), "{first}");
    assert!(first.contains("creates rack newrack"), "{first}");
    let known = gangplan(&[
        "whatif",
        q,
        "--add-nodes",
        "dgx-h100:1@ra",
        "--time-limit",
        "2",
    ]);
    assert_eq!(known.status.code(), Some(0), "{}", text(&known.stderr));
    assert!(!text(&known.stdout).contains("creates rack"));
}

#[test]
fn whatif_adds_nodes_without_a_rack_to_the_unnamed_racks_pod() {
    // The nodes that give no rack share the unnamed rack, here in pod p0: an added node
    // without @RACK joins that rack, so it must join p0 too (a rack belongs to one pod).
    let dir = tempfile::tempdir().unwrap();
    let inst = dir.path().join("pod.yaml");
    std::fs::write(
        &inst,
        "nodes:\n  - {name: a, gpus: 1, pod: p0}\n  - {name: b, gpus: 1, rack: \"\", pod: p0}\npending:\n  - {id: j, gpus: 2}\n",
    )
    .unwrap();
    let out = gangplan(&[
        "whatif",
        inst.to_str().unwrap(),
        "--add-nodes",
        "dgx-h100:1",
        "--time-limit",
        "2",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("add 1 x dgx-h100"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn every_out_flag_says_file_or_folder() {
    for (cmd, expect) in [
        (
            &["solve"][..],
            &["Output file", "`-` or absent: stdout"][..],
        ),
        (&["gen"], &["Output file", "`-` or absent: stdout"]),
        (&["discover"], &["Output file", "`-` or absent: stdout"]),
        (&["plan"], &["Output folder", "not a file"]),
        (&["compare"], &["Output folder", "not a file"]),
        (&["simulate"], &["Output file for the report"]),
    ] {
        let mut args = cmd.to_vec();
        args.push("--help");
        let out = gangplan(&args);
        assert_eq!(out.status.code(), Some(0), "{cmd:?}");
        let help = text(&out.stdout)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        for e in expect {
            assert!(help.contains(e), "{cmd:?} --help: expected {e:?} in {help}");
        }
    }
}

#[test]
fn gen_out_dash_is_stdout() {
    let out = gangplan(&["gen", "--nodes", "2", "--pending", "2", "--out", "-"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("nodes:"));
    assert!(!Path::new(env!("CARGO_MANIFEST_DIR")).join("-").exists());
}

#[test]
fn gen_writes_json_to_a_json_file_and_yaml_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    for (name, starts) in [("r.json", "{"), ("r.JSON", "{"), ("r.yaml", "nodes:")] {
        let path = dir.path().join(name);
        let out = gangplan(&["gen", "--nodes", "2", "--out", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let written = std::fs::read_to_string(&path).unwrap();
        assert!(written.starts_with(starts), "{name}: {written}");
    }
}

#[test]
fn gen_help_says_what_it_makes() {
    let out = gangplan(&["gen", "--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = text(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        help.contains("`--nodes 32` gives 32 DGX H100 nodes"),
        "{help}"
    );
    assert!(
        help.contains("mixed GPU types need more than 3 racks"),
        "{help}"
    );
    let made = gangplan(&["gen", "--nodes", "32"]);
    let yaml = text(&made.stdout);
    assert_eq!(
        yaml.matches("model: dgx-h100").count(),
        32,
        "as the help says"
    );
}

/// Completions and the man page come from the clap definitions: every subcommand is in them.
#[test]
fn completions_and_man_page_name_every_subcommand() {
    let subcommands = [
        "solve", "validate", "gen", "explain", "whatif", "simulate", "compare", "bench",
        "discover", "plan", "slurm",
    ];
    for shell in ["bash", "zsh", "fish"] {
        let out = gangplan(&["completions", shell]);
        assert!(out.status.success(), "{shell}: {out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        for s in subcommands {
            assert!(text.contains(s), "{shell} completions lack {s}");
        }
    }
    let out = gangplan(&["man"]);
    assert!(out.status.success());
    let page = String::from_utf8(out.stdout).unwrap();
    assert!(
        page.starts_with(".ie") || page.contains(".TH gangplan"),
        "{}",
        &page[..page.len().min(200)]
    );
    for s in subcommands {
        assert!(page.contains(s), "man page lacks {s}");
    }
    let bad = gangplan(&["completions", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2));
}

/// `-q` keeps notes off stderr (errors stay); `-v` turns on the planning phases' debug logs.
#[test]
fn quiet_and_verbose_set_what_goes_to_stderr() {
    let q = quickstart();
    let q = q.to_str().unwrap();
    // A limit too short for the MIP: the plan falls back to greedy, and a note says why.
    let normal = gangplan(&["solve", q, "--time-limit", "0.000001"]);
    let quiet = gangplan(&["-q", "solve", q, "--time-limit", "0.000001"]);
    assert_eq!(normal.status.code(), Some(0), "{}", text(&normal.stderr));
    assert!(
        text(&normal.stderr).contains("gangplan:"),
        "a cut round notes why: {}",
        text(&normal.stderr)
    );
    assert_eq!(quiet.status.code(), Some(0));
    assert!(
        text(&quiet.stderr).is_empty(),
        "-q: {}",
        text(&quiet.stderr)
    );
    let placements = |o: &std::process::Output| {
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["placements"].clone()
    };
    assert_eq!(
        placements(&normal),
        placements(&quiet),
        "-q changes no plan"
    );
    let bad = gangplan(&["-q", "solve", "/nonexistent.yaml"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        text(&bad.stderr).starts_with("gangplan: error:"),
        "{}",
        text(&bad.stderr)
    );
    let verbose = gangplan(&["-v", "solve", q]);
    assert_eq!(verbose.status.code(), Some(0));
    assert!(
        text(&verbose.stderr).contains("DEBUG"),
        "{}",
        text(&verbose.stderr)
    );
    let both = gangplan(&["-q", "-v", "solve", q]);
    assert_eq!(both.status.code(), Some(2), "-q and -v conflict");
}

/// `solve --format table` prints the table for people; `--out -` is stdout.
#[test]
fn solve_prints_a_table_and_out_dash_is_stdout() {
    let q = quickstart();
    let q = q.to_str().unwrap();
    let table = gangplan(&["solve", q, "--format", "table", "--out", "-"]);
    assert_eq!(table.status.code(), Some(0), "{}", text(&table.stderr));
    let out = text(&table.stdout);
    let first = out.lines().next().unwrap_or("");
    assert!(
        first.starts_with("JOB") && first.contains("REASON"),
        "{out}"
    );
    assert!(
        out.contains("h2:0-7 h4:0-7") && out.contains("preempt"),
        "{out}"
    );
    assert!(
        out.lines()
            .last()
            .unwrap_or("")
            .starts_with("round: 8 placed"),
        "{out}"
    );
    let json = gangplan(&["solve", q, "--out", "-"]);
    let plan: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON on stdout");
    assert_eq!(plan["format"], "gangplan-plan/1");
    assert!(!std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("-")
        .exists());
}

/// Solve `instance` (written to a temporary file), check that the plan starts nothing and
/// passes `validate`, then replace its placements and preemptions with the given ones (no job
/// left pending) and run `validate` on that plan.
fn validate_a_hand_edited_plan(
    instance: &str,
    placements: serde_json::Value,
    preemptions: serde_json::Value,
) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let inst = dir.path().join("round.yaml");
    std::fs::write(&inst, instance).unwrap();
    let validate = |plan: &str| {
        let path = dir.path().join("plan.json");
        std::fs::write(&path, plan).unwrap();
        gangplan(&["validate", inst.to_str().unwrap(), path.to_str().unwrap()])
    };
    let out = gangplan(&["solve", inst.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mut plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["placements"].as_array().unwrap().len(), 0);
    assert_eq!(validate(&text(&out.stdout)).status.code(), Some(0));
    plan["placements"] = placements;
    plan["preemptions"] = preemptions;
    plan["pending"] = serde_json::json!([]);
    validate(&plan.to_string())
}

/// A node already over its CPU (a running job holds 8 of its 1 CPU): preempting that job
/// does not make room beyond the node's capacity, so a plan that puts a job of 2.7 CPU there
/// breaks rule 7, while leaving the node alone does not.
#[test]
fn validate_holds_a_job_placed_on_a_node_over_capacity_to_its_capacity() {
    let v = validate_a_hand_edited_plan(
        "nodes:\n  - {name: x0, gpus: 16}\n  - {name: x1, gpus: 2, cpu_milli: 1000}\n\
         running:\n  - {id: big, gpus: {x0: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15]}}\n\
         \x20 - {id: hog, gpus: {x1: [1]}, cpu_milli: 8000, preemptible: true}\n\
         pending:\n  - {id: j, gpus: 3, cpu_milli: 4000, priority: 1000}\n",
        serde_json::json!([{"job": "j", "gpus": {"x0": [10], "x1": [0, 1]}}]),
        serde_json::json!([{"job": "hog", "reason": "frees 1 GPU on x1 for j"}]),
    );
    assert_eq!(v.status.code(), Some(3), "{}", text(&v.stdout));
    assert!(
        text(&v.stdout).contains("rule 7: node x1"),
        "{}",
        text(&v.stdout)
    );
}

/// A GPU a running sharer held before the round stays shared for the round: preempting the
/// sharer does not let a whole-GPU job take it (rule 3), which is what the planners and their
/// bounds assume.
#[test]
fn validate_keeps_a_gpu_shared_before_the_round_from_a_whole_gpu_job() {
    let v = validate_a_hand_edited_plan(
        "nodes:\n  - {name: a, gpus: 1}\n\
         running:\n  - {id: r1, gpus: {a: [0]}, gpu_milli: 500, preemptible: true}\n\
         pending:\n  - {id: c, gpus: 1, priority: 9}\n",
        serde_json::json!([{"job": "c", "gpus": {"a": [0]}}]),
        serde_json::json!([{"job": "r1", "reason": "frees 1 GPU on a for c"}]),
    );
    assert_eq!(v.status.code(), Some(3), "{}", text(&v.stdout));
    assert!(
        text(&v.stdout).contains("rule 3: GPU a:0 was shared before the round"),
        "{}",
        text(&v.stdout)
    );
}

/// A reader of the plan that goes away before it is written (`gangplan solve ... | head -0`)
/// ends the command by SIGPIPE, as any Unix tool ends, not by a failed print reported as a bug.
#[test]
fn a_reader_that_goes_away_ends_the_command_by_sigpipe() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_gangplan"))
        .args(["solve", "instances/quickstart.yaml", "--time-limit", "5"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("it ends");
    let err = text(&out.stderr);
    assert_eq!(out.status.signal(), Some(13), "{:?}: {err}", out.status);
    assert!(!err.contains("internal error"), "{err}");
}
