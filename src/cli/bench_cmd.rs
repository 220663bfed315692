//! `gangplan bench`: whole rounds, generated (by size and generator family) or saved instance
//! files, printed as a table of ratios measured in one run: wall seconds of the whole round
//! read to write, objective, bound, gap, the objective against greedy, against the aggregated
//! model's own incumbent (what placing its choice node by node lost) and, on small rounds,
//! against the exact optimum of a long per-node solve; GPUs placed, peak memory.

use super::solve_cmd::FormulationArg;
use super::{exit, Failure};
use clap::Args;
use gangplan::gen::{generate, Family, GenParams};
use gangplan::hardware::ModelLibrary;
use gangplan::instance::load::{parse_document, read_document};
use gangplan::instance::load_instance_file;
use gangplan::instance::raw::RawInstance;
use gangplan::objective::evaluate;
use gangplan::plan::{render_plan_until, validate_plan};
use gangplan::solve::{solve, Formulation, PlannerKind, SolveOptions, SolveOutcome};
use gangplan::topology::Topology;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Benchmark whole rounds on generated instances or saved instance files.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Sizes to run, by GPU count: any of small (48 nodes, 120 pending), 1k, 10k, 100k
    /// (comma separated).
    #[arg(long, default_value = "1k,10k", value_delimiter = ',')]
    pub sizes: Vec<String>,
    /// Also run the tight-capacity variant (85% busy instead of 65%).
    #[arg(long)]
    pub tight: bool,
    /// Generator families to run (comma separated; `all` for every one): default,
    /// mixed-types, whole-nodes, partial-nodes, tight-cpu, skewed-resources, sharers, quotas,
    /// constrained, mixed, nvlink-racks (docs/bench.md).
    #[arg(long, default_value = "default", value_delimiter = ',')]
    pub family: Vec<String>,
    /// Run every instance file (.yaml, .yml, .json) of this folder instead of generated rounds.
    #[arg(long, value_name = "DIR")]
    pub instances: Option<PathBuf>,
    /// Time limit of each round, seconds.
    #[arg(long, default_value_t = 10.0)]
    pub time_limit: f64,
    /// Generator seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// MIP formulation of the benchmarked solve.
    #[arg(long, value_enum, default_value_t = FormulationArg::Auto)]
    pub formulation: FormulationArg,
    /// On rounds of at most 64 nodes, also solve the exact per-node model for this many
    /// seconds (gap 0.01%) and print the objective against its optimum (0: never).
    #[arg(long, default_value_t = 60.0)]
    pub exact_seconds: f64,
    /// Also write every generated round into this folder (as NAME.json).
    #[arg(long, value_name = "DIR")]
    pub save: Option<PathBuf>,
    /// On rounds of at most 64 nodes, also run K copies of the round side by side as one
    /// round (K times its nodes and jobs, every name per copy) and print its objective against
    /// K copies of the small round's best plan (the exact solve's, or the round's own where
    /// better): a plan known to be possible at that size, so that a ratio below 1 is a loss
    /// the gap cannot tell from a loose bound (0: off; at most 400).
    #[arg(long, default_value_t = 0, value_name = "K")]
    pub replicas: usize,
}

/// What a round's objective is compared with in the `obj / exact` column.
enum Reference {
    /// The exact per-node optimum, on rounds of at most [`EXACT_NODES`] nodes.
    Exact,
    /// A plan known in advance: K copies of a small round's best plan, of this objective.
    Copies { k: usize, objective: f64 },
}

/// The best plan a round's row knows of: the round's own, or the exact solve's where better.
struct BestPlan {
    assignment: gangplan::assignment::Assignment,
}

/// Rounds of at most this many nodes are compared with the exact optimum.
const EXACT_NODES: usize = 64;

/// Most copies `--replicas` makes of a round (of at most [`EXACT_NODES`] nodes: 25,600 nodes).
const MOST_REPLICAS: usize = 400;

