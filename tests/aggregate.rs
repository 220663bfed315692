//! The aggregated model against the exact per-node model (the oracle) on small rounds: its
//! bound is never below the exact optimum, its plans are valid and never worse than greedy, and
//! on most small rounds it reaches and proves the exact optimum.

use gangplan::gen::{generate, GenParams};
use gangplan::hardware::ModelLibrary;
use gangplan::instance::validate::validate;
use gangplan::plan::{render_plan, validate_plan};
use gangplan::solve::{
    solve, BackendSettings, Formulation, Highs, MipBackend, PlannerKind, SolveOptions,
};
use gangplan::topology::Topology;
use std::sync::Arc;

/// HiGHS's settings for a direct solve of a model: seed 1, no model file.
fn backend_settings(time_limit: f64, mip_gap: f64) -> BackendSettings {
    BackendSettings {
        time_limit,
        mip_gap,
        seed: 1,
        write_model: None,
    }
}

/// A generated round and its topology.
fn generated(p: &GenParams) -> (Arc<gangplan::instance::Instance>, Arc<Topology>) {
    let inst = Arc::new(validate(&generate(p), &ModelLibrary::builtin()).unwrap());
    let topo = Arc::new(Topology::new(&inst));
    (inst, topo)
}

fn opts(inst: &gangplan::instance::Instance, formulation: Formulation) -> SolveOptions {
    SolveOptions {
        formulation,
        mip_gap: 1e-4,
        ..SolveOptions::from_policy(inst, PlannerKind::Ilp)
    }
}

#[test]
fn aggregated_bound_covers_the_exact_optimum() {
    let mut compared = 0;
    let mut same_optimum = 0;
    for (seed, busy) in (1..=8).flat_map(|s| [(s, 0.65), (s, 0.85)]) {
        let p = GenParams {
            nodes: 8,
            pending: 16,
            seed,
            busy,
            nodes_per_rack: 4,
            racks_per_pod: 2,
            time_limit: 20.0,
            ..Default::default()
        };
        let (inst, topo) = generated(&p);
        let exact = solve(&inst, &topo, &opts(&inst, Formulation::PerNode));
        let agg = solve(&inst, &topo, &opts(&inst, Formulation::Aggregated));
        assert!(
            agg.objective + 1e-7 >= agg.greedy_objective,
            "seed {seed} busy {busy}: aggregated plan below greedy"
        );
        validate_plan(
            &inst,
            &render_plan(&inst, &agg.assignment, agg.status, agg.solver_info(0.0)),
        )
        .unwrap_or_else(|e| panic!("seed {seed} busy {busy}: {e}"));
        // The exact model's proven optimum (solved to a 0.01% gap) never exceeds the aggregated bound.
        if let (Some(b), false) = (agg.bound, exact.time_limit_hit) {
            assert!(
                b + 1e-6 >= exact.objective,
                "seed {seed} busy {busy}: aggregated bound {b} below the exact optimum {}",
                exact.objective
            );
            assert!(
                exact.objective + 1e-6 >= agg.objective,
                "seed {seed} busy {busy}: aggregated plan {} above the exact optimum {}",
                agg.objective,
                exact.objective
            );
            compared += 1;
            // Both reach the same optimum, and the aggregated bound proves it.
            if (agg.objective - exact.objective).abs() <= 1e-6 && b - exact.objective <= 1e-6 {
                same_optimum += 1;
            }
        }
    }
    assert!(
        compared >= 8,
        "too few rounds solved exactly to compare ({compared})"
    );
    println!("aggregated model proved the exact optimum on {same_optimum} of {compared} rounds");
    // On most small rounds the aggregated model is exact: same plan value, bound = optimum.
    assert!(
        same_optimum * 2 >= compared,
        "the aggregated model proved the exact optimum on only {same_optimum} of {compared} rounds"
    );
}

