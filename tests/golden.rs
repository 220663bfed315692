//! Golden scenarios: small hand-checked rounds in `instances/golden/`, each with the outcome
//! written next to it in `<name>.expect.yaml`. Both planners must reach it unless the
//! expectation names the planners it holds for.

use gangplan::hardware::ModelLibrary;
use gangplan::instance::load_instance_file;
use gangplan::plan::Plan;
use gangplan::round::plan_round;
use gangplan::solve::PlannerKind;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    placed: Option<Vec<String>>,
    pending: Option<Vec<String>>,
    preempted: Option<Vec<String>>,
    #[serde(default)]
    on: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    gpus: BTreeMap<String, BTreeMap<String, Vec<u32>>>,
    #[serde(default)]
    same_gpu: Vec<Vec<String>>,
    #[serde(default)]
    tenant_gpus: BTreeMap<String, u32>,
    #[serde(default)]
    unresolvable: Vec<String>,
    planners: Option<Vec<String>>,
}

fn golden_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("instances/golden");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("instances/golden exists")
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "yaml")
                && !p.to_string_lossy().ends_with(".expect.yaml")
        })
        .collect();
    files.sort();
    files
}

fn check(name: &str, planner: &str, plan: &Plan, e: &Expect, inst_path: &Path) {
    let ctx = format!("{name} [{planner}]");
    let placed: BTreeSet<&str> = plan.placements.iter().map(|p| p.job.as_str()).collect();
    let pending: BTreeSet<&str> = plan.pending.iter().map(|p| p.job.as_str()).collect();
    let preempted: BTreeSet<&str> = plan.preemptions.iter().map(|p| p.job.as_str()).collect();
    if let Some(want) = &e.placed {
        if want.is_empty() {
            assert!(
                placed.is_empty(),
                "{ctx}: expected nothing placed, got {placed:?}"
            );
        }
        for j in want {
            assert!(
                placed.contains(j.as_str()),
                "{ctx}: expected {j} placed; placed {placed:?}; pending {:?}",
                plan.pending
            );
        }
    }
    for j in e.pending.iter().flatten() {
        assert!(
            pending.contains(j.as_str()),
            "{ctx}: expected {j} pending; placed {placed:?}"
        );
    }
    if let Some(want) = &e.preempted {
        let want: BTreeSet<&str> = want.iter().map(|s| s.as_str()).collect();
        assert_eq!(preempted, want, "{ctx}: preempted");
    }
    for (job, nodes) in &e.on {
        let p = plan
            .placements
            .iter()
            .find(|p| &p.job == job)
            .unwrap_or_else(|| panic!("{ctx}: {job} not placed"));
        let got: BTreeSet<&str> = p.gpus.keys().map(|s| s.as_str()).collect();
        let want: BTreeSet<&str> = nodes.iter().map(|s| s.as_str()).collect();
        assert_eq!(got, want, "{ctx}: nodes of {job}");
    }
    for (job, gpus) in &e.gpus {
        let p = plan
            .placements
            .iter()
            .find(|p| &p.job == job)
            .unwrap_or_else(|| panic!("{ctx}: {job} not placed"));
        assert_eq!(&p.gpus, gpus, "{ctx}: GPUs of {job}");
    }
    for group in &e.same_gpu {
        let gpus: BTreeSet<_> = group
            .iter()
            .map(|j| {
                plan.placements
                    .iter()
                    .find(|p| &p.job == j)
                    .unwrap_or_else(|| panic!("{ctx}: {j} not placed"))
                    .gpus
                    .clone()
            })
            .collect();
        assert_eq!(
            gpus.len(),
            1,
            "{ctx}: {group:?} should share one GPU, got {gpus:?}"
        );
    }
    if !e.tenant_gpus.is_empty() {
        let raw: gangplan::instance::raw::RawInstance =
            serde_yaml::from_str(&std::fs::read_to_string(inst_path).unwrap()).unwrap();
        let tenant_of: BTreeMap<&str, &str> = raw
            .pending
            .iter()
            .map(|p| (p.id.as_str(), p.tenant.as_deref().unwrap_or("default")))
            .collect();
        let mut held: BTreeMap<&str, u32> = BTreeMap::new();
        for p in &plan.placements {
            *held.entry(tenant_of[p.job.as_str()]).or_default() +=
                p.gpus.values().map(|v| v.len() as u32).sum::<u32>();
        }
        for (t, n) in &e.tenant_gpus {
            assert_eq!(
                held.get(t.as_str()).copied().unwrap_or(0),
                *n,
                "{ctx}: GPUs of tenant {t} ({held:?})"
            );
        }
    }
    for j in &e.unresolvable {
        let entry = plan
            .pending
            .iter()
            .find(|p| &p.job == j)
            .unwrap_or_else(|| panic!("{ctx}: {j} should be pending"));
        assert_eq!(
            entry.kind.as_deref(),
            Some("unresolvable"),
            "{ctx}: {j}: {}",
            entry.reason
        );
    }
    for p in &plan.pending {
        assert!(!p.reason.is_empty(), "{ctx}: {} has no reason", p.job);
    }
}

#[test]
fn golden_scenarios() {
    let lib = ModelLibrary::builtin();
    let files = golden_files();
    assert!(
        files.len() >= 14,
        "expected the golden scenarios, found {}",
        files.len()
    );
    for path in files {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let expect_path = path.with_file_name(format!("{name}.expect.yaml"));
        let e: Expect = serde_yaml::from_str(
            &std::fs::read_to_string(&expect_path)
                .unwrap_or_else(|_| panic!("{name}: missing {}", expect_path.display())),
        )
        .unwrap_or_else(|err| panic!("{name}: bad expectation: {err}"));
        for (label, kind) in [("ilp", PlannerKind::Ilp), ("greedy", PlannerKind::Greedy)] {
            if e.planners
                .as_ref()
                .is_some_and(|ps| !ps.iter().any(|p| p == label))
            {
                continue;
            }
            let inst =
                load_instance_file(&path, &lib).unwrap_or_else(|err| panic!("{name}: {err}"));
            let plan = plan_round(inst, kind, None)
                .unwrap_or_else(|err| panic!("{name} [{label}]: {err}"));
            check(&name, label, &plan, &e, &path);
        }
    }
}

#[test]
fn quickstart_solves_to_a_valid_plan() {
    let lib = ModelLibrary::builtin();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("instances/quickstart.yaml");
    let inst = load_instance_file(&path, &lib).unwrap();
    let plan = plan_round(inst, PlannerKind::Ilp, None).unwrap();
    assert!(
        plan.placements.len() >= 5,
        "quickstart should start most jobs: {:?}",
        plan.pending
    );
    assert!(
        plan.pending.iter().any(|p| p.job == "giant"),
        "the 64-GPU job cannot fit the 31 usable H100s"
    );
    assert!(
        plan.solver.gap.is_some_and(|g| g <= 0.01 + 1e-9),
        "quickstart should solve within the gap: {:?}",
        plan.solver
    );
}