fn size_params(name: &str) -> Option<(usize, usize)> {
    match name {
        "small" => Some((48, 120)),
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

fn bad(msg: String) -> Failure {
    Failure::new(exit::BAD_INPUT, anyhow::anyhow!(msg))
}

fn io(e: std::io::Error) -> Failure {
    Failure::new(exit::IO, e.into())
}

fn lib_io(e: gangplan::Error) -> Failure {
    Failure::new(exit::IO, e.into())
}

/// The families named by `--family` (`all`: every one).
fn families(names: &[String]) -> Result<Vec<Family>, Failure> {
    let mut out = Vec::new();
    for name in names {
        if name == "all" {
            out.extend(Family::ALL);
            continue;
        }
        out.push(Family::parse(name).ok_or_else(|| {
            let known: Vec<&str> = Family::ALL.iter().map(|f| f.name()).collect();
            bad(format!(
                "--family: unknown family {name:?}; expected all or one of {}",
                known.join(", ")
            ))
        })?);
    }
    Ok(out)
}

/// The rounds to run: (name, instance file), generated into `dir` or read from `--instances`.
fn rounds(a: &BenchArgs, dir: &Path) -> Result<Vec<(String, PathBuf)>, Failure> {
    if let Some(folder) = &a.instances {
        let mut files: Vec<PathBuf> = std::fs::read_dir(folder)
            .map_err(io)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.extension()
                    .is_some_and(|x| x == "yaml" || x == "yml" || x == "json")
            })
            .collect();
        files.sort();
        if files.is_empty() {
            return Err(bad(format!(
                "--instances: no .yaml, .yml or .json file in {}",
                folder.display()
            )));
        }
        return Ok(files
            .into_iter()
            .map(|p| (p.file_stem().unwrap().to_string_lossy().into_owned(), p))
            .collect());
    }
    let sizes = a
        .sizes
        .iter()
        .map(|name| {
            size_params(name).map(|p| (name, p)).ok_or_else(|| {
                bad(format!(
                    "--sizes: unknown size {name:?}; expected small, 1k, 10k or 100k"
                ))
            })
        })
        .collect::<Result<Vec<_>, Failure>>()?;
    let families = families(&a.family)?;
    let busy_levels: &[f64] = if a.tight { &[0.65, 0.85] } else { &[0.65] };
    let mut out = Vec::new();
    for family in families {
        for &(name, (nodes, pending)) in &sizes {
            for &busy in busy_levels {
                let p = GenParams {
                    nodes,
                    pending,
                    seed: a.seed,
                    busy,
                    time_limit: a.time_limit,
                    max_gang: 64,
                    family,
                    ..Default::default()
                };
                let round = format!(
                    "{}{name}{}",
                    if family == Family::Default {
                        String::new()
                    } else {
                        format!("{} ", family.name())
                    },
                    if busy > 0.7 { " tight" } else { "" }
                );
                let text = serde_json::to_vec(&generate(&p))
                    .map_err(|e| Failure::new(exit::INTERNAL, e.into()))?;
                let file = format!("{}-{name}-{busy}-s{}.json", family.name(), a.seed);
                if let Some(save) = &a.save {
                    std::fs::create_dir_all(save).map_err(io)?;
                    gangplan::fsutil::write_atomic(&save.join(&file), &text).map_err(lib_io)?;
                }
                let path = dir.join(file);
                gangplan::fsutil::write_atomic(&path, &text).map_err(lib_io)?;
                out.push((round, path));
            }
        }
    }
    Ok(out)
}

/// Run `bench`.
pub fn run(a: BenchArgs) -> Result<i32, Failure> {
    if std::env::var_os("RUST_LOG").is_some() || super::verbose() {
        // Each round's phase timings (debug level) on stderr, only when asked for.
        super::plan_cmd::init_logging(super::plan_cmd::LogFormat::Text);
    }
    let lib = ModelLibrary::builtin();
    super::check_time_limit_flag(a.time_limit)?;
    if a.replicas > MOST_REPLICAS {
        return Err(bad(format!(
            "--replicas: {} copies asked; at most {MOST_REPLICAS} (copies of a 64-node round \
             past that outgrow the rounds gangplan is measured on)",
            a.replicas
        )));
    }
    let dir = tempfile::tempdir().map_err(io)?;
    let rounds = rounds(&a, dir.path())?;
    println!("| round | nodes | GPUs | pending | wall s | objective | bound | gap | obj / greedy | obj / incumbent | obj / exact | GPUs placed (MIP / greedy) | greedy s | status | unexplained / waiting | peak RSS MiB |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (name, path) in rounds {
        let (inst, best) = bench_round(&a, &lib, &name, &path, dir.path(), Reference::Exact)?;
        if a.replicas > 0 && inst.nodes.len() <= EXACT_NODES {
            bench_copies(&a, &lib, &name, &path, dir.path(), (&inst, &best))?;
        }
    }
    Ok(exit::OK)
}

