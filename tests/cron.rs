//! The planning cron without a cluster: Slurm state from recorded command output (fed through
//! the `SlurmCli` trait), the conventions, the actions a plan turns into, stability across
//! rounds, the round lock, metrics and the Kubernetes bindings.

use gangplan::adapters::slurm::admission::{
    admitted_pending, offered_room, read_withdrawn, restamp, Admission,
};
use gangplan::adapters::slurm::apply::{apply_actions, note_actions, round_actions};
use gangplan::adapters::slurm::notes::waiting_note;
use gangplan::adapters::slurm::parse::gpu_gres;
use gangplan::adapters::slurm::site::{parse_qos, parse_sshare, SitePolicy};
use gangplan::adapters::slurm::{
    build_round, plan_actions, Action, Conventions, SlurmCli, SlurmError, Snapshot,
};
use gangplan::cron::k8s;
use gangplan::cron::memory::Released;
use gangplan::cron::round::plan_with_memory;
use gangplan::cron::stability::stabilize;
use gangplan::cron::{Memory, RoundLock};
use gangplan::hardware::ModelLibrary;
use gangplan::instance::{parse_instance, validate::validate};
use gangplan::plan::PlanReservation;
use gangplan::round::plan_round;
use gangplan::solve::PlannerKind;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/slurm");

/// Answers read commands from recorded files and records every command it is given.
struct Recorded {
    calls: Mutex<Vec<String>>,
    fail_on: Option<String>,
}

impl Recorded {
    fn new() -> Self {
        Recorded {
            calls: Mutex::new(Vec::new()),
            fail_on: None,
        }
    }
}

