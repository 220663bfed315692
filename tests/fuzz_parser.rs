//! Bounded fuzzing on stable Rust (proptest): random bytes, random text mutations of valid
//! instances, and random near-valid instances built field by field go through the parser, the
//! validator and a planner. Every input must end in one of two ways: an input error (with at
//! least one issue, each naming what is wrong), or a plan that passes the independent
//! validator. A panic, any other error, or an invalid plan fails the test, and proptest prints
//! the smallest input it could shrink the failure to.
//!
//! Cases per strategy default to a run of about 30 s in all on two cores; set
//! `GANGPLAN_FUZZ_CASES=N` to run N cases of each strategy (the ILP strategy runs N / 10):
//!
//! ```text
//! GANGPLAN_FUZZ_CASES=100000 cargo test --release --test fuzz_parser -- --nocapture
//! ```

use gangplan::hardware::ModelLibrary;
use gangplan::instance::raw::*;
use gangplan::instance::{parse_instance, Instance};
use gangplan::plan::validate_plan;
use gangplan::round::plan_round;
use gangplan::solve::{PlannerKind, SolveOptions};
use gangplan::Error;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Cases for a strategy: `GANGPLAN_FUZZ_CASES` or the default.
fn cases(default: u32) -> u32 {
    std::env::var("GANGPLAN_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 2000,
        ..Config::default()
    })
}

/// How inputs ended.
#[derive(Default)]
struct Tally {
    refused: AtomicUsize,
    planned: AtomicUsize,
}

impl Tally {
    fn report(&self, what: &str) -> (usize, usize) {
        let (r, p) = (
            self.refused.load(Ordering::Relaxed),
            self.planned.load(Ordering::Relaxed),
        );
        eprintln!("{what}: {r} refused as bad input, {p} planned and valid");
        (r, p)
    }
}

/// The property: an input error, or a valid plan.
fn check(
    text: &str,
    planner: PlannerKind,
    lib: &ModelLibrary,
    tally: &Tally,
) -> Result<(), TestCaseError> {
    let inst = match parse_instance(text, "fuzz", lib) {
        Err(Error::Input { issues, .. }) => {
            prop_assert!(!issues.is_empty(), "an input error lists its issues");
            for i in &issues {
                prop_assert!(
                    !i.message.trim().is_empty(),
                    "issue without a message: {i:?}"
                );
            }
            tally.refused.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        Err(e) => return Err(TestCaseError::fail(format!("not an input error: {e}"))),
        Ok(inst) => inst,
    };
    plan_ok(inst, planner, tally)
}

fn plan_ok(inst: Instance, planner: PlannerKind, tally: &Tally) -> Result<(), TestCaseError> {
    let opts = SolveOptions {
        planner,
        deadline: Instant::now() + Duration::from_secs(5),
        mip_gap: inst.policy.mip_gap,
        write_model: None,
        formulation: Default::default(),
    };
    let kept = inst.clone();
    match plan_round(inst, planner, Some(opts)) {
        Ok(plan) => {
            // plan_round validates already; check again so that the property does not rest on it.
            prop_assert!(validate_plan(&kept, &plan).is_ok());
            prop_assert_eq!(
                plan.placements.len() + plan.pending.len(),
                kept.pending.len()
            );
            tally.planned.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }
        Err(e) => Err(TestCaseError::fail(format!("a valid instance gave {e}"))),
    }
}

// ---------------------------------------------------------------------------------------------
// Random bytes.

#[test]
fn random_bytes_are_refused_or_planned() {
    let lib = ModelLibrary::builtin();
    let tally = Tally::default();
    let strategy = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..512),
        // Printable YAML-ish characters reach further into the parser.
        proptest::collection::vec(
            select(b"nodes:pending{}[],-&*!|>'\"# \n 0123456789abcgpusid.".to_vec()),
            0..512
        ),
    ];
    runner(cases(4000))
        .run(&strategy, |bytes| {
            check(
                &String::from_utf8_lossy(&bytes),
                PlannerKind::Greedy,
                &lib,
                &tally,
            )
        })
        .unwrap();
    tally.report("random bytes");
}

// ---------------------------------------------------------------------------------------------
// Text mutations of valid instances.