/// The row of K copies of a small round ([`gangplan::gen::replicas`]), against K copies of
/// its best plan.
fn bench_copies(
    a: &BenchArgs,
    lib: &ModelLibrary,
    name: &str,
    path: &Path,
    dir: &Path,
    (small, best): (&gangplan::instance::Instance, &BestPlan),
) -> Result<(), Failure> {
    use gangplan::gen::replicas::{replicate, replicate_assignment};
    let k = a.replicas;
    let text = read_document(path).map_err(Failure::from_lib)?;
    let raw: RawInstance =
        parse_document(&text, &path.display().to_string()).map_err(Failure::from_lib)?;
    let file = dir.join(format!("copies-x{k}.json"));
    let copies_text = serde_json::to_vec(&replicate(&raw, k))
        .map_err(|e| Failure::new(exit::INTERNAL, e.into()))?;
    gangplan::fsutil::write_atomic(&file, &copies_text).map_err(lib_io)?;
    let copies = load_instance_file(&file, lib).map_err(Failure::from_lib)?;
    let known = replicate_assignment(small, &best.assignment, k);
    // The copies of a valid plan are valid where no rule reads across copies; the validator
    // says so before the plan is used as a reference.
    gangplan::plan::validate::check_assignment(&copies, &known)
        .map_err(|e| Failure::new(exit::INTERNAL, anyhow::anyhow!("{name} x{k}: {e}")))?;
    let objective = evaluate(&copies, &Topology::new(&copies), &known).total();
    let row = format!("{name} x{k}");
    bench_round(a, lib, &row, &file, dir, Reference::Copies { k, objective })?;
    Ok(())
}

/// One round, as `solve` runs it (read, plan, validate, write), then greedy alone and, on
/// small rounds, the exact per-node model; one table row. The round and the best plan known.
fn bench_round(
    a: &BenchArgs,
    lib: &ModelLibrary,
    name: &str,
    path: &Path,
    dir: &Path,
    reference: Reference,
) -> Result<(gangplan::instance::Instance, BestPlan), Failure> {
    let internal = |e: String| Failure::new(exit::INTERNAL, anyhow::anyhow!(e));
    let started = Instant::now();
    let inst = load_instance_file(path, lib).map_err(Failure::from_lib)?;
    let opts = SolveOptions {
        deadline: started + Duration::from_secs_f64(a.time_limit),
        formulation: match a.formulation {
            FormulationArg::Auto => Formulation::Auto,
            FormulationArg::PerNode => Formulation::PerNode,
            FormulationArg::Aggregated => Formulation::Aggregated,
        },
        ..SolveOptions::from_policy(&inst, PlannerKind::Ilp)
    };
    let inst = Arc::new(inst);
    let topo = Arc::new(Topology::new(&inst));
    let out = solve(&inst, &topo, &opts);
    // The waiting jobs' reasons stop when `solve`'s do.
    let reasons_until =
        gangplan::solve::Budget::starting_at(&inst, started, opts.deadline).reasons_until();
    let plan = render_plan_until(
        &inst,
        &out.assignment,
        out.status,
        out.solver_info(0.0),
        Some(reasons_until),
    );
    validate_plan(&inst, &plan).map_err(|e| internal(format!("{name}: {e}")))?;
    gangplan::fsutil::write_atomic(
        &dir.join("plan.json"),
        &serde_json::to_vec(&plan).map_err(|e| internal(e.to_string()))?,
    )
    .map_err(lib_io)?;
    let wall = started.elapsed().as_secs_f64();
    // Greedy alone, for its time, objective and GPUs placed, with a time limit of its own (the
    // round's deadline has passed): a plan is compared with what the greedy makes of the whole
    // round, not with the round's own greedy pass, which its deadline may have cut.
    let g_started = Instant::now();
    let g = solve(
        &inst,
        &topo,
        &SolveOptions {
            planner: PlannerKind::Greedy,
            deadline: g_started + std::time::Duration::from_secs_f64(a.time_limit),
            ..opts.clone()
        },
    );
    let greedy_s = g_started.elapsed().as_secs_f64();
    let (exact, best) = match reference {
        Reference::Exact => exact_column(a, &inst, &topo, &out),
        Reference::Copies { k, objective } => (copies_column(k, objective, &out), None),
    };
    let placed = |a: &gangplan::assignment::Assignment| {
        a.placed
            .keys()
            .map(|&j| inst.pending[j].gpu_equivalent())
            .sum::<f64>()
            + 0.0 // an empty sum is -0.0
    };
    let ratio = |x: f64, y: f64| x / y.abs().max(gangplan::units::TOLERANCE);
    let unexplained = plan
        .pending
        .iter()
        .filter(|e| e.kind.as_deref() == Some(gangplan::plan::reasons::UNEXPLAINED))
        .count();
    println!(
        "| {name} | {} | {} | {} | {wall:.2} | {:.1} | {} | {} | {:.4} | {} | {exact} | {:.0} / {:.0} | {greedy_s:.3} | {} | {unexplained} / {} | {} |",
        inst.nodes.len(),
        inst.gpus_total(),
        inst.pending.len(),
        out.objective,
        out.bound.map_or("-".into(), |b| format!("{b:.1}")),
        out.gap().map_or("-".into(), |g| format!("{:.2}%", g * 100.0)),
        ratio(out.objective, g.objective),
        out.incumbent.map_or("-".into(), |m| format!("{:.4}", ratio(out.objective, m))),
        placed(&out.assignment),
        placed(&g.assignment),
        super::status_word(out.status),
        plan.pending.len(),
        peak_rss_mib().map_or("-".into(), |m| format!("{m:.0}")),
    );
    let best = best.unwrap_or(BestPlan {
        assignment: out.assignment,
    });
    let inst = Arc::try_unwrap(inst).unwrap_or_else(|shared| (*shared).clone());
    Ok((inst, best))
}

