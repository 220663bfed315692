//! Relocation moves on finished plans: a split gang moves whole onto a node whose jobs fit in
//! the pieces it leaves; a waiting job takes the place of a cheaper one; no move ever lowers
//! the objective or breaks a plan; releasing a job undoes its commit exactly.

mod common;

use common::hand::{instance, job, node};
use common::{later, small_round};
use gangplan::assignment::{Assignment, GpuSet};
use gangplan::gen::generate;
use gangplan::hardware::ModelLibrary;
use gangplan::heuristics::greedy::portfolio;
use gangplan::heuristics::relocate::relocate;
use gangplan::instance::{validate::validate, Instance};
use gangplan::objective::{evaluate, job_spread};
use gangplan::plan::{render_plan, validate_plan, SolverInfo, Status};
use gangplan::round_state::RoundState;
use gangplan::state::ClusterState;
use gangplan::topology::Topology;
use proptest::prelude::*;

fn on(inst: &Instance, pieces: &[(&str, &[u32])]) -> GpuSet {
    pieces
        .iter()
        .map(|(n, idx)| (node(inst, n), idx.to_vec()))
        .collect()
}

/// Three 8-GPU nodes, all busy with this round's jobs: the gang split 4 + 4 over n1 and n2
/// (beside c and d), a and b on n3. Moving c into the gang's piece on n2 and the gang whole
/// onto n1 (or a and b into its pieces and the gang onto n3) keeps every job and removes the
/// gang's spread, so the objective rises by exactly that spread.
#[test]
fn split_gang_moves_whole_onto_a_node_of_small_jobs() {
    let inst = instance(
        "nodes:
  - {name: n1, gpus: 8, rack: r1}
  - {name: n2, gpus: 8, rack: r1}
  - {name: n3, gpus: 8, rack: r1}
pending:
  - {id: gang, gpus: 8}
  - {id: a, gpus: 4, max_nodes: 1}
  - {id: b, gpus: 4, max_nodes: 1}
  - {id: c, gpus: 4, max_nodes: 1}
  - {id: d, gpus: 4, max_nodes: 1}
",
    );
    let topo = Topology::new(&inst);
    let mut plan = Assignment::default();
    let gang = job(&inst, "gang");
    plan.placed.insert(
        gang,
        on(&inst, &[("n1", &[0, 1, 2, 3]), ("n2", &[0, 1, 2, 3])]),
    );
    plan.placed
        .insert(job(&inst, "c"), on(&inst, &[("n1", &[4, 5, 6, 7])]));
    plan.placed
        .insert(job(&inst, "d"), on(&inst, &[("n2", &[4, 5, 6, 7])]));
    plan.placed
        .insert(job(&inst, "a"), on(&inst, &[("n3", &[0, 1, 2, 3])]));
    plan.placed
        .insert(job(&inst, "b"), on(&inst, &[("n3", &[4, 5, 6, 7])]));
    let split = job_spread(&inst, &topo, &inst.pending[gang], &plan.placed[&gang]);
    assert!(split > 0.0, "a gang over two nodes pays spread");
    let before = evaluate(&inst, &topo, &plan).total();

    // With its time gone, relocation sets nothing up and keeps no move.
    let past = std::time::Instant::now();
    assert!(relocate(&inst, &topo, &plan, &[], past).is_none());
    let after = relocate(&inst, &topo, &plan, &[], later()).expect("the gang's move is kept");
    assert_eq!(after.placed.len(), 5, "every job still runs");
    assert_eq!(
        after.placed[&gang].keys().copied().collect::<Vec<_>>(),
        vec![node(&inst, "n1")],
        "the gang sits whole on n1 (the first node where one job moving makes room)"
    );
    let gained = evaluate(&inst, &topo, &after).total() - before;
    assert!(
        (gained - split).abs() < 1e-9,
        "gain {gained}, spread removed {split}"
    );
    validate_plan(
        &inst,
        &render_plan(
            &inst,
            &after,
            Status::Fallback,
            SolverInfo::blank("relocate"),
        ),
    )
    .unwrap();
}