const TOKENS: &[&str] = &[
    "-1",
    "0",
    "1",
    "7",
    "8",
    "1e20",
    "18446744073709551616",
    "-9223372036854775809",
    ".nan",
    ".inf",
    "~",
    "null",
    "[]",
    "{}",
    "[",
    "]",
    "{",
    "}",
    ": ",
    ", ",
    "\n",
    "\n- ",
    "\n  ",
    "&a ",
    "*a",
    "!!binary ",
    "'",
    "\"",
    "#",
    "---\n",
    "1024",
    "1025",
    "999",
    "1000",
    "node",
    "rack",
    "pod",
    "galaxy",
    "H100",
    "A100",
    "true",
    "yes",
    "0x10",
    "1_000",
    "\t",
    "\u{feff}",
    "\r\n",
    "!!str ",
    "!custom ",
    "~",
    "null",
    "é",
    "<<: *a",
    "n1",
    "h1",
    "a1",
    "research",
    "prod",
    "default",
];

/// Valid instances to mutate: the shipped ones and two generated rounds (YAML and JSON).
fn seeds() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = vec![std::fs::read_to_string(root.join("instances/quickstart.yaml")).unwrap()];
    let mut golden: Vec<_> = std::fs::read_dir(root.join("instances/golden"))
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    golden.sort();
    for p in golden {
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if name.ends_with(".yaml") && !name.ends_with(".expect.yaml") {
            out.push(std::fs::read_to_string(p).unwrap());
        }
    }
    let raw = gangplan::gen::generate(&gangplan::gen::GenParams {
        nodes: 6,
        pending: 12,
        seed: 9,
        nodes_per_rack: 2,
        racks_per_pod: 2,
        ..Default::default()
    });
    out.push(serde_yaml::to_string(&raw).unwrap());
    out.push(serde_json::to_string(&raw).unwrap());
    out
}

/// One edit: (kind, where, how long, which token).
type Edit = (u8, f64, f64, usize);

fn apply(text: &str, edits: &[Edit]) -> String {
    let mut b = text.as_bytes().to_vec();
    for &(kind, at, len, tok) in edits {
        let n = b.len();
        let i = ((at * n as f64) as usize).min(n);
        let l = ((len * 16.0) as usize + 1).min(n - i);
        let token = TOKENS[tok % TOKENS.len()].as_bytes();
        match kind % 6 {
            0 => {
                if i < n {
                    b[i] ^= 1 << (tok % 8);
                }
            }
            1 => {
                b.drain(i..i + l);
            }
            2 => {
                let piece = b[i..i + l].to_vec();
                b.splice(i..i, piece);
            }
            3 => {
                b.splice(i..i, token.iter().copied());
            }
            4 => {
                // Replace the number nearest after `at` with a token.
                if let Some(s) = (i..n).find(|&k| b[k].is_ascii_digit()) {
                    let e = (s..n).find(|&k| !b[k].is_ascii_digit()).unwrap_or(n);
                    b.splice(s..e, token.iter().copied());
                }
            }
            _ => {
                // Swap two lines.
                let text = String::from_utf8_lossy(&b).to_string();
                let mut lines: Vec<&str> = text.split('\n').collect();
                let k = lines.len();
                if k > 1 {
                    lines.swap(i % k, (tok + i) % k);
                }
                b = lines.join("\n").into_bytes();
            }
        }
    }
    String::from_utf8_lossy(&b).to_string()
}

#[test]
fn mutated_instances_are_refused_or_planned() {
    let lib = ModelLibrary::builtin();
    let tally = Tally::default();
    let seeds = seeds();
    assert!(seeds.len() >= 3);
    for s in &seeds {
        check(s, PlannerKind::Greedy, &lib, &tally).expect("every seed is a valid instance");
    }
    let edits = proptest::collection::vec(
        (any::<u8>(), 0.0f64..1.0, 0.0f64..1.0, any::<usize>()),
        1..6,
    );
    runner(cases(4000))
        .run(&(0..seeds.len(), edits), |(s, edits)| {
            check(&apply(&seeds[s], &edits), PlannerKind::Greedy, &lib, &tally)
        })
        .unwrap();
    let (refused, planned) = tally.report("mutated instances");
    assert!(refused > 0 && planned > 0, "both outcomes are reached");
}

