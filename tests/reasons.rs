//! The reasons a plan gives its waiting jobs are worked out once per shape, and jobs of one
//! capacity key (types, size, locality, shape, share, priority) share what their GPUs say.
//! That sharing must not change a word: on rounds of every generator family, planned by the
//! greedy and by the MIP, each waiting job's reason in the plan is the one worked out for that
//! job alone.

use gangplan::gen::{generate, Family, GenParams};
use gangplan::hardware::ModelLibrary;
use gangplan::instance::validate::validate;
use gangplan::plan::reasons::{reason, AfterRound};
use gangplan::plan::render_plan;
use gangplan::solve::{solve, PlannerKind, SolveOptions};
use gangplan::state::ClusterState;
use gangplan::topology::Topology;
use std::collections::BTreeMap;
use std::sync::Arc;

#[test]
fn a_plans_reasons_are_each_jobs_own() {
    let mut compared = 0;
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    for (i, family) in Family::ALL.into_iter().enumerate() {
        let p = GenParams {
            nodes: 48,
            pending: 160,
            seed: 1 + i as u64,
            busy: 0.85,
            max_gang: 32,
            time_limit: 1.0,
            family,
            ..Default::default()
        };
        let inst = Arc::new(validate(&generate(&p), &ModelLibrary::builtin()).unwrap());
        let topo = Arc::new(Topology::new(&inst));
        for planner in [PlannerKind::Greedy, PlannerKind::Ilp] {
            let out = solve(&inst, &topo, &SolveOptions::from_policy(&inst, planner));
            let plan = render_plan(&inst, &out.assignment, out.status, out.solver_info(0.0));
            let after = AfterRound::new(&inst, &ClusterState::new(&inst), &out.assignment);
            let index: BTreeMap<&str, usize> = inst
                .pending
                .iter()
                .enumerate()
                .map(|(j, job)| (job.id.as_str(), j))
                .collect();
            for entry in &plan.pending {
                let own = reason(&inst, &after, index[entry.job.as_str()]);
                // The plan may add what the round's reservations mean for the job.
                assert!(
                    entry.reason.starts_with(&own.text),
                    "{family:?} {planner:?} {}: the plan says {:?}, the job alone {:?}",
                    entry.job,
                    entry.reason,
                    own.text
                );
                assert_eq!(entry.kind.as_deref(), Some(own.kind()), "{}", entry.job);
                *kinds.entry(own.kind().to_string()).or_default() += 1;
                compared += 1;
            }
        }
    }
    assert!(compared >= 1000, "only {compared} waiting jobs compared");
    for kind in ["unschedulable", "unresolvable"] {
        assert!(
            kinds.get(kind).is_some_and(|&n| n > 0),
            "no {kind}: {kinds:?}"
        );
    }
    assert!(!kinds.contains_key("unexplained"), "{kinds:?}");
}