impl SlurmCli for Recorded {
    fn run(&self, program: &str, args: &[String]) -> Result<String, SlurmError> {
        let line = std::iter::once(program.to_string())
            .chain(args.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ");
        self.calls.lock().unwrap().push(line.clone());
        if self.fail_on.as_deref().is_some_and(|f| line.contains(f)) {
            return Err(SlurmError::Command {
                command: line,
                status: "exit status: 1".into(),
                stderr: "slurm_update error: Invalid job id specified".into(),
            });
        }
        let file = match line.as_str() {
            "squeue --json" => "squeue.json",
            "sinfo --json" => "sinfo.json",
            "scontrol -o show partition" => "partitions.txt",
            "scontrol show topology" => "topology.txt",
            _ => return Ok(String::new()),
        };
        Ok(std::fs::read_to_string(Path::new(FIX).join(file)).expect("fixture"))
    }
}

fn snapshot() -> Snapshot {
    // The recorded cluster was read at this time (a little after its last submission).
    Snapshot::read(&Recorded::new(), 1_795_983_400).expect("recorded state parses")
}

/// The recorded cluster: 4 nodes x 8 GPUs in racks rack1 (node1-2) and rack2 (node3-4);
/// running: 6 (node3, 4 GPUs), 7 (node1+node2, 8 each), 9 (node4, 4 GPUs, comment
/// "preemptible ckpt"); held: 8 (no GPUs), 10 (partition urgent, -N1 gpu:8),
/// 11 (nice 10, -N2 gpu:8).
#[test]
fn recorded_state_becomes_a_valid_instance_with_the_documented_conventions() {
    let snap = snapshot();
    let round = build_round(&snap, &Conventions::default(), &BTreeMap::new()).unwrap();
    let raw = &round.raw;
    assert_eq!(raw.nodes.len(), 4);
    let racks: Vec<_> = raw.nodes.iter().map(|n| n.rack.clone().unwrap()).collect();
    assert_eq!(racks, ["rack1", "rack1", "rack2", "rack2"]);
    assert!(raw
        .nodes
        .iter()
        .all(|n| n.gpus == Some(8) && n.down.is_empty()));

    let run = |id: &str| raw.running.iter().find(|r| r.id == id).unwrap();
    assert_eq!(
        run("6").gpus,
        BTreeMap::from([("node3".to_string(), vec![0, 1, 2, 3])])
    );
    assert_eq!(run("7").gpus.len(), 2);
    assert!(run("9").preemptible);
    assert!(!run("6").preemptible);
    assert_eq!(run("9").tenant.as_deref(), Some("acct2"));
    assert_eq!(run("6").tenant.as_deref(), Some("acct1"));
    assert_eq!(run("7").tenant.as_deref(), Some("default"));

    let pend = |id: &str| raw.pending.iter().find(|p| p.id == id).unwrap();
    assert_eq!((pend("10").gpus, pend("10").gpus_per_node), (8, Some(8)));
    assert_eq!((pend("11").gpus, pend("11").gpus_per_node), (16, Some(8)));
    // Ranks: urgent (tier 10) above gpu (tier 1); nice 10 below nice 0; dense from 0.
    assert!(pend("10").priority > run("9").priority);
    assert!(pend("11").priority < run("9").priority);
    assert_eq!(pend("11").priority, 0);
    assert!(round
        .ignored
        .iter()
        .any(|(id, why)| id == "8" && why.contains("no GPUs")));
    assert!(!raw.pending.iter().any(|p| p.id == "8"));
    validate(raw, &ModelLibrary::builtin()).expect("valid instance");
}

#[test]
fn plan_preempts_the_preemptible_job_and_pins_the_urgent_one() {
    let snap = snapshot();
    let round = build_round(&snap, &Conventions::default(), &BTreeMap::new()).unwrap();
    let inst = validate(&round.raw, &ModelLibrary::builtin()).unwrap();
    let plan = plan_round(inst, PlannerKind::Ilp, None).unwrap();
    let actions = plan_actions(&round, &plan).unwrap();
    assert_eq!(
        actions,
        vec![
            Action::Preempt { job: "9".into() },
            Action::Start {
                job: "10".into(),
                nodes: vec!["node4".into()],
                exclude: vec!["node1".into(), "node2".into(), "node3".into()],
                clear_begin: false,
                clear_note: false,
                expected_in: None,
                repin: false,
            },
        ]
    );
    assert!(plan.pending.iter().any(|p| p.job == "11"));
    // The exact commands, as argument vectors.
    let cli = Recorded::new();
    for a in &actions {
        a.run(&cli).unwrap();
    }
    assert_eq!(
        *cli.calls.lock().unwrap(),
        vec![
            "scontrol requeuehold 9",
            "scontrol update JobId=10 NodeList=node4 ExcNodeList=node1,node2,node3",
            "scontrol release 10",
        ]
    );
}

#[test]
fn a_failing_command_stops_the_action() {
    let cli = Recorded {
        calls: Mutex::new(Vec::new()),
        fail_on: Some("update".into()),
    };
    let a = Action::Start {
        job: "10".into(),
        nodes: vec!["node4".into()],
        exclude: vec![],
        clear_begin: true,
        clear_note: false,
        expected_in: None,
        repin: false,
    };
    let e = a.run(&cli).unwrap_err();
    assert!(e.to_string().contains("Invalid job id"), "{e}");
    // The release never ran after the failed pin.
    assert_eq!(cli.calls.lock().unwrap().len(), 1);
    assert!(cli.calls.lock().unwrap()[0].ends_with("StartTime=now"));
}

#[test]
fn unsafe_ids_and_names_never_reach_slurm() {
    for a in [
        Action::Preempt {
            job: "9;reboot".into(),
        },
        Action::Start {
            job: "10".into(),
            nodes: vec!["node1,node2".into()],
            exclude: vec![],
            clear_begin: false,
            clear_note: false,
            expected_in: None,
            repin: false,
        },
        Action::Start {
            job: "10".into(),
            nodes: vec!["node1".into()],
            exclude: vec!["n ExcNodeList=x".into()],
            clear_begin: false,
            clear_note: false,
            expected_in: None,
            repin: false,
        },
    ] {
        let cli = Recorded::new();
        assert!(a.run(&cli).is_err(), "{a:?}");
        assert!(cli.calls.lock().unwrap().is_empty());
    }
}

/// Held jobs left pending get their reason in their admin comment (not over an operator's
/// own comment, not again when it is already there); a started job's note is cleared on
/// release, and a running job that still carries one gets it cleared.
#[test]
fn reasons_go_into_the_admin_comment_and_are_cleared_on_start() {
    let mut snap = snapshot();
    let held = |snap: &mut Snapshot, id: u64, text: &str| {
        snap.jobs
            .iter_mut()
            .find(|j| j.id == id)
            .unwrap()
            .admin_comment = text.into();
    };
    held(&mut snap, 10, "gangplan: held at submission");
    held(&mut snap, 6, "gangplan: waiting: old");
    let round = build_round(&snap, &Conventions::default(), &BTreeMap::new()).unwrap();
    let inst = validate(&round.raw, &ModelLibrary::builtin()).unwrap();
    let plan = plan_round(inst, PlannerKind::Ilp, None).unwrap();
    let notes = note_actions(&round, &plan);
    let reason = &plan.pending.iter().find(|p| p.job == "11").unwrap().reason;
    assert_eq!(
        notes,
        vec![
            Action::Note {
                job: "11".into(),
                text: waiting_note(reason),
            },
            Action::Note {
                job: "6".into(),
                text: String::new(),
            },
        ]
    );
    assert!(
        waiting_note(reason).starts_with("gangplan: waiting: "),
        "{}",
        waiting_note(reason)
    );
    assert!(waiting_note(reason).ends_with(reason.as_str()));
    let cli = Recorded::new();
    notes[0].run(&cli).unwrap();
    assert_eq!(
        cli.calls.lock().unwrap()[0],
        format!(
            "scontrol update JobId=11 AdminComment={}",
            waiting_note(reason)
        )
    );
    // The start of job 10 clears the submission note in the same update.
    let start = plan_actions(&round, &plan).unwrap().pop().unwrap();
    assert!(
        matches!(
            start,
            Action::Start {
                clear_note: true,
                ..
            }
        ),
        "{start:?}"
    );
    let cli = Recorded::new();
    start.run(&cli).unwrap();
    assert!(cli.calls.lock().unwrap()[0].ends_with(" AdminComment="));

    // The same note again changes nothing; an operator's comment is never overwritten.
    held(&mut snap, 11, &waiting_note(reason));
    let round = build_round(&snap, &Conventions::default(), &BTreeMap::new()).unwrap();
    assert_eq!(
        note_actions(&round, &plan).len(),
        1,
        "only the clear of job 6"
    );
    held(&mut snap, 11, "ops: do not start before the maintenance");
    let round = build_round(&snap, &Conventions::default(), &BTreeMap::new()).unwrap();
    assert_eq!(note_actions(&round, &plan).len(), 1);
    assert!(waiting_note(&"x".repeat(1000)).chars().count() <= 240);
    assert!(!waiting_note("a\nb").contains('\n'));
}

/// A waiting note is rewritten when its words change, not when only its numbers do; a round
/// writes at most `--notes-per-round` notes, after its starts.
#[test]
fn notes_are_rewritten_for_new_words_only_and_each_round_writes_a_bounded_number() {
    let mut snap = snapshot();
    let note_on = |snap: &mut Snapshot, id: u64, text: &str| {
        snap.jobs
            .iter_mut()
            .find(|j| j.id == id)
            .unwrap()
            .admin_comment = text.into();
    };
    let round = build_round(&snap, &Conventions::default(), &BTreeMap::new()).unwrap();
    let inst = validate(&round.raw, &ModelLibrary::builtin()).unwrap();
    let plan = plan_round(inst, PlannerKind::Ilp, None).unwrap();
    let reason = plan
        .pending
        .iter()
        .find(|p| p.job == "11")
        .unwrap()
        .reason
        .clone();
    assert!(reason.chars().any(|c| c.is_ascii_digit()), "{reason}");
    let notes_after = |snap: &Snapshot| {
        let round = build_round(snap, &Conventions::default(), &BTreeMap::new()).unwrap();
        note_actions(&round, &plan)
    };

    // The same words with other numbers (an earlier round's counts): not written again.
    let renumbered: String = reason
        .chars()
        .map(|c| if c.is_ascii_digit() { '7' } else { c })
        .collect();
    note_on(&mut snap, 11, &waiting_note(&renumbered));
    assert_eq!(notes_after(&snap), vec![]);
    // Other words: written.
    note_on(
        &mut snap,
        11,
        &waiting_note("needs 16 GPUs; the cluster has only 8 usable"),
    );
    assert_eq!(
        notes_after(&snap),
        vec![Action::Note {
            job: "11".into(),
            text: waiting_note(&reason),
        }]
    );

    // The bound: starts and preemptions always, notes up to the limit.
    let round = build_round(&snap, &Conventions::default(), &BTreeMap::new()).unwrap();
    let is_note = |a: &Action| matches!(a, Action::Note { .. });
    let with = |limit| round_actions(&round, &plan, &BTreeMap::new(), 0, 300, limit, true).unwrap();
    let none = with(Some(0));
    assert_eq!(none, plan_actions(&round, &plan).unwrap());
    assert!(!none.iter().any(is_note));
    let all = with(None);
    assert_eq!(all.len(), none.len() + 1);
    assert!(
        all.last().is_some_and(is_note),
        "notes come after the starts: {all:?}"
    );
    assert_eq!(with(Some(1)), all);
}

#[test]
fn released_jobs_not_yet_started_are_reservations() {
    let mut snap = snapshot();
    // Job 10 was released onto node4 last round and waits there (not held any more).
    let j = snap.jobs.iter_mut().find(|j| j.id == 10).unwrap();
    j.reason = "Resources".into();
    let released = BTreeMap::from([(
        "10".to_string(),
        Released::new(vec!["node4".to_string()], 0, None),
    )]);
    let round = build_round(&snap, &Conventions::default(), &released).unwrap();
    assert_eq!(round.in_flight, vec!["10".to_string()]);
    let r = round.raw.running.iter().find(|r| r.id == "10").unwrap();
    assert!(!r.preemptible);
    // node4 has GPUs 0-3 held by job 9: the reservation takes the other four.
    assert_eq!(r.gpus["node4"], vec![4, 5, 6, 7]);
    assert!(!round.raw.pending.iter().any(|p| p.id == "10"));
    validate(&round.raw, &ModelLibrary::builtin()).unwrap();
}

/// With slurmdbd: tenant weights from sshare, QOS priorities in the rank key, preemptible
/// jobs by the controller's rule (not the comment). Without it (the recorded cluster's
/// `scontrol show config` is empty): weight 1, the comment.
#[test]
fn site_policy_from_accounting_sets_weights_ranks_and_preemptible_jobs() {
    let mut snap = snapshot();
    assert!(!snap.site.from_accounting);
    assert!(snap.site.describe().starts_with("no slurmdbd"));
    let legacy = build_round(&snap, &Conventions::default(), &BTreeMap::new()).unwrap();
    assert!(legacy
        .raw
        .tenants
        .as_ref()
        .unwrap()
        .iter()
        .all(|t| t.weight == 1.0));

    snap.site = SitePolicy {
        from_accounting: true,
        accounting_storage: "accounting_storage/slurmdbd".into(),
        preempt_type: "preempt/qos".into(),
        shares: parse_sshare(" acct1||3|0.75|0|0\n acct2||1|0.25|0|0\n").unwrap(),
        qos: parse_qos("normal|0|\nhigh|100|normal\n").unwrap(),
        fallback_reason: None,
    };
    for j in snap.jobs.iter_mut() {
        j.qos = if j.id == 11 {
            "high".into()
        } else {
            "normal".into()
        };
    }
    let round = build_round(&snap, &Conventions::default(), &BTreeMap::new()).unwrap();
    let weight = |name: &str| {
        let t = round.raw.tenants.as_ref().unwrap();
        t.iter().find(|t| t.name == name).unwrap().weight
    };
    assert!((weight("acct1") - 1.5).abs() < 1e-9);
    assert!((weight("acct2") - 0.5).abs() < 1e-9);
    assert_eq!(weight("default"), 1.0, "an account sshare omits");
    // Job 11 (nice 10, tier 1) now outranks job 9 (tier 1, QOS normal) by its QOS.
    let pend = |id: &str| {
        round
            .raw
            .pending
            .iter()
            .find(|p| p.id == id)
            .unwrap()
            .priority
    };
    let run = |id: &str| round.raw.running.iter().find(|r| r.id == id).unwrap();
    assert!(pend("11") > run("9").priority);
    // QOS normal is in high's Preempt list: every running job of QOS normal is preemptible.
    assert!(run("6").preemptible && run("9").preemptible);
    // Under partition_prio the comment no longer counts, the tiers do (urgent covers all nodes).
    snap.site.preempt_type = "preempt/partition_prio".into();
    let round = build_round(&snap, &Conventions::default(), &BTreeMap::new()).unwrap();
    assert!(round.raw.running.iter().all(|r| r.preemptible));
    validate(&round.raw, &ModelLibrary::builtin()).unwrap();
}

#[test]
fn partition_filter_and_preemptible_partitions() {
    let snap = snapshot();
    let conv = Conventions {
        partition: Some("urgent".into()),
        ..Default::default()
    };
    let round = build_round(&snap, &conv, &BTreeMap::new()).unwrap();
    let ids: Vec<_> = round.raw.pending.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["10"]);
    let conv = Conventions {
        preemptible_partitions: ["gpu".to_string()].into(),
        ..Default::default()
    };
    let round = build_round(&snap, &conv, &BTreeMap::new()).unwrap();
    assert!(round.raw.running.iter().all(|r| r.preemptible));
    let conv = Conventions {
        partition: Some("nope".into()),
        ..Default::default()
    };
    assert!(build_round(&snap, &conv, &BTreeMap::new()).is_err());
}