/// The golden round `name` solved by the aggregated model and by the exact per-node model.
fn golden_both_ways(
    name: &str,
) -> (
    Arc<gangplan::instance::Instance>,
    gangplan::solve::SolveOutcome,
    gangplan::solve::SolveOutcome,
) {
    let lib = ModelLibrary::builtin();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("instances/golden/{name}.yaml"));
    let inst = Arc::new(gangplan::instance::load_instance_file(&path, &lib).unwrap());
    let topo = Arc::new(Topology::new(&inst));
    let agg = solve(&inst, &topo, &opts(&inst, Formulation::Aggregated));
    let exact = solve(&inst, &topo, &opts(&inst, Formulation::PerNode));
    (inst, agg, exact)
}

/// Solve a golden scenario with the aggregated model and check that its bound proves the plan
/// optimal (`why`: what would be missing from the model if it did not).
fn aggregated_bound_proves_optimal(
    name: &str,
    why: &str,
) -> (
    Arc<gangplan::instance::Instance>,
    gangplan::solve::SolveOutcome,
) {
    let (inst, agg, exact) = golden_both_ways(name);
    let bound = agg.bound.expect("the aggregated model reports a bound");
    assert!(
        bound <= agg.objective + 1e-6,
        "{name}: bound {bound} above the plan's {}: {why}",
        agg.objective
    );
    assert!(
        (agg.objective - exact.objective).abs() <= 1e-6,
        "{name}: aggregated plan {} but the exact optimum is {}",
        agg.objective,
        exact.objective
    );
    (inst, agg)
}

fn job(inst: &gangplan::instance::Instance, id: &str) -> usize {
    inst.pending.iter().position(|j| j.id == id).unwrap()
}

/// A gang whose every placement costs more spread than it is worth: the aggregated model's
/// spread floor keeps it out of the bound, so the bound proves the plan that leaves it
/// waiting optimal.
#[test]
fn spread_floor_proves_a_wide_gang_not_worth_starting() {
    let (inst, agg) = aggregated_bound_proves_optimal(
        "spread-not-worth",
        "the wide gang's spread floor is missing",
    );
    assert!(!agg.assignment.placed.contains_key(&job(&inst, "wide")));
}

/// Two cheap victims on two nodes free enough GPUs for an 8-GPU one-node job, but no whole
/// node: the slot rows count a node's slot only once every GPU of it is free or paid for, so
/// the bound proves that the job waits.
#[test]
fn slot_rows_need_a_whole_node_of_victims() {
    let (_, agg) = aggregated_bound_proves_optimal(
        "whole-node-victims",
        "slots are credited for victims that do not free a whole node",
    );
    assert!(agg.assignment.placed.is_empty());
    assert!(agg.assignment.preempted.is_empty());
}

/// A 16-GPU gang competing with two one-node jobs for two whole nodes: on its fewest nodes it
/// takes both, so starting all three needs it on a third node, which the bound charges.
#[test]
fn gang_on_more_nodes_pays_the_extra_node_in_the_bound() {
    let (inst, agg) = aggregated_bound_proves_optimal(
        "gang-or-whole-nodes",
        "the gang is counted both compact and on the half-free nodes",
    );
    let gang = agg.assignment.placed.get(&job(&inst, "gang"));
    assert_eq!(gang.map(|g| g.len()), Some(3), "the gang spans three nodes");
}

/// The golden round `name`'s aggregated plan and bound against its exact optimum `optimum`:
/// the bound is valid and at most `at_most` (`why`: what a looser bound misses); returns the
/// aggregated plan's objective.
fn bound_at_most(name: &str, optimum: f64, at_most: f64, why: &str) -> f64 {
    let (_, agg, exact) = golden_both_ways(name);
    let bound = agg.bound.expect("the aggregated model reports a bound");
    assert!(
        (exact.objective - optimum).abs() < 1e-6,
        "{}",
        exact.objective
    );
    assert!(
        bound >= exact.objective - 1e-6,
        "{name}: bound {bound} below the optimum"
    );
    assert!(bound <= at_most + 1e-6, "{name}: bound {bound}: {why}");
    agg.objective
}

