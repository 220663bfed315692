//! Time in the plan: the round's reservation for its first blocked gang (and, with
//! `policy.reservations`, for the next ones), obeyed by every planner and checked by the
//! validator, and a stream of rounds in which a 32-GPU gang behind a steady supply of 1-GPU
//! jobs starts within a bounded number of rounds with reservations, and never without them.

use gangplan::hardware::ModelLibrary;
use gangplan::instance::raw::{RawInstance, RawNode, RawPending, RawPolicy, RawRunning};
use gangplan::instance::validate::validate;
use gangplan::instance::Instance;
use gangplan::plan::{validate_plan, Placement, Plan};
use gangplan::round::plan_round;
use gangplan::solve::PlannerKind;
use std::collections::BTreeMap;

/// `count` 8-GPU nodes `n0..`, racks of `per_rack`.
fn nodes(count: usize, per_rack: usize) -> Vec<RawNode> {
    (0..count)
        .map(|i| RawNode {
            name: format!("n{i}"),
            gpus: Some(8),
            rack: Some(format!("r{}", i / per_rack)),
            ..Default::default()
        })
        .collect()
}

fn running(id: &str, node: &str, gpus: std::ops::Range<u64>, ends_in: Option<f64>) -> RawRunning {
    RawRunning {
        id: id.into(),
        gpus: BTreeMap::from([(node.to_string(), gpus.collect())]),
        ends_in,
        ..Default::default()
    }
}

fn pending(id: &str, gpus: u64, time_limit: Option<f64>) -> RawPending {
    RawPending {
        id: id.into(),
        gpus,
        time_limit,
        ..Default::default()
    }
}

/// A gang of `nodes` x 8 GPUs that has waited `wait` seconds.
fn gang(id: &str, nodes: u64, wait: f64) -> RawPending {
    RawPending {
        id: id.into(),
        gpus: nodes * 8,
        gpus_per_node: Some(8),
        max_nodes: Some(nodes),
        wait: Some(wait),
        ..Default::default()
    }
}

fn policy() -> Option<RawPolicy> {
    Some(RawPolicy {
        time_limit: Some(5.0),
        ..Default::default()
    })
}

fn instance(raw: &RawInstance) -> Instance {
    validate(raw, &ModelLibrary::builtin()).expect("valid instance")
}

/// Four nodes; n0 and n1 hold 4 GPUs each of jobs ending in 30 s (4 free each), n2 and n3 are
/// full with jobs ending in 100 and 200 s. A 16-GPU gang needs two whole nodes: n0 and n1 are
/// whole at 30 s. Three 4-GPU jobs wait: one ends in 20 s, one in 40 s, one has no limit.
fn backfill_round() -> RawInstance {
    RawInstance {
        nodes: nodes(4, 2),
        running: vec![
            running("a", "n0", 0..4, Some(30.0)),
            running("b", "n1", 0..4, Some(30.0)),
            running("c", "n2", 0..8, Some(100.0)),
            running("d", "n3", 0..8, Some(200.0)),
        ],
        pending: vec![
            gang("big", 2, 500.0),
            pending("short", 4, Some(20.0)),
            pending("long", 4, Some(40.0)),
            pending("open", 4, None),
        ],
        policy: policy(),
        ..Default::default()
    }
}

fn placed<'p>(plan: &'p Plan, id: &str) -> Option<&'p Placement> {
    plan.placements.iter().find(|p| p.job == id)
}

#[test]
fn the_blocked_gang_reserves_the_nodes_whole_by_its_earliest_start() {
    let inst = instance(&backfill_round());
    let r = inst.reservations.first().cloned().expect("a reservation");
    assert_eq!(r.job_id, "big");
    assert_eq!(r.start, 30.0);
    assert_eq!(r.nodes, vec![0, 1]);
}