/// A valid YAML seed changed the way editors and hand-written files change documents: a
/// byte-order mark, CRLF line ends, an explicit tag on one value, an anchor on one line's value
/// and aliases of it elsewhere.
fn reshaped(text: &str, kind: u8, at: f64, count: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let pick = |f: f64| ((f * lines.len() as f64) as usize).min(lines.len().saturating_sub(1));
    match kind % 4 {
        0 => format!("\u{feff}{text}"),
        1 => text.replace('\n', "\r\n"),
        2 => {
            // The first `key: value` line from `at` on that is no comment and quotes nothing
            // before its value.
            let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            let plain = |l: &str| {
                let head = l.split(": ").next().unwrap_or("");
                !l.trim_start().starts_with('#')
                    && l.contains(": ")
                    && !head.contains(['#', '"', '\''])
            };
            if let Some(i) = (pick(at)..out.len()).find(|&i| plain(&out[i])) {
                out[i] = out[i].replacen(": ", ": !!str ", 1);
            }
            out.join("\n")
        }
        _ => {
            let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            let i = pick(at);
            out[i] = out[i].replacen(": ", ": &x ", 1);
            for k in 1..=count {
                let j = (i + k * 3) % out.len().max(1);
                if j > i {
                    if let Some((key, _)) = out[j].clone().split_once(": ") {
                        out[j] = format!("{key}: *x");
                    }
                }
            }
            out.join("\n")
        }
    }
}

#[test]
fn boms_crlf_tags_and_aliases_are_read_alike_refused_or_planned() {
    let lib = ModelLibrary::builtin();
    let tally = Tally::default();
    let seeds: Vec<String> = seeds()
        .into_iter()
        .filter(|s| !s.trim_start().starts_with('{'))
        .collect();
    runner(cases(1500))
        .run(
            &(0..seeds.len(), any::<u8>(), 0.0f64..1.0, 1usize..6),
            |(s, kind, at, count)| {
                let text = reshaped(&seeds[s], kind, at, count);
                if kind % 4 < 2 {
                    // A BOM or CRLF changes nothing: the same plan as the seed's.
                    let a = parse_instance(&seeds[s], "seed", &lib).expect("a valid seed");
                    let b = parse_instance(&text, "reshaped", &lib);
                    prop_assert!(b.is_ok(), "BOM/CRLF refused: {:?}", b.err());
                    let decided = |i| {
                        let p = plan_round(i, PlannerKind::Greedy, None).unwrap();
                        serde_json::to_string(&(p.placements, p.preemptions, p.pending)).unwrap()
                    };
                    prop_assert_eq!(decided(a), decided(b.unwrap()));
                }
                if kind % 4 == 2 && text != seeds[s] {
                    let e = parse_instance(&text, "tagged", &lib);
                    prop_assert!(
                        matches!(&e, Err(Error::Input { issues, .. })
                            if issues.iter().any(|i| i.message.contains("YAML tag"))),
                        "a tag must be refused as a tag: {:?}",
                        e.err()
                    );
                }
                check(&text, PlannerKind::Greedy, &lib, &tally)
            },
        )
        .unwrap();
    let (refused, planned) = tally.report("reshaped instances");
    assert!(refused > 0 && planned > 0, "both outcomes are reached");
}

// ---------------------------------------------------------------------------------------------
// Near-valid instances, field by field.

/// Mostly a valid value, sometimes a bad one.
fn pick<T: Clone + std::fmt::Debug + 'static>(good: Vec<T>, bad: Vec<T>) -> BoxedStrategy<T> {
    if bad.is_empty() {
        return select(good).boxed();
    }
    prop_oneof![40 => select(good), 1 => select(bad)].boxed()
}

fn opt<T: Clone + std::fmt::Debug + 'static>(s: BoxedStrategy<T>) -> BoxedStrategy<Option<T>> {
    prop_oneof![2 => Just(None), 1 => s.prop_map(Some)].boxed()
}