/// Three 16-GPU gangs, each of which alone sits on two whole nodes of one rack, over racks
/// of three, three and one whole nodes: the rack rows let two of them in a rack at no spread,
/// so the bound charges the third its cheapest way out (a third node, 1.6) and falls from
/// 48 (every gang at its own floor) to 46.4; the optimum is 44.8.
#[test]
fn gangs_on_their_fewest_nodes_compete_for_a_racks_whole_nodes() {
    bound_at_most(
        "rack-blocks",
        44.8,
        46.4,
        "the racks' whole nodes are not counted",
    );
}

/// Two 16-GPU gangs over two rack-scale NVLink domains of GB200 trays with 20 and 12 free
/// GPUs: each alone sits inside the first domain at no spread, but only that domain holds one,
/// so the unit rows charge the second gang its way across two domains and two racks (4.8):
/// the bound falls from 32 (both at their floors) to the optimum, 27.2, which the aggregated
/// plan reaches.
#[test]
fn gangs_inside_one_nvlink_domain_compete_for_its_room() {
    let plan = bound_at_most(
        "unit-blocks",
        27.2,
        27.2,
        "the domains' room is not counted",
    );
    assert!((plan - 27.2).abs() < 1e-6, "{plan}");
}

/// A fixed-shape gang (8 GPUs on every node it uses) in a rack whose free GPUs would hold it
/// but whose nodes, all but one, have 7 GPUs free: the spread floor counts a node only where
/// it can host a whole piece, so the bound charges the gang both racks.
#[test]
fn spread_floor_counts_only_nodes_that_host_a_whole_piece() {
    let (inst, agg) = aggregated_bound_proves_optimal(
        "fixed-shape-racks",
        "the spread floor counts 7-GPU nodes for a gang of 8 GPUs a node",
    );
    assert!(agg.assignment.placed.contains_key(&job(&inst, "gang")));
}

/// A gang that fits in one rack only with a costly victim's GPUs: the model does not preempt
/// it, so it charges the gang the floor of the free GPUs (two racks), not the floor over every
/// GPU it could take (one rack).
#[test]
fn spread_floor_below_the_free_gpus_needs_victims_preempted() {
    let (_, agg) = aggregated_bound_proves_optimal(
        "victim-for-rack",
        "the gang's one-rack floor is counted without preempting the victim it needs",
    );
    assert!(agg.assignment.preempted.is_empty());
}

/// Two gangs that accept any GPU type and one NVLink domain that holds either: the aggregated
/// model charges the one it puts on 8-GPU nodes the extra unit it spans there.
#[test]
fn a_gang_on_the_type_of_smaller_units_pays_the_units_it_spans() {
    let (inst, agg) = aggregated_bound_proves_optimal(
        "unit-sizes",
        "the units a gang spans on the type of smaller units are not charged",
    );
    assert_eq!(agg.assignment.placed.len(), 2);
    assert!(agg.assignment.placed.contains_key(&job(&inst, "b")));
}

/// A tenant above its quota before the round, whose own preemptions cannot bring it back
/// under with its job started: the aggregated model keeps that job out of its bound.
#[test]
fn a_tenant_above_its_quota_starts_only_within_it() {
    let (inst, agg) = aggregated_bound_proves_optimal(
        "over-quota",
        "the quota of a tenant above it is left out of the aggregated model",
    );
    assert!(!agg.assignment.placed.contains_key(&job(&inst, "a-new")));
}

