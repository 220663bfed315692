//! `gangplan simulate`: replay a trace under one planner and write a report.

use super::{exit, Failure};
use clap::{Args, ValueEnum};
use gangplan::hardware::ModelLibrary;
use gangplan::sim::engine::{simulate, trace_dist, typical_pods, Protocol, SimConfig};
use gangplan::sim::planners::{PlannerName, RoundPlanner, NAMES};
use gangplan::sim::service::{AgeClock, AgingUnit, ReplayObjective, ServiceObjective};
use gangplan::sim::trace::{self, Trace};
use gangplan::sim::Report;
use gangplan::solve::Formulation;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::PathBuf;

/// Trace formats.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum TraceFormat {
    /// Alibaba cluster-trace-gpu-v2023 (`--nodes` node list, `--jobs` pod list).
    Openb,
    /// Philly job CSV (timestamp,duration,num_gpus,gpu_time,cluster); cluster from --gpus.
    Philly,
    /// Pollux/Sia workload CSV (name,time,application,num_replicas,batch_size).
    Pollux,
    /// Tiresias job CSV (job_id,num_gpu,submit_time,iterations,model_name,duration,interval).
    Tiresias,
}

/// Protocols.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ProtocolArg {
    /// Time-based replay: arrivals, rounds every --round seconds, completions.
    Replay,
    /// FGD's protocol: shuffled arrivals that never depart until --load x capacity is asked.
    Fill,
}

/// ILP formulation on the command line.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum FormulationArg {
    /// Per-node for small rounds, aggregated for large ones.
    Auto,
    /// The exact per-node model.
    PerNode,
    /// The aggregated model.
    Aggregated,
}