/// One A100 node and one H100 node, both full: `flex` (either type) holds the A100 node, and
/// `h100` (H100 only, worth more) waits while `low` holds the H100 node. Inserting `h100`
/// where `low` is leaves `low` waiting; inserting it on the A100 node is impossible. Moving
/// `flex` cannot help (no GPU is free anywhere), so the move replaces `low` by `h100`.
#[test]
fn waiting_job_takes_the_place_of_a_cheaper_one() {
    let inst = instance(
        "nodes:
  - {name: a1, gpus: 2, gpu_type: A100, rack: r1}
  - {name: h1, gpus: 2, gpu_type: H100, rack: r1}
pending:
  - {id: flex, gpus: 2, max_nodes: 1}
  - {id: low, gpus: 2, max_nodes: 1}
  - {id: h100, gpus: 2, max_nodes: 1, priority: 5, gpu_type: H100}
",
    );
    let topo = Topology::new(&inst);
    let mut plan = Assignment::default();
    plan.placed
        .insert(job(&inst, "flex"), on(&inst, &[("a1", &[0, 1])]));
    plan.placed
        .insert(job(&inst, "low"), on(&inst, &[("h1", &[0, 1])]));
    let before = evaluate(&inst, &topo, &plan).total();
    let h100 = job(&inst, "h100");
    let after = relocate(&inst, &topo, &plan, &[h100], later()).expect("h100's move is kept");
    assert_eq!(
        after
            .placed
            .get(&h100)
            .map(|g| g.keys().copied().collect::<Vec<_>>()),
        Some(vec![node(&inst, "h1")])
    );
    assert!(!after.placed.contains_key(&job(&inst, "low")));
    assert!(evaluate(&inst, &topo, &after).total() > before);
}

/// A random small round, its topology and the greedy's plan of it.
fn greedy_round(
    nodes: usize,
    pending: usize,
    seed: u64,
    busy: f64,
    sharers: f64,
) -> (Instance, Topology, Assignment) {
    let lib = ModelLibrary::builtin();
    let params = small_round(nodes, pending, seed, busy, sharers);
    let inst = validate(&generate(&params), &lib).unwrap();
    let topo = Topology::new(&inst);
    let plan = portfolio(&inst, &topo, None);
    (inst, topo, plan)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

    /// From the greedy's plan of a random round, relocating every job (placed or waiting)
    /// gives a valid plan whose objective is at least the greedy's.
    #[test]
    fn relocation_never_lowers_the_objective_nor_breaks_the_plan(
        nodes in 2usize..24, pending in 1usize..60, seed in 0u64..10_000, busy in 0.0f64..0.9,
        sharers in 0.0f64..0.3,
    ) {
        let (inst, topo, plan) = greedy_round(nodes, pending, seed, busy, sharers);
        let all: Vec<usize> = (0..inst.pending.len()).collect();
        let after = relocate(&inst, &topo, &plan, &all, later()).unwrap_or_else(|| plan.clone());
        let (b, a) = (evaluate(&inst, &topo, &plan).total(), evaluate(&inst, &topo, &after).total());
        prop_assert!(a + 1e-9 >= b, "relocation lowered the objective: {} -> {}", b, a);
        validate_plan(&inst, &render_plan(&inst, &after, Status::Fallback, SolverInfo::blank("relocate")))
            .map_err(|e| TestCaseError::fail(format!("{e}")))?;
    }

    /// Committing a plan's jobs and releasing them again leaves the round state as it was.
    #[test]
    fn release_undoes_commit(
        nodes in 2usize..16, pending in 1usize..40, seed in 0u64..10_000, busy in 0.0f64..0.9,
        sharers in 0.0f64..0.3,
    ) {
        let (inst, _, plan) = greedy_round(nodes, pending, seed, busy, sharers);
        let before = ClusterState::new(&inst);
        let mut state = RoundState::new(&inst, &before);
        for &k in &plan.preempted {
            state.preempt(k);
        }
        for (&j, gpus) in &plan.placed {
            state.commit(j, gpus.clone());
        }
        for &j in plan.placed.keys() {
            let released = state.release(j);
            prop_assert_eq!(released.as_ref(), plan.placed.get(&j));
        }
        // The freed pools may list their GPUs in another order; compare them sorted.
        for f in state.freed.iter_mut() {
            f.sort_unstable();
        }
        let mut reference = RoundState::new(&inst, &before);
        for &k in &plan.preempted {
            reference.preempt(k);
        }
        for f in reference.freed.iter_mut() {
            f.sort_unstable();
        }
        // GPUs held per tenant come back up to rounding; compare them apart.
        for (a, b) in state.held.iter().zip(&reference.held) {
            prop_assert!((a - b).abs() < 1e-9, "held {} vs {}", a, b);
        }
        state.held.clone_from(&reference.held);
        prop_assert_eq!(format!("{:?}", state), format!("{:?}", reference));
    }
}