#[test]
fn drained_nodes_take_no_new_work() {
    let mut snap = snapshot();
    for n in snap.nodes.iter_mut() {
        if n.name == "node4" {
            n.flags.push("DRAIN".into());
        }
    }
    let round = build_round(&snap, &Conventions::default(), &BTreeMap::new()).unwrap();
    let n4 = round.raw.nodes.iter().find(|n| n.name == "node4").unwrap();
    assert_eq!(n4.down.len(), 8);
    let inst = validate(&round.raw, &ModelLibrary::builtin()).unwrap();
    let plan = plan_round(inst, PlannerKind::Ilp, None).unwrap();
    assert!(plan
        .placements
        .iter()
        .all(|p| !p.gpus.contains_key("node4")));
}

#[test]
fn gres_strings() {
    let g = gpu_gres("gpu:h100:4(S:0),gpu:h100:4(S:1)").unwrap();
    assert_eq!(g.iter().map(|x| x.count).sum::<u32>(), 8);
    assert!(gpu_gres("gpu:x:y:z").is_err());
}

const TWO_EQUAL: &str = r#"
nodes:
  - {name: a, gpus: 8, rack: r1}
  - {name: b, gpus: 8, rack: r1}
pending:
  - {id: j1, gpus: 4}
"#;

#[test]
fn stability_keeps_last_rounds_placement_when_still_good() {
    let lib = ModelLibrary::builtin();
    let inst = parse_instance(TWO_EQUAL, "t", &lib).unwrap();
    let plan = plan_round(inst.clone(), PlannerKind::Ilp, None).unwrap();
    let chosen = plan.placements[0].gpus.keys().next().unwrap().clone();
    let other = if chosen == "a" { "b" } else { "a" };
    // Last round put j1 on the other (equally good) node: keep it there.
    let prev = BTreeMap::from([(
        "j1".to_string(),
        BTreeMap::from([(other.to_string(), 4u32)]),
    )]);
    let (kept_plan, kept) = stabilize(&inst, plan.clone(), &prev).unwrap();
    assert_eq!(kept, ["j1"]);
    assert!(kept_plan.placements[0].gpus.contains_key(other));
    gangplan::plan::validate_plan(&inst, &kept_plan).unwrap();
    // A memory naming a node that cannot hold the job is ignored.
    let prev = BTreeMap::from([("j1".to_string(), BTreeMap::from([("zz".to_string(), 4u32)]))]);
    let (same, kept) = stabilize(&inst, plan.clone(), &prev).unwrap();
    assert!(kept.is_empty());
    assert_eq!(same, plan);
    // Through the round function with a memory: the same.
    let mem = Memory {
        placements: BTreeMap::from([(
            "j1".to_string(),
            BTreeMap::from([(other.to_string(), 4u32)]),
        )]),
        ..Default::default()
    };
    let p = plan_with_memory(inst, PlannerKind::Ilp, &mem, std::time::Instant::now()).unwrap();
    assert!(p.plan.placements[0].gpus.contains_key(other));
}

#[test]
fn stability_gives_way_when_the_old_placement_is_much_worse() {
    // Node a is half full: packing j1 there is clearly better than opening empty node b.
    let yaml = r#"
nodes:
  - {name: a, gpus: 8, rack: r1}
  - {name: b, gpus: 8, rack: r1}
running:
  - {id: r, gpus: {a: [0, 1, 2, 3]}}
pending:
  - {id: j1, gpus: 4}
"#;
    let lib = ModelLibrary::builtin();
    let inst = parse_instance(yaml, "t", &lib).unwrap();
    let plan = plan_round(inst.clone(), PlannerKind::Ilp, None).unwrap();
    assert!(plan.placements[0].gpus.contains_key("a"));
    let prev = BTreeMap::from([("j1".to_string(), BTreeMap::from([("b".to_string(), 4u32)]))]);
    let (out, kept) = stabilize(&inst, plan, &prev).unwrap();
    assert!(kept.is_empty());
    assert!(out.placements[0].gpus.contains_key("a"));
}

fn gangplan() -> Command {
    Command::new(env!("CARGO_BIN_EXE_gangplan"))
}