/// Where the trace comes from and how it is replayed.
#[derive(Debug, Args, Clone)]
pub struct TraceArgs {
    /// Trace format.
    #[arg(long, value_enum)]
    pub trace: TraceFormat,
    /// openb: the node list CSV.
    #[arg(long)]
    pub nodes: Option<PathBuf>,
    /// The job (pod) list CSV.
    #[arg(long)]
    pub jobs: PathBuf,
    /// philly: keep the first N jobs by submit time.
    #[arg(long, value_name = "N")]
    pub limit_jobs: Option<usize>,
    /// philly/pollux/tiresias: cluster GPUs (default: philly 512, pollux 64, tiresias 64).
    #[arg(long)]
    pub gpus: Option<u64>,
    /// philly/pollux/tiresias: GPUs per node (default: philly 8, pollux 4, tiresias 4).
    #[arg(long)]
    pub gpus_per_node: Option<u64>,
    /// Nodes per rack for generated clusters.
    #[arg(long, default_value_t = 16)]
    pub nodes_per_rack: usize,
    /// Protocol.
    #[arg(long, value_enum, default_value_t = ProtocolArg::Replay)]
    pub protocol: ProtocolArg,
    /// fill: stop submitting when the GPUs asked for reach this multiple of capacity.
    #[arg(long, default_value_t = 1.3)]
    pub load: f64,
    /// fill: arrivals per planning round (1 is FGD's exact protocol; the baselines give the
    /// same result at any batch, the ILP sees the batch at once).
    #[arg(long, default_value_t = 100)]
    pub batch: usize,
    /// Seed (fill order, random planner, solver).
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// replay: seconds between planning rounds.
    #[arg(long, value_name = "S", default_value_t = 60.0)]
    pub round: f64,
    /// replay: seconds of run time between checkpoints (a preempted job loses the rest).
    #[arg(long, value_name = "S", default_value_t = 1800.0)]
    pub checkpoint_interval: f64,
    /// ILP: time limit per round, seconds (the greedy plan is used when it runs out).
    #[arg(long, value_name = "S", default_value_t = 2.0)]
    pub round_time_limit: f64,
    /// ILP formulation: auto (per-node for small rounds, aggregated for large), per-node,
    /// aggregated.
    #[arg(long, value_enum, default_value_t = FormulationArg::Auto)]
    pub formulation: FormulationArg,
    /// replay: stop after this many planning rounds.
    #[arg(long, default_value_t = 1_000_000)]
    pub max_rounds: u64,
    /// greedy, ilp: do not give them the trace's task distribution (one-node jobs then go by
    /// best fit instead of least growth of fragmentation, larger gangs of a round first).
    #[arg(long)]
    pub no_task_dist: bool,
    /// greedy, ilp: weight the task types of that distribution by their count (tasks, FGD's
    /// popularity, the default) or by their GPU demand (gpus).
    #[arg(long, value_enum, default_value_t = DistWeightArg::Tasks)]
    pub task_dist_weight: DistWeightArg,
    /// greedy, ilp: score node choices as the FGD artifact does (integer score, ties to a
    /// random node order drawn from --seed) instead of by exact growth with best-fit ties.
    #[arg(long)]
    pub artifact_score: bool,
    /// greedy, ilp: the price per GPU of fragmentation a round leaves against the task
    /// distribution (`policy.weights.fragmentation`; 1 is the value of a GPU started).
    /// Default: 1 under --protocol fill (nothing departs, so a fragment is room lost for
    /// good), 0.02 in a replay (jobs end and fragments heal).
    #[arg(long, value_name = "PRICE")]
    pub fragmentation_price: Option<f64>,
    /// replay, ilp and greedy: the value each job is given: attained-service (least
    /// GPU-seconds received first, by queue, with aging and preemption across queues) or
    /// default (the plan objective's: all jobs equal, nothing preemptible).
    #[arg(long, value_enum, default_value_t = ObjectiveArg::AttainedService)]
    pub objective: ObjectiveArg,
    /// replay, ilp and greedy under attained-service: running jobs are not preemptible.
    #[arg(long)]
    pub no_preemption: bool,
    /// replay: attained-service queue thresholds in GPU-seconds, increasing, comma-separated
    /// (las and the attained-service objective).
    #[arg(long, value_name = "S,S,..", default_value = "57600")]
    pub queue_thresholds: String,
    /// replay, attained-service: value per GPU one queue step takes off (at most 0.9 /
    /// queues).
    #[arg(long, value_name = "V", default_value_t = 0.3)]
    pub service_step: f64,
    /// replay, attained-service: value added per hour of age (the starvation guard), per job
    /// or per GPU (--service-aging-unit).
    #[arg(long, value_name = "V", default_value_t = 48.0)]
    pub service_aging: f64,
    /// replay, attained-service: what age is counted per: job (every job ages as fast, so of
    /// two jobs waiting as long the smaller goes first) or gpu (a job ages with its GPUs).
    #[arg(long, value_enum, default_value_t = AgingUnitArg::Job)]
    pub service_aging_unit: AgingUnitArg,
    /// replay, attained-service: a waiting gang of at least this share of the cluster's GPUs
    /// preempts nothing of the first two queues and waits for GPUs to free (0: every gang may
    /// preempt).
    #[arg(long, value_name = "SHARE", default_value_t = gangplan::sim::service::DEFAULT_BIG_GANG)]
    pub service_big_gang: f64,
    /// replay, attained-service: the clock of the age the aging term values: submission
    /// (time since submission: first come, first served within a queue) or waiting (time
    /// since submission less the time run).
    #[arg(long, value_enum, default_value_t = AgeClockArg::Submission)]
    pub service_age_clock: AgeClockArg,
    /// replay, attained-service: a job that has waited this many times as long as it ran is
    /// promoted to the first queue (0, the default: never).
    #[arg(long, value_name = "K", default_value_t = 0.0)]
    pub service_starve: f64,
    /// replay, attained-service: within a queue, waiting gangs of fewer GPUs first (powers
    /// of two).
    #[arg(long)]
    pub service_size_classes: bool,
    /// replay, attained-service: a job preempted this many times runs to its end once it
    /// starts again (0, the default: no limit).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub service_max_preemptions: u32,
    /// replay, attained-service: multiplier on the value a preempted job loses (the
    /// `preemption` weight of the plan objective).
    #[arg(long, value_name = "V", default_value_t = 0.5)]
    pub service_victim: f64,
}

/// The value of jobs in replays.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ObjectiveArg {
    /// Least attained service first, with aging.
    AttainedService,
    /// The plan objective's defaults.
    Default,
}

/// What age is counted per under the attained-service objective.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum AgingUnitArg {
    /// Per job.
    Job,
    /// Per GPU.
    Gpu,
}

/// The clock of a waiting job's age under the attained-service objective.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum AgeClockArg {
    /// Seconds since submission.
    Submission,
    /// Seconds since submission less the time run.
    Waiting,
}

/// Weighting of the task distribution given to the greedy and the ILP.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum DistWeightArg {
    /// By count (FGD's popularity).
    Tasks,
    /// By GPU demand: count x GPUs x share of each GPU.
    Gpus,
}

/// Replay a trace under one planner.
#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// Trace and protocol.
    #[command(flatten)]
    pub t: TraceArgs,
    /// Planner: ilp, greedy, fifo, best-fit, las, drf, fgd, random.
    #[arg(long, default_value = "ilp")]
    pub planner: String,
    /// Output file for the report JSON, written atomically; absent: stdout.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Also write every round's instance, as the planner sees it, into DIR (created):
    /// rounds cut from a replay, to rerun with `solve` or `bench --instances DIR`.
    #[arg(long, value_name = "DIR")]
    pub dump_rounds: Option<PathBuf>,
}