/// The same round with victims and whole-slot counts continuous (the linear relaxation; large
/// rounds keep them continuous): each node's cheap victim frees only part of its slot, and
/// without a cap per victim the relaxation counts those parts (two nodes, each with 4 GPUs free
/// and one 2-GPU victim gone, three quarters of a slot each) as a node for the 8-GPU job. With
/// the caps a slot takes every victim on its node, so the relaxation starts no part of the job.
#[test]
fn relaxation_counts_no_part_of_a_slot() {
    let lib = ModelLibrary::builtin();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("instances/golden/whole-node-victims.yaml");
    let inst = Arc::new(gangplan::instance::load_instance_file(&path, &lib).unwrap());
    let topo = Arc::new(Topology::new(&inst));
    let mut relaxed = gangplan::model::aggregate::build(&inst, &topo, false);
    let model = std::mem::replace(&mut relaxed.model, gangplan::model::MipModel::empty());
    let settings = backend_settings(30.0, 1e-6);
    let answer = Highs.solve(model, &[], &settings).unwrap();
    let eight = job(&inst, "eight");
    let (_, n_c) = relaxed
        .classes
        .iter()
        .find(|(members, _)| members.contains(&eight))
        .expect("the job has a class");
    let started = answer.columns[relaxed.columns[n_c]];
    assert!(
        started <= 1e-6,
        "the relaxation starts {started} of the 8-GPU job"
    );
}

/// Ten sharers of 300 milli on three free GPUs: nine fit, three to a GPU. The GPU rows count
/// each as 0.3 of a GPU, room for all ten; the rows of the dual-feasible function u_3 count
/// each as a third, so the relaxation starts at most nine.
#[test]
fn relaxation_packs_sharers_three_to_a_gpu() {
    let lib = ModelLibrary::builtin();
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("instances/golden/sharer-bins.yaml");
    let inst = Arc::new(gangplan::instance::load_instance_file(&path, &lib).unwrap());
    let topo = Arc::new(Topology::new(&inst));
    let mut relaxed = gangplan::model::aggregate::build(&inst, &topo, false);
    let model = std::mem::replace(&mut relaxed.model, gangplan::model::MipModel::empty());
    let answer = Highs
        .solve(model, &[], &backend_settings(30.0, 1e-6))
        .unwrap();
    let started: f64 = relaxed
        .classes
        .iter()
        .map(|(_, n_c)| answer.columns[relaxed.columns[n_c]])
        .sum();
    assert!(
        (started - 9.0).abs() < 1e-6,
        "the relaxation starts {started} sharers"
    );
}

/// CPU left on one node, memory on another, both on a third for one job: counted apart they
/// would credit two jobs that need both with their GPU; the rows of CPU and memory together
/// count per node, so the bound proves the plan that starts one of them optimal.
#[test]
fn cpu_and_memory_count_together_per_node() {
    let (inst, agg) = aggregated_bound_proves_optimal(
        "cpu-memory-crossed",
        "CPU and memory are counted on different nodes for the same jobs",
    );
    assert!(agg.assignment.placed.contains_key(&job(&inst, "first")));
    assert!(!agg.assignment.placed.contains_key(&job(&inst, "second")));
}

/// A preemptible CPU-only job holds the CPU a gang needs: the bound counts the CPU its
/// preemption frees (a victim without a GPU is still a victim of the node's CPU rows), so it
/// proves the plan that preempts it and starts the gang optimal.
#[test]
fn a_cpu_only_victim_frees_its_cpu_in_the_bound() {
    let (inst, agg) = aggregated_bound_proves_optimal(
        "cpu-only-victim",
        "the CPU of a victim without a GPU is not counted as freed",
    );
    assert!(agg.assignment.placed.contains_key(&job(&inst, "train")));
    // The default formulation keeps the lower of the two models' bounds: the aggregated
    // model's must hold too, or no bound is claimed.
    let topo = Arc::new(Topology::new(&inst));
    let auto = solve(&inst, &topo, &opts(&inst, Formulation::Auto));
    let bound = auto.bound.expect("a bound is claimed");
    assert!(
        (bound - auto.objective).abs() <= 1e-6,
        "bound {bound} against the plan's {}",
        auto.objective
    );
}