#[test]
fn plan_command_writes_plan_metrics_memory_and_bindings() {
    let dir = tempfile::tempdir().unwrap();
    let inst = dir.path().join("round.yaml");
    std::fs::write(
        &inst,
        r#"
nodes:
  - {name: node-1, gpus: 8, rack: r1}
  - {name: node-2, gpus: 8, rack: r1}
pending:
  - {id: Train_7, gpus: 16, gpus_per_node: 8}
  - {id: small, gpus: 2}
  - {id: huge, gpus: 64}
"#,
    )
    .unwrap();
    let state = dir.path().join("state");
    let out = dir.path().join("out");
    let run = || {
        gangplan()
            .args(["plan", "--instance"])
            .arg(&inst)
            .arg("--state-dir")
            .arg(&state)
            .arg("--out")
            .arg(&out)
            .args(["--emit", "k8s", "--namespace", "ml", "--log-format", "json"])
            .output()
            .unwrap()
    };
    let o = run();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // JSON logs: every stderr line is a JSON object.
    for line in String::from_utf8_lossy(&o.stderr).lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("json log line");
        assert!(v.get("level").is_some());
    }
    let plan: gangplan::plan::Plan =
        serde_json::from_str(&std::fs::read_to_string(out.join("plan.json")).unwrap()).unwrap();
    assert!(plan.pending.iter().any(|p| p.job == "huge"));
    let metrics = std::fs::read_to_string(state.join("metrics.prom")).unwrap();
    let placed = plan.placements.len();
    assert!(
        metrics.contains(&format!("gangplan_jobs_placed {placed}\n")),
        "{metrics}"
    );
    assert!(metrics.contains("gangplan_jobs_pending "));
    assert!(metrics.contains("gangplan_round_seconds "));
    let mem = Memory::load(&state.join("memory.json")).unwrap();
    assert_eq!(mem.round, 1);
    assert_eq!(mem.placements.len(), placed);

    // Bindings: one per node of each placement, each valid against the Binding schema.
    let yaml = std::fs::read_to_string(out.join("bindings.yaml")).unwrap();
    let docs: Vec<serde_yaml::Value> = serde_yaml::Deserializer::from_str(&yaml)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
    let want: usize = plan.placements.iter().map(|p| p.gpus.len()).sum();
    assert_eq!(docs.len(), want);
    assert!(want >= 2);
    for d in &docs {
        check_binding_schema(d);
    }
    let names: Vec<String> = docs
        .iter()
        .map(|d| d["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(names.contains(&"train-7-0".to_string()) && names.contains(&"train-7-1".to_string()));

    // A second round on the same state changes nothing and counts the round.
    let before = std::fs::read_to_string(out.join("plan.json")).unwrap();
    let o = run();
    assert_eq!(o.status.code(), Some(0));
    let after: gangplan::plan::Plan =
        serde_json::from_str(&std::fs::read_to_string(out.join("plan.json")).unwrap()).unwrap();
    let first: gangplan::plan::Plan = serde_json::from_str(&before).unwrap();
    assert_eq!(after.placements, first.placements);
    assert_eq!(Memory::load(&state.join("memory.json")).unwrap().round, 2);
}

/// The schema of a Kubernetes v1 Binding (the fields the API server requires, and nothing it
/// would reject): apiVersion v1, kind Binding, metadata.name a DNS-1123 subdomain,
/// metadata.namespace a DNS-1123 label, annotations string -> string, target {apiVersion v1,
/// kind Node, name a DNS-1123 subdomain}; no other top-level fields.
fn check_binding_schema(d: &serde_yaml::Value) {
    let map = d.as_mapping().expect("object");
    let keys: Vec<&str> = map.keys().map(|k| k.as_str().unwrap()).collect();
    for k in &keys {
        assert!(
            ["apiVersion", "kind", "metadata", "target"].contains(k),
            "unexpected field {k}"
        );
    }
    assert_eq!(d["apiVersion"].as_str(), Some("v1"));
    assert_eq!(d["kind"].as_str(), Some("Binding"));
    let name = d["metadata"]["name"].as_str().expect("metadata.name");
    assert!(k8s::is_dns_subdomain(name), "{name}");
    let ns = d["metadata"]["namespace"]
        .as_str()
        .expect("metadata.namespace");
    assert!(k8s::is_dns_label(ns));
    if let Some(a) = d["metadata"].get("annotations") {
        for (k, v) in a.as_mapping().expect("annotations map") {
            assert!(k.is_string() && v.is_string());
        }
    }
    assert_eq!(d["target"]["apiVersion"].as_str(), Some("v1"));
    assert_eq!(d["target"]["kind"].as_str(), Some("Node"));
    assert!(k8s::is_dns_subdomain(
        d["target"]["name"].as_str().expect("target.name")
    ));
    let gpus = d["metadata"]["annotations"]["gangplan.io/gpus"]
        .as_str()
        .unwrap();
    assert!(gpus.split(',').all(|g| g.parse::<u32>().is_ok()));
}

#[test]
fn k8s_rejects_node_names_kubernetes_would_reject() {
    let mut plan = gangplan::plan::Plan {
        format: "gangplan-plan/1".into(),
        status: gangplan::plan::Status::Optimal,
        solver: gangplan::plan::SolverInfo::blank("ilp"),
        placements: vec![gangplan::plan::Placement {
            job: "j".into(),
            gpus: BTreeMap::from([("Node_1".to_string(), vec![0])]),
            gpu_milli: None,
        }],
        preemptions: vec![],
        pending: vec![],
        metrics: gangplan::plan::Metrics {
            gpus_total: 8,
            gpus_busy_before: 0,
            gpus_busy_after: 1,
            gpus_down: 0,
            jobs_placed: 1,
            jobs_pending: 0,
            jobs_preempted: 0,
        },
        reservation: None,
        reservations: vec![],
    };
    assert!(k8s::bindings(&plan, "default").is_err());
    plan.placements[0].gpus = BTreeMap::from([("node-1".to_string(), vec![0])]);
    assert_eq!(k8s::bindings(&plan, "default").unwrap().len(), 1);
    assert!(k8s::bindings(&plan, "Bad_NS").is_err());
}

#[test]
fn a_second_round_while_one_holds_the_lock_exits_5() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    let inst = dir.path().join("i.yaml");
    std::fs::write(&inst, TWO_EQUAL).unwrap();
    let held = RoundLock::acquire(&state.join("lock")).unwrap();
    let o = gangplan()
        .args(["plan", "--instance"])
        .arg(&inst)
        .arg("--state-dir")
        .arg(&state)
        .arg("--out")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(5));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("holds the lock"), "{err}");
    assert!(!state.join("memory.json").exists());
    drop(held);
    let o = gangplan()
        .args(["plan", "--instance"])
        .arg(&inst)
        .arg("--state-dir")
        .arg(&state)
        .arg("--out")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn slurm_plan_without_slurm_is_an_io_failure_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let o = gangplan()
        .args(["slurm", "plan", "--state-dir"])
        .arg(dir.path())
        .env("PATH", dir.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(6));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("squeue") && err.contains("SLURM_CONF"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------------
// The admission file: room no held job of the round can use, for job_submit.lua.

/// The recorded round planned: 10 starts on node4 (preempting 9), 11 (2 nodes x 8) waits.
fn planned_round() -> (
    Snapshot,
    gangplan::adapters::slurm::SlurmRound,
    gangplan::plan::Plan,
) {
    let snap = snapshot();
    let round = build_round(&snap, &Conventions::default(), &BTreeMap::new()).unwrap();
    let inst = validate(&round.raw, &ModelLibrary::builtin()).unwrap();
    let plan = plan_round(inst, PlannerKind::Ilp, None).unwrap();
    (snap, round, plan)
}

#[test]
fn the_admission_offers_what_no_held_job_fits_and_leaves_out_reserved_and_drained_nodes() {
    let (snap, mut round, mut plan) = planned_round();
    assert!(plan.pending.iter().any(|p| p.job == "11"));
    let room = offered_room(&snap, &round, &plan);
    // node1-2: job 7 holds all 16 GPUs; node4: 9 holds 4 until it is requeued, 10 starts on
    // the other 4. node3: job 6 holds 4; 4 are left, and 11 needs 8 per node.
    assert_eq!(room.keys().collect::<Vec<_>>(), ["node3"]);
    let node3 = &room["node3"];
    assert_eq!(node3.gpus, 4);
    // 32 CPUs, 1 allocated (sinfo); memory not allocated (no memory in the selection).
    assert_eq!((node3.cpus, node3.memory_mb), (Some(31), Some(64000)));
    assert_eq!(node3.partitions, ["gpu", "urgent"]);

    // A node of the round's reservation is not offered.
    plan.reservation = Some(PlanReservation {
        job: "11".into(),
        starts_in: 30.0,
        nodes: vec!["node3".into()],
    });
    assert!(offered_room(&snap, &round, &plan).is_empty());
    plan.reservation = None;
    // Nor a node of a later one.
    let on = |node: &str| PlanReservation {
        job: "11".into(),
        starts_in: 30.0,
        nodes: vec![node.into()],
    };
    plan.reservation = Some(on("node1"));
    plan.reservations = vec![on("node1"), on("node3")];
    assert!(offered_room(&snap, &round, &plan).is_empty());
    plan.reservation = None;
    plan.reservations.clear();

    // A waiting job that fits node3's GPUs keeps them (a newcomer ranks below it).
    let waiting = round.raw.pending.iter_mut().find(|p| p.id == "11").unwrap();
    waiting.gpus_per_node = Some(4);
    waiting.gpus = 8;
    assert!(offered_room(&snap, &round, &plan).is_empty());

    // A drained node offers nothing.
    let mut drained = snap.clone();
    drained
        .nodes
        .iter_mut()
        .find(|n| n.name == "node3")
        .unwrap()
        .flags
        .push("DRAIN".into());
    let (_, _, plan) = planned_round();
    let round = build_round(&drained, &Conventions::default(), &BTreeMap::new()).unwrap();
    assert!(offered_room(&drained, &round, &plan).is_empty());
}

#[test]
fn the_admission_file_is_written_whole_and_restamped_in_place() {
    let (snap, round, plan) = planned_round();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("admission");
    let admission = Admission {
        generation: "3.1795983400123".into(),
        time: 1_795_983_401,
        read: snap.now,
        room: offered_room(&snap, &round, &plan),
    };
    admission.write(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        text,
        "gangplan-admission 1\ngeneration 3.1795983400123\ntime 1795983401\nread 1795983400\n\
         node node3 gpus 4 cpus 31 mem 64000 partitions gpu,urgent\n"
    );
    restamp(&path, 1_795_983_409).unwrap();
    let stamped = std::fs::read_to_string(&path).unwrap();
    assert_eq!(stamped, text.replace("time 1795983401", "time 1795983409"));
    // Only the file itself is left in the dir (the temporary file was renamed onto it).
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["admission"]);
    // Stamping a missing file creates nothing.
    restamp(&dir.path().join("none"), 1).unwrap();
    assert!(!dir.path().join("none").exists());
}

