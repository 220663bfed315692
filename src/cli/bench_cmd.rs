//! `gangplan bench`: whole rounds at standard sizes, printed as a table of ratios measured in
//! one run (wall seconds of the whole round read to write, objective, bound, gap, objective
//! against greedy, GPUs placed, peak memory).

use super::{exit, Failure};
use clap::Args;
use gangplan::gen::{generate, GenParams};
use gangplan::hardware::ModelLibrary;
use gangplan::instance::load_instance_file;
use gangplan::plan::{render_plan, validate_plan};
use gangplan::solve::{solve, PlannerKind, SolveOptions};
use gangplan::topology::Topology;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Benchmark whole rounds on generated instances.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Sizes to run, by GPU count: any of 1k, 10k, 100k (comma separated).
    #[arg(long, default_value = "1k,10k", value_delimiter = ',')]
    pub sizes: Vec<String>,
    /// Also run the tight-capacity variant (85% busy instead of 65%).
    #[arg(long)]
    pub tight: bool,
    /// Time limit of each round, seconds.
    #[arg(long, default_value_t = 10.0)]
    pub time_limit: f64,
    /// Generator seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

fn size_params(name: &str) -> Option<(usize, usize)> {
    match name {
        "1k" => Some((125, 400)),
        "10k" => Some((1250, 4000)),
        "100k" => Some((12500, 20000)),
        _ => None,
    }
}

/// Peak resident memory of this process so far, MiB (Linux; None elsewhere).
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// Run `bench`.
pub fn run(a: BenchArgs) -> Result<i32, Failure> {
    let lib = ModelLibrary::builtin();
    let sizes = a
        .sizes
        .iter()
        .map(|name| {
            size_params(name).map(|p| (name, p)).ok_or_else(|| {
                Failure::new(
                    exit::BAD_INPUT,
                    anyhow::anyhow!("--sizes: unknown size {name:?}; expected 1k, 10k or 100k"),
                )
            })
        })
        .collect::<Result<Vec<_>, Failure>>()?;
    let dir = tempfile::tempdir().map_err(|e| Failure::new(exit::IO, e.into()))?;
    println!("| round | GPUs | pending | wall s | objective | bound | gap | obj / greedy | GPUs placed (MIP / greedy) | greedy s | status | peak RSS MiB |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (name, (nodes, pending)) in sizes {
        for busy in if a.tight {
            vec![0.65, 0.85]
        } else {
            vec![0.65]
        } {
            let p = GenParams {
                nodes,
                pending,
                seed: a.seed,
                busy,
                time_limit: a.time_limit,
                max_gang: 64,
                ..Default::default()
            };
            let path = dir.path().join(format!("{name}-{busy}.json"));
            std::fs::write(
                &path,
                serde_json::to_vec(&generate(&p))
                    .map_err(|e| Failure::new(exit::INTERNAL, e.into()))?,
            )
            .map_err(|e| Failure::new(exit::IO, e.into()))?;
            // The whole round, as `solve` runs it: read, plan, validate, write.
            let started = Instant::now();
            let inst = load_instance_file(&path, &lib).map_err(Failure::from_lib)?;
            let opts = SolveOptions {
                deadline: started + Duration::from_secs_f64(a.time_limit),
                ..SolveOptions::from_policy(&inst, PlannerKind::Ilp)
            };
            let inst = Arc::new(inst);
            let topo = Arc::new(Topology::new(&inst));
            let out = solve(&inst, &topo, &opts);
            let info = out.solver_info(0.0);
            let plan = render_plan(&inst, &out.assignment, out.status, info);
            validate_plan(&inst, &plan).map_err(|e| Failure::new(exit::INTERNAL, e.into()))?;
            std::fs::write(
                dir.path().join("plan.json"),
                serde_json::to_vec(&plan).map_err(|e| Failure::new(exit::INTERNAL, e.into()))?,
            )
            .map_err(|e| Failure::new(exit::IO, e.into()))?;
            let wall = started.elapsed().as_secs_f64();
            // Greedy alone, for its time and GPUs placed.
            let g_started = Instant::now();
            let g = solve(
                &inst,
                &topo,
                &SolveOptions {
                    planner: PlannerKind::Greedy,
                    ..opts.clone()
                },
            );
            let greedy_s = g_started.elapsed().as_secs_f64();
            let placed = |a: &gangplan::assignment::Assignment| {
                a.placed
                    .keys()
                    .map(|&j| inst.pending[j].gpu_equivalent())
                    .sum::<f64>()
            };
            println!(
                "| {name}{} | {} | {} | {wall:.2} | {:.1} | {} | {} | {:.4} | {:.0} / {:.0} | {greedy_s:.3} | {} | {} |",
                if busy > 0.7 { " tight" } else { "" },
                inst.gpus_total(),
                inst.pending.len(),
                out.objective,
                out.bound.map_or("-".into(), |b| format!("{b:.1}")),
                out.gap().map_or("-".into(), |g| format!("{:.2}%", g * 100.0)),
                out.objective / out.greedy_objective.max(gangplan::units::TOLERANCE),
                placed(&out.assignment),
                placed(&g.assignment),
                super::status_word(out.status),
                peak_rss_mib().map_or("-".into(), |m| format!("{m:.0}")),
            );
        }
    }
    Ok(exit::OK)
}
