//! `gangplan explain`: why a job is pending and what would let it start; `--prices` for the
//! shadow prices of GPUs and quotas.

use super::{exit, Failure};
use clap::{Args, ValueEnum};
use gangplan::explain::prices::{prices, Prices};
use gangplan::explain::{explain_job, Explanation, Verification};
use gangplan::hardware::ModelLibrary;
use gangplan::instance::load::{parse_document, read_document};
use gangplan::instance::raw::{RawInstance, RawPolicy};
use gangplan::instance::validate::validate;
use gangplan::topology::Topology;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Output format of `explain` and `whatif`.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum TextOrJson {
    /// Sentences for people.
    Text,
    /// One JSON object for machines.
    Json,
}

/// Explain why a pending job waits, or (with --prices) price GPUs and quotas.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// Instance file (YAML or JSON).
    pub instance: PathBuf,
    /// Pending job id (not needed with --prices).
    pub job: Option<String>,
    /// Shadow prices from the LP relaxation: one more GPU per GPU type, rack and node, one
    /// more unit of each tenant's quota.
    #[arg(long)]
    pub prices: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = TextOrJson::Text)]
    pub format: TextOrJson,
    /// Most alternative changes to list.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub options: usize,
    /// Do not re-plan to check each change.
    #[arg(long)]
    pub no_verify: bool,
    /// Seconds for each planning solve; overrides policy.time_limit.
    #[arg(long, value_name = "S")]
    pub time_limit: Option<f64>,
    /// Folder with hardware/ and workloads/ model files, added to the shipped ones.
    #[arg(long, value_name = "DIR")]
    pub models: Option<PathBuf>,
}

/// Read the raw instance and the model library, applying a time-limit override.
pub fn load_raw(
    path: &Path,
    models: Option<&PathBuf>,
    time_limit: Option<f64>,
) -> Result<(RawInstance, ModelLibrary), Failure> {
    if let Some(t) = time_limit {
        super::check_time_limit_flag(t)?;
    }
    let lib = match models {
        Some(dir) => ModelLibrary::with_dir(dir).map_err(Failure::from_lib)?,
        None => ModelLibrary::builtin(),
    };
    let text = read_document(path).map_err(Failure::from_lib)?;
    let mut raw: RawInstance =
        parse_document(&text, &path.display().to_string()).map_err(Failure::from_lib)?;
    if let Some(t) = time_limit {
        raw.policy.get_or_insert_with(RawPolicy::default).time_limit = Some(t);
    }
    Ok((raw, lib))
}

/// Run `explain`.
pub fn run(a: ExplainArgs) -> Result<i32, Failure> {
    let (raw, lib) = load_raw(&a.instance, a.models.as_ref(), a.time_limit)?;
    let source = a.instance.display().to_string();
    let text = if a.prices {
        if a.job.is_some() {
            return Err(Failure::new(
                exit::BAD_INPUT,
                anyhow::anyhow!("--prices prices the whole round; drop the job id"),
            ));
        }
        let inst = validate(&raw, &lib).map_err(|issues| {
            Failure::from_lib(gangplan::Error::Input {
                source_name: source.clone(),
                issues,
            })
        })?;
        let topo = Topology::new(&inst);
        let p = prices(&inst, &topo).map_err(Failure::from_lib)?;
        match a.format {
            TextOrJson::Json => json(&p)?,
            TextOrJson::Text => prices_text(&p),
        }
    } else {
        let Some(job) = &a.job else {
            return Err(Failure::new(
                exit::BAD_INPUT,
                anyhow::anyhow!(
                    "name a pending job (gangplan explain INSTANCE JOB), or pass --prices"
                ),
            ));
        };
        super::arg_check::pending_job(&raw, &source, job)?;
        let e = explain_job(&raw, &lib, &source, job, a.options, !a.no_verify)
            .map_err(Failure::from_lib)?;
        match a.format {
            TextOrJson::Json => json(&e)?,
            TextOrJson::Text => explanation_text(&e, super::verbose()),
        }
    };
    print!("{text}");
    Ok(exit::OK)
}

/// Pretty JSON with a trailing newline.
pub fn json<T: serde::Serialize>(v: &T) -> Result<String, Failure> {
    serde_json::to_string_pretty(v)
        .map(|s| s + "\n")
        .map_err(|e| Failure::new(exit::INTERNAL, e.into()))
}

fn explanation_text(e: &Explanation, verbose: bool) -> String {
    let mut s = String::new();
    if e.started {
        let on: Vec<String> = e
            .placed_on
            .iter()
            .flatten()
            .map(|(node, idx)| gangplan::plan::output::node_cell(node, idx))
            .collect();
        let _ = writeln!(s, "{}: starts this round on {}", e.job, on.join(" "));
        return s;
    }
    let _ = writeln!(
        s,
        "{}: pending ({})",
        e.job,
        e.kind.as_deref().unwrap_or("")
    );
    let _ = writeln!(s, "reason: {}", e.reason.as_deref().unwrap_or(""));
    let _ = writeln!(
        s,
        "binding constraint: {}",
        e.binding.as_deref().unwrap_or("")
    );
    if !e.options.is_empty() {
        let _ = writeln!(
            s,
            "smallest changes that let it start (relaxation solve, cheapest first):"
        );
        for (i, o) in e.options.iter().enumerate() {
            let check = match &o.verification {
                Verification::Starts => "re-planned with this change: it starts".to_string(),
                Verification::StillWaits { reason } => {
                    format!("re-planned with this change: it still waits ({reason})")
                }
                Verification::NotRun { why } => format!("not re-planned: {why}"),
            };
            let _ = writeln!(
                s,
                "  {}. {} [cost {:.2}; {check}]",
                i + 1,
                o.relaxation.summary,
                o.relaxation.cost
            );
            if verbose {
                for c in &o.relaxation.changes {
                    let _ = writeln!(s, "       - {}", c.text());
                }
            }
        }
    }
    if !e.notes.is_empty() {
        let _ = writeln!(s, "notes:");
        for n in &e.notes {
            let _ = writeln!(s, "  - {n}");
        }
    }
    s
}

fn prices_text(p: &Prices) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "LP relaxation objective: {:.4} (an upper bound on any plan's objective)",
        p.lp_objective
    );
    let _ = writeln!(
        s,
        "marginal value of one more free GPU (objective units; LP duals, valid for small changes):"
    );
    for x in &p.gpu_types {
        let _ = writeln!(
            s,
            "  GPU type {:<12} {:>10.4}  (best node {})",
            x.name,
            x.price,
            x.at.as_deref().unwrap_or("-")
        );
    }
    for x in &p.racks {
        let name = if x.name.is_empty() { "(none)" } else { &x.name };
        let _ = writeln!(
            s,
            "  rack {:<16} {:>10.4}  (best node {})",
            name,
            x.price,
            x.at.as_deref().unwrap_or("-")
        );
    }
    if !p.quotas.is_empty() {
        let _ = writeln!(s, "marginal value of one more GPU of quota:");
        for x in &p.quotas {
            let _ = writeln!(s, "  tenant {:<14} {:>10.4}", x.name, x.price);
        }
    }
    let _ = writeln!(s, "per node: see --format json (nodes[])");
    s
}