/// Answers like [`Recorded`] and notes, at each read of the queue, whether an admission file
/// was there to admit from.
struct WatchesOffer {
    recorded: Recorded,
    offer: std::path::PathBuf,
    offered_at_reads: Mutex<Vec<bool>>,
}

impl SlurmCli for WatchesOffer {
    fn run(&self, program: &str, args: &[String]) -> Result<String, SlurmError> {
        if program == "squeue" {
            let there = self.offer.exists();
            self.offered_at_reads.lock().unwrap().push(there);
        }
        self.recorded.run(program, args)
    }
}

#[test]
fn a_round_withdraws_the_last_offer_before_it_reads_the_queue() {
    let dir = tempfile::tempdir().unwrap();
    let offer = dir.path().join("admission");
    let (snap, round, plan) = planned_round();
    Admission {
        generation: "2.1795983399000".into(),
        time: 1_795_983_399,
        read: 1_795_983_399,
        room: offered_room(&snap, &round, &plan),
    }
    .write(&offer)
    .unwrap();
    let cli = WatchesOffer {
        recorded: Recorded::new(),
        offer: offer.clone(),
        offered_at_reads: Mutex::new(Vec::new()),
    };
    let read = read_withdrawn(&cli, 1_795_983_400, Some(&offer)).expect("recorded state parses");
    assert_eq!(read.jobs.len(), snap.jobs.len());
    assert_eq!(*cli.offered_at_reads.lock().unwrap(), [false]);
    // Without a file (or with none to withdraw) the read is the same.
    assert!(read_withdrawn(&cli, 1_795_983_400, Some(&offer)).is_ok());
    assert!(read_withdrawn(&cli, 1_795_983_400, None).is_ok());
}

#[test]
fn admitted_jobs_not_started_are_kept_in_flight_and_held_again_after_the_timeout() {
    let mut snap = snapshot();
    // Job 10 was admitted at submission to node4 and waits there.
    let j = snap.jobs.iter_mut().find(|j| j.id == 10).unwrap();
    j.reason = "Resources".into();
    j.admin_comment = "gangplan: admitted at submission to node4".into();
    j.required_nodes = vec!["node4".into()];
    let submitted = j.submit_time;
    let admitted = admitted_pending(&snap);
    assert_eq!(admitted.keys().collect::<Vec<_>>(), ["10"]);
    assert_eq!(admitted["10"].nodes, ["node4"]);
    assert_eq!(admitted["10"].at, submitted);

    let round = build_round(&snap, &Conventions::default(), &admitted).unwrap();
    assert_eq!(round.in_flight, ["10"]);
    assert!(!round.raw.pending.iter().any(|p| p.id == "10"));
    let inst = validate(&round.raw, &ModelLibrary::builtin()).unwrap();
    let plan = plan_round(inst, PlannerKind::Ilp, None).unwrap();
    let timeout = 300;
    let rehold = |now: i64| {
        round_actions(&round, &plan, &admitted, now, timeout, Some(0), true)
            .unwrap()
            .contains(&Action::Rehold { job: "10".into() })
    };
    assert!(!rehold(submitted + timeout as i64));
    assert!(rehold(submitted + timeout as i64 + 1));

    // Held jobs, and pending jobs without the plugin's note, are not admitted ones.
    snap.jobs.iter_mut().find(|j| j.id == 10).unwrap().reason = "JobHeldUser".into();
    assert!(admitted_pending(&snap).is_empty());
}

// ---------------------------------------------------------------------------------------------
// Pre-release: the round's reservation gang, pinned to its reserved nodes and released at once.

/// Seconds from the recorded read until the jobs on node3 and node4 end in [`timed_snapshot`].
const NODE3_FREE_IN: i64 = 120;
const NODE4_FREE_IN: i64 = 300;

/// The recorded cluster with time limits and without job 10: job 7 (node1 and node2, 8 GPUs
/// each) ends in an hour, job 6 (node3, 4 GPUs) in 120 s, job 9 (node4, 4 GPUs) in 300 s.
/// Held job 11 (2 x 8, ranked below the running jobs, so it preempts none) cannot start now;
/// node3 and node4 (one rack) are whole in 300 s.
fn timed_snapshot() -> Snapshot {
    let mut snap = snapshot();
    snap.jobs.retain(|j| j.id != 10);
    let now = snap.now;
    for (id, ends_in) in [(7, 3600), (6, NODE3_FREE_IN), (9, NODE4_FREE_IN)] {
        let j = snap.jobs.iter_mut().find(|j| j.id == id).unwrap();
        j.time_limit = Some(7200);
        j.end_time = now + ends_in;
    }
    snap
}

