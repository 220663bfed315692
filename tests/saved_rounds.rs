//! The saved rounds of `instances/bench/` (generator families at small sizes, rounds cut from
//! trace replays, a round made outside the generator): each solved with `auto` and with the
//! aggregated model under a short limit gives plans that validate and are never below the
//! greedy's, and neither bound is below either plan; under a 2 s limit every waiting job of
//! these small rounds is told why it waits.

mod common;

use common::plans::check_plans_and_bounds;
use gangplan::hardware::ModelLibrary;
use gangplan::instance::{load_instance_file, Instance};
use gangplan::round::plan_round;
use gangplan::solve::{solve, Formulation, PlannerKind, SolveOptions, SolveOutcome};
use gangplan::topology::Topology;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The tests here solve under short limits, one round at a time as the CLI does: run side by
/// side, they would share the one rayon pool of the test process and starve each other's
/// phases past their deadlines.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn saved_rounds() -> Vec<PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("instances/bench");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("instances/bench exists")
        .map(|e| e.expect("a readable entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

fn run(inst: &Arc<Instance>, topo: &Arc<Topology>, formulation: Formulation) -> SolveOutcome {
    solve_within(inst, topo, formulation, Duration::from_millis(1500))
}

fn solve_within(
    inst: &Arc<Instance>,
    topo: &Arc<Topology>,
    formulation: Formulation,
    limit: Duration,
) -> SolveOutcome {
    let opts = SolveOptions {
        formulation,
        deadline: Instant::now() + limit,
        ..SolveOptions::from_policy(inst, PlannerKind::Ilp)
    };
    solve(inst, topo, &opts)
}

#[test]
fn every_saved_round_plans_validly_above_greedy_and_below_every_bound() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let files = saved_rounds();
    assert!(
        files.len() >= 14,
        "expected the saved rounds, found {}",
        files.len()
    );
    let lib = ModelLibrary::builtin();
    for path in files {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let inst =
            Arc::new(load_instance_file(&path, &lib).unwrap_or_else(|e| panic!("{name}: {e}")));
        let topo = Arc::new(Topology::new(&inst));
        let outs = [
            ("auto", run(&inst, &topo, Formulation::Auto)),
            ("aggregated", run(&inst, &topo, Formulation::Aggregated)),
        ];
        check_plans_and_bounds(&inst, &outs, &name);
    }
}

/// The time kept for the reasons is the solvers' to respect: a per-node model that ran to the
/// deadline once left every waiting job of these rounds `unexplained`.
#[test]
fn every_waiting_job_of_a_saved_round_is_told_why() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let lib = ModelLibrary::builtin();
    for path in saved_rounds() {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let inst = load_instance_file(&path, &lib).unwrap_or_else(|e| panic!("{name}: {e}"));
        let opts = SolveOptions {
            // 2 s: a solve that ends late on a loaded machine still leaves the reasons up to
            // 150 ms of the reserve (the bug this holds showed at 1 s and at 2 s alike).
            deadline: Instant::now() + Duration::from_secs(2),
            ..SolveOptions::from_policy(&inst, PlannerKind::Ilp)
        };
        let plan = plan_round(inst, PlannerKind::Ilp, Some(opts)).expect("a valid plan");
        let unexplained: Vec<&str> = plan
            .pending
            .iter()
            .filter(|p| p.kind.as_deref() == Some("unexplained"))
            .map(|p| p.job.as_str())
            .collect();
        assert!(
            unexplained.is_empty(),
            "{name}: {} of {} waiting jobs unexplained ({:?})",
            unexplained.len(),
            plan.pending.len(),
            plan.solver.note
        );
    }
}

/// Where the per-node model proves a round's optimum well within the round, `auto` reaches
/// it too. The saved round made by `independent_rounds.py 120 60` has reservations and many
/// victims, whose per-node fit the aggregated model does not see: its choice places far less
/// than it is worth, and its repacking keeps nothing. The per-node model proves the optimum alone in about 0.6 s on
/// the 2-core development machine; `auto`, which once started it only after the aggregated
/// path had used most of the round, ended 8% below it at 1 s and 2 s.
#[test]
fn auto_reaches_the_optimum_the_per_node_model_proves_in_time() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("instances/bench");
    let path = dir.join("independent-52n-s120.json");
    let inst = Arc::new(load_instance_file(&path, &ModelLibrary::builtin()).expect("loads"));
    let topo = Arc::new(Topology::new(&inst));
    let exact = solve_within(&inst, &topo, Formulation::PerNode, Duration::from_secs(10));
    let optimum_proven = exact
        .gap()
        .is_some_and(|gap| gap <= inst.policy.mip_gap + 1e-9);
    assert!(
        optimum_proven,
        "the per-node model proves the round within its gap ({:?}, bound {:?})",
        exact.objective, exact.bound
    );
    let auto = solve_within(&inst, &topo, Formulation::Auto, Duration::from_secs(2));
    assert!(
        auto.objective >= exact.objective - 1e-6 * exact.objective.abs(),
        "auto: {} against the per-node model's {} (bound {:?})",
        auto.objective,
        exact.objective,
        exact.bound
    );
    let bound = auto.bound.expect("auto proves a bound");
    assert!(bound >= exact.objective - 1e-6 * exact.objective.abs());
}