/// One node's CPU holds one job of 16 CPU or two of 8, never one of each: counted by GPUs
/// per level the node holds both, and the bound credits the high-priority job and a small
/// one; the rows of CPU amounts per node prove the plan that starts both small jobs optimal.
#[test]
fn cpu_amounts_of_mixed_levels_count_together_per_node() {
    let (inst, agg) = aggregated_bound_proves_optimal(
        "cpu-levels-mixed",
        "the node's CPU is counted once per level, not as one amount",
    );
    assert!(agg.assignment.placed.contains_key(&job(&inst, "small-a")));
    assert!(agg.assignment.placed.contains_key(&job(&inst, "small-b")));
    assert!(!agg.assignment.placed.contains_key(&job(&inst, "big")));
}

/// Two nodes whose CPU and memory are left in opposite proportions: rows that count one
/// level (or one pair of levels) over both nodes let one node's memory and the other's CPU
/// serve the same jobs; each node's room split among the pairs of levels proves the plan
/// optimal, which starts one job on the first node and two on the second.
#[test]
fn each_nodes_room_is_split_among_the_pairs_of_levels() {
    let (inst, agg) = aggregated_bound_proves_optimal(
        "cpu-memory-split",
        "one node's memory and another's CPU serve the same jobs",
    );
    for id in ["small", "pair", "mid"] {
        assert!(agg.assignment.placed.contains_key(&job(&inst, id)), "{id}");
    }
    assert_eq!(agg.assignment.placed.len(), 3);
}

/// Two nodes reserved for a gang from 600 s on: a job without a time limit may not use the
/// free one, a job that ends before 600 s may. Rows that count every node for every job put
/// the longer job on the reserved node (bound 9.0); the rows of the reserved nodes prove the
/// plan that starts the short job optimal (2.52).
#[test]
fn a_job_that_would_outlast_a_reservation_gets_no_room_on_its_nodes() {
    let (inst, agg) = aggregated_bound_proves_optimal(
        "reserved-nodes",
        "the reserved nodes count for a job that may not use them",
    );
    assert!(agg.assignment.placed.contains_key(&job(&inst, "short")));
    assert_eq!(agg.assignment.placed.len(), 1);
}

/// CPU-only jobs take CPU and memory of one node: two of 10 CPU do not fit beside a GPU job
/// in the 14 CPU a node has left, and one of 300 CPU fits no node. Counted as started
/// whatever the CPU left, they put the bound at 1.235; with the rows of the cluster's CPU
/// and memory it proves the plan optimal (1.12).
#[test]
fn cpu_only_jobs_take_their_cpu_and_memory_in_the_bound() {
    let (inst, agg) = aggregated_bound_proves_optimal(
        "cpu-only-jobs",
        "CPU-only jobs count as started whatever the CPU left",
    );
    for id in ["train", "etl-a"] {
        assert!(agg.assignment.placed.contains_key(&job(&inst, id)), "{id}");
    }
    assert_eq!(agg.assignment.placed.len(), 2);
}