/// The round of [`timed_snapshot`] and its plan.
fn timed_round() -> (gangplan::adapters::slurm::SlurmRound, gangplan::plan::Plan) {
    let round = build_round(&timed_snapshot(), &Conventions::default(), &BTreeMap::new()).unwrap();
    let inst = validate(&round.raw, &ModelLibrary::builtin()).unwrap();
    let plan = plan_round(inst, PlannerKind::Ilp, None).unwrap();
    (round, plan)
}

/// The start of job 11 among a round's actions, if any.
fn start_of_11(actions: &[Action]) -> Option<&Action> {
    actions
        .iter()
        .find(|a| matches!(a, Action::Start { job, .. } if job == "11"))
}

/// Job 11 released ahead onto node3 and node4 of [`timed_snapshot`] (`repin`: released
/// already, its pin moved there).
fn ahead_onto_node3_node4(repin: bool) -> Action {
    Action::Start {
        job: "11".into(),
        nodes: vec!["node3".into(), "node4".into()],
        exclude: vec!["node1".into(), "node2".into()],
        clear_begin: false,
        clear_note: false,
        expected_in: Some(NODE4_FREE_IN as u64),
        repin,
    }
}

/// The round's actions for the timed round with `released` jobs in flight, pre-release on.
fn timed_actions(
    round: &gangplan::adapters::slurm::SlurmRound,
    plan: &gangplan::plan::Plan,
    released: &BTreeMap<String, Released>,
) -> Vec<Action> {
    round_actions(round, plan, released, 0, 300, None, true).unwrap()
}

#[test]
fn the_reservation_gang_is_released_at_once_pinned_to_its_reserved_nodes() {
    let (round, plan) = timed_round();
    let r = plan
        .reservation
        .as_ref()
        .expect("job 11 gets a reservation");
    assert_eq!(r.job, "11");
    assert_eq!(r.nodes, ["node3", "node4"]);
    assert!((r.starts_in - NODE4_FREE_IN as f64).abs() < 1e-6, "{r:?}");
    assert!(plan.placements.is_empty() && plan.preemptions.is_empty());

    let actions = timed_actions(&round, &plan, &BTreeMap::new());
    let start = ahead_onto_node3_node4(false);
    // The gang gets no waiting note: from its release on, it is Slurm's to start.
    assert_eq!(actions, vec![start.clone()]);
    assert!(start.describe().contains("ahead of its reservation"));
    let cli = Recorded::new();
    start.run(&cli).unwrap();
    assert_eq!(
        *cli.calls.lock().unwrap(),
        [
            "scontrol update JobId=11 NodeList=node3,node4 ExcNodeList=node1,node2",
            "scontrol release 11",
        ]
    );

    // Applied: journaled with the expected wait, remembered with the expected start.
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.jsonl");
    let mut released = BTreeMap::new();
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let applied = apply_actions(&actions, &Recorded::new(), &journal, 1, &mut released);
    assert_eq!(applied.failures, 0);
    let r = &released["11"];
    assert_eq!(r.nodes, ["node3", "node4"]);
    assert!(r.at >= before, "{r:?}");
    assert_eq!(r.expected_start, Some(r.at + NODE4_FREE_IN));
    let lines = std::fs::read_to_string(&journal).unwrap();
    let last: serde_json::Value = serde_json::from_str(lines.lines().last().unwrap()).unwrap();
    assert_eq!(
        (&last["action"], &last["outcome"], &last["expected_in"]),
        (
            &serde_json::json!("start"),
            &serde_json::json!("ok"),
            &serde_json::json!(NODE4_FREE_IN)
        )
    );
}

#[test]
fn without_pre_release_the_reservation_gang_stays_held_with_its_reason() {
    let (round, plan) = timed_round();
    let actions = round_actions(&round, &plan, &BTreeMap::new(), 0, 300, None, false).unwrap();
    assert!(start_of_11(&actions).is_none(), "{actions:?}");
    let reason = &plan.pending.iter().find(|p| p.job == "11").unwrap().reason;
    assert!(reason.contains("node3, node4 reserved for it"), "{reason}");
    assert_eq!(
        actions,
        vec![Action::Note {
            job: "11".into(),
            text: waiting_note(reason),
        }]
    );
}

#[test]
fn a_reservation_gang_that_is_not_held_is_not_released_ahead() {
    // The reservation names a job that runs (as if the plan were of an older state).
    let (round, mut plan) = timed_round();
    plan.reservation.as_mut().unwrap().job = "9".into();
    let actions = timed_actions(&round, &plan, &BTreeMap::new());
    assert!(
        !actions.iter().any(|a| matches!(a, Action::Start { .. })),
        "{actions:?}"
    );
    // Job 11 is no longer held (released by its user, say).
    let (mut round, plan) = timed_round();
    round.held.remove("11");
    let actions = timed_actions(&round, &plan, &BTreeMap::new());
    assert_eq!(
        actions,
        vec![],
        "nothing to start, no note on a job not held"
    );
}

#[test]
fn a_reservation_gang_asking_other_node_counts_is_not_released_ahead() {
    let (mut round, plan) = timed_round();
    round.held.get_mut("11").unwrap().node_count = 3;
    let actions = timed_actions(&round, &plan, &BTreeMap::new());
    assert!(start_of_11(&actions).is_none(), "{actions:?}");
    // It stays held, with its reason.
    assert!(matches!(&actions[..], [Action::Note { job, .. }] if job == "11"));
}

#[test]
fn a_reservation_across_racks_is_not_released_ahead() {
    // node2 (rack1) and node3 (rack2): a later round, seeing nodes free, may start the gang
    // in one rack; pinned now it would start across racks.
    let (round, mut plan) = timed_round();
    plan.reservation.as_mut().unwrap().nodes = vec!["node2".into(), "node3".into()];
    let actions = timed_actions(&round, &plan, &BTreeMap::new());
    assert!(start_of_11(&actions).is_none(), "{actions:?}");
    assert!(matches!(&actions[..], [Action::Note { job, .. }] if job == "11"));
}

#[test]
fn a_reservation_gang_on_free_nodes_is_left_to_the_plan() {
    let (round, mut plan) = timed_round();
    plan.reservation.as_mut().unwrap().starts_in = 0.0;
    let actions = timed_actions(&round, &plan, &BTreeMap::new());
    assert!(start_of_11(&actions).is_none(), "{actions:?}");
}

#[test]
fn a_reserved_node_pinned_to_another_job_in_flight_keeps_the_gang_held() {
    let (round, plan) = timed_round();
    let in_flight = |node: &str| {
        BTreeMap::from([(
            "12".to_string(),
            Released::new(vec![node.to_string()], 0, None),
        )])
    };
    let actions = timed_actions(&round, &plan, &in_flight("node4"));
    assert!(start_of_11(&actions).is_none(), "{actions:?}");
    assert!(matches!(&actions[..], [Action::Note { job, .. }] if job == "11"));
    // A job in flight on a node outside the reservation changes nothing.
    let actions = timed_actions(&round, &plan, &in_flight("node1"));
    assert!(start_of_11(&actions).is_some(), "{actions:?}");
}