fn names(pool: &[&str]) -> Vec<String> {
    pool.iter().map(|s| s.to_string()).collect()
}

fn node() -> impl Strategy<Value = RawNode> {
    (
        (
            pick(
                names(&["a", "b", "c", "d", "e", "f"]),
                names(&["", "a\u{7}"]),
            ),
            opt(pick(
                vec![0u64, 1, 2, 4, 8, 8, 8, 16],
                vec![1024, 1025, u64::MAX],
            )),
            opt(pick(
                names(&["dgx-h100", "dgx-a100", "l40s-pcie-4x", "gb200-nvl72-tray"]),
                names(&["bogus"]),
            )),
            opt(pick(names(&["H100", "A100", "L40S"]), vec![])),
        ),
        (
            opt(pick(names(&["r1", "r2", "r3"]), vec![])),
            opt(pick(names(&["p1", "p2"]), vec![])),
            proptest::collection::vec(pick(vec![0u64, 1, 3, 7], vec![8, 1000]), 0..3),
            opt(pick(vec![0u64, 1000, 64_000], vec![u64::MAX])),
            opt(pick(vec![0u64, 1024, 512_000], vec![])),
            opt(pick(names(&["d1", "d2"]), vec![])),
        ),
    )
        .prop_map(
            |(
                (name, gpus, model, gpu_type),
                (rack, pod, down, cpu_milli, memory_mib, nvlink_domain),
            )| {
                // A node needs a count or a model; give it a count when it has neither.
                let gpus = if gpus.is_none() && model.is_none() {
                    Some(8)
                } else {
                    gpus
                };
                RawNode {
                    name,
                    gpus,
                    model,
                    gpu_type,
                    rack,
                    pod,
                    down,
                    cpu_milli,
                    memory_mib,
                    nvlink_domain,
                }
            },
        )
}

fn tenant() -> impl Strategy<Value = RawTenant> {
    (
        pick(names(&["research", "prod", "default"]), vec![]),
        pick(vec![0.5f64, 1.0, 3.0, 1e6], vec![0.0, -1.0, f64::NAN]),
        opt(pick(vec![0u64, 1, 8, 64], vec![2_000_000])),
    )
        .prop_map(|(name, weight, quota)| RawTenant {
            name,
            weight,
            quota,
        })
}

fn tenant_ref() -> BoxedStrategy<Option<String>> {
    opt(pick(
        names(&["research", "prod", "default"]),
        names(&["nobody"]),
    ))
}

fn running() -> impl Strategy<Value = RawRunning> {
    (
        (
            pick(names(&["r1", "r2", "r3", "r4", "r5"]), names(&["j1"])),
            tenant_ref(),
            pick(vec![-2i64, 0, 1, 3, 5], vec![i64::MAX]),
            any::<bool>(),
            opt(pick(vec![0.0f64, 600.0, 7200.0], vec![-1.0, f64::INFINITY])),
        ),
        (
            proptest::collection::btree_map(
                pick(names(&["a", "b", "c"]), names(&["zz"])),
                proptest::collection::vec(pick(vec![0u64, 1, 2, 3, 4, 5, 6, 7], vec![8, 99]), 0..4),
                1..3,
            ),
            opt(pick(vec![250u64, 500, 999], vec![0, 1000])),
            opt(pick(vec![0u64, 4000, 32_000], vec![])),
            opt(pick(vec![0u64, 4096], vec![])),
        ),
    )
        .prop_map(
            |(
                (id, tenant, priority, preemptible, checkpoint_cost),
                (gpus, gpu_milli, cpu_milli, memory_mib),
            )| {
                RawRunning {
                    id,
                    tenant,
                    priority,
                    preemptible,
                    checkpoint_cost,
                    gpus,
                    gpu_milli,
                    cpu_milli,
                    memory_mib,
                    ends_in: None,
                }
            },
        )
}