#[test]
fn a_short_job_backfills_a_reserved_node_and_long_or_unlimited_ones_do_not() {
    for planner in [PlannerKind::Greedy, PlannerKind::Ilp] {
        let inst = instance(&backfill_round());
        let plan = plan_round(inst, planner, None).expect("a valid plan");
        assert!(
            placed(&plan, "short").is_some(),
            "{planner:?}: the 20 s job ends before the reservation at 30 s: {plan:#?}"
        );
        for id in ["long", "open", "big"] {
            assert!(
                placed(&plan, id).is_none(),
                "{planner:?}: {id} may not start on the reserved nodes: {plan:#?}"
            );
        }
        let shown = plan
            .reservation
            .as_ref()
            .expect("the plan shows the reservation");
        assert_eq!(shown.job, "big");
        assert_eq!(shown.nodes, vec!["n0".to_string(), "n1".to_string()]);
        let big = plan.pending.iter().find(|p| p.job == "big").unwrap();
        assert!(
            big.reason.contains("n0, n1 reserved for it from 30 s on"),
            "{}",
            big.reason
        );
    }
}

#[test]
fn without_time_in_the_round_the_same_jobs_fill_the_free_gpus() {
    let mut raw = backfill_round();
    for r in &mut raw.running {
        r.ends_in = None;
    }
    for p in &mut raw.pending {
        p.time_limit = None;
    }
    let inst = instance(&raw);
    assert!(inst.reservations.is_empty());
    let plan = plan_round(inst, PlannerKind::Greedy, None).unwrap();
    assert_eq!(
        plan.placements.len(),
        2,
        "two 4-GPU jobs take the 8 free GPUs"
    );
}

/// Racks r0 (n0, n1) and r1 (n2, n3); n0, n1 and n2 are free, n3 is full until 50 s. An
/// 8-GPU job that waited longer than a 2 x 8 gang fits on any free node: both start, the gang
/// in rack r0 and the job on n2 (not the gang on n1 and n2 because the reservation's guess put
/// the older job on n0).
#[test]
fn a_gang_that_fits_now_keeps_one_rack_when_an_older_job_takes_a_whole_node() {
    let raw = RawInstance {
        nodes: nodes(4, 2),
        running: vec![running("full", "n3", 0..8, Some(50.0))],
        pending: vec![
            RawPending {
                time_limit: Some(60.0),
                ..gang("gang", 2, 5.0)
            },
            RawPending {
                wait: Some(9.0),
                ..pending("whole", 8, Some(60.0))
            },
        ],
        policy: policy(),
        ..Default::default()
    };
    for planner in [PlannerKind::Greedy, PlannerKind::Ilp] {
        let plan = plan_round(instance(&raw), planner, None).expect("a valid plan");
        let nodes_of = |id: &str| -> Vec<String> {
            placed(&plan, id)
                .map(|p| p.gpus.keys().cloned().collect())
                .unwrap_or_default()
        };
        assert_eq!(nodes_of("gang"), vec!["n0", "n1"], "{planner:?}: {plan:#?}");
        assert_eq!(nodes_of("whole"), vec!["n2"], "{planner:?}: {plan:#?}");
    }
}

#[test]
fn the_validator_refuses_a_long_job_on_a_reserved_node() {
    let inst = instance(&backfill_round());
    let mut plan = plan_round(inst.clone(), PlannerKind::Greedy, None).unwrap();
    // Move `long` from pending onto n1's free GPUs, in place of nothing.
    plan.pending.retain(|p| p.job != "long");
    plan.placements.retain(|p| p.job != "short");
    plan.pending.push(gangplan::plan::PendingEntry {
        job: "short".into(),
        reason: "held back".into(),
        kind: None,
    });
    plan.placements.push(Placement {
        job: "long".into(),
        gpus: BTreeMap::from([("n1".to_string(), vec![4, 5, 6, 7])]),
        gpu_milli: None,
    });
    let err = validate_plan(&inst, &plan).expect_err("rule 9 is broken");
    let text = err.to_string();
    assert!(
        text.contains("rule 9") && text.contains("\"long\"") && text.contains("n1"),
        "{text}"
    );
    // The same GPUs for the 20 s job are fine.
    plan.placements.last_mut().unwrap().job = "short".into();
    plan.pending.retain(|p| p.job != "short");
    plan.pending.push(gangplan::plan::PendingEntry {
        job: "long".into(),
        reason: "held back".into(),
        kind: None,
    });
    validate_plan(&inst, &plan).expect("a short job may use the reserved node");
}

