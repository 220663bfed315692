//! `gangplan solve`.

use super::{exit, Failure};
use clap::{Args, ValueEnum};
use gangplan::hardware::ModelLibrary;
use gangplan::instance::load_instance_file;
use gangplan::plan::Plan;
use gangplan::round::{plan_round_with, RoundSettings};
use gangplan::solve::{Formulation, PlannerKind, PlannerSetup};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Output format of a plan.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum Format {
    /// JSON (the SPEC's plan format).
    Json,
    /// The same object as YAML.
    Yaml,
}

/// MIP formulation on the command line.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum FormulationArg {
    /// Per-node for small rounds, aggregated for large ones.
    Auto,
    /// The exact per-node model.
    PerNode,
    /// The aggregated model (size independent of the node count) with a best-fit second stage.
    Aggregated,
}

/// Plan one round.
#[derive(Debug, Args)]
pub struct SolveArgs {
    /// Instance file (YAML or JSON; see SPEC.md).
    pub instance: PathBuf,
    /// Write the plan here (atomically, only after it passed the validator); stdout if absent.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Seconds for the whole command, read to write; overrides policy.time_limit.
    #[arg(long, value_name = "S", allow_negative_numbers = true)]
    pub time_limit: Option<f64>,
    /// Relative MIP gap at which to stop (0.01 = 1%); overrides policy.mip_gap.
    #[arg(long, value_name = "G", allow_negative_numbers = true)]
    pub gap: Option<f64>,
    /// Which planner.
    #[arg(long, value_enum, default_value_t = PlannerKind::Ilp)]
    pub planner: PlannerKind,
    /// Plan output format.
    #[arg(long, value_enum, default_value_t = Format::Json)]
    pub format: Format,
    /// Folder with hardware/ and workloads/ model files, added to the shipped ones.
    #[arg(long, value_name = "DIR")]
    pub models: Option<PathBuf>,
    /// MIP formulation: `auto` picks the exact per-node model for rounds whose (job, node)
    /// columns stay under 20,000 and the aggregated model above.
    #[arg(long, value_enum, default_value_t = FormulationArg::Auto)]
    pub formulation: FormulationArg,
    /// Also write the MIP as .mps or .lp (by extension) to reproduce the solve elsewhere.
    #[arg(long, value_name = "FILE")]
    pub write_model: Option<PathBuf>,
}

/// Serialise a plan.
pub fn encode(plan: &Plan, format: Format) -> anyhow::Result<String> {
    Ok(match format {
        Format::Json => serde_json::to_string_pretty(plan)? + "\n",
        Format::Yaml => serde_yaml::to_string(plan)?,
    })
}

/// Run `solve`.
pub fn run(a: SolveArgs) -> Result<i32, Failure> {
    let started = Instant::now();
    if std::env::var_os("RUST_LOG").is_some() {
        // Phase timings of the solve (debug level) on stderr, only when asked for.
        super::plan_cmd::init_logging(super::plan_cmd::LogFormat::Text);
    }
    let bad = |m: String| Failure::new(exit::BAD_INPUT, anyhow::anyhow!(m));
    if let Some(t) = a.time_limit {
        super::check_time_limit_flag(t)?;
    }
    if let Some(g) = a.gap {
        if !(g.is_finite() && (0.0..=1.0).contains(&g)) {
            return Err(bad(format!("--gap is {g}; expected a fraction in 0..=1")));
        }
    }
    if let Some(w) = &a.write_model {
        let ext = w.extension().and_then(|e| e.to_str()).unwrap_or("");
        if ext != "mps" && ext != "lp" {
            return Err(bad(format!(
                "--write-model {}: the file must end in .mps or .lp",
                w.display()
            )));
        }
    }
    let models = match &a.models {
        Some(dir) => ModelLibrary::with_dir(dir).map_err(Failure::from_lib)?,
        None => ModelLibrary::builtin(),
    };
    let mut inst = load_instance_file(&a.instance, &models).map_err(Failure::from_lib)?;
    if let Some(t) = a.time_limit {
        inst.policy.time_limit = t;
    }
    if let Some(g) = a.gap {
        inst.policy.mip_gap = g;
    }
    let formulation = match a.formulation {
        FormulationArg::Auto => Formulation::Auto,
        FormulationArg::PerNode => Formulation::PerNode,
        FormulationArg::Aggregated => Formulation::Aggregated,
    };
    let settings = RoundSettings {
        planner: a.planner,
        started,
        deadline: started + Duration::from_secs_f64(inst.policy.time_limit),
        setup: PlannerSetup {
            formulation,
            write_model: a.write_model.clone(),
            ..PlannerSetup::default()
        },
    };
    let plan = plan_round_with(inst, &settings).map_err(|e| {
        Failure::new(
            exit::INTERNAL,
            anyhow::anyhow!("refusing to write an invalid plan (a planner bug): {e}"),
        )
    })?;
    if let Some(note) = &plan.solver.note {
        eprintln!("gangplan: {note}");
    }
    let text = encode(&plan, a.format).map_err(|e| Failure::new(exit::INTERNAL, e))?;
    match &a.out {
        Some(path) => gangplan::fsutil::write_atomic(path, text.as_bytes())
            .map_err(|e| Failure::new(exit::IO, e.into()))?,
        None => print!("{text}"),
    }
    Ok(exit::OK)
}