/// A round of 520 nodes whose 6,000 jobs ask CPU and memory per GPU at random: at 16 levels an
/// octave they would make more classes than the budget, so the levels get coarser until they
/// fit; the relaxation of the coarser model still bounds the greedy plan and the placed
/// choice.
#[test]
fn diverse_requests_get_coarser_levels_and_the_bound_still_holds() {
    use gangplan::model::aggregate::classes::{granularity, KeyRules, CLASS_BUDGET};
    use rand::{Rng, SeedableRng};
    let p = GenParams {
        nodes: 520,
        pending: 6_000,
        seed: 3,
        nodes_per_rack: 16,
        racks_per_pod: 4,
        time_limit: 60.0,
        family: gangplan::gen::Family::TightCpu,
        ..Default::default()
    };
    let mut raw = generate(&p);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    for job in raw.pending.iter_mut().filter(|j| j.gpu_milli.is_none()) {
        job.cpu_milli = Some(job.gpus * rng.gen_range(1_000..16_000));
        job.memory_mib = Some(job.gpus * rng.gen_range(8_000..190_000));
    }
    let inst = Arc::new(validate(&raw, &ModelLibrary::builtin()).unwrap());
    let topo = Arc::new(Topology::new(&inst));
    // Even with every priority standing as one (no victims), 16 levels an octave make more
    // classes than the budget.
    let chosen = granularity(&inst, &topo, KeyRules::new(&inst, Default::default())).levels();
    assert!(
        chosen.bits() < 4,
        "16 levels an octave kept for diverse requests"
    );
    let agg = gangplan::model::aggregate::build(&inst, &topo, false);
    assert!(
        agg.classes.len() <= CLASS_BUDGET,
        "{} classes",
        agg.classes.len()
    );
    let out = solve(&inst, &topo, &opts(&inst, Formulation::Aggregated));
    let bound = out.bound.expect("the relaxation's bound");
    assert!(out.objective >= out.greedy_objective - 1e-6);
    assert!(
        bound + 1e-6 >= out.objective,
        "bound {bound} below the plan's {}",
        out.objective
    );
    validate_plan(
        &inst,
        &render_plan(&inst, &out.assignment, out.status, out.solver_info(0.0)),
    )
    .unwrap();
}

/// Three empty nodes of 6, 8 and 8 usable GPUs, filled exactly by jobs of 6, 8 and 8: the
/// packing floor must count the opened nodes' GPUs from the smallest node up (6 + 8 + 8), not
/// at the smallest size each (3 x 6), for the bound to prove the plan optimal.
#[test]
fn packing_floor_counts_opened_nodes_by_size() {
    let (_, agg) = aggregated_bound_proves_optimal(
        "opened-node-sizes",
        "the packing floor counts every opened node at the smallest node's size",
    );
    assert_eq!(agg.assignment.placed.len(), 3);
}

/// A linear program's optimum is its bound: max x + y with x + 2y <= 4 and 3x + y <= 6 has its
/// optimum 2.8 at (1.6, 1.2); with y integer the MIP's optimum and bound is 8/3 (y = 1,
/// x = 5/3).
#[test]
fn a_linear_program_reports_its_optimum_as_its_bound() {
    use good_lp::{constraint, variable};
    let settings = backend_settings(10.0, 1e-9);
    let model = |y_integer: bool| {
        let mut m = gangplan::model::MipModel::empty();
        let x = m.problem.add(variable().min(0.0));
        let y = m.problem.add(
            if y_integer {
                variable().integer()
            } else {
                variable()
            }
            .min(0.0),
        );
        m.objective = x + y;
        m.constraints.push(constraint!(x + 2.0 * y <= 4.0));
        m.constraints.push(constraint!(3.0 * x + y <= 6.0));
        m
    };
    let lp = Highs.solve(model(false), &[], &settings).unwrap();
    let bound = lp.dual_bound.expect("an optimal LP reports its bound");
    assert!((bound - 2.8).abs() < 1e-6, "LP bound {bound}, expected 2.8");
    let mip = Highs.solve(model(true), &[], &settings).unwrap();
    let bound = mip.dual_bound.expect("an optimal MIP reports its bound");
    assert!(
        (bound - 8.0 / 3.0).abs() < 1e-6,
        "MIP bound {bound}, expected 8/3"
    );
}

