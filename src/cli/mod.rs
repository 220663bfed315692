//! Command-line interface: raw flags (clap) -> resolved settings -> library calls; anyhow at
//! this edge only. Every error maps to a documented exit code; panics are caught and reported
//! as internal failures.

mod arg_check;
mod bench_cmd;
mod compare_cmd;
mod discover_cmd;
mod docs_cmd;
mod explain_cmd;
mod gen_cmd;
mod plan_cmd;
mod simulate_cmd;
mod slurm_cmd;
mod slurm_run;
mod slurm_serve;
mod solve_cmd;
mod timed_read;
mod validate_cmd;
mod whatif_cmd;

use clap::{Parser, Subcommand};

/// Exit codes (documented in README.md and `--help`).
pub mod exit {
    /// A valid plan was written (jobs may stay pending), or the checked plan is valid.
    pub const OK: i32 = 0;
    /// Bad input: unreadable or invalid instance, plan or model file, or bad flags.
    pub const BAD_INPUT: i32 = 2;
    /// `validate`: the plan breaks a rule.
    pub const PLAN_INVALID: i32 = 3;
    /// Internal failure: a planner produced an invalid plan, or a bug (panic) was caught.
    pub const INTERNAL: i32 = 4;
    /// Another round holds the lock.
    pub const LOCKED: i32 = 5;
    /// An I/O failure writing output.
    pub const IO: i32 = 6;
    /// `discover`: NVML is missing (no NVIDIA driver), cannot start, or sees no GPU.
    pub const NO_NVML: i32 = 7;
    /// `solve`, `plan`: the instance could not be read within the time limit, or what was
    /// left of the limit after reading it is too little to plan and write (nothing written);
    /// `explain`: its relaxation did not finish within its time limit (`--prices`: the
    /// command's, at least 1 s; a job's: 10 s).
    pub const TIME_LIMIT: i32 = 8;
}

const AFTER_HELP: &str = "\
Exit codes:
  0  a valid plan was written (some jobs may stay pending); for `validate`, the plan is valid
  2  bad input: the instance, plan or model file is unreadable or invalid, or a flag is wrong
  3  `validate`: the plan breaks a rule of the SPEC (each violation is printed)
  4  internal failure: a planner produced an invalid plan (nothing is written) or a bug was caught
  5  another planning round holds the lock
  6  output could not be written, or --write-model's folder does not exist
  7  `discover`: NVML (libnvidia-ml.so.1, from the NVIDIA driver) is missing or sees no GPU
  8  `solve`, `plan`: the instance was not read within --time-limit, or too little of the limit
     was left to plan and write it (nothing is written); `explain`: its relaxation did not
     finish within its time limit (--prices: --time-limit, at least 1 s; a job: 10 s)

Examples:
  gangplan solve instances/quickstart.yaml
  gangplan solve instances/quickstart.yaml --out plan.json --time-limit 5
  gangplan validate instances/quickstart.yaml plan.json
  gangplan gen --nodes 32 --pending 80 --seed 7 --out round.yaml";

