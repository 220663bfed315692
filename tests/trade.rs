//! Trades on finished plans: a job that takes a node's CPU and strands its other GPUs gives its
//! place to lighter waiting jobs when they are worth more, and moves elsewhere when it fits
//! there; a trade that does not pay leaves the plan as it was (that no trade lowers the
//! objective or breaks a plan is checked in `tests/local_moves.rs`).

mod common;

use common::hand::{instance, job, node};
use common::{family_round, later, small_round};
use gangplan::assignment::{Assignment, GpuSet};
use gangplan::gen::Family;
use gangplan::heuristics::greedy::portfolio;
use gangplan::heuristics::trade::trade;
use gangplan::instance::Instance;
use gangplan::objective::{evaluate, job_spread};
use gangplan::topology::Topology;

/// The nodes job `id` holds GPUs on, by name.
fn nodes_of(inst: &Instance, plan: &Assignment, id: &str) -> Vec<String> {
    plan.placed
        .get(&job(inst, id))
        .map(|g| g.keys().map(|&n| inst.nodes[n].name.clone()).collect())
        .unwrap_or_default()
}

/// A 4-GPU node of 40 CPUs whose one placed job asks all 40: `heavy` on GPU 0, the rest
/// of the node stranded, three jobs of 10 CPUs waiting.
fn stranded_by_heavy(extra_nodes: &str, heavy_priority: i64) -> (Instance, Assignment) {
    let inst = instance(&format!(
        "nodes:
  - {{name: n1, gpus: 4, cpu_milli: 40000, rack: r1}}
{extra_nodes}pending:
  - {{id: heavy, gpus: 1, cpu_milli: 40000, priority: {heavy_priority}}}
  - {{id: l1, gpus: 1, cpu_milli: 10000}}
  - {{id: l2, gpus: 1, cpu_milli: 10000}}
  - {{id: l3, gpus: 1, cpu_milli: 10000}}
"
    ));
    let mut plan = Assignment::default();
    let on_n1: GpuSet = [(node(&inst, "n1"), vec![0])].into();
    plan.placed.insert(job(&inst, "heavy"), on_n1);
    (inst, plan)
}

/// heavy (value 1) strands three GPUs; the three light jobs (value 1 each) fill them once it
/// goes, and it cannot come back (10 CPUs are left): the objective rises by 3 - 1 in value,
/// 0.02 x 2 in stranding (three free GPUs before, one after) and 0.3 x 2 in fairness (the one
/// tenant's fair share is the node's 4 GPUs: 3 short before, 1 after), 2.64 in all.
#[test]
fn light_jobs_take_the_place_of_a_job_that_strands_the_node() {
    let (inst, plan) = stranded_by_heavy("", 0);
    let topo = Topology::new(&inst);
    let before = evaluate(&inst, &topo, &plan).total();
    let (after, kept) = trade(&inst, &topo, &plan, later());
    assert_eq!(kept, 1);
    for id in ["l1", "l2", "l3"] {
        assert_eq!(nodes_of(&inst, &after, id), ["n1"], "{id}");
    }
    assert!(!after.placed.contains_key(&job(&inst, "heavy")));
    let gain = evaluate(&inst, &topo, &after).total() - before;
    assert!((gain - 2.64).abs() < 1e-9, "gain {gain}");
}

/// The same, with a 1-GPU node of 40 CPUs beside: heavy moves there and all four run.
#[test]
fn the_released_job_moves_where_it_fits() {
    let (inst, plan) =
        stranded_by_heavy("  - {name: n2, gpus: 1, cpu_milli: 40000, rack: r1}\n", 0);
    let topo = Topology::new(&inst);
    let (after, _) = trade(&inst, &topo, &plan, later());
    assert_eq!(nodes_of(&inst, &after, "heavy"), ["n2"]);
    for id in ["l1", "l2", "l3"] {
        assert_eq!(nodes_of(&inst, &after, id), ["n1"], "{id}");
    }
}

/// A 4-GPU gang of 20 CPUs per GPU split 2 + 2 over two 4-GPU nodes of 40 CPUs takes both
/// nodes' CPU and strands the other two GPUs of each; eight 1-GPU jobs of 10 CPUs wait. The
/// trade releases the gang, fills both nodes with the eight and leaves the gang waiting: value
/// 8 - 4, stranding 0.02 x 4, fairness 0.3 x 4 (the tenant's fair share is the 8 GPUs: 4
/// short before, none after) and the gang's spread, all gained.
#[test]
fn a_gang_that_strands_its_nodes_gives_them_to_light_jobs() {
    let lights: String = (1..=8)
        .map(|i| format!("  - {{id: l{i}, gpus: 1, cpu_milli: 10000}}\n"))
        .collect();
    let inst = instance(&format!(
        "nodes:
  - {{name: n1, gpus: 4, cpu_milli: 40000, rack: r1}}
  - {{name: n2, gpus: 4, cpu_milli: 40000, rack: r1}}
pending:
  - {{id: gang, gpus: 4, cpu_milli: 80000}}
{lights}"
    ));
    let topo = Topology::new(&inst);
    let mut plan = Assignment::default();
    let gang = job(&inst, "gang");
    let halves: GpuSet = [
        (node(&inst, "n1"), vec![0, 1]),
        (node(&inst, "n2"), vec![0, 1]),
    ]
    .into();
    plan.placed.insert(gang, halves);
    let spread = job_spread(&inst, &topo, &inst.pending[gang], &plan.placed[&gang]);
    let before = evaluate(&inst, &topo, &plan).total();
    let (after, kept) = trade(&inst, &topo, &plan, later());
    assert_eq!(kept, 1);
    assert!(!after.placed.contains_key(&gang));
    for i in 1..=8 {
        assert_eq!(nodes_of(&inst, &after, &format!("l{i}")).len(), 1, "l{i}");
    }
    let gain = evaluate(&inst, &topo, &after).total() - before;
    assert!(
        (gain - (5.28 + spread)).abs() < 1e-9,
        "gain {gain}, spread {spread}"
    );
}

/// At priority 30 heavy is worth 1 + 0.1 x 30 = 4, more than the three light jobs together
/// (3, with 0.04 of stranding and 0.6 of fairness: 3.64): no trade, the plan stays as it was.
#[test]
fn a_trade_that_does_not_pay_leaves_the_plan() {
    let (inst, plan) = stranded_by_heavy("", 30);
    let topo = Topology::new(&inst);
    let (after, kept) = trade(&inst, &topo, &plan, later());
    assert_eq!(kept, 0);
    assert_eq!(after, plan);
}

/// On generated tight-cpu rounds (24 nodes, 60 pending, half busy, seeds 0-9) the greedy's
/// plan leaves GPUs that CPU and memory strand, and trades raise its objective on some of
/// them (15 trades kept over the ten rounds when this test was written).
#[test]
fn trades_raise_the_greedy_plan_of_generated_tight_cpu_rounds() {
    let mut raised = 0;
    for seed in 0..10 {
        let inst = family_round(small_round(24, 60, seed, 0.5, 0.1), Family::TightCpu);
        let topo = Topology::new(&inst);
        let plan = portfolio(&inst, &topo, None);
        let (after, _) = trade(&inst, &topo, &plan, later());
        let gain = evaluate(&inst, &topo, &after).total() - evaluate(&inst, &topo, &plan).total();
        raised += (gain > 1e-9) as usize;
    }
    assert!(raised >= 1, "no trade raised any of the ten rounds");
}