/// A stream of rounds one `STEP` apart on 8 nodes (two racks of 4): at the start every GPU is
/// held by a 1-GPU job ending within 30 s, 12 new 1-GPU jobs (time limits 5..=30 s, run to
/// their limit) arrive every round, more than the cluster can serve, and a 32-GPU gang (4
/// nodes x 8) waits from the start. Returns the round in which the gang started, if it did
/// within `rounds`. `with_time: false` leaves `ends_in` and `time_limit` out of the
/// instances (no reservation; the stream itself is the same).
fn stream(planner: PlannerKind, with_time: bool, rounds: usize) -> Option<usize> {
    const STEP: f64 = 2.0;
    let mut seed = 12345u64;
    let mut next = move |lo: u64, hi: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        lo + (seed >> 33) % (hi - lo + 1)
    };
    // Running: (id, node, gpu, seconds left). Pending smalls: (id, time limit, waited).
    let mut run: Vec<(String, String, u64, f64)> = Vec::new();
    for n in 0..8 {
        for g in 0..8 {
            run.push((format!("s{n}-{g}"), format!("n{n}"), g, next(1, 30) as f64));
        }
    }
    let mut queue: Vec<(String, f64, f64)> = Vec::new();
    let mut arrivals = 0;
    let mut gang_wait = 0.0;
    for round in 0..rounds {
        for _ in 0..12 {
            queue.push((format!("q{arrivals}"), next(5, 30) as f64, 0.0));
            arrivals += 1;
        }
        let time = |t: f64| with_time.then_some(t);
        let mut pending_jobs = vec![gang("big", 4, gang_wait)];
        pending_jobs.extend(queue.iter().map(|(id, limit, waited)| RawPending {
            wait: Some(*waited),
            ..pending(id, 1, time(*limit))
        }));
        let raw = RawInstance {
            nodes: nodes(8, 4),
            running: run
                .iter()
                .map(|(id, node, g, left)| running(id, node, *g..*g + 1, time(*left)))
                .collect(),
            pending: pending_jobs,
            policy: policy(),
            ..Default::default()
        };
        let plan = plan_round(instance(&raw), planner, None).expect("a valid plan");
        if placed(&plan, "big").is_some() {
            return Some(round);
        }
        for p in &plan.placements {
            let (node, gpus) = p.gpus.iter().next().unwrap();
            let i = queue.iter().position(|q| q.0 == p.job).unwrap();
            let (id, limit, _) = queue.remove(i);
            run.push((id, node.clone(), gpus[0] as u64, limit));
        }
        // Time passes: jobs run to their limit.
        for r in &mut run {
            r.3 -= STEP;
        }
        run.retain(|r| r.3 > 0.0);
        for q in &mut queue {
            q.2 += STEP;
        }
        gang_wait += STEP;
    }
    None
}

#[test]
fn a_32_gpu_gang_behind_a_stream_of_1_gpu_jobs_starts_with_reservations_only() {
    for planner in [PlannerKind::Greedy, PlannerKind::Ilp] {
        assert_eq!(
            stream(planner, false, 40),
            None,
            "{planner:?}: without time in the plan the smalls take every GPU that frees"
        );
        // The reservation's start is at most the longest time limit (30 s = 15 rounds) away,
        // and it never moves later: nothing that runs past it starts on its nodes.
        let started = stream(planner, true, 40);
        eprintln!("{planner:?}: the gang started in round {started:?}");
        assert!(
            started.is_some_and(|r| r <= 16),
            "{planner:?}: the gang started in round {started:?}; expected by round 16"
        );
    }
}