/// gangplan: a GPU-cluster batch planner. Each round decides which pending gangs start on which
/// GPUs, and which running jobs to preempt, by solving a mixed-integer program with HiGHS,
/// starting from (and never doing worse than) a topology-aware greedy bin-packer.
#[derive(Debug, Parser)]
#[command(name = "gangplan", version, after_help = AFTER_HELP)]
pub struct Cli {
    /// More on stderr: debug logs of each planning phase (as RUST_LOG=gangplan=debug), and
    /// `explain` lists every change of each option.
    #[arg(short, long, global = true, conflicts_with = "quiet")]
    verbose: bool,
    /// Less on stderr: no notes or warnings, only errors (and `plan`'s logs at warn level).
    #[arg(short, long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

/// How much goes to stderr besides errors: set once from `-q` / `-v`.
static VERBOSITY: std::sync::atomic::AtomicI8 = std::sync::atomic::AtomicI8::new(0);

/// `-v` was given.
pub fn verbose() -> bool {
    VERBOSITY.load(std::sync::atomic::Ordering::Relaxed) > 0
}

/// `-q` was given.
pub fn quiet() -> bool {
    VERBOSITY.load(std::sync::atomic::Ordering::Relaxed) < 0
}

/// A note or warning on stderr (`gangplan: ...`), unless `-q`.
pub fn note(message: impl std::fmt::Display) {
    if !quiet() {
        eprintln!("gangplan: {message}");
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Plan one round from an instance file and print or write the plan.
    Solve(solve_cmd::SolveArgs),
    /// Check a plan against its instance (the rules in docs/formats.md).
    Validate(validate_cmd::ValidateArgs),
    /// Write a synthetic instance: racks of one GPU type each, pods, running fill, tenants.
    ///
    /// Nodes fill racks of --nodes-per-rack (default 16) in order; the rack's number picks its
    /// hardware in a cycle of 7 racks: racks 0-2 DGX H100 (8 GPUs), 3-4 DGX A100 (8),
    /// 5 A100 PCIe 8x (8), 6 L40S PCIe 4x (4). So the default `--nodes 32` gives 32 DGX H100
    /// nodes in two racks; mixed GPU types need more than 3 racks (e.g. `--nodes 112` at 16
    /// per rack, or a smaller --nodes-per-rack). Racks group into pods of --racks-per-pod.
    /// A --down fraction of GPUs is down, running jobs hold about --busy of the rest, and
    /// --pending gangs (up to --max-gang GPUs, some sharing one GPU) wait, spread over
    /// --tenants tenants t0, t1, ... (weights 3, 2, 1, 1, ...; with several, the last has a
    /// quota of 2 GPUs per node). The same flags and --seed give the same instance.
    Gen(gen_cmd::GenArgs),
    /// Why a pending job waits, the smallest change that would start it; or --prices.
    Explain(explain_cmd::ExplainArgs),
    /// Re-plan with added or drained nodes, quotas or weights, and show what changes.
    Whatif(whatif_cmd::WhatifArgs),
    /// Replay a cluster trace under one planner and write a metrics report.
    Simulate(simulate_cmd::SimulateArgs),
    /// Run several planners on the same trace; markdown table, CSV and SVG plots.
    Compare(compare_cmd::CompareArgs),
    /// Time whole rounds at 1k / 10k / 100k GPUs and print objective, bound, gap and ratios.
    Bench(bench_cmd::BenchArgs),
    /// Describe this node's GPUs (NVML): an instance node entry and a hardware model.
    Discover(discover_cmd::DiscoverArgs),
    /// One cron round on an instance file: lock, stable placements, metrics (no Slurm).
    Plan(plan_cmd::PlanArgs),
    /// Drive a Slurm cluster: `gangplan slurm plan [--apply]` (see docs/slurm.md).
    Slurm(slurm_run::SlurmArgs),
    /// Print shell completions (bash, zsh, fish, elvish, powershell) on stdout.
    Completions(docs_cmd::CompletionsArgs),
    /// Print the man page gangplan(1) (roff) on stdout.
    Man(docs_cmd::ManArgs),
}

/// An error at the edge, with its exit code.
#[derive(Debug)]
pub struct Failure {
    /// Exit code.
    pub code: i32,
    /// What went wrong.
    pub error: anyhow::Error,
}

impl Failure {
    /// Map a library error to its exit code.
    pub fn from_lib(e: gangplan::Error) -> Self {
        let code = match &e {
            gangplan::Error::Input { .. } => exit::BAD_INPUT,
            gangplan::Error::Io { .. } => exit::BAD_INPUT,
            gangplan::Error::InvalidPlan { .. } => exit::INTERNAL,
            gangplan::Error::Solver(_) => exit::INTERNAL,
            gangplan::Error::TimeLimit(_) => exit::TIME_LIMIT,
        };
        Failure {
            code,
            error: e.into(),
        }
    }

    /// A failure with an explicit code.
    pub fn new(code: i32, error: anyhow::Error) -> Self {
        Failure { code, error }
    }
}

/// A plan status as one lowercase word (`optimal`, `feasible`, `fallback`), the spelling of
/// plan files, used in tables and logs too.
pub fn status_word(status: gangplan::plan::Status) -> &'static str {
    use gangplan::plan::Status;
    match status {
        Status::Optimal => "optimal",
        Status::Feasible => "feasible",
        Status::Fallback => "fallback",
    }
}

/// Check a flag of seconds in (0, `most`], named `--flag` when refused.
pub fn check_seconds_flag(flag: &str, s: f64, most: f64) -> Result<std::time::Duration, Failure> {
    if s.is_finite() && s > 0.0 && s <= most {
        Ok(std::time::Duration::from_secs_f64(s))
    } else {
        Err(Failure::new(
            exit::BAD_INPUT,
            anyhow::anyhow!("--{flag} is {s}; expected seconds in (0, {most}]"),
        ))
    }
}

/// Check a seconds flag that may be 0: a finite number of seconds in [0, most].
pub fn check_seconds_or_zero_flag(
    flag: &str,
    s: f64,
    most: f64,
) -> Result<std::time::Duration, Failure> {
    if s == 0.0 {
        Ok(std::time::Duration::ZERO)
    } else {
        check_seconds_flag(flag, s, most).map_err(|_| {
            Failure::new(
                exit::BAD_INPUT,
                anyhow::anyhow!("--{flag} is {s}; expected seconds in [0, {most}]"),
            )
        })
    }
}

/// Check a `--time-limit` flag (seconds in (0, 86400], as `policy.time_limit`).
pub fn check_time_limit_flag(seconds: f64) -> Result<f64, Failure> {
    gangplan::instance::policy::check_time_limit(seconds)
        .map_err(|e| Failure::new(exit::BAD_INPUT, anyhow::anyhow!("--time-limit {e}")))
}

/// Run the command line; returns the exit code.
pub fn run() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::BAD_INPUT
            } else {
                exit::OK
            };
            if e.use_stderr() {
                eprint!("{}", clap_error_text(&e));
            } else {
                let _ = e.print();
            }
            return code;
        }
    };
    let level = if cli.verbose {
        1
    } else if cli.quiet {
        -1
    } else {
        0
    };
    VERBOSITY.store(level, std::sync::atomic::Ordering::Relaxed);
    std::panic::set_hook(Box::new(|info| {
        eprintln!("gangplan: internal error (a bug; please report it with the input): {info}");
    }));
    let result = std::panic::catch_unwind(|| match cli.command {
        Command::Solve(a) => solve_cmd::run(a),
        Command::Validate(a) => validate_cmd::run(a),
        Command::Gen(a) => gen_cmd::run(a),
        Command::Explain(a) => explain_cmd::run(a),
        Command::Whatif(a) => whatif_cmd::run(a),
        Command::Simulate(a) => simulate_cmd::run(a),
        Command::Compare(a) => compare_cmd::run(a),
        Command::Bench(a) => bench_cmd::run(a),
        Command::Discover(a) => discover_cmd::run(a),
        Command::Plan(a) => plan_cmd::run(a),
        Command::Slurm(a) => slurm_run::run(a),
        Command::Completions(a) => docs_cmd::completions(a),
        Command::Man(a) => docs_cmd::man(a),
    });
    match result {
        Ok(Ok(code)) => code,
        Ok(Err(f)) => {
            eprintln!("{}{}", ERROR_PREFIX, error_text(&f.error));
            f.code
        }
        Err(_) => exit::INTERNAL,
    }
}

/// The prefix of every error message on stderr.
const ERROR_PREFIX: &str = "gangplan: error: ";

/// A clap parse error in the program's own format: clap's `error: ` prefix replaced by
/// [`ERROR_PREFIX`], clap's text (value, usage, hint) kept.
fn clap_error_text(e: &clap::Error) -> String {
    let rendered = e.render().to_string();
    let body = rendered.strip_prefix("error: ").unwrap_or(&rendered);
    format!("{ERROR_PREFIX}{body}")
}

/// An error and its causes, joined by `: `, leaving out a cause whose text is already part of
/// the message (an I/O error that quotes the OS error it wraps would print it twice).
fn error_text(e: &anyhow::Error) -> String {
    let mut text = e.to_string();
    for cause in e.chain().skip(1) {
        let c = cause.to_string();
        if !text.contains(&c) {
            text.push_str(": ");
            text.push_str(&c);
        }
    }
    text
}
