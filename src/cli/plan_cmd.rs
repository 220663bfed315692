//! `gangplan plan`: one cron round on an instance file, for sites without Slurm (the same
//! lock, stability memory, metrics and outputs as `gangplan slurm plan`). Also holds what both
//! cron commands share: logging setup, the state-dir lock, writing the round's files.

use super::{exit, Failure};
use clap::{Args, ValueEnum};
use gangplan::cron::metrics::RoundMetrics;
use gangplan::cron::round::{plan_with_memory, Planned};
use gangplan::cron::{k8s, CronError, Memory, RoundLock, StateDir};
use gangplan::fsutil::write_atomic;
use gangplan::hardware::ModelLibrary;
use gangplan::plan::Plan;
use gangplan::solve::PlannerKind;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Log line format (logs go to stderr).
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Extra outputs.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum Emit {
    /// Kubernetes v1/Binding objects, one per node of each placed job (bindings.yaml).
    K8s,
}

/// Flags both cron commands share.
#[derive(Debug, Clone, Args)]
pub struct CronFlags {
    /// Seconds for the planner (overrides policy.time_limit).
    #[arg(long, value_name = "S")]
    pub time_limit: Option<f64>,
    /// Which planner.
    #[arg(long, value_enum, default_value_t = PlannerKind::Ilp)]
    pub planner: PlannerKind,
    /// Log format on stderr (level from RUST_LOG, default info).
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Also write these outputs.
    #[arg(long, value_enum)]
    pub emit: Option<Emit>,
    /// Kubernetes namespace of the pods (with --emit k8s).
    #[arg(long, default_value = "default")]
    pub namespace: String,
}

/// Run one round on an instance file.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// Instance file (YAML or JSON; every field in docs/formats.md): the cluster's state this round.
    #[arg(long, value_name = "FILE")]
    pub instance: PathBuf,
    /// State dir: lock, memory of the last round, metrics (created when missing).
    #[arg(long, value_name = "DIR")]
    pub state_dir: PathBuf,
    /// Output folder (created when missing), not a file: the round writes DIR/plan.json (and
    /// DIR/bindings.yaml with --emit k8s) into it.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    #[command(flatten)]
    pub cron: CronFlags,
}

/// Set up `tracing` on stderr. Safe to call twice (the second call is ignored).
pub fn init_logging(format: LogFormat) {
    // -v / -q choose the level; RUST_LOG, where set, decides otherwise.
    let default = if super::verbose() {
        "info,gangplan=debug"
    } else if super::quiet() {
        "warn"
    } else {
        "info"
    };
    let filter = match std::env::var_os("RUST_LOG") {
        Some(_) if !super::verbose() && !super::quiet() => {
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default))
        }
        _ => tracing_subscriber::EnvFilter::new(default),
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    let _ = match format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Text => builder.try_init(),
    };
}

/// Check the shared flags.
pub fn check_flags(f: &CronFlags) -> Result<(), Failure> {
    if let Some(t) = f.time_limit {
        super::check_time_limit_flag(t)?;
    }
    if f.emit == Some(Emit::K8s) && !k8s::is_dns_label(&f.namespace) {
        return Err(Failure::new(
            exit::BAD_INPUT,
            anyhow::anyhow!("--namespace {:?} is not a DNS-1123 label", f.namespace),
        ));
    }
    Ok(())
}

/// `--out` of `plan` is a folder: refuse an existing file, and a path that is not an existing
/// folder and ends in a plan file's extension (`--out myplan.json` would make a folder of it).
fn check_out_dir(out: &Path) -> Result<(), Failure> {
    let what = "--out of plan is a folder that receives plan.json (and bindings.yaml with --emit \
                k8s)";
    let shown = out.display();
    if out.exists() && !out.is_dir() {
        return Err(Failure::new(
            exit::BAD_INPUT,
            anyhow::anyhow!("--out {shown}: is a file; {what}; pass a folder"),
        ));
    }
    let file_like = matches!(
        out.extension().and_then(|e| e.to_str()),
        Some("json" | "yaml" | "yml")
    );
    if file_like && !out.is_dir() {
        let parent = out
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or(".".to_string(), |p| p.display().to_string());
        return Err(Failure::new(
            exit::BAD_INPUT,
            anyhow::anyhow!(
                "--out {shown}: names a file; {what}; pass a folder, e.g. --out {parent} \
                 (the plan goes to {parent}/plan.json)"
            ),
        ));
    }
    Ok(())
}

/// Map a cron error to its exit code.
pub fn cron_failure(e: CronError) -> Failure {
    let code = match &e {
        CronError::Locked { .. } => exit::LOCKED,
        CronError::Io { .. } => exit::IO,
        CronError::Corrupt { .. } => exit::BAD_INPUT,
    };
    Failure::new(code, e.into())
}

