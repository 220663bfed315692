//! `gangplan solve`.

use super::{exit, Failure};
use clap::{Args, ValueEnum};
use gangplan::hardware::ModelLibrary;
use gangplan::instance::Instance;
use gangplan::plan::{output, Plan};
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
    /// A table for people: one row per job (JOB, TENANT, GPUS, NODES, STATE, REASON), then
    /// the round's line; a job on many nodes lists the first and counts the rest (+N more).
    /// Not for programs: use json.
    Table,
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
    /// Instance file (YAML or JSON; every field in docs/formats.md).
    pub instance: PathBuf,
    /// Output file for the plan, written atomically and only after it passed the validator;
    /// `-` or absent: stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Seconds for the whole command, read to write; overrides policy.time_limit.
    #[arg(long, value_name = "S", allow_negative_numbers = true)]
    pub time_limit: Option<f64>,
    /// Relative MIP gap at which to stop (0.01 = 1%); overrides policy.mip_gap. Only
    /// `--planner ilp` solves a MIP: with any other planner a note says the gap is not used.
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
    /// columns stay under 20,000 and the aggregated model above. Only `--planner ilp` uses
    /// it (with any other planner a note says so).
    #[arg(long, value_enum, default_value_t = FormulationArg::Auto)]
    pub formulation: FormulationArg,
    /// Also write the MIP as .mps or .lp (by extension) to reproduce the solve elsewhere. Only
    /// `--planner ilp` builds a model: with any other planner nothing is written (a note says
    /// so).
    #[arg(long, value_name = "FILE")]
    pub write_model: Option<PathBuf>,
}

/// A plan as text: JSON and YAML as `plan::output` writes them (GPU lists on one line, noise
/// rounded), or the table, which names tenants and so needs the instance (`table_of`, kept
/// only when the table is asked for).
pub fn encode(plan: &Plan, format: Format, table_of: Option<&Instance>) -> String {
    match (format, table_of) {
        (Format::Table, Some(inst)) => output::to_table(inst, plan),
        (Format::Yaml, _) => output::to_yaml(plan),
        _ => output::to_json(plan),
    }
}

/// A warning when the time limit stopped the solve with the plan further from its bound than
/// the gap asked for (the plan may be far from the best one).
pub fn far_from_bound(plan: &Plan, mip_gap: f64) -> Option<String> {
    let gap = plan.solver.gap?;
    (plan.solver.time_limit_hit && gap > mip_gap).then(|| {
        format!(
            "the time limit stopped the solve {} from its bound (asked: within {}); the plan may be \
             far from the best one, and a longer --time-limit lets the solver close the gap",
            output::percent(gap),
            output::percent(mip_gap)
        )
    })
}

/// `--write-model`'s folder must exist before the solve: HiGHS writing into a missing one
/// would only drop the model after the round's time was spent.
fn check_model_folder(path: &std::path::Path) -> Result<(), Failure> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    if dir.is_dir() {
        return Ok(());
    }
    Err(Failure::new(
        exit::IO,
        anyhow::anyhow!(
            "--write-model {}: the folder {} does not exist; create it or name a file in an existing folder",
            path.display(),
            dir.display()
        ),
    ))
}

/// `--write-model FILE`: a .mps or .lp file in an existing folder. A planner other than
/// `ilp` builds no model: a note says that nothing is written there, as the option is
/// otherwise accepted with every planner (`--gap` and `--formulation` alike,
/// [`note_mip_flags_unused`]).
fn check_write_model(path: &std::path::Path, planner: PlannerKind) -> Result<(), Failure> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    if ext != "mps" && ext != "lp" {
        return Err(Failure::new(
            exit::BAD_INPUT,
            anyhow::anyhow!(
                "--write-model {}: the file must end in .mps or .lp",
                path.display()
            ),
        ));
    }
    check_model_folder(path)?;
    if planner != PlannerKind::Ilp {
        super::note(format!(
            "--write-model {}: the {} planner builds no model, so nothing is written there \
             (only --planner ilp writes one)",
            path.display(),
            planner.name()
        ));
    }
    Ok(())
}