fn pending() -> impl Strategy<Value = RawPending> {
    (
        (
            pick(
                names(&["j1", "j2", "j3", "j4", "j5", "j6", "j7", "j8"]),
                names(&["r1"]),
            ),
            tenant_ref(),
            pick(
                vec![0u64, 1, 1, 2, 3, 4, 8, 16, 32],
                vec![2_000_000, u64::MAX],
            ),
            pick(vec![-1i64, 0, 2, 5, 10], vec![i64::MIN]),
            opt(pick(vec![0.0f64, 3600.0, 1e6], vec![-5.0, f64::NAN])),
            opt(prop_oneof![
                pick(names(&["H100", "A100", "L40S", "generic", "GB200"]), vec![])
                    .prop_map(GpuTypes::One),
                proptest::collection::vec(select(names(&["H100", "A100", "L40S"])), 0..3)
                    .prop_map(GpuTypes::Many),
            ]
            .boxed()),
        ),
        (
            opt(pick(names(&["node", "rack", "pod"]), names(&["galaxy"]))),
            opt(pick(vec![1u64, 2, 4], vec![0])),
            opt(pick(vec![1u64, 2, 4, 8], vec![0, 3, 2048])),
            opt(pick(
                names(&["llm-3d", "data-parallel", "inference", "recommender"]),
                names(&["nope"]),
            )),
            opt(pick(vec![100u64, 250, 500, 999], vec![0, 1000])),
            opt(pick(vec![0u64, 2000, 16_000, 200_000], vec![])),
            opt(pick(vec![0u64, 1024, 600_000], vec![])),
        ),
    )
        .prop_map(
            |(
                (id, tenant, gpus, priority, wait, gpu_type),
                (within, max_nodes, gpus_per_node, workload, gpu_milli, cpu_milli, memory_mib),
            )| {
                RawPending {
                    id,
                    tenant,
                    gpus,
                    priority,
                    wait,
                    gpu_type,
                    within,
                    max_nodes,
                    gpus_per_node,
                    workload,
                    gpu_milli,
                    cpu_milli,
                    memory_mib,
                    time_limit: None,
                }
            },
        )
}

fn policy() -> impl Strategy<Value = RawPolicy> {
    (
        opt(pick(vec![5.0f64], vec![0.0, -1.0])),
        opt(pick(vec![0.0f64, 0.01, 0.5, 1.0], vec![2.0])),
        proptest::collection::btree_map(
            pick(
                names(&[
                    "gpu",
                    "priority",
                    "aging",
                    "fairness",
                    "strand",
                    "open_node",
                    "spread",
                    "preemption",
                    "checkpoint",
                    "cpu_job",
                ]),
                names(&["bogus"]),
            ),
            pick(vec![0.0f64, 0.5, 1.0, 1e3, 1e6], vec![-1.0, f64::INFINITY]),
            0..3,
        ),
        opt(any::<bool>().boxed()),
        opt((0u64..5).boxed()),
    )
        .prop_map(
            |(time_limit, mip_gap, weights, preemption, seed)| RawPolicy {
                time_limit,
                mip_gap,
                weights: weights.into_iter().collect::<BTreeMap<_, _>>(),
                preemption,
                seed,
                reservations: None,
                task_distribution: None,
                artifact_score: None,
            },
        )
}

fn instance() -> impl Strategy<Value = RawInstance> {
    (
        proptest::collection::vec(node(), 0..6),
        opt(proptest::collection::vec(tenant(), 0..3).boxed()),
        proptest::collection::vec(running(), 0..5),
        proptest::collection::vec(pending(), 0..9),
        opt(policy().boxed()),
        // One instance in four keeps its cross-field faults (duplicate names, GPUs held twice,
        // unknown references); the rest are repaired so that most reach the planner.
        prop_oneof![3 => Just(true), 1 => Just(false)],
    )
        .prop_map(|(nodes, tenants, running, pending, policy, fix)| {
            let mut raw = RawInstance {
                nodes,
                tenants,
                running,
                pending,
                policy,
            };
            if fix {
                repair(&mut raw);
            }
            raw
        })
}