/// Open the state dir, take its lock and read the memory.
pub fn open_state(dir: &Path) -> Result<(StateDir, RoundLock, Memory), Failure> {
    let state = StateDir::open(dir).map_err(cron_failure)?;
    let lock = RoundLock::acquire(&state.lock()).map_err(cron_failure)?;
    let memory = Memory::load(&state.memory()).map_err(cron_failure)?;
    Ok((state, lock, memory))
}

fn write(path: &Path, text: &str) -> Result<(), Failure> {
    write_atomic(path, text.as_bytes()).map_err(|e| Failure::new(exit::IO, e.into()))
}

/// The plan as pretty JSON.
pub fn plan_json(plan: &Plan) -> Result<String, Failure> {
    Ok(gangplan::plan::output::to_json(plan))
}

/// Write the round's state files: last plan, metrics, memory (in that order; each atomic).
pub fn save_round(
    state: &StateDir,
    memory: &Memory,
    plan: &Plan,
    metrics: &RoundMetrics,
) -> Result<(), Failure> {
    write(&state.last_plan(), &plan_json(plan)?)?;
    write(&state.metrics(), &metrics.render())?;
    memory.save(&state.memory()).map_err(cron_failure)
}

/// Write bindings.yaml into `dir` when asked (all or nothing, see [`round_outputs`]).
pub fn emit_outputs(flags: &CronFlags, plan: &Plan, dir: &Path) -> Result<(), Failure> {
    write_outputs(round_outputs(flags, plan, dir, false)?)
}

/// The files a round writes into `dir`: `plan.json` when `with_plan`, and `bindings.yaml` with
/// `--emit k8s`. Every one is encoded before any is written, so a refused binding (a node name
/// that is no Kubernetes name) leaves nothing behind.
pub fn round_outputs(
    flags: &CronFlags,
    plan: &Plan,
    dir: &Path,
    with_plan: bool,
) -> Result<Vec<(PathBuf, Vec<u8>)>, Failure> {
    let mut files = Vec::new();
    if with_plan {
        files.push((dir.join("plan.json"), plan_json(plan)?.into_bytes()));
    }
    if flags.emit == Some(Emit::K8s) {
        let b = k8s::bindings(plan, &flags.namespace)
            .map_err(|e| Failure::new(exit::BAD_INPUT, anyhow::anyhow!(e)))?;
        let text =
            k8s::to_yaml(&b).map_err(|e| Failure::new(exit::INTERNAL, anyhow::anyhow!(e)))?;
        tracing::info!(objects = b.len(), path = %dir.join("bindings.yaml").display(), "Kubernetes bindings");
        files.push((dir.join("bindings.yaml"), text.into_bytes()));
    }
    Ok(files)
}

/// Write a round's files, all or none.
pub fn write_outputs(files: Vec<(PathBuf, Vec<u8>)>) -> Result<(), Failure> {
    gangplan::fsutil::write_all_or_none(&files).map_err(|e| Failure::new(exit::IO, e.into()))
}

/// Log the plan's outcome.
pub fn log_planned(p: &Planned) {
    tracing::info!(
        status = super::status_word(p.plan.status),
        objective = p.plan.solver.objective,
        gap = p.plan.solver.gap,
        seconds = p.plan.solver.seconds,
        placed = p.plan.placements.len(),
        pending = p.plan.pending.len(),
        preempted = p.plan.preemptions.len(),
        kept = p.kept.len(),
        "planned"
    );
}

/// Run `plan`.
pub fn run(a: PlanArgs) -> Result<i32, Failure> {
    let started = Instant::now();
    init_logging(a.cron.log_format);
    check_flags(&a.cron)?;
    check_out_dir(&a.out)?;
    std::fs::create_dir_all(&a.out)
        .map_err(|e| Failure::new(exit::IO, anyhow::anyhow!("{}: {e}", a.out.display())))?;
    let (state, _lock, mut memory) = open_state(&a.state_dir)?;
    let mut inst = super::timed_read::load_in_time(
        &a.instance,
        &ModelLibrary::builtin(),
        started,
        a.cron.time_limit,
    )?;
    if let Some(t) = a.cron.time_limit {
        inst.policy.time_limit = t;
    }
    // A person at a terminal also gets the plan as a table on stdout.
    let table_of = std::io::stdout().is_terminal().then(|| inst.clone());
    let planned =
        plan_with_memory(inst, a.cron.planner, &memory, started).map_err(Failure::from_lib)?;
    log_planned(&planned);
    write_outputs(round_outputs(&a.cron, &planned.plan, &a.out, true)?)?;
    if let Some(inst) = &table_of {
        print!("{}", gangplan::plan::output::to_table(inst, &planned.plan));
    }
    memory.round += 1;
    memory.placements = Memory::placements_of(&planned.plan);
    let mut metrics = RoundMetrics::from_plan(&planned.plan);
    metrics.kept = planned.kept.len() as u32;
    metrics.timestamp = unix_now();
    metrics.round_seconds = started.elapsed().as_secs_f64();
    save_round(&state, &memory, &planned.plan, &metrics)?;
    Ok(exit::OK)
}

/// Now, Unix seconds.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}