/// A round large enough to solve the aggregated model's LP relaxation: the relaxation's bound
/// is reported, covers the plan and the integer model's incumbent, and the plan is valid and
/// never worse than greedy.
#[test]
fn large_rounds_solve_the_relaxation_which_bounds_the_integer_model() {
    use gangplan::solve::aggregated::{solves_relaxation, RELAXATION_FROM_NODES};
    let lib = ModelLibrary::builtin();
    let p = GenParams {
        nodes: RELAXATION_FROM_NODES,
        pending: 600,
        seed: 3,
        time_limit: 60.0,
        family: gangplan::gen::Family::Mixed,
        ..Default::default()
    };
    let inst = Arc::new(validate(&generate(&p), &lib).unwrap());
    assert!(solves_relaxation(&inst));
    let topo = Arc::new(Topology::new(&inst));
    let agg = solve(&inst, &topo, &opts(&inst, Formulation::Aggregated));
    let bound = agg.bound.expect("the relaxation reports its bound");
    assert!(
        bound + 1e-6 >= agg.objective,
        "bound {bound} below the plan's {}",
        agg.objective
    );
    assert!(agg.objective + 1e-7 >= agg.greedy_objective);
    validate_plan(
        &inst,
        &render_plan(&inst, &agg.assignment, agg.status, agg.solver_info(0.0)),
    )
    .unwrap();
    let mut integer = gangplan::model::aggregate::build(&inst, &topo, true);
    let (constant, objective) = (integer.model.constant, integer.model.objective.clone());
    let model = std::mem::replace(&mut integer.model, gangplan::model::MipModel::empty());
    let settings = backend_settings(20.0, 1e-3);
    let answer = Highs.solve(model, &[], &settings).unwrap();
    let values: std::collections::HashMap<_, _> = integer
        .columns
        .iter()
        .map(|(&v, &i)| (v, answer.columns[i]))
        .collect();
    let incumbent = constant + objective.eval_with(&values);
    assert!(
        bound + 1e-6 >= incumbent,
        "relaxation bound {bound} below the integer model's incumbent {incumbent}"
    );
}

/// HiGHS for the first model it is given (the relaxation, solved first on rounds below
/// `RELAXATION_FROM_NODES` nodes) when `.1` is set; every other model (the integer model, then
/// the neighbourhood search's) "runs out of time" with an incumbent that starts nothing and a
/// useless bound.
struct IntegerOutOfTime(std::sync::atomic::AtomicUsize, bool);
impl MipBackend for IntegerOutOfTime {
    fn solve(
        &self,
        m: gangplan::model::MipModel,
        start: &[f64],
        settings: &BackendSettings,
    ) -> gangplan::Result<gangplan::solve::BackendResult> {
        use std::sync::atomic::Ordering;
        if self.0.fetch_add(1, Ordering::SeqCst) == 0 && self.1 {
            return Highs.solve(m, start, settings);
        }
        Ok(gangplan::solve::BackendResult {
            columns: vec![0.0; m.columns()],
            status: gangplan::solve::BackendStatus::LimitWithIncumbent,
            dual_bound: Some(1e12),
        })
    }
}

/// On a round that solves the integer aggregated model, the relaxation solved before it
/// carries the round when the integer model stops with a useless incumbent: its choice is
/// placed (a plan above the one the second stage makes of no choice at all) and its bound is
/// reported.
#[test]
fn the_relaxation_carries_the_round_when_the_integer_model_runs_out_of_time() {
    use gangplan::solve::aggregated::solves_relaxation;
    let lib = ModelLibrary::builtin();
    let p = GenParams {
        nodes: 125,
        pending: 400,
        seed: 1,
        time_limit: 20.0,
        ..Default::default()
    };
    let inst = Arc::new(validate(&generate(&p), &lib).unwrap());
    assert!(!solves_relaxation(&inst));
    let topo = Arc::new(Topology::new(&inst));
    let o = opts(&inst, Formulation::Aggregated);
    let with = |relaxation: bool| {
        let backend = Arc::new(IntegerOutOfTime(Default::default(), relaxation));
        let out = gangplan::solve::solve_with(&inst, &topo, &o, backend.clone());
        // The relaxation, the integer model, then the neighbourhood search's sub-models.
        assert!(backend.0.load(std::sync::atomic::Ordering::SeqCst) >= 2);
        validate_plan(
            &inst,
            &render_plan(&inst, &out.assignment, out.status, out.solver_info(0.0)),
        )
        .unwrap();
        out
    };
    let (out, blind) = (with(true), with(false));
    assert!(
        out.objective > blind.objective + 1.0,
        "plan {} against {} from no choice: the relaxation's choice was not placed ({:?})",
        out.objective,
        blind.objective,
        out.note
    );
    let bound = out.bound.expect("the relaxation's bound");
    assert!(
        bound < 1e11,
        "the lower of the two bounds is reported: {bound}"
    );
    assert!(bound + 1e-6 >= out.objective);
}