/// Make the cross-field rules hold: unique names, references to listed things, GPUs that
/// exist and are held once, shapes that divide gangs. Single-field values are left as drawn.
fn repair(raw: &mut RawInstance) {
    let lib = ModelLibrary::builtin();
    let mut gpus_of = Vec::new();
    for (i, n) in raw.nodes.iter_mut().enumerate() {
        n.name = format!("n{i}");
        if let Some(m) = n.model.as_ref().and_then(|m| lib.hardware.get(m)) {
            n.gpus = None;
            n.gpu_type = None;
            gpus_of.push(m.gpus as u64);
        } else {
            n.model = None;
            let g = n.gpus.unwrap_or(8).min(16);
            n.gpus = Some(g);
            gpus_of.push(g);
        }
        let g = gpus_of[i];
        n.down.retain(|&d| d < g);
        n.down.sort_unstable();
        n.down.dedup();
        n.pod = n
            .rack
            .as_ref()
            .map(|r| if r == "r3" { "p2".into() } else { "p1".into() });
    }
    let listed: Vec<String> = match &mut raw.tenants {
        Some(ts) => {
            let mut seen = std::collections::BTreeSet::new();
            ts.retain(|t| seen.insert(t.name.clone()));
            ts.iter().map(|t| t.name.clone()).collect()
        }
        None => vec!["default".into()],
    };
    let tenant = |t: &mut Option<String>| {
        if let Some(name) = t {
            if !listed.contains(name) {
                *t = listed.first().cloned();
            }
        }
        if raw.tenants.is_some() && t.is_none() && !listed.contains(&"default".to_string()) {
            *t = listed.first().cloned();
        }
    };
    let mut held = std::collections::BTreeSet::new();
    let nodes = raw.nodes.len();
    raw.running.retain(|_| nodes > 0);
    for (k, r) in raw.running.iter_mut().enumerate() {
        r.id = format!("r{k}");
        tenant(&mut r.tenant);
        let mut gpus = BTreeMap::new();
        for (name, idx) in std::mem::take(&mut r.gpus) {
            let n = (name.bytes().map(|b| b as usize).sum::<usize>()) % nodes;
            let mut list: Vec<u64> = idx
                .into_iter()
                .filter(|&g| g < gpus_of[n] && held.insert((n, g)))
                .collect();
            list.sort_unstable();
            gpus.entry(format!("n{n}"))
                .or_insert_with(Vec::new)
                .extend(list);
        }
        let total: usize = gpus.values().map(|v: &Vec<u64>| v.len()).sum();
        if total != 1 {
            r.gpu_milli = None;
        }
        r.gpus = gpus;
    }
    for (j, p) in raw.pending.iter_mut().enumerate() {
        p.id = format!("j{j}");
        tenant(&mut p.tenant);
        if p.gpus != 1 {
            p.gpu_milli = None;
        }
        if p.gpus == 0 {
            p.gpu_type = None;
            p.gpus_per_node = None;
        }
        if let Some(g) = p.gpus_per_node {
            if g == 0 || p.gpus % g != 0 {
                p.gpus_per_node = None;
            }
        }
        if matches!(&p.gpu_type, Some(GpuTypes::Many(v)) if v.is_empty()) {
            p.gpu_type = None;
        }
    }
}

/// Serialise (YAML or JSON) so that the parser is part of the round trip.
fn as_text(raw: &RawInstance, json: bool) -> Option<String> {
    if json {
        // JSON has no NaN or infinity: such an instance cannot be written as JSON.
        serde_json::to_string(raw).ok()
    } else {
        serde_yaml::to_string(raw).ok()
    }
}

#[test]
fn near_valid_instances_are_refused_or_planned_by_greedy() {
    let lib = ModelLibrary::builtin();
    let tally = Tally::default();
    runner(cases(6000))
        .run(&(instance(), any::<bool>()), |(raw, json)| {
            match as_text(&raw, json) {
                Some(text) => check(&text, PlannerKind::Greedy, &lib, &tally),
                None => Ok(()),
            }
        })
        .unwrap();
    let (refused, planned) = tally.report("near-valid instances, greedy");
    assert!(
        planned * 10 >= refused,
        "at least one in eleven instances is valid and planned ({planned} of {})",
        planned + refused
    );
}

#[test]
fn near_valid_instances_are_refused_or_planned_by_the_mip() {
    let lib = ModelLibrary::builtin();
    let tally = Tally::default();
    runner((cases(6000) / 10).max(1))
        .run(&instance(), |raw| {
            check(
                &serde_yaml::to_string(&raw).unwrap(),
                PlannerKind::Ilp,
                &lib,
                &tally,
            )
        })
        .unwrap();
    tally.report("near-valid instances, ilp");
}