fn bad(m: String) -> Failure {
    Failure::new(exit::BAD_INPUT, anyhow::anyhow!(m))
}

/// Load the trace the flags name.
pub fn load_trace(a: &TraceArgs) -> Result<Trace, Failure> {
    let lib_err = Failure::from_lib;
    let name_of = |p: &PathBuf| {
        p.file_name()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default()
    };
    let cluster = |gpus: u64, per: u64| {
        trace::uniform_cluster(
            a.gpus.unwrap_or(gpus),
            a.gpus_per_node.unwrap_or(per),
            a.nodes_per_rack,
        )
        .map_err(lib_err)
    };
    if a.trace != TraceFormat::Openb && a.nodes.is_some() {
        return Err(bad(
            "--nodes is for --trace openb; other formats take --gpus and --gpus-per-node".into(),
        ));
    }
    if a.trace != TraceFormat::Philly && a.limit_jobs.is_some() {
        return Err(bad("--limit-jobs is for --trace philly".into()));
    }
    let (nodes, jobs) = match a.trace {
        TraceFormat::Openb => {
            let Some(n) = &a.nodes else {
                return Err(bad(
                    "--trace openb needs --nodes (the node list CSV) and --jobs (the pod list)"
                        .into(),
                ));
            };
            (
                trace::openb_nodes(n).map_err(lib_err)?,
                trace::openb_pods(&a.jobs).map_err(lib_err)?,
            )
        }
        TraceFormat::Philly => (
            cluster(512, 8)?,
            trace::philly_jobs(&a.jobs, a.limit_jobs).map_err(lib_err)?,
        ),
        TraceFormat::Pollux => (
            cluster(64, 4)?,
            trace::pollux_jobs(&a.jobs).map_err(lib_err)?,
        ),
        TraceFormat::Tiresias => (
            cluster(64, 4)?,
            trace::tiresias_jobs(&a.jobs).map_err(lib_err)?,
        ),
    };
    let fmt = format!("{:?}", a.trace).to_lowercase();
    Ok(Trace {
        name: format!("{fmt}:{}", name_of(&a.jobs)),
        nodes,
        jobs,
    })
}

/// The run settings the flags give.
pub fn config(a: &TraceArgs) -> Result<SimConfig, Failure> {
    if a.batch == 0 {
        return Err(bad(
            "--batch is 0; expected at least 1 arrival per round".into()
        ));
    }
    for (f, v) in [
        ("--round", a.round),
        ("--checkpoint-interval", a.checkpoint_interval),
        ("--round-time-limit", a.round_time_limit),
    ] {
        if !(v.is_finite() && v > 0.0) {
            return Err(bad(format!("{f} is {v}; expected seconds > 0")));
        }
    }
    if a.no_task_dist {
        for (flag, given) in [
            ("--artifact-score", a.artifact_score),
            ("--fragmentation-price", a.fragmentation_price.is_some()),
        ] {
            if given {
                return Err(bad(format!(
                    "{flag} works on the task distribution, which --no-task-dist takes away; \
                     drop one of them"
                )));
            }
        }
    }
    let thresholds = queue_thresholds(&a.queue_thresholds)?;
    for (f, v) in [
        ("--service-step", a.service_step),
        ("--service-aging", a.service_aging),
        ("--service-starve", a.service_starve),
        ("--service-victim", a.service_victim),
        ("--service-big-gang", a.service_big_gang),
        (
            "--fragmentation-price",
            a.fragmentation_price.unwrap_or(0.0),
        ),
    ] {
        if !(v.is_finite() && (0.0..=100.0).contains(&v)) {
            return Err(bad(format!("{f} is {v}; expected a number in 0..=100")));
        }
    }
    Ok(SimConfig {
        objective: match a.objective {
            ObjectiveArg::AttainedService => ReplayObjective::AttainedService,
            ObjectiveArg::Default => ReplayObjective::Default,
        },
        service: ServiceObjective {
            thresholds: thresholds.clone(),
            step: a.service_step,
            aging: a.service_aging,
            aging_unit: match a.service_aging_unit {
                AgingUnitArg::Job => AgingUnit::Job,
                AgingUnitArg::Gpu => AgingUnit::Gpu,
            },
            age_clock: match a.service_age_clock {
                AgeClockArg::Submission => AgeClock::Submission,
                AgeClockArg::Waiting => AgeClock::Waiting,
            },
            preempt: !a.no_preemption,
            max_preemptions: (a.service_max_preemptions > 0).then_some(a.service_max_preemptions),
            starve: (a.service_starve > 0.0).then_some(a.service_starve),
            size_classes: a.service_size_classes,
            big_gang: (a.service_big_gang > 0.0).then_some(a.service_big_gang),
            victim: a.service_victim,
            ..ServiceObjective::default()
        },
        las_thresholds: thresholds,
        protocol: match a.protocol {
            ProtocolArg::Replay => Protocol::Replay,
            ProtocolArg::Fill => Protocol::Fill {
                load: a.load,
                batch: a.batch,
            },
        },
        round_s: a.round,
        checkpoint_s: a.checkpoint_interval,
        seed: a.seed,
        round_time_limit: a.round_time_limit,
        max_rounds: a.max_rounds,
        planner_task_dist: !a.no_task_dist,
        planner_artifact_score: a.artifact_score,
        planner_fragmentation_price: a.fragmentation_price,
        planner_dist_weight: match a.task_dist_weight {
            DistWeightArg::Gpus => gangplan::sim::engine::DistWeight::Gpus,
            DistWeightArg::Tasks => gangplan::sim::engine::DistWeight::Tasks,
        },
        ..SimConfig::default()
    })
}

