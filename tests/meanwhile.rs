//! On the largest rounds (those that solve the aggregated model's relaxation) the greedy plan
//! is improved by trades and repacking while the model solves. Where the model does not answer
//! in time, the round's plan is that improved plan: above the greedy plan, valid, in time, and
//! its note says how it was made; where the model answers, its choice is still placed and the
//! plan is at least the greedy one, under the model's bound.

mod faulty_solvers;

use faulty_solvers::Overruns;
use gangplan::gen::{generate, Family, GenParams};
use gangplan::hardware::ModelLibrary;
use gangplan::instance::validate::validate;
use gangplan::instance::Instance;
use gangplan::model::MipModel;
use gangplan::plan::{render_plan, validate_plan, Status};
use gangplan::solve::aggregated::solves_relaxation;
use gangplan::solve::{
    solve_with, BackendResult, BackendSettings, Formulation, Highs, MipBackend, PlannerKind,
    SolveOptions, SolveOutcome,
};
use gangplan::topology::Topology;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// HiGHS, answering no earlier than a given time after it is called.
struct Late(Duration);
impl MipBackend for Late {
    fn solve(
        &self,
        m: MipModel,
        start: &[f64],
        settings: &BackendSettings,
    ) -> gangplan::Result<BackendResult> {
        let started = Instant::now();
        let answer = Highs.solve(m, start, settings);
        std::thread::sleep(self.0.saturating_sub(started.elapsed()));
        answer
    }
}

/// A tight-cpu round of 600 nodes (the greedy strands GPUs without CPU or memory, which the
/// trades take back), large enough to solve the relaxation.
fn tight_round() -> (Arc<Instance>, Arc<Topology>) {
    let raw = generate(&GenParams {
        nodes: 600,
        pending: 2000,
        seed: 1,
        family: Family::TightCpu,
        ..Default::default()
    });
    let inst = validate(&raw, &ModelLibrary::builtin()).expect("a valid round");
    assert!(solves_relaxation(&inst));
    let topo = Topology::new(&inst);
    (Arc::new(inst), Arc::new(topo))
}

/// Solve with `backend` and a limit; the plan is valid and returned by the deadline.
fn solve_late(backend: Arc<dyn MipBackend>, limit: Duration) -> SolveOutcome {
    let (inst, topo) = tight_round();
    let opts = SolveOptions {
        planner: PlannerKind::Ilp,
        deadline: Instant::now() + limit,
        mip_gap: 0.01,
        write_model: None,
        formulation: Formulation::Aggregated,
    };
    let out = solve_with(&inst, &topo, &opts, backend);
    assert!(
        Instant::now() <= opts.deadline,
        "returned past the deadline"
    );
    let plan = render_plan(&inst, &out.assignment, out.status, out.solver_info(0.0));
    validate_plan(&inst, &plan).expect("the plan is valid");
    out
}

#[test]
fn a_model_that_never_answers_leaves_the_greedy_plan_improved() {
    let out = solve_late(
        Arc::new(Overruns(Duration::from_secs(30))),
        Duration::from_secs(3),
    );
    assert!(
        out.objective > out.greedy_objective + 1.0,
        "plan {} against greedy {}: {:?}",
        out.objective,
        out.greedy_objective,
        out.note
    );
    assert_ne!(out.status, Status::Fallback);
    assert_eq!(out.bound, None, "no answer, no bound");
    assert!(out.time_limit_hit);
    let note = out.note.as_deref().unwrap_or("");
    assert!(
        note.contains("did not return within the time limit"),
        "{note}"
    );
    assert!(
        note.contains("improved by trades and repacking while the model solved"),
        "{note}"
    );
}

#[test]
fn a_model_that_answers_after_the_greedy_still_has_its_choice_placed() {
    let (inst, topo) = tight_round();
    let out = solve_late(
        Arc::new(Late(Duration::from_millis(600))),
        Duration::from_secs(6),
    );
    let bound = out.bound.expect("the model's bound");
    assert!(bound + 1e-6 >= out.objective);
    assert!(out.objective > out.greedy_objective);
    assert!(
        out.incumbent.is_some(),
        "the model's choice was placed: {:?}",
        out.note
    );
    // Against the same round with the model answering at once: the wait cost no plan.
    let opts = SolveOptions {
        formulation: Formulation::Aggregated,
        deadline: Instant::now() + Duration::from_secs(6),
        ..SolveOptions::from_policy(&inst, PlannerKind::Ilp)
    };
    let prompt = solve_with(&inst, &topo, &opts, Arc::new(Highs));
    assert!(
        out.objective >= prompt.objective * 0.99,
        "late {} against prompt {}",
        out.objective,
        prompt.objective
    );
}