// ---------------------------------------------------------------------------------------------
// Regressions: inputs the fuzzer found, kept as plain cases.

/// Both planners give a valid plan for this instance.
fn plans_with_both(yaml: &str) -> Vec<gangplan::plan::Plan> {
    let lib = ModelLibrary::builtin();
    [PlannerKind::Greedy, PlannerKind::Ilp]
        .into_iter()
        .map(|planner| {
            let inst = parse_instance(yaml, "regression", &lib).expect("a valid instance");
            let kept = inst.clone();
            let plan =
                plan_round(inst, planner, None).unwrap_or_else(|e| panic!("{planner:?}: {e}"));
            validate_plan(&kept, &plan).expect("valid");
            plan
        })
        .collect()
}

/// A GPU that went down under a running job stays unusable after the job is preempted.
#[test]
fn regression_down_gpu_held_by_a_running_job() {
    let yaml = "
nodes:
  - {name: n1, gpus: 8, down: [3]}
running:
  - {id: r0, priority: -2, preemptible: true, gpus: {n1: [0, 3]}}
pending:
  - {id: j0, gpus: 3, priority: 5, wait: 3600}
  - {id: j1, gpus: 8, priority: -1}
";
    for plan in plans_with_both(yaml) {
        for p in &plan.placements {
            assert!(!p.gpus["n1"].contains(&3), "{p:?} uses the down GPU");
        }
    }
}

/// A sharer never joins a GPU whose preempted sharer outranks it.
#[test]
fn regression_sharer_beside_a_preempted_sharer() {
    let yaml = "
nodes:
  - {name: n0, gpus: 8, cpu_milli: 0}
running:
  - {id: r0, priority: 0, preemptible: true, gpus: {n0: [0]}, gpu_milli: 250, cpu_milli: 4000}
pending:
  - {id: j0, gpus: 1, priority: -1, gpu_milli: 100}
  - {id: j1, gpus: 1, priority: 2}
";
    plans_with_both(yaml);
}

/// An NVLink domain may span racks; a gang that must stay in one rack is then not placed over
/// the whole domain. The gang fits in one rack only over two nodes (n0 and n2, 4 GPUs each),
/// while n0 and n1 share the domain across racks and have 11 GPUs free between them.
#[test]
fn regression_nvlink_domain_across_racks() {
    let yaml = "
nodes:
  - {name: n0, gpus: 8, down: [0, 1, 2, 3], nvlink_domain: d1}
  - {name: n1, gpus: 8, rack: r1, pod: p1, nvlink_domain: d1}
  - {name: n2, gpus: 4}
running:
  - {id: r0, priority: -2, gpus: {n1: [0]}}
pending:
  - {id: j0, gpus: 8, priority: -1, within: rack}
";
    for plan in plans_with_both(yaml) {
        let j0 = plan
            .placements
            .iter()
            .find(|p| p.job == "j0")
            .unwrap_or_else(|| panic!("j0 fits in one rack over n0 and n2 but waits: {plan:?}"));
        let nodes: Vec<&String> = j0.gpus.keys().collect();
        assert_eq!(nodes, ["n0", "n2"], "{j0:?} must sit in n0's rack, off n1");
    }
}

/// A round with nothing to decide: the MIP has no columns, and the plan is optimal, not a
/// solver failure.
#[test]
fn regression_empty_model_is_optimal() {
    let yaml = "
nodes: [{name: a, gpus: 8}]
running: [{id: r, gpus: {a: [0]}}]
";
    let plans = plans_with_both(yaml);
    let ilp = &plans[1];
    assert_eq!(
        ilp.status,
        gangplan::plan::Status::Optimal,
        "{:?}",
        ilp.solver.note
    );
    assert!(ilp.solver.note.is_none());
}

/// YAML flow style that starts with `{` is YAML, not broken JSON.
#[test]
fn regression_flow_style_yaml_document() {
    plans_with_both("{nodes: [{name: a, gpus: 8}], pending: [{id: j, gpus: 2}]}");
}