#[test]
fn bad_times_are_refused_naming_the_field_and_the_range() {
    let mut raw = backfill_round();
    raw.running[0].ends_in = Some(-5.0);
    raw.pending[1].time_limit = Some(f64::INFINITY);
    let issues = validate(&raw, &ModelLibrary::builtin()).expect_err("refused");
    let text: Vec<String> = issues
        .iter()
        .map(|i| format!("{}: {}", i.path, i.message))
        .collect();
    assert!(
        text.iter()
            .any(|t| t.starts_with("running[0].ends_in")
                && t.contains("expected seconds in 0..=1e10")),
        "{text:?}"
    );
    assert!(
        text.iter().any(|t| t.starts_with("pending[1].time_limit")
            && t.contains("omit it when unknown or unlimited")),
        "{text:?}"
    );
}

/// Six nodes in racks of two: n0 and n1 hold 4 GPUs each of jobs ending in 30 s, n2 and n3
/// 4 GPUs each of jobs ending in 60 s, n4 and n5 are full until 200 s. Two 2 x 8 gangs wait,
/// `first` longer; with `reservations: 2` `first` gets n0 and n1 from 30 s, `second` n2 and n3
/// from 60 s. Two 4-GPU jobs wait: `mid` (50 s) ends by 60 s only, `late` (70 s) by neither.
fn two_gangs_round(reservations: i64) -> RawInstance {
    RawInstance {
        nodes: nodes(6, 2),
        running: vec![
            running("a", "n0", 0..4, Some(30.0)),
            running("b", "n1", 0..4, Some(30.0)),
            running("c", "n2", 0..4, Some(60.0)),
            running("d", "n3", 0..4, Some(60.0)),
            running("e", "n4", 0..8, Some(200.0)),
            running("f", "n5", 0..8, Some(200.0)),
        ],
        pending: vec![
            gang("first", 2, 500.0),
            gang("second", 2, 400.0),
            pending("mid", 4, Some(50.0)),
            pending("late", 4, Some(70.0)),
        ],
        policy: Some(RawPolicy {
            reservations: Some(reservations),
            ..policy().unwrap()
        }),
        ..Default::default()
    }
}

/// The nodes a plan gives job `id`.
fn nodes_of(plan: &Plan, id: &str) -> Vec<String> {
    placed(plan, id)
        .map(|p| p.gpus.keys().cloned().collect())
        .unwrap_or_default()
}

#[test]
fn both_planners_obey_the_second_reservation() {
    let inst = instance(&two_gangs_round(2));
    let got: Vec<(&str, f64, Vec<usize>)> = inst
        .reservations
        .iter()
        .map(|r| (r.job_id.as_str(), r.start, r.nodes.clone()))
        .collect();
    assert_eq!(
        got,
        vec![("first", 30.0, vec![0, 1]), ("second", 60.0, vec![2, 3])]
    );
    for planner in [PlannerKind::Greedy, PlannerKind::Ilp] {
        let plan = plan_round(instance(&two_gangs_round(2)), planner, None).expect("a plan");
        let mid = nodes_of(&plan, "mid");
        assert!(
            mid == ["n2"] || mid == ["n3"],
            "{planner:?}: the 50 s job ends by the second reservation's 60 s: {plan:#?}"
        );
        assert!(
            placed(&plan, "late").is_none(),
            "{planner:?}: the 70 s job runs past both starts: {plan:#?}"
        );
        // With one reservation n2 and n3 are open to it.
        let plan = plan_round(instance(&two_gangs_round(1)), planner, None).expect("a plan");
        assert!(
            !nodes_of(&plan, "late").is_empty(),
            "{planner:?}: one reservation leaves n2 and n3 to the 70 s job: {plan:#?}"
        );
    }
}