#[test]
fn a_reserved_node_the_round_starts_a_job_on_keeps_the_gang_held_for_a_later_round() {
    let mut snap = timed_snapshot();
    // Held job 12: 4 GPUs for a minute, so it ends by the reservation's start and may use
    // the 4 free GPUs of node3 or node4 now.
    let mut short = snap.jobs.iter().find(|j| j.id == 11).unwrap().clone();
    short.id = 12;
    short.node_count = 1;
    short.tres_per_node = "gres:gpu:4".into();
    short.time_limit = Some(60);
    snap.jobs.push(short);
    let round = build_round(&snap, &Conventions::default(), &BTreeMap::new()).unwrap();
    let inst = validate(&round.raw, &ModelLibrary::builtin()).unwrap();
    let mut plan = plan_round(inst, PlannerKind::Ilp, None).unwrap();
    let r = plan.reservation.as_ref().unwrap();
    assert_eq!(r.job, "11");
    assert_eq!(r.nodes, ["node3", "node4"]);
    let placed: Vec<_> = plan.placements.iter().map(|p| p.job.as_str()).collect();
    assert_eq!(placed, ["12"]);
    let actions = timed_actions(&round, &plan, &BTreeMap::new());
    assert!(start_of_11(&actions).is_none(), "{actions:?}");
    assert!(actions
        .iter()
        .any(|a| matches!(a, Action::Start { job, .. } if job == "12")));
    assert!(actions
        .iter()
        .any(|a| matches!(a, Action::Note { job, .. } if job == "11")));
    // Without that start on a reserved node, the gang goes ahead.
    plan.placements.clear();
    let actions = timed_actions(&round, &plan, &BTreeMap::new());
    assert!(start_of_11(&actions).is_some(), "{actions:?}");
}

/// [`timed_snapshot`] a round after job 11 was released ahead onto `nodes` (expected to
/// start when node4 frees), waiting there; the memory that says so.
fn released_ahead_onto(nodes: &[&str]) -> (Snapshot, BTreeMap<String, Released>) {
    let mut snap = timed_snapshot();
    let j = snap.jobs.iter_mut().find(|j| j.id == 11).unwrap();
    j.reason = "Resources".into();
    let at = snap.now;
    let nodes = nodes.iter().map(|n| n.to_string()).collect();
    let released = BTreeMap::from([(
        "11".to_string(),
        Released::new(nodes, at, Some(at + NODE4_FREE_IN)),
    )]);
    (snap, released)
}

/// The round of `snap` with `released`, and its plan.
fn round_with(
    snap: &Snapshot,
    released: &BTreeMap<String, Released>,
) -> (gangplan::adapters::slurm::SlurmRound, gangplan::plan::Plan) {
    let round = build_round(snap, &Conventions::default(), released).unwrap();
    let inst = validate(&round.raw, &ModelLibrary::builtin()).unwrap();
    let plan = plan_round(inst, PlannerKind::Ilp, None).unwrap();
    (round, plan)
}

/// A gang released ahead is planned again by the next rounds (it stays in flight, but claims
/// no GPUs): reserved again on the nodes it is pinned to, it needs no action and gets no
/// note; it is held again only `--start-timeout` seconds after its expected start.
#[test]
fn a_gang_released_ahead_is_planned_again_and_held_again_only_after_its_expected_start() {
    let (snap, released) = released_ahead_onto(&["node3", "node4"]);
    let at = snap.now;
    let expected = at + NODE4_FREE_IN;
    let (round, plan) = round_with(&snap, &released);
    assert_eq!(round.in_flight, ["11"]);
    assert!(!round.raw.running.iter().any(|r| r.id == "11"));
    assert!(round.raw.pending.iter().any(|p| p.id == "11"));
    let pinned = round.held["11"].released_to.clone();
    assert_eq!(pinned, Some(vec!["node3".into(), "node4".into()]));
    assert_eq!(plan.reservation.as_ref().unwrap().nodes, ["node3", "node4"]);
    let timeout = 60;
    let actions =
        |now: i64| round_actions(&round, &plan, &released, now, timeout, None, true).unwrap();
    // Past the timeout counted from the release, its nodes still busy: nothing to do.
    assert_eq!(actions(at + timeout as i64 + 1), vec![]);
    assert_eq!(actions(expected + timeout as i64), vec![]);
    // Overdue: held again, and not released ahead again in the same round.
    let late = actions(expected + timeout as i64 + 1);
    assert_eq!(late[0], Action::Rehold { job: "11".into() });
    assert!(start_of_11(&late).is_none(), "{late:?}");
    // Released without an expected start (a plain start), the release counts, and the job
    // is kept as a reservation on its nodes' free GPUs.
    let plain = BTreeMap::from([(
        "11".to_string(),
        Released::new(vec!["node3".into(), "node4".into()], at, None),
    )]);
    let (round, plan) = round_with(&snap, &plain);
    let kept = round.raw.running.iter().find(|r| r.id == "11").unwrap();
    assert_eq!(kept.gpus["node3"], vec![4, 5, 6, 7]);
    assert_eq!(kept.gpus["node4"], vec![4, 5, 6, 7]);
    let actions = round_actions(
        &round,
        &plan,
        &plain,
        at + timeout as i64 + 1,
        timeout,
        None,
        true,
    );
    assert!(actions
        .unwrap()
        .contains(&Action::Rehold { job: "11".into() }));
}

/// A gang released ahead onto nodes that turn out to free later than others moves: the round
/// reserves it where GPUs free first and moves its pin there (`scontrol update` only, no
/// release: it is released already).
#[test]
fn a_gang_released_ahead_onto_later_nodes_moves_its_pin_without_a_new_release() {
    // Pinned to node1 and node4 (node1 frees in an hour); node3 and node4 free in 300 s.
    let (snap, released) = released_ahead_onto(&["node1", "node4"]);
    let (round, plan) = round_with(&snap, &released);
    assert_eq!(plan.reservation.as_ref().unwrap().nodes, ["node3", "node4"]);
    let actions = round_actions(&round, &plan, &released, snap.now, 60, None, true).unwrap();
    let moved = ahead_onto_node3_node4(true);
    assert_eq!(actions, vec![moved.clone()]);
    assert!(
        moved.describe().contains("move job 11's pin"),
        "{}",
        moved.describe()
    );
    let cli = Recorded::new();
    moved.run(&cli).unwrap();
    assert_eq!(
        *cli.calls.lock().unwrap(),
        ["scontrol update JobId=11 NodeList=node3,node4 ExcNodeList=node1,node2"]
    );
}

