//! Local moves on finished plans, chained as the aggregated path runs them: from the greedy's
//! plan of a random round, trades, then repacking, then relocation of every job; each gives a
//! valid plan whose objective is at least the one it started from, and repacking gives the
//! same plan when run again.

mod common;

use common::{family_round, later, small_round, LOCAL_MOVE_FAMILIES};
use gangplan::assignment::Assignment;
use gangplan::heuristics::greedy::portfolio;
use gangplan::heuristics::relocate::relocate;
use gangplan::heuristics::repack::repack;
use gangplan::heuristics::trade::trade;
use gangplan::instance::task_dist::{TaskDist, TaskType};
use gangplan::instance::Instance;
use gangplan::objective::evaluate;
use gangplan::plan::{render_plan, validate_plan, SolverInfo, Status};
use gangplan::topology::Topology;
use proptest::prelude::*;
use std::sync::Arc;

/// Whether `after` is a valid plan of the round whose objective is at least `before`'s.
fn no_worse(
    inst: &Instance,
    topo: &Topology,
    (before, after): (&Assignment, &Assignment),
    what: &str,
) -> Result<(), TestCaseError> {
    let (b, a) = (
        evaluate(inst, topo, before).total(),
        evaluate(inst, topo, after).total(),
    );
    prop_assert!(
        a + 1e-9 >= b,
        "{} lowered the objective: {} -> {}",
        what,
        b,
        a
    );
    validate_plan(
        inst,
        &render_plan(inst, after, Status::Fallback, SolverInfo::blank(what)),
    )
    .map_err(|e| TestCaseError::fail(format!("{what}: {e}")))?;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

    /// Rounds of the default family, CPU and memory tight, binding quotas, or every feature
    /// at once (reservations included), with or without a task distribution.
    #[test]
    fn local_moves_never_lower_the_objective_nor_break_the_plan(
        nodes in 2usize..24, pending in 1usize..60, seed in 0u64..10_000, busy in 0.0f64..0.9,
        sharers in 0.0f64..0.3, family in 0usize..4, with_dist in any::<bool>(),
    ) {
        let mut inst = family_round(small_round(nodes, pending, seed, busy, sharers), LOCAL_MOVE_FAMILIES[family]);
        if with_dist {
            // The round's own jobs as its task distribution: fragmentation-aware placement,
            // and repacking that recreates on the ruined nodes only.
            let dist = TaskDist::from_types(inst.pending.iter().map(TaskType::of));
            inst.task_dist = Some(Arc::new(dist));
        }
        let topo = Topology::new(&inst);
        let greedy = portfolio(&inst, &topo, None);
        let (traded, _) = trade(&inst, &topo, &greedy, later());
        no_worse(&inst, &topo, (&greedy, &traded), "trade")?;
        let (repacked, done) = repack(&inst, &topo, &traded, later());
        prop_assert!(!done.cut_short);
        no_worse(&inst, &topo, (&traded, &repacked), "repack")?;
        prop_assert_eq!(&repack(&inst, &topo, &traded, later()).0, &repacked);
        let all: Vec<usize> = (0..inst.pending.len()).collect();
        let relocated = relocate(&inst, &topo, &repacked, &all, later()).unwrap_or_else(|| repacked.clone());
        no_worse(&inst, &topo, (&repacked, &relocated), "relocate")?;
    }
}