#[test]
fn the_validator_refuses_a_long_job_on_the_second_reservations_node() {
    let inst = instance(&two_gangs_round(2));
    let mut plan = plan_round(inst.clone(), PlannerKind::Greedy, None).unwrap();
    let free = if nodes_of(&plan, "mid") == ["n2"] {
        "n3"
    } else {
        "n2"
    };
    plan.pending.retain(|p| p.job != "late");
    plan.placements.push(Placement {
        job: "late".into(),
        gpus: BTreeMap::from([(free.to_string(), vec![4, 5, 6, 7])]),
        gpu_milli: None,
    });
    let err = validate_plan(&inst, &plan).expect_err("rule 9 is broken");
    let text = err.to_string();
    assert!(
        text.contains("rule 9")
            && text.contains("\"late\"")
            && text.contains(free)
            && text.contains("\"second\""),
        "{text}"
    );
    // The same plan breaks nothing under one reservation (n2 and n3 are not reserved then).
    let one = instance(&two_gangs_round(1));
    validate_plan(&one, &plan).expect("no second reservation, no rule 9");
}

#[test]
fn the_plan_lists_every_reservation_and_says_it_in_the_reasons() {
    let plan = plan_round(instance(&two_gangs_round(2)), PlannerKind::Greedy, None).unwrap();
    let json = serde_json::to_value(&plan).unwrap();
    let shown =
        |v: &serde_json::Value| (v["job"].clone(), v["starts_in"].clone(), v["nodes"].clone());
    let first = (
        serde_json::json!("first"),
        serde_json::json!(30.0),
        serde_json::json!(["n0", "n1"]),
    );
    let second = (
        serde_json::json!("second"),
        serde_json::json!(60.0),
        serde_json::json!(["n2", "n3"]),
    );
    assert_eq!(shown(&json["reservation"]), first, "{json:#}");
    let all = json["reservations"]
        .as_array()
        .expect("a `reservations` list");
    assert_eq!(
        all.iter().map(shown).collect::<Vec<_>>(),
        vec![first, second]
    );
    let reason = |id: &str| &plan.pending.iter().find(|p| p.job == id).unwrap().reason;
    assert!(reason("second").contains("nodes n2, n3 reserved for it from 60 s on"));
    assert!(reason("first").contains("nodes n0, n1 reserved for it from 30 s on"));
    assert!(
        reason("late").contains("n0, n1 reserved for job first from 30 s on"),
        "{}",
        reason("late")
    );
    // One reservation: the plan reads as before, without the list.
    let plan = plan_round(instance(&two_gangs_round(1)), PlannerKind::Greedy, None).unwrap();
    let json = serde_json::to_value(&plan).unwrap();
    assert!(json.get("reservations").is_none(), "{json:#}");
    assert_eq!(json["reservation"]["job"], "first");
}

/// One rack of six nodes: n0 free now, n1 whole at 10 s, n2 and n3 at 30 s, n4 and n5 at
/// 100 s. A 3 x 8 gang fits at 30 s at the earliest, on three of n0-n3; it takes the three that
/// free latest (n1, n2, n3), so n0 holds no GPU idle for it and an 8-GPU job of a one-minute
/// limit (it cannot end by 30 s) starts there now.
#[test]
fn a_gang_reserves_the_nodes_that_free_latest_by_its_start_and_a_free_node_stays_open() {
    let raw = RawInstance {
        nodes: nodes(6, 6),
        running: vec![
            running("a", "n1", 0..8, Some(10.0)),
            running("b", "n2", 0..8, Some(30.0)),
            running("c", "n3", 0..8, Some(30.0)),
            running("d", "n4", 0..8, Some(100.0)),
            running("e", "n5", 0..8, Some(100.0)),
        ],
        pending: vec![gang("big", 3, 500.0), pending("whole", 8, Some(60.0))],
        policy: policy(),
        ..Default::default()
    };
    let inst = instance(&raw);
    let r = inst.reservations.first().cloned().expect("a reservation");
    assert_eq!((r.job_id.as_str(), r.start), ("big", 30.0));
    assert_eq!(r.nodes, vec![1, 2, 3]);
    for planner in [PlannerKind::Greedy, PlannerKind::Ilp] {
        let plan = plan_round(instance(&raw), planner, None).expect("a valid plan");
        let whole = placed(&plan, "whole").unwrap_or_else(|| panic!("{planner:?}: {plan:#?}"));
        assert_eq!(
            whole.gpus.keys().collect::<Vec<_>>(),
            vec!["n0"],
            "{planner:?}"
        );
    }
}