/// A gang released ahead that the round can start now elsewhere moves there at once; one the
/// round neither starts nor reserves is held again (its pinned nodes may go to others).
#[test]
fn a_gang_released_ahead_starts_where_room_opened_or_is_held_again() {
    // node3 and node4 are free now (their jobs ended); the gang is pinned to node1, node4.
    let (mut snap, released) = released_ahead_onto(&["node1", "node4"]);
    snap.jobs.retain(|j| j.id != 6 && j.id != 9);
    let (round, plan) = round_with(&snap, &released);
    let placed: Vec<_> = plan.placements.iter().map(|p| p.job.as_str()).collect();
    assert_eq!(placed, ["11"]);
    let actions = round_actions(&round, &plan, &released, snap.now, 60, None, true).unwrap();
    assert!(
        matches!(
            &actions[..],
            [Action::Start { job, nodes, expected_in: None, repin: true, .. }]
                if job == "11" && nodes == &["node3", "node4"]
        ),
        "{actions:?}"
    );
    // Pinned there already: Slurm starts it, nothing to do.
    let (_, here) = released_ahead_onto(&["node3", "node4"]);
    let (round, plan) = round_with(&snap, &here);
    let actions = round_actions(&round, &plan, &here, snap.now, 60, None, true).unwrap();
    assert_eq!(actions, vec![]);
    // A plan that leaves it out (no reservation, no start): held again, then noted.
    let (round, mut plan) = round_with(&released_ahead_onto(&["node1", "node4"]).0, &released);
    plan.reservation = None;
    let actions = round_actions(&round, &plan, &released, snap.now, 60, None, true).unwrap();
    assert_eq!(actions[0], Action::Rehold { job: "11".into() });
    assert!(start_of_11(&actions).is_none(), "{actions:?}");
    // Without pre-release, a gang released ahead earlier is held again too.
    let (round, plan) = round_with(&released_ahead_onto(&["node3", "node4"]).0, &here);
    let actions = round_actions(&round, &plan, &here, snap.now, 60, None, false).unwrap();
    assert_eq!(actions[0], Action::Rehold { job: "11".into() });
}

/// A fake Slurm in `dir/bin`: `squeue --json` answers `dir/squeue.json`, `sinfo --json`,
/// `scontrol -o show partition` and `scontrol show topology` the recordings, any other
/// command nothing; every command line is appended to `dir/calls.log`.
fn fake_slurm(dir: &Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let d = dir.display();
    let script = format!(
        "#!/bin/sh\nline=\"$(basename \"$0\") $*\"\necho \"$line\" >> {d}/calls.log\n\
         case \"$line\" in\n\
         'squeue --json') cat {d}/squeue.json ;;\n\
         'sinfo --json') cat {FIX}/sinfo.json ;;\n\
         'scontrol -o show partition') cat {FIX}/partitions.txt ;;\n\
         'scontrol show topology') cat {FIX}/topology.txt ;;\n\
         esac\n"
    );
    let fake = bin.join("fake-slurm");
    std::fs::write(&fake, script).unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    for name in ["squeue", "sinfo", "scontrol", "sshare", "sacctmgr"] {
        std::os::unix::fs::symlink(&fake, bin.join(name)).unwrap();
    }
    bin
}

/// The recorded `squeue --json` with the times of [`timed_snapshot`], counted from `now`.
fn timed_squeue(now: i64) -> String {
    let text = std::fs::read_to_string(Path::new(FIX).join("squeue.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let jobs = v["jobs"].as_array_mut().unwrap();
    jobs.retain(|j| j["job_id"] != 10);
    for (id, ends_in) in [(7, 3600), (6, NODE3_FREE_IN), (9, NODE4_FREE_IN)] {
        let j = jobs.iter_mut().find(|j| j["job_id"] == id).unwrap();
        j["time_limit"] = serde_json::json!(120);
        j["end_time"] = serde_json::json!(now + ends_in);
    }
    v.to_string()
}

/// `slurm plan --apply` on the fake Slurm in a fresh dir, with `extra` flags: (stdout, the
/// Slurm commands run, the memory after the round).
fn fake_round(extra: &[&str]) -> (String, Vec<String>, Memory) {
    let dir = tempfile::tempdir().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    std::fs::write(dir.path().join("squeue.json"), timed_squeue(now)).unwrap();
    let bin = fake_slurm(dir.path());
    let state = dir.path().join("state");
    let o = gangplan()
        .args([
            "slurm",
            "plan",
            "--apply",
            "--time-limit",
            "5",
            "--state-dir",
        ])
        .arg(&state)
        .args(extra)
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let calls = std::fs::read_to_string(dir.path().join("calls.log")).unwrap();
    let memory = Memory::load(&state.join("memory.json")).unwrap();
    (out, calls.lines().map(str::to_string).collect(), memory)
}

#[test]
fn slurm_plan_releases_the_reservation_gang_ahead_only_when_told_to() {
    let (out, calls, memory) = fake_round(&["--pre-release"]);
    assert!(
        out.contains("doing: start job 11 on node3,node4 when their GPUs free"),
        "{out}"
    );
    let pin = "scontrol update JobId=11 NodeList=node3,node4 ExcNodeList=node1,node2";
    let release = "scontrol release 11";
    let at = |line: &str| calls.iter().position(|c| c == line);
    assert!(at(pin).is_some() && at(pin) < at(release), "{calls:?}");
    let r = &memory.released["11"];
    let wait = r.expected_start.expect("an expected start") - r.at;
    // The round read the cluster up to a few seconds before it released the gang.
    assert!((NODE4_FREE_IN - 5..=NODE4_FREE_IN).contains(&wait), "{r:?}");

    let (out, calls, memory) = fake_round(&[]);
    assert!(!out.contains("start job 11"), "{out}");
    assert!(out.contains("pending: job 11:"), "{out}");
    assert!(!calls.iter().any(|c| c.contains("release")), "{calls:?}");
    assert!(
        calls
            .iter()
            .any(|c| c.starts_with("scontrol update JobId=11 AdminComment=gangplan: waiting:")),
        "{calls:?}"
    );
    assert!(memory.released.is_empty());
}

#[test]
fn slurm_plan_reservations_sets_how_many_blocked_jobs_are_reserved_for() {
    let (out, _, _) = fake_round(&[]);
    assert!(out.contains("node3, node4 reserved for it"), "{out}");
    let (out, calls, memory) = fake_round(&["--pre-release", "--reservations", "0"]);
    assert!(!out.contains("reserved for it"), "{out}");
    assert!(!out.contains("start job 11"), "{out}");
    assert!(!calls.iter().any(|c| c.contains("release")), "{calls:?}");
    assert!(memory.released.is_empty());
    for sub in ["plan", "serve"] {
        let dir = tempfile::tempdir().unwrap();
        let o = gangplan()
            .args(["slurm", sub, "--reservations", "65", "--state-dir"])
            .arg(dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "65 is refused: {err}");
        assert!(
            err.contains("--reservations") && err.contains("0..=64"),
            "{err}"
        );
        let o = gangplan().args(["slurm", sub, "--help"]).output().unwrap();
        let help = String::from_utf8_lossy(&o.stdout);
        assert!(help.contains("--reservations <N>"), "{help}");
        assert!(help.contains("up to N blocked jobs"), "{help}");
    }
}

#[test]
fn slurm_plan_and_serve_teach_pre_release() {
    for sub in ["plan", "serve"] {
        let o = gangplan().args(["slurm", sub, "--help"]).output().unwrap();
        let help = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success());
        assert!(help.contains("--pre-release"), "{help}");
        assert!(help.contains("reserved"), "{help}");
    }
}

#[test]
fn slurm_serve_listen_refuses_an_address_it_cannot_use_and_teaches_the_epilog() {
    for addr in ["nonsense", "127.0.0.1:99999", "256.1.1.1:80"] {
        let dir = tempfile::tempdir().unwrap();
        let o = gangplan()
            .args(["slurm", "serve", "--listen", addr, "--state-dir"])
            .arg(dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{addr} is refused: {err}");
        assert!(
            err.contains("--listen") && err.contains(addr) && err.contains("HOST:PORT"),
            "{err}"
        );
    }
    let o = gangplan()
        .args(["slurm", "serve", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&o.stdout);
    assert!(help.contains("--listen <HOST:PORT>"), "{help}");
    assert!(help.contains("gangplan-epilog.sh"), "{help}");
}
