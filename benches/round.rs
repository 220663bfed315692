//! Criterion benchmarks: model build (per-node and aggregated), the greedy alone, and a full
//! round, on generated rounds with fixed seeds (racks of 16 nodes, pods of 8 racks, ~65% busy).
//! Run with `cargo bench`; `gangplan bench` prints the whole-command table with ratios.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use gangplan::gen::{generate, GenParams};
use gangplan::hardware::ModelLibrary;
use gangplan::heuristics::RoundContext;
use gangplan::heuristics::{Greedy, Planner};
use gangplan::instance::{validate::validate, Instance};
use gangplan::model;
use gangplan::round::plan_round;
use gangplan::solve::PlannerKind;
use gangplan::topology::Topology;

fn round(nodes: usize, pending: usize) -> Instance {
    let p = GenParams {
        nodes,
        pending,
        seed: 1,
        time_limit: 10.0,
        ..Default::default()
    };
    validate(&generate(&p), &ModelLibrary::builtin()).expect("generated rounds are valid")
}

fn benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("gangplan");
    g.sample_size(10);
    for (label, nodes, pending) in [("256gpu", 32, 80), ("1k", 125, 400), ("10k", 1250, 4000)] {
        let inst = round(nodes, pending);
        let topo = Topology::new(&inst);
        g.bench_with_input(BenchmarkId::new("greedy", label), &inst, |b, inst| {
            b.iter(|| Greedy.plan(&RoundContext::untimed(inst, &topo)))
        });
        g.bench_with_input(
            BenchmarkId::new("build_aggregated", label),
            &inst,
            |b, inst| b.iter(|| model::aggregate::build(inst, &topo, true)),
        );
        if nodes <= 32 {
            g.bench_with_input(
                BenchmarkId::new("build_per_node", label),
                &inst,
                |b, inst| b.iter(|| model::build(inst, &topo)),
            );
        }
        if nodes <= 125 {
            g.bench_with_input(BenchmarkId::new("round_ilp", label), &inst, |b, inst| {
                b.iter(|| plan_round(inst.clone(), PlannerKind::Ilp, None).expect("valid plan"))
            });
        }
    }
    g.finish();
}

criterion_group!(round_benches, benches);
criterion_main!(round_benches);