/// Parse `--queue-thresholds`: positive, finite, increasing GPU-seconds.
fn queue_thresholds(s: &str) -> Result<Vec<f64>, Failure> {
    let mut v = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let x: f64 = part.parse().map_err(|_| {
            bad(format!(
                "--queue-thresholds: {part:?} is not a number of GPU-seconds"
            ))
        })?;
        if !(x.is_finite() && x > 0.0 && v.last().is_none_or(|&l| x > l)) {
            return Err(bad(format!(
                "--queue-thresholds: {part} must be finite, > 0 and above the previous one"
            )));
        }
        v.push(x);
    }
    Ok(v)
}

/// Parse a planner name.
pub fn planner_name(s: &str) -> Result<PlannerName, Failure> {
    PlannerName::parse(s).ok_or_else(|| {
        bad(format!(
            "--planner {s:?} is unknown; expected one of {}",
            NAMES.join(", ")
        ))
    })
}

/// A progress bar on stderr, hidden when stderr is not a terminal.
pub fn progress_bar(label: &str) -> ProgressBar {
    let pb = ProgressBar::with_draw_target(
        Some(0),
        if std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        },
    );
    if let Ok(s) = ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} jobs {elapsed}") {
        pb.set_style(s.progress_chars("=> "));
    }
    pb.set_prefix(label.to_string());
    pb
}

/// Run one planner on a loaded trace.
pub fn run_one(
    trace: &Trace,
    name: PlannerName,
    cfg: &SimConfig,
    formulation: FormulationArg,
    label: &str,
) -> Result<Report, Failure> {
    let lib = ModelLibrary::builtin();
    // FGD measures against the artifact's typical pods; the others get the trace's GPU tasks.
    let dist = if name == PlannerName::Fgd {
        typical_pods(trace)
    } else {
        trace_dist(trace)
    };
    let f = match formulation {
        FormulationArg::Auto => Formulation::Auto,
        FormulationArg::PerNode => Formulation::PerNode,
        FormulationArg::Aggregated => Formulation::Aggregated,
    };
    let planner =
        RoundPlanner::new(name, &dist, cfg.seed, cfg.round_time_limit).with_formulation(f);
    let pb = progress_bar(label);
    let mut cb = |done: u64, total: u64| {
        pb.set_length(total);
        pb.set_position(done);
    };
    let r = simulate(trace, &planner, cfg, &lib, &mut cb).map_err(Failure::from_lib);
    pb.finish_and_clear();
    r
}

/// Run `simulate`.
pub fn run(a: SimulateArgs) -> Result<i32, Failure> {
    let name = planner_name(&a.planner)?;
    let mut cfg = config(&a.t)?;
    if let Some(dir) = &a.dump_rounds {
        std::fs::create_dir_all(dir).map_err(|e| {
            Failure::new(
                exit::IO,
                anyhow::anyhow!("--dump-rounds {}: {e}", dir.display()),
            )
        })?;
        cfg.dump_rounds = Some(dir.clone());
    }
    let trace = load_trace(&a.t)?;
    let report = run_one(&trace, name, &cfg, a.t.formulation, name.as_str())?;
    let json = serde_json::to_string_pretty(&report)
        .map_err(|e| Failure::new(exit::INTERNAL, e.into()))?;
    match &a.report {
        Some(p) => gangplan::fsutil::write_atomic(p, format!("{json}\n").as_bytes())
            .map_err(|e| Failure::new(exit::IO, e.into()))?,
        None => println!("{json}"),
    }
    let m = &report.metrics;
    eprintln!(
        "{}: allocation {:.2}%, jobs done {}/{}, rounds {}, ILP fallbacks {}, wall {:.1} s",
        report.planner,
        100.0 * m.gpu_allocation_ratio,
        report.info.jobs_done,
        report.info.jobs_submitted,
        m.rounds,
        report.info.ilp_fallback_rounds,
        report.info.wall_s
    );
    Ok(exit::OK)
}