/// The objective against K copies of a small round's best plan (of objective `known`): their
/// ratio, or where `known` is not positive (a ratio would read backwards) their difference.
fn copies_column(k: usize, known: f64, out: &SolveOutcome) -> String {
    let against = format!("against {k} copies of the best small plan: {known:.1}");
    if known > gangplan::units::TOLERANCE {
        format!("{:.4} ({against})", out.objective / known)
    } else {
        format!("{:+.1} over ({against})", out.objective - known)
    }
}

/// The objective against the exact per-node optimum, on rounds of at most [`EXACT_NODES`]
/// nodes: `r` when the per-node solve proved its optimum, `r (best ..., bound ...)` when its
/// time ran out first, `-` on larger rounds or with `--exact-seconds 0`; and the exact solve's
/// plan where it is better than the round's.
fn exact_column(
    a: &BenchArgs,
    inst: &Arc<gangplan::instance::Instance>,
    topo: &Arc<Topology>,
    out: &SolveOutcome,
) -> (String, Option<BestPlan>) {
    if a.exact_seconds <= 0.0 || inst.nodes.len() > EXACT_NODES {
        return ("-".into(), None);
    }
    let opts = SolveOptions {
        deadline: Instant::now() + Duration::from_secs_f64(a.exact_seconds),
        formulation: Formulation::PerNode,
        mip_gap: 1e-4,
        ..SolveOptions::from_policy(inst, PlannerKind::Ilp)
    };
    let exact = solve(inst, topo, &opts);
    let best = exact.objective.max(out.objective);
    let r = out.objective / best.abs().max(gangplan::units::TOLERANCE);
    let proven = exact.status == gangplan::plan::Status::Optimal && !exact.time_limit_hit;
    let column = if proven {
        format!("{r:.4}")
    } else {
        format!(
            "{r:.4} (not proven: best {best:.1}, bound {})",
            exact.bound.map_or("-".into(), |b| format!("{b:.1}"))
        )
    };
    let better = (exact.objective > out.objective).then_some(BestPlan {
        assignment: exact.assignment,
    });
    (column, better)
}