/// The model's answer and the second stage's time on a round that solves the relaxation:
/// `greedy_running` says whether the greedy is still running when the model answers; the
/// greedy is made to have taken so long that no second-stage pass fits after it.
fn finish_after_a_slow_greedy(
    greedy_running: bool,
) -> Result<gangplan::solve::SolverPlan, gangplan::solve::Fallback> {
    use gangplan::solve::aggregated::{finish, start, Early, RELAXATION_FROM_NODES};
    use gangplan::solve::{Budget, GreedyPlan};
    use std::sync::atomic::AtomicBool;
    let p = GenParams {
        nodes: RELAXATION_FROM_NODES,
        pending: 600,
        seed: 2,
        time_limit: 10.0,
        ..Default::default()
    };
    let (inst, topo) = generated(&p);
    let o = opts(&inst, Formulation::Aggregated);
    let budget = Budget::new(&inst, o.deadline);
    let early = Early {
        greedy_done: Arc::new(AtomicBool::new(!greedy_running)),
        until: budget.early_placement_until(),
    };
    let limit = budget.aggregated_time_limit();
    let backend: Arc<dyn MipBackend> = Arc::new(Highs);
    let running = start(&inst, &topo, &o, Arc::clone(&backend), limit, early).unwrap();
    let assignment = gangplan::heuristics::greedy::portfolio(&inst, &topo, None);
    let greedy = GreedyPlan {
        objective: gangplan::objective::evaluate(&inst, &topo, &assignment).total(),
        assignment,
        took: std::time::Duration::from_secs(1000),
    };
    let plan = finish(running, &inst, &topo, &budget, &greedy, &backend);
    if let Ok(plan) = &plan {
        assert!(plan.objective > greedy.objective + 1e-6);
        gangplan::plan::validate::check_assignment(&inst, &plan.assignment).unwrap();
    }
    plan
}

/// On the largest rounds the model's thread places the model's choice itself when it answers
/// while the greedy is still running: the round gets the aggregated plan even when no time is
/// left to place the choice after the greedy; a greedy done first leaves the round to the
/// greedy plan, improved while the model solved where that gained (no choice placed).
#[test]
fn a_choice_placed_while_the_greedy_runs_carries_a_round_with_no_time_after_it() {
    let placed = finish_after_a_slow_greedy(true).expect("the early placement is the plan");
    assert!(placed.bound.is_some_and(|b| b + 1e-6 >= placed.objective));
    assert!(placed.incumbent.is_some(), "the model's choice was placed");
    match finish_after_a_slow_greedy(false) {
        Err(gangplan::solve::Fallback::NoTimeToPlace(_)) => {}
        Err(other) => panic!("expected no time to place, got {other:?}"),
        Ok(plan) => {
            assert_eq!(
                plan.incumbent, None,
                "no early placement, yet a choice placed"
            );
            let note = plan.note.as_deref().unwrap_or("");
            assert!(
                note.contains("no time left to place the aggregated model's choice")
                    && note.contains("improved by trades and repacking while the model solved"),
                "{note}"
            );
        }
    }
}