/// `--gap` and a `--formulation` other than `auto` shape the MIP, which only `--planner ilp`
/// solves: with another planner a note says they go unused (the solve goes on).
fn note_mip_flags_unused(a: &SolveArgs) {
    if a.planner == PlannerKind::Ilp {
        return;
    }
    let unused = [
        a.gap.map(|g| format!("--gap {g}")),
        (a.formulation != FormulationArg::Auto).then(|| {
            let f = a.formulation.to_possible_value();
            format!("--formulation {}", f.as_ref().map_or("?", |v| v.get_name()))
        }),
    ];
    for flag in unused.into_iter().flatten() {
        super::note(format!(
            "{flag}: the {} planner solves no MIP, so it is not used (only --planner ilp uses it)",
            a.planner.name()
        ));
    }
}

/// Run `solve`.
pub fn run(a: SolveArgs) -> Result<i32, Failure> {
    let started = Instant::now();
    if std::env::var_os("RUST_LOG").is_some() || super::verbose() {
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
        check_write_model(w, a.planner)?;
    }
    note_mip_flags_unused(&a);
    let models = match &a.models {
        Some(dir) => ModelLibrary::with_dir(dir).map_err(Failure::from_lib)?,
        None => ModelLibrary::builtin(),
    };
    let mut inst = super::timed_read::load_in_time(&a.instance, &models, started, a.time_limit)?;
    tracing::debug!(
        phase = "read",
        seconds = started.elapsed().as_secs_f64(),
        "round phase done"
    );
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
    let mip_gap = inst.policy.mip_gap;
    let table_of = (a.format == Format::Table).then(|| inst.clone());
    let plan = plan_round_with(inst, &settings).map_err(|e| {
        Failure::new(
            exit::INTERNAL,
            anyhow::anyhow!("refusing to write an invalid plan (a planner bug): {e}"),
        )
    })?;
    if let Some(note) = &plan.solver.note {
        super::note(note);
    }
    if let Some(warning) = far_from_bound(&plan, mip_gap) {
        super::note(warning);
    }
    let text = encode(&plan, a.format, table_of.as_ref());
    match a.out.as_deref().filter(|p| p.as_os_str() != "-") {
        Some(path) => gangplan::fsutil::write_atomic(path, text.as_bytes())
            .map_err(|e| Failure::new(exit::IO, e.into()))?,
        None => print!("{text}"),
    }
    tracing::debug!(
        phase = "write",
        seconds = started.elapsed().as_secs_f64(),
        "command done"
    );
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    use super::far_from_bound;
    use gangplan::plan::{Metrics, Plan, SolverInfo, Status};

    fn plan(gap: Option<f64>, hit: bool) -> Plan {
        Plan {
            format: gangplan::plan::types::PLAN_FORMAT.to_string(),
            status: Status::Feasible,
            solver: SolverInfo {
                gap,
                time_limit_hit: hit,
                ..SolverInfo::blank("ilp")
            },
            placements: Vec::new(),
            preemptions: Vec::new(),
            pending: Vec::new(),
            metrics: Metrics {
                gpus_total: 0,
                gpus_busy_before: 0,
                gpus_busy_after: 0,
                gpus_down: 0,
                jobs_placed: 0,
                jobs_pending: 0,
                jobs_preempted: 0,
            },
            reservation: None,
            reservations: Vec::new(),
        }
    }

    #[test]
    fn a_cut_solve_far_from_its_bound_is_said() {
        let w = far_from_bound(&plan(Some(2.3), true), 0.01).expect("a warning");
        assert!(
            w.contains("230.00% from its bound (asked: within 1.00%)"),
            "{w}"
        );
        assert!(far_from_bound(&plan(Some(0.005), true), 0.01).is_none());
        assert!(far_from_bound(&plan(Some(2.3), false), 0.01).is_none());
        assert!(far_from_bound(&plan(None, true), 0.01).is_none());
    }
}
